"""The parent side of ``fuzz``: the harness here, the policy's code in a worker it asks.

``fuzz`` is a gate, so the policy's code never runs in this process.
:func:`supervise` starts :mod:`.policy_worker` (contained by :mod:`.processes`)
and runs the engine, the harness, Hypothesis and every promise check here,
with a :class:`RemotePolicy` that asks the worker for each answer over
:mod:`.policy_wire` and checks it into plain values before the engine sees
it: the worker sends answers, never verdicts. Each limit is a verdict: a
call past ``call_seconds`` or running ``GRACE`` past the deadline is
``timeout``; a call that would begin after the deadline is not made (a
:class:`PolicyOutOfTime`: the example in progress is abandoned, unjudged,
since the policy had no time to answer); a worker that dies or sends a
malformed message is ``error``; a promise that judged no example is
``unchecked``. The worker and every
process it started are killed then, and at the end of the run.
Why this split and no pickle: docs/design/fuzz-isolation.md.
"""

from __future__ import annotations

import itertools
import os
import reprlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import attrs

from junction.core import GroupSpec, HybridGeometry
from junction.reference.cli import policy_wire, terminal
from junction.reference.cli.policy_worker import geometry_json, group_json
from junction.reference.cli.processes import Contained
from junction.reference.engine.policy import (
    PolicyError,
    PolicyOutOfTime,
    PolicyTimeout,
    RequestView,
    describe_request,
)
from junction.reference.harness import (
    ConformanceReport,
    Promise,
    PromiseVerdict,
    Verdict,
    run_conformance,
)

__all__ = ["GRACE", "Limits", "LoadFailure", "RemotePolicy", "remote_policy", "supervise"]

GRACE = 1.0  # seconds past the deadline a call in flight may take to answer
MAX_NAME = 200  # characters of a policy's name
MAX_TEXT = 400  # characters of a message the worker sends (an exception, a load failure)

_BRIEF = reprlib.Repr()
_BRIEF.maxstring = _BRIEF.maxother = 80


@attrs.frozen
class Limits:
    """``seconds`` for the whole command; ``call_seconds`` for one policy call."""

    seconds: float
    call_seconds: float


@attrs.frozen
class LoadFailure:
    """The policy could not be loaded (bad usage: exit 2); ``message`` is one line."""

    message: str


def _text(value: object, limit: int = MAX_TEXT) -> str | None:
    """``value`` as one printable line of at most ``limit`` characters, if it is an exact str."""
    if type(value) is not str:
        return None
    line = "".join(c if c.isprintable() else " " for c in " ".join(value.split()))
    return line if len(line) <= limit else line[: limit - 3] + "..."


