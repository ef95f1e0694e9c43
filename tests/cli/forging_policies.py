"""Policies that try to make ``fuzz`` pass although they break a promise (issue 24).

Each is vLLM 0.33.0's policy (``vllm-0.33``), which breaks the replay promise
within the first examples, plus one attack on the gate itself. Before the
trust boundary each made ``fuzz`` exit 0; now each must exit 1 naming the
replay promise. The process policies at the end (the default policy, which
keeps its promises) try to outlive the run or hold the caller's output pipe
open; each writes the pids of what it started to the file named by
``$FORGING_PIDS`` so the test can look for them.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import stat
import struct
import sys
import time
from collections.abc import Sequence
from typing import Any

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.policy import RequestView
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.vllm import VllmPolicy


class PatchesTheChecks(VllmPolicy):
    """Replaces the harness's check with one that finds nothing, wherever the harness runs."""

    def __init__(self) -> None:
        super().__init__()
        from junction.reference.harness import promises, runner

        def nothing_wrong(*args: object, **kwargs: object) -> None:
            return None

        setattr(runner, "check", nothing_wrong)  # noqa: B010 - a patch, as an attack writes it
        setattr(promises, "check", nothing_wrong)  # noqa: B010


class _Exits(str):
    """A name that, unpickled, ends the reader with status 0."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (os._exit, (0,))


class NameRunsCodeInTheParent(VllmPolicy):
    name = _Exits("vllm-0.33")


def _forge_connections() -> None:
    """Every multiprocessing connection in this process: "kept, 1,000 examples", then done."""
    from multiprocessing.connection import Connection

    from junction.reference.harness import Promise, PromiseVerdict, Verdict

    for thing in gc.get_objects():
        if isinstance(thing, Connection) and thing.writable:
            for promise in Promise:
                thing.send(PromiseVerdict(promise, Verdict.KEPT, 1000, 0.1))
            thing.send(sys.modules["junction.reference.isolation._worker"].Finished())


class ForgesMessagesOnItsPipe(VllmPolicy):
    """Finds the worker's pipe with ``gc`` and sends forged verdicts on its first split."""

    forged = False

    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        if not self.forged:
            self.forged = True
            with contextlib.suppress(Exception):  # nothing to forge: carry on, violating
                _forge_connections()
        return super().split(geometry, request, num_new_tokens, budget)


def _frame(message: bytes) -> bytes:
    return struct.pack(">I", len(message)) + message


class ForgesFramesOnEveryPipe(VllmPolicy):
    """Writes forged "kept"/"finished" frames, and plausible answers, to every pipe it holds."""

    forged = False

    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        if not self.forged:
            self.forged = True
            forged = [
                b'{"verdict": "kept", "examples": 1000}',
                b'{"finished": true}',
                b'{"id": 1, "value": 0}',
            ]
            for name in os.listdir("/proc/self/fd"):
                try:
                    if stat.S_ISFIFO(os.fstat(int(name)).st_mode):
                        for message in forged:
                            os.write(int(name), _frame(message))
                except OSError:
                    pass
        return super().split(geometry, request, num_new_tokens, budget)


class _Assumes(list[Any]):
    """An answer whose ``len`` tells Hypothesis the example is invalid."""

    def __len__(self) -> int:
        from hypothesis import assume

        assume(False)
        return 0


class AnswersMakeExamplesInvalid(VllmPolicy):
    def checkpoint_positions(self, geometry: HybridGeometry, request: RequestView) -> Any:
        return _Assumes(super().checkpoint_positions(geometry, request))

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> Any:
        return _Assumes(super().reachable_boundaries(geometry, group, request))

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> list[bool] | None:
        mask = super().block_mask(geometry, group, request, start_block, end_block, boundaries)
        return None if mask is None else _Assumes(mask)


# -- processes ------------------------------------------------------------------
def _own_pid() -> int:
    """This process's pid as the test's ``/proc`` shows it (a worker in a PID namespace
    has another number inside it)."""
    try:
        return int(os.readlink("/proc/self"))
    except OSError:
        return os.getpid()


def _record(pid: int) -> None:
    with open(os.environ["FORGING_PIDS"], "a", encoding="utf-8") as pids:
        pids.write(f"{pid}\n")


def _sleeper() -> None:
    """In a forked child: record this pid and sleep with every inherited descriptor open."""
    _record(_own_pid())
    time.sleep(600)
    os._exit(0)


class Forks(JunctionPolicy):
    """Forks a child that sleeps holding every descriptor (the caller's pipes, before)."""

    def __init__(self) -> None:
        super().__init__()
        if os.fork() == 0:
            _sleeper()


class SpawnsADetachedChild(JunctionPolicy):
    """A double fork with ``setsid``: the grandchild leaves the worker's session and group."""

    def __init__(self) -> None:
        super().__init__()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                _sleeper()
            os._exit(0)
        os.wait()


class IgnoresSigtermAndHangs(JunctionPolicy):
    """Ignores SIGTERM, forks a child that ignores it too, and never answers a split."""

    def __init__(self) -> None:
        super().__init__()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _record(_own_pid())
        if os.fork() == 0:
            _sleeper()

    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        time.sleep(600)
        return 0
