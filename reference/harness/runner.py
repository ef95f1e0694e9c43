"""``run_conformance``: does a retention policy keep its promises? And ``replay``.

``run_conformance(policy)`` drives the reference engine with the policy over
random geometries, prompts and budgets (:mod:`.strategies`; Hypothesis
generates them and shrinks a failure to a minimal one) and checks each
promise of docs/domain.md ("The promises") with :mod:`.promises`. A failure
comes back as a typed :class:`.verdict.Violation` whose :class:`.Scenario`
:func:`replay` runs again on any policy. Third parties pass their own engine
class too (``engine_factory``); :mod:`.engine_subject` is all the harness
reads of it.

Why Hypothesis inside a library function: its generation and shrinking are
the product here (a minimal counterexample is what an engine author can act
on); each batch runs with an explicit seed, so ``seed`` replays a run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import attrs
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Unsatisfiable

from junction.core import HybridGeometry
from junction.reference.engine.engine import Engine
from junction.reference.engine.policy import CheckedPolicy, Policy, PolicyError

from .engine_subject import EngineFactory, EngineSubject
from .promise import Promise
from .promises import check
from .report import ConformanceReport, PromiseVerdict
from .scenario import Scenario
from .strategies import scenarios
from .subject import Subject
from .verdict import Verdict, Violation

__all__ = ["OnProgress", "replay", "run_conformance"]

OnProgress = Callable[[Promise, int, Verdict], None]


def replay(
    scenario: Scenario, policy: Policy, engine_factory: EngineFactory = Engine
) -> Violation | None:
    """Run one scenario's check on ``policy`` in the engine: ``None`` if the promise holds.

    Raises :class:`PolicyError` when the policy raises or answers malformed.
    """
    return check(scenario, EngineSubject(policy, engine_factory))


class _Found(Exception):
    """Raised inside a Hypothesis run to report a failure (so it shrinks it)."""


@attrs.define
class _Progress:
    examples: int = 0
    first_failure: float | None = None
    scenario: Scenario | None = None
    violation: Violation | None = None
    error: str = ""
    status: Verdict = Verdict.KEPT


def _run_batch(
    promise: Promise,
    subject: Subject,
    where: Callable[[HybridGeometry], bool] | None,
    examples: int,
    batch_seed: int,
    progress: _Progress,
    started: float,
) -> None:
    strategy = scenarios(promise)
    if where is not None:
        strategy = strategy.filter(lambda scenario: where(scenario.geometry))

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
        progress.examples += 1
        try:
            violation, error = check(scenario, subject), ""
        except PolicyError as policy_error:
            violation, error = None, str(policy_error)
        if violation is None and not error:
            return
        if progress.first_failure is None:
            progress.first_failure = time.perf_counter() - started
        progress.scenario, progress.violation, progress.error = scenario, violation, error
        progress.status = Verdict.ERROR if error else Verdict.VIOLATED
        raise _Found

    try:
        run()
    except _Found:
        pass
    except Unsatisfiable:  # ``where`` leaves no geometry in this promise's scope
        progress.status = Verdict.NOT_APPLICABLE


def run_conformance(
    policy: Policy,
    *,
    examples: int = 100,
    seconds: float | None = None,
    seed: int = 0,
    promises: Iterable[Promise | str] = tuple(Promise),
    engine_factory: EngineFactory = Engine,
    fail_fast: bool = False,
    where: Callable[[HybridGeometry], bool] | None = None,
    on_progress: OnProgress | None = None,
) -> ConformanceReport:
    """Check every promise of docs/domain.md on ``policy``; a structured report.

    The promises take turns in batches (25 examples, doubling each round, so
    early rounds favour small inputs). Without ``seconds`` each promise runs
    ``examples`` examples; with ``seconds`` the rounds go on until the time
    is spent (at least one batch each). A promise stops at its first
    violation, which Hypothesis shrinks to a minimal :class:`Scenario`;
    ``fail_fast`` stops every promise then. The same ``seed`` replays the
    same examples in the same order. ``where`` narrows the geometries (e.g.
    an engine without partial hits: ``lambda g: not g.partial_hits``).
    ``on_progress(promise, examples, status)`` is called after each batch.

    Raises :class:`PolicyError` if ``policy`` does not implement the protocol,
    ``ValueError`` for an unknown promise name.
    """
    name = CheckedPolicy(policy).name  # fails early, naming what is missing
    chosen = [Promise.named(p) for p in promises]
    subject = EngineSubject(policy, engine_factory)
    state = {promise: _Progress() for promise in chosen}
    spent = dict.fromkeys(chosen, 0.0)
    started = time.perf_counter()

    def out_of_time() -> bool:
        return seconds is not None and time.perf_counter() - started >= seconds

    for round_ in range(10**9):
        if fail_fast and any(state[p].status.failed for p in chosen):
            break
        todo = [
            p
            for p in chosen
            if state[p].status is Verdict.KEPT
            and (seconds is not None or state[p].examples < examples)
        ]
        if not todo or (round_ and out_of_time()):
            break
        for index, promise in enumerate(todo):
            progress = state[promise]
            size = 25 * 2 ** min(round_, 6)
            if seconds is None:
                size = min(size, examples - progress.examples)
            batch_started = time.perf_counter()
            batch_seed = seed * 1_000_003 + round_ * 101 + chosen.index(promise)
            _run_batch(promise, subject, where, size, batch_seed, progress, started)
            spent[promise] += time.perf_counter() - batch_started
            if on_progress is not None:
                on_progress(promise, progress.examples, progress.status)
            if (fail_fast and progress.status.failed) or (
                out_of_time() and index < len(todo) - 1 and round_
            ):
                break
    verdicts = tuple(
        PromiseVerdict(
            promise,
            state[promise].status,
            state[promise].examples,
            spent[promise],
            state[promise].scenario,
            state[promise].violation,
            state[promise].error,
            state[promise].first_failure,
        )
        for promise in chosen
    )
    return ConformanceReport(name, seed, verdicts)
