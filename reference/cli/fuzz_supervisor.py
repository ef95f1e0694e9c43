"""The parent side of ``fuzz``: the policy's worker process run against the clock.

The supervisor starts :mod:`.policy_worker`, folds its messages into the
report so far, and owns both limits: the command's deadline (``--seconds``,
the policy's import included) and the per-call limit (``--call-seconds``,
read from the worker's :class:`.policy_worker.CallBoard`). Whatever the
policy does, the supervisor ends: it stops the worker (SIGTERM, then
SIGKILL) and reports what it knows, so the outcome is always a typed
:class:`ConformanceReport` (or a :class:`LoadFailure`), never a hang or a
false pass.

The rules, each a verdict of its own:

* a policy call running past ``call_seconds`` is ``timeout``, naming the
  call, with the scenario in progress as the counterexample;
* at the deadline the worker starts no new example and has ``GRACE`` seconds
  to finish the one in flight; an example still running then is ``timeout``
  too (an example takes milliseconds; one still running a second past the
  deadline is stuck: in a policy call shorter than its limit, or in the
  policy's answer's own methods);
* a worker that ends without finishing is ``error`` on the scenario in
  progress (``os._exit``, a crash in native code);
* a promise that ran no example is ``unchecked``, which fails the run.

Rejected: folding a final report from the worker only (a worker killed at a
deadline sends nothing); waiting for the worker to notice the deadline itself
(it cannot while stuck in a policy call).
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

import attrs

from junction.reference.cli.policy_worker import (
    CallBoard,
    Crashed,
    Example,
    Finished,
    FuzzRequest,
    Loaded,
    LoadFailed,
    work,
)
from junction.reference.harness import ConformanceReport, Promise, PromiseVerdict, Verdict

__all__ = ["GRACE", "Limits", "LoadFailure", "supervise"]

GRACE = 1.0  # seconds past the deadline the example in flight may take to finish
_POLL = 0.05  # how often the call board is read while no message arrives


@attrs.frozen
class Limits:
    """``seconds`` for the whole command; ``call_seconds`` for one policy call."""

    seconds: float
    call_seconds: float


@attrs.frozen
class LoadFailure:
    """The policy could not be loaded (bad usage: exit 2); ``message`` is one line."""

    message: str


class _Fold:
    """The report so far, from the worker's messages and what the supervisor saw."""

    def __init__(self, spec: str, request: FuzzRequest, limits: Limits) -> None:
        self.policy = spec
        self.seed = request.seed
        self.limits = limits
        self.verdicts = {
            p: PromiseVerdict(
                p, Verdict.UNCHECKED, 0, 0.0, error="no example ran before the run ended"
            )
            for p in request.promises
        }
        self.current: Example | None = None
        self.started = time.perf_counter()
        self._running_since: float | None = None

    def example(self, message: Example) -> None:
        self.current = message
        if self._running_since is None:
            self._running_since = time.perf_counter()

    def verdict(self, verdict: PromiseVerdict) -> None:
        self.verdicts[verdict.promise] = verdict
        self._running_since = None

    def stop(self, status: Verdict, problem: str) -> None:
        """The example in progress ends the run with ``status``: ``problem`` names why."""
        message = f"policy {self.policy!r}: {problem}"
        if self.current is None:  # nothing ran yet: the first unchecked promise takes it
            promise = next(iter(self.verdicts))
            self.verdicts[promise] = attrs.evolve(
                self.verdicts[promise], status=status, error=message
            )
            return
        promise, before = self.current.promise, self.verdicts[self.current.promise]
        if before.status.failed and before.status is not Verdict.UNCHECKED:
            return  # a failure already found (shrinking, say) stays the verdict
        now = time.perf_counter()
        running = 0.0 if self._running_since is None else now - self._running_since
        self.verdicts[promise] = PromiseVerdict(
            promise,
            status,
            self.current.examples,
            before.seconds + running,
            self.current.scenario,
            None,
            message,
            now - self.started,
        )

    def not_loaded(self) -> None:
        problem = (
            f"the time ran out (--seconds {self.limits.seconds:g}) while loading the "
            "policy (its import or factory was still running); nothing was checked"
        )
        message = f"policy {self.policy!r}: {problem}"
        for promise, verdict in self.verdicts.items():
            self.verdicts[promise] = attrs.evolve(verdict, error=message)

    def report(self) -> ConformanceReport:
        verdicts = tuple(self.verdicts.values())
        return ConformanceReport(self.policy, self.seed, verdicts, self.limits.call_seconds)


