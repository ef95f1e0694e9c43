"""Every call the engine makes to a retention policy (``protocol.py``), checked.

The engine calls a policy only through :class:`CheckedPolicy`, which turns
an exception or a malformed answer into a :class:`PolicyError` naming the
policy, the call and its arguments: a broken user policy must never look
like a broken engine. Policies are untrusted, so it catches
``BaseException`` (a policy's ``SystemExit(0)`` must not be a clean exit; in
``fuzz`` the policy runs in a worker that ignores SIGINT). Answers are judged
by cheap checks first and rendered bounded, so a huge answer is rejected at
once. A correct answer costs its checks and nothing more: a call's
description is built only once it failed.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any, TypeGuard

from junction.core import GroupSpec, HybridGeometry, JunctionError
from junction.reference.engine.finish import PUBLISHED_BY_DEFAULT, FinishReason
from junction.reference.engine.protocol import Policy, RequestView

# Policy and RequestView are re-exported: callers import the protocol with its checker.
__all__ = [
    "CheckedPolicy",
    "Policy",
    "PolicyError",
    "PolicyOutOfTime",
    "PolicyTimeout",
    "RequestView",
    "describe_request",
]


class PolicyError(JunctionError):
    """A policy raised, or answered something malformed; names the policy and the call."""

    def __init__(self, policy: str, call: str, problem: str) -> None:
        super().__init__(f"policy {policy!r}: {call}: {problem}")
        self.policy = policy
        self.call = call
        self.problem = problem


class PolicyTimeout(PolicyError):
    """A policy call that did not return within its limit (a proxy's answer: ``fuzz``'s
    worker is stopped at the limit, so no in-process policy raises it)."""


class PolicyOutOfTime(PolicyTimeout):
    """The run's hard limit came while an example was running: the call in flight was
    stopped there, or one due after it was not made.

    A timeout of the example in flight, which is judged, never dropped
    (except while a failure already found shrinks: that failure stands);
    the run ends there, as the deadline ends it.
    """


def describe_request(request: RequestView) -> str:
    """A request as a call names it: its token counts and junction."""
    return (
        f"P={request.num_prompt_tokens}, N={request.num_tokens}, "
        f"computed={request.num_computed_tokens}, J={request.shared_prefix_boundary}"
    )


_BRIEF = reprlib.Repr()
_BRIEF.maxstring = _BRIEF.maxother = 80


def _show(value: object) -> str:
    """``value``'s repr, bounded and on one line, whatever its ``__repr__`` does."""
    try:
        text = _BRIEF.repr(value)
    except BaseException as error:  # a hostile __repr__ must not escape the check
        text = f"<{type(value).__name__} whose repr raised {type(error).__name__}>"
    return " ".join(text.split())


def _raised(error: BaseException) -> str:
    """``raised Type: message``, bounded and on one line."""
    try:
        message = str(error)
    except BaseException:
        message = "<str() of the exception raised too>"
    message = " ".join(message.split())
    if len(message) > 200:
        message = message[:197] + "..."
    return (
        f"raised {type(error).__name__}: {message}" if message else f"raised {type(error).__name__}"
    )


def _is_sequence(answer: object) -> TypeGuard[Sequence[Any]]:
    """A sequence, not a string; tuples and lists skip the ABC check (the hot path)."""
    kind = type(answer)
    if kind is tuple or kind is list:
        return True
    return not isinstance(answer, (str, bytes)) and isinstance(answer, Sequence)


# A call as an error names it, built only once the call failed (a closure or a
# string per call would cost every call on the engine's hot path).


def _positions_call(group: GroupSpec | str | None, request: RequestView) -> str:
    if isinstance(group, str):
        return f"{group}({describe_request(request)})"
    if group is None:
        return f"checkpoint_positions({describe_request(request)})"
    return f"reachable_boundaries({group}, {describe_request(request)})"


def _block_mask_call(group: GroupSpec, request: RequestView, start: int, end: int) -> str:
    return f"block_mask({group}, {describe_request(request)}, {start}, {end})"


def _chunk_call(call: str, request: RequestView, num_new_tokens: int) -> str:
    return f"{call}({describe_request(request)}, n={num_new_tokens})"


