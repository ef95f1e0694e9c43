"""A policy in a worker process, as the engine calls it: every answer crossed the wire, checked.

:func:`remote_policy` starts the worker (:mod:`._connection`) on a spec it
can import and yields a :class:`RemotePolicy`, whose methods ask the worker
for each answer and check it into plain values before the engine sees it:
the worker sends answers, never verdicts. Each limit is a typed error the
harness turns into a verdict: a call past ``call_seconds`` is a
:class:`PolicyTimeout`. An example running at the deadline goes on, each
call still allowed ``call_seconds``, up to the hard limit (the deadline +
``call_seconds`` + :data:`GRACE`): a call in flight there, or due after it,
is a :class:`PolicyOutOfTime`, the timeout of that example; a worker that
dies or sends a malformed message is a :class:`PolicyError`.
The worker and every process it started are killed then, and on leaving.
Why this split and no pickle: docs/design/fuzz-isolation.md.
"""

from __future__ import annotations

import itertools
import math
import reprlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import attrs

from junction.core import GroupSpec, HybridGeometry, InvalidArgument
from junction.reference.engine.policy import (
    PolicyError,
    PolicyOutOfTime,
    PolicyTimeout,
    RequestView,
    describe_request,
)

from ._connection import Loaded, Worker, one_line, read_loaded
from ._frames import _ChannelClosed, _ChannelTimeout, _MalformedMessage
from ._geometry import geometry_json, group_json

__all__ = ["CALL_SECONDS", "GRACE", "Limits", "RemotePolicy", "remote_policy"]

GRACE = 1.0  # seconds past the deadline + call_seconds before the hard limit
CALL_SECONDS = 10.0  # the limit of one call when the caller names none

_BRIEF = reprlib.Repr()
_BRIEF.maxstring = _BRIEF.maxother = 80