def _start(request: FuzzRequest, board: CallBoard, sender: Connection) -> BaseProcess:
    context = multiprocessing.get_context("spawn")
    worker = context.Process(
        target=work, args=(request, sender, board), name="junction fuzz: policy", daemon=True
    )
    # The child inherits an ignored SIGINT, so a Ctrl-C during its start-up
    # (before ``work`` ignores it itself) cannot print a traceback from it.
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    try:
        worker.start()
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous)
    return worker


def _stop(worker: BaseProcess) -> None:
    worker.join(0.2)
    if worker.exitcode is None:
        worker.terminate()
        worker.join(0.5)
    if worker.exitcode is None:
        worker.kill()
        worker.join(2.0)


def _watch(
    worker: BaseProcess,
    receiver: Connection,
    board: CallBoard,
    fold: _Fold,
    deadline: float,
    on_verdict: Callable[[PromiseVerdict], None],
) -> LoadFailure | None:
    limits, loaded = fold.limits, False
    while True:
        now = time.monotonic()
        end = deadline + (GRACE if loaded else 0.0)
        since, call = board.read()
        if now >= end:
            if not loaded:
                fold.not_loaded()
            elif since:
                fold.stop(
                    Verdict.TIMEOUT,
                    f"{call}: still running at the deadline (--seconds {limits.seconds:g}), "
                    f"{now - since:.1f} s after it was called",
                )
            elif fold.current is not None:
                fold.stop(
                    Verdict.TIMEOUT,
                    f"an example was still running {GRACE:g} s past the deadline "
                    f"(--seconds {limits.seconds:g}); the last policy call, {call}, had returned",
                )
            return None
        if since and now - since > limits.call_seconds:
            fold.stop(
                Verdict.TIMEOUT,
                f"{call}: did not return within {limits.call_seconds:g} s (--call-seconds)",
            )
            return None
        if not receiver.poll(min(_POLL, end - now)):
            continue
        try:
            message = receiver.recv()
        except Exception:  # the worker ended (EOF), or died mid-message
            worker.join(0.5)
            code = worker.exitcode
            if not loaded:
                return LoadFailure(
                    f"policy {fold.policy!r}: load: the process loading it ended "
                    f"(exit status {code})"
                )
            where = f"during {call}" if since else f"after {call} returned" if call else ""
            fold.stop(Verdict.ERROR, f"the worker process ended (exit status {code}) {where}")
            return None
        if isinstance(message, Loaded):
            fold.policy, loaded = message.policy, True
        elif isinstance(message, LoadFailed):
            return LoadFailure(message.message)
        elif isinstance(message, Example):
            fold.example(message)
        elif isinstance(message, PromiseVerdict):
            fold.verdict(message)
            on_verdict(message)
        elif isinstance(message, Crashed):
            fold.stop(Verdict.ERROR, f"the harness raised {message.message}")
            return None
        elif isinstance(message, Finished):
            return None


def supervise(
    policy: str,
    seed: int,
    promises: tuple[Promise, ...],
    limits: Limits,
    on_verdict: Callable[[PromiseVerdict], None],
) -> ConformanceReport | LoadFailure:
    """Run ``policy``'s promises in a worker process; the report, whatever the policy does.

    The deadline counts from this call. ``on_verdict`` hears each verdict the
    worker sends (after each batch, at each failure). A ``KeyboardInterrupt``
    stops the worker and propagates.
    """
    deadline = time.monotonic() + limits.seconds
    request = FuzzRequest(policy, seed, promises, deadline)
    board = CallBoard(multiprocessing.get_context("spawn"))
    receiver, sender = multiprocessing.get_context("spawn").Pipe(duplex=False)
    fold = _Fold(policy, request, limits)
    worker = _start(request, board, sender)
    sender.close()  # the worker's end: once it exits, ``recv`` sees EOF
    try:
        failure = _watch(worker, receiver, board, fold, deadline, on_verdict)
    finally:
        _stop(worker)
        receiver.close()
    return failure if failure is not None else fold.report()