def _optional_question(
    policy: object, name: str, declaration: str, method: str
) -> tuple[bool, Callable[..., object] | None]:
    """An optional question's declaration (a bool, ``False`` when absent) and, when it
    is ``True``, the method the engine then asks; :class:`PolicyError` naming either."""
    try:
        declared = getattr(policy, declaration, False)
        answer = getattr(policy, method, None) if declared is True else None
    except BaseException as error:
        raise PolicyError(name, declaration, _raised(error)) from None
    if declared is not True and declared is not False:
        raise PolicyError(name, declaration, f"must be a bool, got {_show(declared)}")
    if declared and not callable(answer):
        raise PolicyError(name, method, f"{declaration} is True: must be a method")
    return declared, answer


def _flag(policy: object, name: str, declaration: str) -> bool:
    """A policy's bool declaration (``False`` when absent); :class:`PolicyError` naming it."""
    try:
        value = getattr(policy, declaration, False)
    except BaseException as error:
        raise PolicyError(name, declaration, _raised(error)) from None
    if value is not True and value is not False:
        raise PolicyError(name, declaration, f"must be a bool, got {_show(value)}")
    return value


def _finishes(policy: object, name: str) -> frozenset[FinishReason]:
    """The finishes on which a policy keeping decode checkpoints publishes them
    (``decode_checkpoint_finishes``; :data:`PUBLISHED_BY_DEFAULT` when absent)."""
    declaration = "decode_checkpoint_finishes"
    try:
        value = getattr(policy, declaration, PUBLISHED_BY_DEFAULT)
        reasons = frozenset(value) if isinstance(value, (set, frozenset, tuple, list)) else None
    except BaseException as error:
        raise PolicyError(name, declaration, _raised(error)) from None
    if reasons is None or not all(isinstance(r, FinishReason) for r in reasons):
        rule = "must be a set of FinishReason (stopped, length_capped, aborted)"
        raise PolicyError(name, declaration, f"{rule}, got {_show(value)}")
    return reasons


def _budget(policy: object, name: str, declaration: str = "decode_checkpoint_budget") -> int | None:
    """A policy's ``decode_checkpoint_budget`` (the turns per path whose decode
    checkpoints stay cached) or ``decode_checkpoint_ttl`` (the later requests within
    which one must be resumed from): ``None`` (absent: off) or an int ``>= 1``."""
    try:
        value = getattr(policy, declaration, None)
    except BaseException as error:
        raise PolicyError(name, declaration, _raised(error)) from None
    if value is not None and (type(value) is not int or value < 1):
        raise PolicyError(name, declaration, f"must be None or an int >= 1, got {_show(value)}")
    return value


def _margin(policy: object, name: str) -> int:
    """A policy's ``decode_checkpoint_margin``: how far below the answer's end (in
    tokens) its earliest decode checkpoint may lie, an int ``>= 0`` (0 when absent),
    which the engine's pins reach down to."""
    declaration = "decode_checkpoint_margin"
    try:
        value = getattr(policy, declaration, 0)
    except BaseException as error:
        raise PolicyError(name, declaration, _raised(error)) from None
    if type(value) is not int or value < 0:
        raise PolicyError(name, declaration, f"must be an int >= 0, got {_show(value)}")
    return value


