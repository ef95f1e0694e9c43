"""The suite: which vLLM tests exercise the three decisions, and how they fare with the core.

A count run of every test of :data:`~.workspace.TEST_FILES` on unmodified
vLLM, the decision points wrapped in counters, selects the tests that call
one; a drop-in run repeats them with the core installed. :func:`judge` (a
pure function of the two runs' outcomes and :mod:`.expected`'s tables) gives
the verdicts, and :attr:`SuiteResult.ok` is the rule ``make vllm-suite``
exits by: every selected test passes without the core (except the recorded
ones) and with it (except recorded findings); a refusal or a skip that
proves nothing is a failure; a stale excuse is an error. The selection is
redone every run: a committed list would go stale, and the count run is the
baseline anyway.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from pathlib import Path

import attrs

from .expected import EXPECTED_TO_DIFFER, FAILS_WITHOUT_THE_CORE, ExpectedDifference
from .outcome import Status, TestOutcome
from .runs import run_tests
from .workspace import TEST_FILES, Workspace

__all__ = [
    "ACCEPTED",
    "COUNTED",
    "SuiteResult",
    "TestVerdict",
    "Verdict",
    "judge",
    "run_suite",
    "selected",
    "to_swap",
]


class Verdict(enum.Enum):
    """How one selected test counts."""

    PASSED = "passed"
    UNSUPPORTED = "failed: the core cannot express an option"
    FAILED = "failed"
    EXPECTED_TO_DIFFER = "differs where vLLM's expectation encodes a recorded finding"
    STALE_EXCUSE = "passes, but is listed as expected to differ"
    FAILS_WITHOUT_THE_CORE = "fails against unmodified vLLM (recorded; not counted)"
    VLLM_FAILED = "fails against unmodified vLLM (not recorded)"
    VLLM_PASSED = "passes against unmodified vLLM, but is recorded as failing"
    NOT_SELECTED = "recorded, but the count run did not select it"


# What make verify accepts; every other verdict fails the suite.
ACCEPTED = frozenset({Verdict.PASSED, Verdict.EXPECTED_TO_DIFFER, Verdict.FAILS_WITHOUT_THE_CORE})
# T: the tests that had a vLLM answer for the core to match.
COUNTED = frozenset(
    {
        Verdict.PASSED,
        Verdict.UNSUPPORTED,
        Verdict.FAILED,
        Verdict.EXPECTED_TO_DIFFER,
        Verdict.STALE_EXCUSE,
    }
)


@attrs.frozen
class TestVerdict:
    __test__ = False  # not a pytest test class

    nodeid: str
    verdict: Verdict
    reason: str  # shared by the tests failing the same way (an option's name)
    detail: str = ""  # this test's part (the option's value)


@attrs.frozen
class SuiteResult:
    """The selected tests' verdicts, and how many tests the count run saw."""

    collected: int
    verdicts: tuple[TestVerdict, ...]

    def count(self, *verdicts: Verdict) -> int:
        return sum(1 for v in self.verdicts if v.verdict in verdicts)

    @property
    def exercising(self) -> int:
        """``T``: selected tests that pass against unmodified vLLM and are not recorded failing."""
        return self.count(*COUNTED)

    @property
    def ok(self) -> bool:
        """The rule ``make verify`` applies (the module's docstring)."""
        return self.count(*ACCEPTED) == len(self.verdicts)


def selected(baseline: Mapping[str, TestOutcome]) -> list[str]:
    """The tests the count run saw call a decision point, in its order."""
    return [nodeid for nodeid, outcome in baseline.items() if outcome.exercised]


def run_suite(workspace: Workspace, reports: Path, jobs: int) -> SuiteResult:
    """Both runs, and each selected test's verdict (``RuntimeError`` when none is selected)."""
    baseline = run_tests(workspace, "count", TEST_FILES, reports, jobs)
    if not selected(baseline):  # never an empty pass: the counters, or the files, changed
        raise RuntimeError(f"none of the {len(baseline)} tests called a decision point")
    tests = to_swap(baseline)
    swapped = run_tests(workspace, "dropin", tests, reports, jobs) if tests else {}
    return judge(baseline, swapped)


def to_swap(
    baseline: Mapping[str, TestOutcome], known: Mapping[str, str] = FAILS_WITHOUT_THE_CORE
) -> list[str]:
    """The selected tests with a vLLM answer: passed unmodified, not recorded failing."""
    return [
        nodeid
        for nodeid in selected(baseline)
        if baseline[nodeid].status is Status.PASSED and nodeid not in known
    ]


def judge(
    baseline: Mapping[str, TestOutcome],
    swapped: Mapping[str, TestOutcome],
    expected: Mapping[str, ExpectedDifference] = EXPECTED_TO_DIFFER,
    known: Mapping[str, str] = FAILS_WITHOUT_THE_CORE,
) -> SuiteResult:
    """Each selected test's verdict from the count run (``baseline``) and the
    drop-in run (``swapped``, which must hold every test of :func:`to_swap`;
    ``KeyError`` otherwise), under the two tables of :mod:`.expected`."""
    chosen = selected(baseline)
    verdicts: list[TestVerdict] = []
    for nodeid in chosen:
        outcome, recorded = baseline[nodeid], known.get(nodeid)
        if recorded is not None:
            failed = outcome.status is Status.FAILED
            verdict = Verdict.FAILS_WITHOUT_THE_CORE if failed else Verdict.VLLM_PASSED
            verdicts.append(TestVerdict(nodeid, verdict, recorded))
        elif outcome.status is Status.PASSED:
            verdicts.append(_verdict(swapped[nodeid], expected.get(nodeid)))
        else:
            reason = outcome.error or outcome.status.value
            verdicts.append(TestVerdict(nodeid, Verdict.VLLM_FAILED, reason))
    unmatched = (set(expected) | set(known)) - set(chosen)
    verdicts.extend(
        TestVerdict(nodeid, Verdict.NOT_SELECTED, "a stale entry of audit/vllm/suite/expected.py")
        for nodeid in unmatched
    )
    return SuiteResult(len(baseline), tuple(sorted(verdicts, key=lambda v: v.nodeid)))


def _verdict(outcome: TestOutcome, excuse: ExpectedDifference | None) -> TestVerdict:
    nodeid = outcome.nodeid
    if outcome.status is Status.PASSED:
        if excuse is not None:
            return TestVerdict(nodeid, Verdict.STALE_EXCUSE, f"finding {excuse.finding}")
        return TestVerdict(nodeid, Verdict.PASSED, "")
    if outcome.status is Status.SKIPPED:  # passed unmodified: with the core it proved nothing
        return TestVerdict(nodeid, Verdict.FAILED, "skipped with the core swapped in")
    if outcome.unsupported is not None:  # a refusal fails, even where an excuse is listed
        option, value = outcome.unsupported
        return TestVerdict(nodeid, Verdict.UNSUPPORTED, option, f"{option}={value}")
    if excuse is not None:
        return TestVerdict(nodeid, Verdict.EXPECTED_TO_DIFFER, f"finding {excuse.finding}")
    return TestVerdict(nodeid, Verdict.FAILED, outcome.error or "failed")