class _Worker:
    """The worker process and its two pipes (this side non-blocking), with deadlines."""

    def __init__(self, spec: str) -> None:
        to_worker, requests = os.pipe()
        answers, from_worker = os.pipe()
        argv = [sys.executable, "-m", "junction.reference.cli.policy_worker"]
        argv += [str(to_worker), str(from_worker), spec]
        # The worker imports what this process can: its module path, not just the environment's.
        path = os.pathsep.join(p or os.getcwd() for p in sys.path)
        env = {**os.environ, "PYTHONPATH": path}
        try:
            self.process = Contained(argv, pass_fds=(to_worker, from_worker), env=env)
        finally:
            os.close(to_worker)
            os.close(from_worker)
        os.set_blocking(requests, False)
        os.set_blocking(answers, False)
        self._requests, self._answers = requests, answers
        self._reader = policy_wire.FrameReader(answers)
        self.closed = False

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: dict[str, Any], deadline: float) -> None:
        policy_wire.write_frame(self._requests, message, deadline)

    def receive(self, deadline: float) -> Any:
        return self._reader.read(deadline, self.alive)

    def exit_status(self) -> int | None:
        """The worker's exit status, waiting a moment for it (it may be dying)."""
        try:
            return self.process.process.wait(timeout=0.5)
        except Exception:
            return None

    def close(self) -> None:
        """Kill the worker and everything it started; close the pipes. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self.process.kill()
        os.close(self._requests)
        os.close(self._answers)


@attrs.frozen
class _Loaded:
    name: str
    fixed_boundaries: bool
    writes_prefill_checkpoints: bool
    keeps_decode_checkpoints: bool


def _loaded(message: object) -> _Loaded | LoadFailure:
    """The worker's first message, checked field by field."""
    if type(message) is dict and set(message) == {"load_failed"}:
        text = _text(message["load_failed"])
        return LoadFailure(text if text else "the policy worker sent an empty load failure")
    if type(message) is not dict or set(message) != {"loaded"}:
        raise policy_wire.MalformedMessage("the first message must be loaded or load_failed")
    fields = message["loaded"]
    keys = {"name", "fixed_boundaries", "writes_prefill_checkpoints", "keeps_decode_checkpoints"}
    if type(fields) is not dict or set(fields) != keys:
        raise policy_wire.MalformedMessage(f"loaded must have exactly {sorted(keys)}")
    name = fields["name"]
    if type(name) is not str or not name or len(name) > MAX_NAME or not name.isprintable():
        raise policy_wire.MalformedMessage(
            f"the policy's name must be 1 to {MAX_NAME} printable characters"
        )
    flags = (
        fields["fixed_boundaries"],
        fields["writes_prefill_checkpoints"],
        fields["keeps_decode_checkpoints"],
    )
    if any(type(flag) is not bool for flag in flags):
        raise policy_wire.MalformedMessage("the policy's declarations must be bools")
    return _Loaded(name, *flags)


class RemotePolicy:
    """The worker's policy as the engine calls it (a ``Policy``): each answer crossed the wire.

    Every answer is checked here into exact built-in types before it is
    returned: positions as a tuple of ``int`` (never ``bool``), at most one
    per token; a mask as ``None`` or a list of exactly the blocks' ``bool``;
    a split or a checkpoint as an ``int``. A policy's own exception comes
    back as text and is a :class:`PolicyError`; a call past its limit a
    :class:`PolicyTimeout`; a call due after the run's deadline is not sent
    (:class:`PolicyOutOfTime`); a worker that ended or broke the format a
    :class:`PolicyError` after which :attr:`gone` is set and every call
    fails at once.
    """

    def __init__(self, worker: _Worker, loaded: _Loaded, limits: Limits, deadline: float) -> None:
        self.name = loaded.name
        self.fixed_boundaries = loaded.fixed_boundaries
        self.writes_prefill_checkpoints = loaded.writes_prefill_checkpoints
        self.keeps_decode_checkpoints = loaded.keeps_decode_checkpoints
        self._worker, self._limits, self._deadline = worker, limits, deadline
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
        if time.monotonic() >= self._deadline:
            problem = f"not asked: the run's time (--seconds {self._limits.seconds:g}) was spent"
            raise PolicyOutOfTime(self.name, describe(), problem)
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
        deadline = min(started + self._limits.call_seconds, self._deadline + GRACE)
        try:
            self._worker.send(message, deadline)
            answer = self._worker.receive(deadline)
        except policy_wire.ChannelTimeout:
            if deadline == started + self._limits.call_seconds:
                problem = f"did not return within {self._limits.call_seconds:g} s (--call-seconds)"
            else:
                problem = (
                    f"still running at the deadline (--seconds {self._limits.seconds:g}), "
                    f"{time.monotonic() - started:.1f} s after it was called"
                )
            raise self._end(PolicyTimeout(self.name, describe(), problem)) from None
        except policy_wire.ChannelClosed:
            status = self._worker.exit_status()
            problem = f"the worker process ended (exit status {status})"
            raise self._end(PolicyError(self.name, describe(), problem)) from None
        except policy_wire.MalformedMessage as error:
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
            text = _text(answer["raised"]) or "an exception"
            raise PolicyError(self.name, describe(), f"raised {text}")
        if kinds == {"value"}:
            return "value", answer["value"]
        if kinds == {"too_long"} and type(answer["too_long"]) is int:
            return "too_long", answer["too_long"]
        if kinds == {"unsupported"} and _text(answer["unsupported"], 100):
            return "unsupported", f"a {_text(answer['unsupported'], 100)}"
        if kinds == {"element", "type"} and type(answer["element"]) is int:
            kind = _text(answer["type"], 100)
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