class CheckedPolicy:
    """Wraps a policy; every answer is validated and every failure named.

    Positions must be ints ``>= 0`` (checkpoints ``> 0``), at most one per
    token position of the request (``num_tokens + 1``); a mask must be
    ``None`` or exactly ``end_block - start_block`` bools; a split must be an
    int in ``[0, num_new_tokens]``. Any exception the policy raises,
    ``BaseException`` included, becomes a :class:`PolicyError`.
    """

    def __init__(self, policy: object) -> None:
        label = type(policy).__name__
        try:
            name = getattr(policy, "name", None)
            label = name if isinstance(name, str) else label
            checked = policy if isinstance(policy, Policy) else None
            missing = [
                method
                for method in (
                    "checkpoint_positions",
                    "reachable_boundaries",
                    "block_mask",
                    "split",
                )
                if not callable(getattr(policy, method, None))
            ]
        except BaseException as error:  # a property that raises, even SystemExit
            raise PolicyError(label, "Policy protocol", _raised(error)) from None
        if checked is None:
            problem = f"missing methods {missing}" if missing else "has no str attribute 'name'"
            raise PolicyError(label, "Policy protocol", f"{problem} (got {_show(policy)})")
        if not isinstance(name, str):
            raise PolicyError(label, "name", f"must be a str, got {_show(name)}")
        writes, answer = _optional_question(
            policy, name, "writes_prefill_checkpoints", "prefill_checkpoint"
        )
        keeps, decode = _optional_question(
            policy, name, "keeps_decode_checkpoints", "decode_checkpoints"
        )
        fixed = _flag(policy, name, "fixed_boundaries")
        self.policy: Policy = checked
        self.name = name
        #: Whether the engine asks :meth:`prefill_checkpoint` (the optional question).
        self.writes_prefill_checkpoints: bool = writes
        #: Whether the engine may reuse a request's reachable boundaries (the declaration).
        self.fixed_boundaries: bool = fixed
        self._prefill_checkpoint: Callable[[HybridGeometry, RequestView, int], object] | None = (
            answer
        )
        #: Whether the engine keeps decode checkpoints (asks :meth:`decode_checkpoints`).
        self.keeps_decode_checkpoints: bool = keeps
        #: The finishes on which the engine publishes them (none when it keeps none).
        self.decode_checkpoint_finishes = _finishes(policy, name) if keeps else frozenset()
        #: The turns per path whose decode checkpoints stay cached (None: every one).
        self.decode_checkpoint_budget = _budget(policy, name) if keeps else None
        #: The later requests within which a decode checkpoint must be resumed from, or
        #: is retired (None: kept like any cached block).
        self.decode_checkpoint_ttl = (
            _budget(policy, name, "decode_checkpoint_ttl") if keeps else None
        )
        #: How far below the answer's end its earliest decode checkpoint may lie.
        self.decode_checkpoint_margin = _margin(policy, name) if keeps else 0
        #: Whether a turn expiring leaves the checkpoint at its prompt's replay state,
        #: its path's last state, to the pool (read only with a time to live).
        self.decode_checkpoint_keep_path = (
            _flag(policy, name, "decode_checkpoint_keep_path") if keeps else False
        )
        #: Whether the policy promises the declared prefix (a declaration, never asked).
        self.keeps_declared_checkpoints: bool = _flag(policy, name, "keeps_declared_checkpoints")
        self._decode_checkpoints: Callable[[HybridGeometry, RequestView], object] | None = decode

    def _call_failed(self, call: str, error: BaseException) -> PolicyError:
        return PolicyError(self.name, call, _raised(error))

    def _positions(
        self, answer: object, minimum: int, request: RequestView, group: GroupSpec | str | None
    ) -> tuple[int, ...]:
        """``answer`` as a tuple, if it is positions ``>= minimum`` of ``request``.

        ``group``: the reachable boundaries' group, ``None`` for the
        checkpoint positions, a call's name for another question; with the
        request it names the call, which is
        described only on failure (this is on the engine's hot path).
        """
        if type(answer) is not tuple and not _is_sequence(answer):
            problem = f"must return a sequence of ints, got {_show(answer)}"
        elif len(answer) > request.num_tokens + 1:
            problem = (
                f"returned {len(answer)} positions; a request of {request.num_tokens} tokens "
                f"has at most {request.num_tokens + 1}"
            )
        else:
            for index, value in enumerate(answer):
                if type(value) is not int or value < minimum:
                    problem = f"element {index} is {_show(value)}; must be an int >= {minimum}"
                    break
            else:
                return tuple(answer)
        raise PolicyError(self.name, _positions_call(group, request), problem)

    def checkpoint_positions(
        self, geometry: HybridGeometry, request: RequestView
    ) -> tuple[int, ...]:
        try:
            answer = self.policy.checkpoint_positions(geometry, request)
        except PolicyError:  # a proxy's verdict on the call (a timeout) stands
            raise
        except BaseException as error:
            raise self._call_failed(_positions_call(None, request), error) from error
        return self._positions(answer, 1, request, None)

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        try:
            answer = self.policy.reachable_boundaries(geometry, group, request)
        except PolicyError:  # a proxy's verdict on the call (a timeout) stands
            raise
        except BaseException as error:
            raise self._call_failed(_positions_call(group, request), error) from error
        return self._positions(answer, 0, request, group)

    def check_fixed_boundaries(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        known: tuple[int, ...],
    ) -> None:
        """Raise :class:`PolicyError` unless the policy, asked again, still answers
        ``known``, its reachable boundaries for this group, prompt and junction:
        what the engine reuses for a policy declaring ``fixed_boundaries``."""
        answer = self.reachable_boundaries(geometry, group, request)
        if answer != known:
            raise PolicyError(
                self.name,
                "fixed_boundaries",
                f"declared True, but {_positions_call(group, request)} answered "
                f"{_show(answer)}, and {_show(known)} when first asked with this prompt "
                "and junction",
            )

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> Sequence[bool] | None:
        try:
            answer = self.policy.block_mask(
                geometry, group, request, start_block, end_block, boundaries
            )
        except PolicyError:  # a proxy's verdict on the call (a timeout) stands
            raise
        except BaseException as error:
            call = _block_mask_call(group, request, start_block, end_block)
            raise self._call_failed(call, error) from error
        if answer is None:
            return None
        length = end_block - start_block
        if (
            (type(answer) is not list and not _is_sequence(answer))
            or len(answer) != length
            # isinstance is type-exact here (bool cannot be subclassed), and mapped
            # it runs in C: a mask has a flag per block of the chunk.
            or not all(map(isinstance, answer, repeat(bool)))
        ):
            raise PolicyError(
                self.name,
                _block_mask_call(group, request, start_block, end_block),
                f"must return None or {length} bools, got {_show(answer)}",
            )
        return answer

    def split(
        self,
        geometry: HybridGeometry,
        request: RequestView,
        num_new_tokens: int,
        max_prefill_tokens: int,
    ) -> int:
        try:
            answer = self.policy.split(geometry, request, num_new_tokens, max_prefill_tokens)
        except PolicyError:  # a proxy's verdict on the call (a timeout) stands
            raise
        except BaseException as error:
            raise self._call_failed(_chunk_call("split", request, num_new_tokens), error) from error
        if type(answer) is not int or not 0 <= answer <= num_new_tokens:
            raise PolicyError(
                self.name,
                _chunk_call("split", request, num_new_tokens),
                f"must return an int in [0, {num_new_tokens}], got {_show(answer)}",
            )
        return answer

    def prefill_checkpoint(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int
    ) -> int:
        """Where the chunk ``[c, c + n)`` writes the prefill's checkpoint state (0: none).

        0 for a policy without the optional question. An answer must be 0 or
        an int strictly inside the chunk.
        """
        ask = self._prefill_checkpoint
        if ask is None:
            return 0
        try:
            answer = ask(geometry, request, num_new_tokens)
        except PolicyError:  # a proxy's verdict on the call (a timeout) stands
            raise
        except BaseException as error:
            call = _chunk_call("prefill_checkpoint", request, num_new_tokens)
            raise self._call_failed(call, error) from error
        start = request.num_computed_tokens
        if type(answer) is not int or not (answer == 0 or start < answer < start + num_new_tokens):
            raise PolicyError(
                self.name,
                _chunk_call("prefill_checkpoint", request, num_new_tokens),
                f"must return 0 or an int in ({start}, {start + num_new_tokens}), "
                f"got {_show(answer)}",
            )
        return answer

    def decode_checkpoints(self, geometry: HybridGeometry, request: RequestView) -> tuple[int, ...]:
        """Positions (ints ``>= 0``, at most ``computed``) the request promises its next
        turn if it finished with ``request.num_tokens`` tokens; ``()`` for a policy
        that keeps none."""
        ask = self._decode_checkpoints
        if ask is None:
            return ()
        try:
            answer = ask(geometry, request)
        except PolicyError:  # a proxy's verdict on the call (a timeout) stands
            raise
        except BaseException as error:
            raise self._call_failed(
                _positions_call("decode_checkpoints", request), error
            ) from error
        positions = self._positions(answer, 0, request, "decode_checkpoints")
        computed = request.num_computed_tokens
        for index, value in enumerate(positions):
            if value > computed:
                raise PolicyError(
                    self.name,
                    _positions_call("decode_checkpoints", request),
                    f"element {index} is {value}; must be <= the {computed} tokens computed",
                )
        return positions