def _finite_seconds(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None and attribute.name == "seconds":
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise InvalidArgument(attribute.name, value, "must be a finite number of seconds > 0")


@attrs.frozen
class Limits:
    """``seconds`` for the whole run (``None``: no deadline); ``call_seconds`` for one call."""

    seconds: float | None = attrs.field(validator=_finite_seconds)
    call_seconds: float = attrs.field(default=CALL_SECONDS, validator=_finite_seconds)

    @property
    def named(self) -> str:
        """The run's limit as messages name it: ``fuzz``'s option, ``--seconds 2``."""
        return f"--seconds {math.inf if self.seconds is None else self.seconds:g}"

    @property
    def hard_named(self) -> str:
        """The hard limit as messages name it: ``--seconds 2 + --call-seconds 1 + 1 s``."""
        return f"{self.named} + --call-seconds {self.call_seconds:g} + {GRACE:g} s"


class RemotePolicy:
    """The worker's policy as the engine calls it (a ``Policy``): each answer crossed the wire.

    Every answer is checked here into exact built-in types before it is
    returned: positions as a tuple of ``int`` (never ``bool``), at most one
    per token; a mask as ``None`` or a list of exactly the blocks' ``bool``;
    a split or a checkpoint as an ``int``. A policy's own exception comes
    back as text and is a :class:`PolicyError`; a call past its limit a
    :class:`PolicyTimeout`; a call in flight at the hard limit, or due
    after it, a :class:`PolicyOutOfTime`; a worker that ended or broke the format a
    :class:`PolicyError` after which :attr:`gone` is set and every call
    fails at once.
    """

    def __init__(self, worker: Worker, loaded: Loaded, limits: Limits, deadline: float) -> None:
        self.name = loaded.name
        self.fixed_boundaries = loaded.fixed_boundaries
        self.writes_prefill_checkpoints = loaded.writes_prefill_checkpoints
        self.keeps_decode_checkpoints = loaded.keeps_decode_checkpoints
        self.keeps_declared_checkpoints = loaded.keeps_declared_checkpoints
        self.decode_checkpoint_finishes = loaded.decode_checkpoint_finishes
        self.decode_checkpoint_budget = loaded.decode_checkpoint_budget
        self.decode_checkpoint_margin = loaded.decode_checkpoint_margin
        self.decode_checkpoint_ttl = loaded.decode_checkpoint_ttl
        self.decode_checkpoint_keep_path = loaded.decode_checkpoint_keep_path
        self._worker, self._limits = worker, limits
        # The hard limit: an example the deadline found running may finish by then.
        self._hard = deadline + limits.call_seconds + GRACE
        self._ids = itertools.count(1)
        self._geometries: dict[HybridGeometry, int] = {}
        self.gone: PolicyError | None = None
        #: A ``KeyboardInterrupt`` (or a termination signal) that arrived during a call.
        self.interrupted: BaseException | None = None

    # -- one call -------------------------------------------------------------
    def _ask(
        self,
        describe: Callable[[], str],
        geometry: HybridGeometry,
        request: RequestView,
        fields: dict[str, Any],
        limit: int,
    ) -> tuple[str, Any]:
        """Send one request; ``(kind, payload)`` of its answer's one field (``value`` etc.)."""
        if self.gone is not None:
            raise self.gone
        if time.monotonic() >= self._hard:
            problem = (
                f"not asked: its example was running at the hard limit ({self._limits.hard_named})"
            )
            raise self._end(PolicyOutOfTime(self.name, describe(), problem))
        key = next(self._ids)
        message = {
            "id": key,
            "call": fields.pop("call"),
            "request": [
                int(request.num_prompt_tokens),
                int(request.num_tokens),
                int(request.num_computed_tokens),
                int(request.shared_prefix_boundary),
                [int(p) for p in getattr(request, "declared_checkpoints", ())],
            ],
            "limit": limit,
            **fields,
        }
        geometry_id = self._geometries.get(geometry)
        if geometry_id is None:
            geometry_id = self._geometries[geometry] = len(self._geometries)
            message["define"] = geometry_json(geometry)
        message["geometry"] = geometry_id
        started = time.monotonic()
        deadline = min(started + self._limits.call_seconds, self._hard)
        try:
            self._worker.send(message, deadline)
            answer = self._worker.receive(deadline)
        except _ChannelTimeout:
            if deadline == started + self._limits.call_seconds:
                problem = f"did not return within {self._limits.call_seconds:g} s (--call-seconds)"
            else:
                problem = (
                    f"still running at the hard limit ({self._limits.hard_named}), "
                    f"{time.monotonic() - started:.1f} s after it was called"
                )
                raise self._end(PolicyOutOfTime(self.name, describe(), problem)) from None
            raise self._end(PolicyTimeout(self.name, describe(), problem)) from None
        except _ChannelClosed:
            status = self._worker.exit_status()
            problem = f"the worker process ended (exit status {status})"
            raise self._end(PolicyError(self.name, describe(), problem)) from None
        except _MalformedMessage as error:
            problem = f"the worker answered a malformed message: {error}"
            raise self._end(PolicyError(self.name, describe(), problem)) from None
        except BaseException as error:  # Ctrl-C or a termination signal while waiting
            self.interrupted = error
            raise self._end(PolicyError(self.name, describe(), "interrupted")) from None
        return self._answer(answer, key, describe)

    def _end(self, error: PolicyError) -> PolicyError:
        self.gone = error
        self._worker.close()
        return error

    def _answer(self, answer: object, key: int, describe: Callable[[], str]) -> tuple[str, Any]:
        if type(answer) is not dict or answer.get("id") != key or type(answer["id"]) is not int:
            problem = f"the worker answered a malformed message: not the answer to call {key}"
            raise self._end(PolicyError(self.name, describe(), problem))
        kinds = set(answer) - {"id"}
        allowed = ({"value"}, {"raised"}, {"too_long"}, {"unsupported"}, {"element", "type"})
        if kinds not in allowed:
            problem = f"the worker answered a malformed message: fields {sorted(kinds)[:5]}"
            raise self._end(PolicyError(self.name, describe(), problem))
        if kinds == {"raised"}:
            text = one_line(answer["raised"]) or "an exception"
            raise PolicyError(self.name, describe(), f"raised {text}")
        if kinds == {"value"}:
            return "value", answer["value"]
        if kinds == {"too_long"} and type(answer["too_long"]) is int:
            return "too_long", answer["too_long"]
        if kinds == {"unsupported"} and one_line(answer["unsupported"], 100):
            return "unsupported", f"a {one_line(answer['unsupported'], 100)}"
        if kinds == {"element", "type"} and type(answer["element"]) is int:
            kind = one_line(answer["type"], 100)
            if kind:
                return "element", f"element {answer['element']} is a {kind}"
        problem = "the worker answered a malformed message: a field of the wrong type"
        raise self._end(PolicyError(self.name, describe(), problem))

    def _refuse(self, describe: Callable[[], str], wanted: str, got: str) -> PolicyError:
        return PolicyError(self.name, describe(), f"must return {wanted}, got {got}")

    def _positions(
        self,
        describe: Callable[[], str],
        geometry: HybridGeometry,
        request: RequestView,
        **fields: Any,
    ) -> tuple[int, ...]:
        limit = int(request.num_tokens) + 1
        kind, value = self._ask(describe, geometry, request, fields, limit)
        wanted = "a list or tuple of ints"
        if kind == "too_long":
            problem = (
                f"returned {value} positions; a request of {request.num_tokens} tokens "
                f"has at most {limit}"
            )
            raise PolicyError(self.name, describe(), problem)
        if kind != "value":
            raise self._refuse(describe, wanted, value)
        if type(value) is not list:
            raise self._refuse(describe, wanted, _BRIEF.repr(value))
        if len(value) > limit:
            raise PolicyError(
                self.name, describe(), f"returned {len(value)} positions; at most {limit}"
            )
        for index, item in enumerate(value):
            if type(item) is not int:
                raise self._refuse(describe, wanted, f"element {index} {_BRIEF.repr(item)}")
        return tuple(value)

    # -- the Policy protocol --------------------------------------------------
    def checkpoint_positions(
        self, geometry: HybridGeometry, request: RequestView
    ) -> tuple[int, ...]:
        def describe() -> str:
            return f"checkpoint_positions({describe_request(request)})"

        return self._positions(describe, geometry, request, call="checkpoint_positions")

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        def describe() -> str:
            return f"reachable_boundaries({group}, {describe_request(request)})"

        return self._positions(
            describe, geometry, request, call="reachable_boundaries", group=_group(geometry, group)
        )

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> list[bool] | None:
        def describe() -> str:
            return f"block_mask({group}, {describe_request(request)}, {start_block}, {end_block})"

        length = end_block - start_block
        fields = {
            "call": "block_mask",
            "group": _group(geometry, group),
            "start": int(start_block),
            "end": int(end_block),
            "boundaries": [int(b) for b in boundaries],
        }
        kind, value = self._ask(describe, geometry, request, fields, length)
        wanted = f"None or {length} bools"
        if kind == "too_long":
            raise self._refuse(describe, wanted, f"{value} elements")
        if kind != "value":
            raise self._refuse(describe, wanted, value)
        if value is None:
            return None
        if type(value) is not list or len(value) != length:
            raise self._refuse(describe, wanted, _BRIEF.repr(value))
        for index, item in enumerate(value):
            if type(item) is not bool:
                raise self._refuse(describe, wanted, f"element {index} {_BRIEF.repr(item)}")
        return value

    def _count(
        self,
        describe: Callable[[], str],
        geometry: HybridGeometry,
        request: RequestView,
        **fields: Any,
    ) -> int:
        kind, value = self._ask(describe, geometry, request, fields, 0)
        if kind != "value":
            raise self._refuse(describe, "an int", value)
        if type(value) is not int:
            raise self._refuse(describe, "an int", _BRIEF.repr(value))
        return value

    def split(
        self,
        geometry: HybridGeometry,
        request: RequestView,
        num_new_tokens: int,
        max_prefill_tokens: int,
    ) -> int:
        def describe() -> str:
            return f"split({describe_request(request)}, n={num_new_tokens})"

        return self._count(
            describe,
            geometry,
            request,
            call="split",
            n=int(num_new_tokens),
            max_prefill=int(max_prefill_tokens),
        )

    def decode_checkpoints(self, geometry: HybridGeometry, request: RequestView) -> tuple[int, ...]:
        def describe() -> str:
            return f"decode_checkpoints({describe_request(request)})"

        return self._positions(describe, geometry, request, call="decode_checkpoints")

    def prefill_checkpoint(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int
    ) -> int:
        def describe() -> str:
            return f"prefill_checkpoint({describe_request(request)}, n={num_new_tokens})"

        return self._count(
            describe, geometry, request, call="prefill_checkpoint", n=int(num_new_tokens)
        )


def _group(geometry: HybridGeometry, group: GroupSpec) -> int | dict[str, Any]:
    """``group`` as the worker finds it: its index in the geometry, or all of its fields."""
    for index, candidate in enumerate(geometry.groups):
        if candidate is group:
            return index
    return group_json(group)


def _load(worker: Worker, spec: str, deadline: float) -> Loaded | PolicyError | None:
    """The worker's first answer; ``None`` when the deadline came first."""
    try:
        return read_loaded(worker.receive(deadline))
    except _ChannelTimeout:
        return None
    except _ChannelClosed:
        status = worker.exit_status()
        return PolicyError(spec, "load", f"the process loading it ended (exit status {status})")
    except _MalformedMessage as error:
        return PolicyError(spec, "load", f"the worker sent a malformed message: {error}")


@contextmanager
def remote_policy(
    spec: str, limits: Limits, deadline: float, path: Sequence[str] = ()
) -> Iterator[RemotePolicy | None]:
    """The policy ``spec`` (a registered name or ``module:attribute``) loaded in a new worker.

    ``path``: folders the worker imports from first, and this process never.
    Yields ``None`` when ``deadline`` (``time.monotonic``; ``math.inf``: none)
    passed while loading. Raises :class:`PolicyError` when the policy cannot
    be loaded. On leaving, the worker and everything it started are killed.
    """
    cpu = None if limits.seconds is None else limits.seconds + limits.call_seconds + GRACE + 5
    worker = Worker("junction.reference.isolation._worker", [spec], path, cpu)
    try:
        loaded = _load(worker, spec, deadline)
        if isinstance(loaded, PolicyError):
            raise loaded
        yield None if loaded is None else RemotePolicy(worker, loaded, limits, deadline)
    finally:
        worker.close()
