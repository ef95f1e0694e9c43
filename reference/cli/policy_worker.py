"""The process that runs an untrusted policy for ``fuzz``, and what it tells its parent.

``fuzz`` runs policies other teams are still writing, in their CI, where a
false pass is the worst outcome and a run that never ends the second worst.
Code in the same process can defeat any in-process guard: ``sys.exit(0)``
on import, a C loop that never releases the GIL, ``time.sleep(10**6)``. So the
policy is imported and run here, in a child process (``spawn``: a fresh
interpreter, no state forked from the parent) that the parent
(:mod:`.fuzz_supervisor`) can always stop, and that owns no deadline itself.

What crosses the pipe are typed, picklable values, never prose: :class:`Loaded`
or :class:`LoadFailed`, then an :class:`Example` before each example (so the
parent knows the scenario in progress), a ``PromiseVerdict`` after each batch
and at each failure, :class:`Crashed` if the harness itself raised, and
:class:`Finished`. The policy call in progress is not a message: the parent
must see it while the worker is stuck inside it, and one message per call
would cost a system call each, so :class:`CallBoard` keeps it in shared
memory (the call and the time it began) and :class:`WatchedPolicy` writes it
around every call.

Rejected: ``signal.alarm`` in one process (it cannot interrupt a C loop, and
a policy can install its own handler); threads (a thread cannot be stopped);
a subprocess running the CLI with its output parsed back (prose parsed back).
The worker ignores SIGINT, so a Ctrl-C reaches only the parent, which stops
it; its standard output goes to standard error, so whatever the policy prints
cannot mix into the report on standard output.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnContext
from typing import Any

import attrs

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.policy import (
    CheckedPolicy,
    Policy,
    PolicyError,
    RequestView,
    describe_request,
)
from junction.reference.harness import Promise, PromiseVerdict, Scenario, run_conformance
from junction.reference.policies.builtin import resolve_policy

__all__ = [
    "CallBoard",
    "Crashed",
    "Example",
    "Finished",
    "FuzzRequest",
    "LoadFailed",
    "Loaded",
    "Message",
    "WatchedPolicy",
    "work",
]


@attrs.frozen
class FuzzRequest:
    """What the worker runs: ``deadline`` is on ``time.monotonic``'s clock (system-wide)."""

    policy: str
    seed: int
    promises: tuple[Promise, ...]
    deadline: float


@attrs.frozen
class Loaded:
    policy: str  # the policy's own name


@attrs.frozen
class LoadFailed:
    message: str  # one line, naming the policy and what failed


@attrs.frozen
class Example:
    """An example about to run: the ``examples``-th of ``promise``, on ``scenario``."""

    promise: Promise
    examples: int
    scenario: Scenario


@attrs.frozen
class Crashed:
    message: str  # the harness itself raised: one line


@attrs.frozen
class Finished:
    """Every promise is done, or the deadline passed between examples."""


Message = Loaded | LoadFailed | Example | PromiseVerdict | Crashed | Finished

_CALL_BYTES = 400


class CallBoard:
    """The policy call in progress, in memory shared with the parent.

    ``since`` is when the call began (``time.monotonic``), 0 between calls;
    ``call`` names it. A torn read is harmless: the parent acts only on a
    call that has been running for its whole limit, and then nothing writes.
    """

    def __init__(self, context: SpawnContext) -> None:
        self._since = context.RawValue("d", 0.0)
        self._call = context.RawArray("c", _CALL_BYTES)

    def begin(self, call: str) -> None:
        self._call.value = call.encode("utf-8", "replace")[: _CALL_BYTES - 1]
        self._since.value = time.monotonic()

    def end(self) -> None:
        self._since.value = 0.0

    def read(self) -> tuple[float, str]:
        """``(since, call)``: ``since`` is 0 when no call is in progress."""
        since = float(self._since.value)
        return since, bytes(self._call.value).decode("utf-8", "replace")


