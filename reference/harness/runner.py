"""``run_conformance``: does a retention policy keep its promises? And ``replay``.

``run_conformance(policy)`` drives the reference engine with the policy over
random geometries, prompts and budgets (:mod:`.strategies`; Hypothesis
generates them and shrinks a failure to a minimal one) and checks each
promise of docs/domain.md ("The promises") with :mod:`.promises`. A failure
comes back as a typed :class:`.verdict.Violation` whose :class:`.Scenario`
:func:`replay` runs again on any policy. Third parties pass their own engine
class too (``engine_factory``); :mod:`.engine_subject` is all the harness
reads of it. ``isolated=True`` runs the policy's code in a contained worker
process (:mod:`junction.reference.isolation`) and every check here.

Why Hypothesis inside a library function: its generation and shrinking are
the product here (a minimal counterexample is what an engine author can act
on); each batch runs with an explicit seed, so ``seed`` replays a run.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Sequence

import attrs
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky, Unsatisfiable

from junction.core import HybridGeometry, InvalidArgument
from junction.reference.engine.engine import Engine
from junction.reference.engine.eviction import EvictionPolicy
from junction.reference.engine.policy import (
    CheckedPolicy,
    Policy,
    PolicyError,
    PolicyOutOfTime,
    PolicyTimeout,
)
from junction.reference.isolation import CALL_SECONDS, Limits, remote_policy
from junction.reference.policies.registry import resolve_policy

from .engine_subject import EngineFactory, EngineSubject
from .promise import Promise
from .promises import check
from .report import ConformanceReport, PromiseVerdict
from .scenario import Scenario
from .strategies import scenarios
from .subject import Subject
from .verdict import Verdict, Violation

__all__ = ["MIN_EXAMPLES", "OnExample", "OnProgress", "OnVerdict", "replay", "run_conformance"]

MIN_EXAMPLES = 10  # examples a promise must judge to be kept, unless the caller names another

OnProgress = Callable[[Promise, int, Verdict], None]
OnExample = Callable[[Promise, int, Scenario], None]
OnVerdict = Callable[[PromiseVerdict], None]


def replay(
    scenario: Scenario,
    policy: Policy,
    engine_factory: EngineFactory = Engine,
    eviction: EvictionPolicy | None = None,
) -> Violation | None:
    """Run one scenario's check on ``policy`` in the engine: ``None`` if the promise holds.

    ``eviction``: the engine's eviction policy (``None``: its default, LRU).
    Raises :class:`PolicyError` when the policy raises or answers malformed.
    """
    return check(scenario, EngineSubject(policy, engine_factory, eviction))


class _Found(Exception):
    """Raised inside a Hypothesis run to report a failure (so it shrinks it)."""


class _OutOfTime(BaseException):
    """Raised inside a Hypothesis run at the deadline: not a failure, so nothing shrinks.

    Hypothesis treats ``Exception`` (and ``SystemExit``) as a failing example
    to shrink; any other ``BaseException`` ends the run at once.
    """


_UNCHECKED = "no example was judged before the time ran out"
_OUT_OF_SCOPE = (
    "no example was judged: none in the promise's scope (``where`` left no geometry), "
    "or every one was invalid"
)


@attrs.define
class _Progress:
    promise: Promise
    examples: int = 0
    spent: float = 0.0
    first_failure: float | None = None
    scenario: Scenario | None = None
    violation: Violation | None = None
    error: str = ""
    status: Verdict = Verdict.KEPT
    exhausted: bool = False  # Hypothesis found no valid example in its last batch
    flaky: bool = False  # the failure found did not fail again when Hypothesis replayed it

    def verdict(self, minimum: int, running_since: float | None = None) -> PromiseVerdict:
        """The verdict so far: kept on fewer than ``minimum`` examples is ``too few``
        (``running_since``: when the batch now running began)."""
        spent = self.spent
        if running_since is not None:
            spent += time.perf_counter() - running_since
        status, error = self.status, self.error
        if status is Verdict.KEPT and not self.examples:
            status, error = Verdict.UNCHECKED, _UNCHECKED
        elif status is Verdict.KEPT and self.examples < minimum:
            status = Verdict.TOO_FEW
            error = (
                f"judged on {self.examples} examples, fewer than {minimum} "
                "(min_examples; --min-examples)"
            )
        return PromiseVerdict(
            self.promise,
            status,
            self.examples,
            spent,
            self.scenario,
            self.violation,
            error,
            self.first_failure,
            self.flaky,
        )


@attrs.define
class _Hooks:
    deadline: Callable[[], bool]  # the time is spent, or the caller said stop
    on_example: OnExample | None
    on_verdict: OnVerdict | None
    minimum: int  # examples a promise must judge to be kept
    # A proxy met its hard limit mid-example (PolicyOutOfTime): the run is over, even
    # without ``seconds``, since every later call would be refused the same way.
    ended: bool = False

    def out_of_time(self) -> bool:
        return self.ended or self.deadline()


def _run_batch(
    subject: Subject,
    where: Callable[[HybridGeometry], bool] | None,
    examples: int,
    batch_seed: int,
    progress: _Progress,
    started: float,
    hooks: _Hooks,
) -> None:
    strategy = scenarios(progress.promise)
    if where is not None:
        strategy = strategy.filter(lambda scenario: where(scenario.geometry))
    batch_started = time.perf_counter()

    @hypothesis_seed(batch_seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(strategy)
    def run(scenario: Scenario) -> None:
        if hooks.out_of_time():
            raise _OutOfTime
        if hooks.on_example is not None:
            hooks.on_example(progress.promise, progress.examples + 1, scenario)
        status = Verdict.VIOLATED
        try:
            violation, error = check(scenario, subject), ""
        except PolicyOutOfTime as out_of_time:
            hooks.ended = True
            if progress.scenario is not None:  # shrinking a failure found: that one stands
                raise _OutOfTime from None
            violation, error, status = None, str(out_of_time), Verdict.TIMEOUT  # judged
        except PolicyError as policy_error:
            violation, error = None, str(policy_error)
            status = Verdict.TIMEOUT if isinstance(policy_error, PolicyTimeout) else Verdict.ERROR
        # Counted once judged: an example Hypothesis drops as invalid (an assumption
        # raised inside the check) is no evidence, and a promise with none is unchecked.
        progress.examples += 1
        if violation is None and not error:
            return
        if progress.first_failure is None:
            progress.first_failure = time.perf_counter() - started
        progress.scenario, progress.violation, progress.error = scenario, violation, error
        progress.status = status
        if hooks.on_verdict is not None:  # each smaller failure while shrinking, too
            hooks.on_verdict(progress.verdict(hooks.minimum, batch_started))
        raise _Found

    try:
        run()
    except (_Found, _OutOfTime):
        pass
    except Flaky:  # it failed, then passed on replay: the failing example found is the verdict
        if progress.scenario is None:
            raise
        progress.flaky = True
    except Unsatisfiable:  # ``where`` leaves no geometry in scope, or all were invalid
        progress.exhausted = True
        if not progress.examples:
            progress.status, progress.error = Verdict.UNCHECKED, _OUT_OF_SCOPE
    finally:
        progress.spent += time.perf_counter() - batch_started


def run_conformance(
    policy: Policy | str,
    *,
    isolated: bool = False,
    call_seconds: float | None = None,
    examples: int = 100,
    seconds: float | None = None,
    min_examples: int | None = None,
    policy_path: Sequence[str] = (),
    seed: int = 0,
    promises: Iterable[Promise | str] | None = None,
    engine_factory: EngineFactory = Engine,
    eviction: EvictionPolicy | None = None,
    fail_fast: bool = False,
    where: Callable[[HybridGeometry], bool] | None = None,
    stop: Callable[[], bool] | None = None,
    on_progress: OnProgress | None = None,
    on_example: OnExample | None = None,
    on_verdict: OnVerdict | None = None,
) -> ConformanceReport:
    """Check every promise of docs/domain.md on ``policy``; a structured report.

    ``policy`` is a policy, or a spec: a registered name or ``module:attribute``.
    ``isolated=True`` runs the policy's code in a contained worker process
    (:mod:`junction.reference.isolation`) and every check here, so nothing
    the policy does can forge a verdict, hang the run or outlive it; the
    policy must then be a spec, which the worker imports first from the
    folders ``policy_path`` names (this process never does: a policy's
    folder on ``PYTHONPATH`` runs its ``sitecustomize.py`` here). There, a
    call past ``call_seconds`` (default
    10) is a ``timeout`` verdict, the policy's import counts against
    ``seconds``, and a load that the deadline interrupts leaves every promise
    ``unchecked``.

    The promises take turns in batches (25 examples, doubling each round, so
    early rounds favour small inputs). Without ``seconds`` each promise runs
    ``examples`` examples; with ``seconds`` the rounds go on until the time
    is spent, and no example starts after it (a batch, or a shrink, in
    progress stops there; a failure already found is kept). An example
    running at the deadline is judged: an isolated policy's calls each
    still get ``call_seconds``, up to a hard limit ``seconds`` +
    ``call_seconds`` + 1 s, where the example is a ``timeout``. A promise
    that judged no example (none ran in time, none was in scope, every one
    was invalid) is ``unchecked``, and one kept on fewer than
    ``min_examples`` (default :data:`MIN_EXAMPLES`; without ``seconds`` at
    most ``examples``) is ``too few``: each fails the run, never a pass. A
    promise stops at its first violation, which Hypothesis shrinks to a
    minimal :class:`Scenario` (a failure that does not fail again on
    replay is still the verdict, ``flaky`` set); ``fail_fast`` stops every
    promise then. The
    same ``seed`` replays the same examples in the same order. ``where``
    narrows the geometries (e.g. an engine without partial hits:
    ``lambda g: not g.partial_hits``). ``stop()`` answering True ends the run
    as the time running out does (an isolated policy's worker that is gone
    does too), and so does a :class:`PolicyOutOfTime` from a proxy policy:
    the example it interrupts is a ``timeout``, unless it was shrinking a
    failure already found.
    ``eviction`` is the engine's eviction policy (``None``: its default,
    LRU); only the safety promise's scenarios fill the pool, so it is the
    one it changes.

    ``promises=None`` checks the promises the policy makes: the next turn
    only for a policy that declares ``keeps_decode_checkpoints``, the
    declared prefix only for one that declares ``keeps_declared_checkpoints``
    (``Promise.applies_to``). Named in ``promises`` for a policy that does
    not declare it, a promise is ``unchecked`` and fails.

    Hooks: ``on_progress(promise, examples, status)`` after each batch;
    ``on_example(promise, examples, scenario)`` before each example (its
    ordinal and input); ``on_verdict(verdict)`` after each batch and at each
    failure found, shrinking included.

    Raises :class:`PolicyError` if the policy cannot be loaded or does not
    implement the protocol, ``ValueError`` for an unknown promise name, and
    :class:`InvalidArgument` for a live policy with ``isolated=True``,
    ``call_seconds`` without it (a call in this process cannot be stopped),
    or a ``min_examples`` that is not an int >= 1.
    """
    if min_examples is None:
        min_examples = MIN_EXAMPLES if seconds is not None else min(MIN_EXAMPLES, examples)
    if type(min_examples) is not int or min_examples < 1:
        raise InvalidArgument("min_examples", min_examples, "must be an int >= 1")
    run = functools.partial(
        _run,
        examples=examples,
        minimum=min_examples,
        seed=seed,
        promises=promises,
        engine_factory=engine_factory,
        eviction=eviction,
        fail_fast=fail_fast,
        where=where,
        on_progress=on_progress,
        on_example=on_example,
        on_verdict=on_verdict,
    )
    if isolated:
        limits = Limits(seconds, CALL_SECONDS if call_seconds is None else call_seconds)
        where_from = tuple(str(p) for p in policy_path)
        return _isolated(policy, limits, run, stop, seed, promises, min_examples, where_from)
    if call_seconds is not None:
        rule = "a limit per call needs isolated=True: a call in this process cannot be stopped"
        raise InvalidArgument("call_seconds", call_seconds, rule)
    if isinstance(policy, str):
        policy = resolve_policy(policy)
    return run(policy, seconds=seconds, stop=stop)


def _isolated(
    spec: Policy | str,
    limits: Limits,
    run: Callable[..., ConformanceReport],
    stop: Callable[[], bool] | None,
    seed: int,
    promises: Iterable[Promise | str] | None,
    minimum: int,
    policy_path: Sequence[str],
) -> ConformanceReport:
    """``run`` on the policy ``spec`` loaded in a worker; the deadline counts from here."""
    if not isinstance(spec, str):
        rule = (
            "isolated=True needs a spec the worker imports: a registered name or module:attribute"
        )
        raise InvalidArgument("policy", spec, rule)
    deadline = time.monotonic() + (math.inf if limits.seconds is None else limits.seconds)
    with remote_policy(spec, limits, deadline, policy_path) as remote:
        if remote is None:
            return _unchecked(spec, seed, promises, limits, minimum)
        left = None if limits.seconds is None else max(deadline - time.monotonic(), 0.0)
        report = run(
            remote,
            seconds=left,
            stop=lambda: remote.gone is not None or (stop is not None and stop()),
        )
        if remote.interrupted is not None:  # Ctrl-C, or a termination signal, during a call
            raise remote.interrupted
    return attrs.evolve(report, call_seconds=limits.call_seconds)


def _unchecked(
    spec: str, seed: int, promises: Iterable[Promise | str] | None, limits: Limits, minimum: int
) -> ConformanceReport:
    """Every promise asked for ``unchecked``: the time ran out while the policy loaded."""
    problem = (
        f"policy {spec!r}: the time ran out ({limits.named}) while loading the policy "
        "(its import or factory was still running); nothing was checked"
    )
    verdicts = tuple(
        PromiseVerdict(Promise.named(p), Verdict.UNCHECKED, 0, 0.0, error=problem)
        for p in (tuple(Promise) if promises is None else promises)
    )
    return ConformanceReport(spec, seed, verdicts, limits.call_seconds, minimum)


def _run(
    policy: Policy,
    *,
    examples: int,
    minimum: int,
    seconds: float | None,
    seed: int,
    promises: Iterable[Promise | str] | None,
    engine_factory: EngineFactory,
    eviction: EvictionPolicy | None,
    fail_fast: bool,
    where: Callable[[HybridGeometry], bool] | None,
    stop: Callable[[], bool] | None,
    on_progress: OnProgress | None,
    on_example: OnExample | None,
    on_verdict: OnVerdict | None,
) -> ConformanceReport:
    """:func:`run_conformance` on a policy object in this process."""
    checked = CheckedPolicy(policy)  # fails early, naming what is missing
    name = checked.name
    if promises is None:  # the promises this policy makes (its declaration, a checked bool)
        promises = [p for p in Promise if p.applies_to(checked)]
    chosen = [Promise.named(p) for p in promises]
    subject = EngineSubject(policy, engine_factory, eviction)
    state = {promise: _Progress(promise) for promise in chosen}
    for promise in chosen:  # asked for a promise the policy does not make: never a pass
        if not promise.applies_to(checked):
            state[promise].status = Verdict.UNCHECKED
            state[promise].error = (
                f"{name} does not make the {promise.value} promise "
                f"(it does not declare {promise.declaration} = True)"
            )
    started = time.perf_counter()

    def deadline() -> bool:
        if stop is not None and stop():
            return True
        return seconds is not None and time.perf_counter() - started >= seconds

    hooks = _Hooks(deadline, on_example, on_verdict, minimum)
    for round_ in range(10**9):
        if fail_fast and any(state[p].status.failed for p in chosen):
            break
        todo = [
            p
            for p in chosen
            if state[p].status is Verdict.KEPT
            and not state[p].exhausted
            and (seconds is not None or state[p].examples < examples)
        ]
        if not todo or hooks.out_of_time():
            break
        for promise in todo:
            progress = state[promise]
            size = 25 * 2 ** min(round_, 6)
            if seconds is None:
                size = min(size, examples - progress.examples)
            batch_seed = seed * 1_000_003 + round_ * 101 + chosen.index(promise)
            _run_batch(subject, where, size, batch_seed, progress, started, hooks)
            if on_progress is not None:
                on_progress(promise, progress.examples, progress.status)
            if on_verdict is not None:
                on_verdict(progress.verdict(minimum))
            if (fail_fast and progress.status.failed) or hooks.out_of_time():
                break
    verdicts = tuple(state[p].verdict(minimum) for p in chosen)
    return ConformanceReport(name, seed, verdicts, min_examples=minimum)