def _unchecked(
    spec: str, seed: int, promises: tuple[Promise, ...] | None, limits: Limits, problem: str
) -> ConformanceReport:
    verdicts = tuple(
        PromiseVerdict(p, Verdict.UNCHECKED, 0, 0.0, error=f"policy {spec!r}: {problem}")
        for p in (tuple(Promise) if promises is None else promises)
    )
    return ConformanceReport(spec, seed, verdicts, limits.call_seconds)


def _load(worker: _Worker, spec: str, deadline: float) -> _Loaded | LoadFailure | None:
    """The worker's first answer; ``None`` when the deadline came first."""
    try:
        return _loaded(worker.receive(deadline))
    except policy_wire.ChannelTimeout:
        return None
    except policy_wire.ChannelClosed:
        status = worker.exit_status()
        return LoadFailure(
            f"policy {spec!r}: load: the process loading it ended (exit status {status})"
        )
    except policy_wire.MalformedMessage as error:
        return LoadFailure(f"policy {spec!r}: load: the worker sent a malformed message: {error}")


@contextmanager
def remote_policy(
    spec: str, limits: Limits, deadline: float
) -> Iterator[RemotePolicy | LoadFailure | None]:
    """The policy ``spec`` loaded in a new worker, as a :class:`RemotePolicy`.

    Yields a :class:`LoadFailure` when it cannot be loaded, ``None`` when
    ``deadline`` (``time.monotonic``) passed while loading. On leaving, the
    worker and everything it started are killed.
    """
    worker = _Worker(spec)
    try:
        loaded = _load(worker, spec, deadline)
        if isinstance(loaded, _Loaded):
            yield RemotePolicy(worker, loaded, limits, deadline)
        else:
            yield loaded
    finally:
        worker.close()


def supervise(
    policy: str,
    seed: int,
    promises: tuple[Promise, ...] | None,
    limits: Limits,
    on_verdict: Callable[[PromiseVerdict], None],
) -> ConformanceReport | LoadFailure:
    """Run ``policy``'s promises here, its code in a worker; the report, whatever the policy does.

    ``promises``: ``None`` for the promises the policy makes (``run_conformance``).

    The deadline counts from this call. ``on_verdict`` hears each verdict
    (after each batch, at each failure). A ``KeyboardInterrupt`` (or a
    termination signal raised as one) kills the worker and propagates.
    """
    deadline = time.monotonic() + limits.seconds
    with remote_policy(policy, limits, deadline) as remote:
        if isinstance(remote, LoadFailure):
            return remote
        if remote is None:
            problem = (
                f"the time ran out (--seconds {limits.seconds:g}) while loading the policy "
                "(its import or factory was still running); nothing was checked"
            )
            return _unchecked(policy, seed, promises, limits, problem)
        report = run_conformance(
            remote,
            seconds=max(deadline - time.monotonic(), 0.0),
            seed=seed,
            promises=promises,
            # A signal that reached a policy call of the harness's own (the dense bound's,
            # which catches everything) still stops the run at the next example.
            stop=lambda: remote.gone is not None or terminal.signalled() is not None,
            on_verdict=on_verdict,
        )
        if remote.interrupted is not None:
            raise remote.interrupted
        if terminal.signalled() is not None:
            raise KeyboardInterrupt
        return attrs.evolve(report, call_seconds=limits.call_seconds)