class WatchedPolicy:
    """``policy`` with every call posted on ``board`` while it runs (a :class:`Policy`)."""

    def __init__(self, policy: Policy, name: str, board: CallBoard) -> None:
        self._policy = policy
        self._board = board
        self.name = name

    @property
    def fixed_boundaries(self) -> object:
        """The policy's optional declaration, read (and judged) by ``CheckedPolicy``:
        fuzzed with it, a false one is found by the engine's check."""
        return getattr(self._policy, "fixed_boundaries", False)

    @property
    def writes_prefill_checkpoints(self) -> object:
        """The policy's optional question, read (and judged) by ``CheckedPolicy``:
        fuzzed without it, a policy whose split relies on the backend's internal
        checkpoint would be judged on an engine that never writes one."""
        return getattr(self._policy, "writes_prefill_checkpoints", False)

    def prefill_checkpoint(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int
    ) -> Any:
        """Asked only when the policy declares ``writes_prefill_checkpoints``; a policy
        declaring it without the method raises here, which ``CheckedPolicy`` names."""
        self._board.begin(f"prefill_checkpoint({describe_request(request)}, n={num_new_tokens})")
        try:
            return self._policy.prefill_checkpoint(  # type: ignore[attr-defined]
                geometry, request, num_new_tokens
            )
        finally:
            self._board.end()

    @property
    def keeps_decode_checkpoints(self) -> object:
        """The policy's optional question (the next turn), read (and judged) by
        ``CheckedPolicy``: fuzzed without it, promise 9 would be n/a for a policy
        that makes it, and the engine would pin nothing."""
        return getattr(self._policy, "keeps_decode_checkpoints", False)

    def decode_checkpoints(self, geometry: HybridGeometry, request: RequestView) -> Any:
        """Asked only when the policy declares ``keeps_decode_checkpoints``."""
        self._board.begin(f"decode_checkpoints({describe_request(request)})")
        try:
            return self._policy.decode_checkpoints(geometry, request)  # type: ignore[attr-defined]
        finally:
            self._board.end()

    def checkpoint_positions(self, geometry: HybridGeometry, request: RequestView) -> Any:
        self._board.begin(f"checkpoint_positions({describe_request(request)})")
        try:
            return self._policy.checkpoint_positions(geometry, request)
        finally:
            self._board.end()

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> Any:
        self._board.begin(f"reachable_boundaries({group}, {describe_request(request)})")
        try:
            return self._policy.reachable_boundaries(geometry, group, request)
        finally:
            self._board.end()

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> Any:
        self._board.begin(
            f"block_mask({group}, {describe_request(request)}, {start_block}, {end_block})"
        )
        try:
            return self._policy.block_mask(
                geometry, group, request, start_block, end_block, boundaries
            )
        finally:
            self._board.end()

    def split(
        self,
        geometry: HybridGeometry,
        request: RequestView,
        num_new_tokens: int,
        max_prefill_tokens: int,
    ) -> Any:
        self._board.begin(f"split({describe_request(request)}, n={num_new_tokens})")
        try:
            return self._policy.split(geometry, request, num_new_tokens, max_prefill_tokens)
        finally:
            self._board.end()


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _load(spec: str) -> tuple[Policy, str]:
    """The policy and its name; :class:`PolicyError` for anything that goes wrong."""
    try:
        policy = resolve_policy(spec)
    except PolicyError:
        raise
    except BaseException as error:  # SystemExit on import, KeyboardInterrupt in a factory
        raise PolicyError(spec, "load", f"raised {_one_line(error)}") from error
    return policy, CheckedPolicy(policy).name


def work(request: FuzzRequest, connection: Connection, board: CallBoard) -> None:
    """The worker's entry point: load the policy, run the promises, report each step."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.dup2(2, 1)
    try:
        policy, name = _load(request.policy)
    except PolicyError as error:
        connection.send(LoadFailed(" ".join(str(error).split())))
        return
    connection.send(Loaded(name))

    def example(promise: Promise, examples: int, scenario: Scenario) -> None:
        connection.send(Example(promise, examples, scenario))

    try:
        run_conformance(
            WatchedPolicy(policy, name, board),
            seconds=max(request.deadline - time.monotonic(), 0.0),
            seed=request.seed,
            promises=request.promises,
            on_example=example,
            on_verdict=connection.send,
        )
    except BaseException as error:  # the harness itself, or a policy thread's doing
        connection.send(Crashed(_one_line(error)))
        return
    connection.send(Finished())
