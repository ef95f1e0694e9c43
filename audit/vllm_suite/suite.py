"""The suite: which vLLM tests exercise the three decisions, and how they fare with the core.

1. Count run: every test of :data:`~.workspace.TEST_FILES` against
   unmodified vLLM, the decision points wrapped in counters. The tests that
   called one are the suite (selected mechanically, by what they call).
2. Drop-in run: those tests again with the core installed.

Every selected test must pass against unmodified vLLM, except the ones
recorded in :data:`~.expected.FAILS_WITHOUT_THE_CORE` (which must still
fail, and are left out of the count). With the core, a failure counts
against it unless its test is in :data:`~.expected.EXPECTED_TO_DIFFER`
under a recorded finding; an excuse whose test passes is stale, and an error.
Why the selection is redone on every run instead of committed: a list
would silently go stale if vLLM's tests or the decision points changed, and
the count run is also the unmodified baseline the drop-in run is judged
against, so it costs nothing extra.
"""

from __future__ import annotations

import enum
from pathlib import Path

import attrs

from .expected import EXPECTED_TO_DIFFER, FAILS_WITHOUT_THE_CORE, check_tables
from .outcome import Status, TestOutcome
from .runs import run_tests
from .workspace import TEST_FILES, Workspace

__all__ = ["SuiteResult", "TestVerdict", "Verdict", "run_suite"]


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
        """``T``: selected tests that pass against unmodified vLLM (or differ by a finding)."""
        return self.count(
            Verdict.PASSED,
            Verdict.UNSUPPORTED,
            Verdict.FAILED,
            Verdict.EXPECTED_TO_DIFFER,
            Verdict.STALE_EXCUSE,
        )

    @property
    def ok(self) -> bool:
        """Every counted test passes with the core or differs by a recorded finding."""
        accepted = (Verdict.PASSED, Verdict.EXPECTED_TO_DIFFER, Verdict.FAILS_WITHOUT_THE_CORE)
        return self.count(*accepted) == len(self.verdicts)


def run_suite(workspace: Workspace, reports: Path, jobs: int) -> SuiteResult:
    """Both runs, and each selected test's verdict (``RuntimeError`` when none is selected)."""
    check_tables()
    baseline = run_tests(workspace, "count", TEST_FILES, reports, jobs)
    selected = [o for o in baseline.values() if o.exercised]
    if not selected:  # never an empty pass: the counters, or the files, are not what they were
        raise RuntimeError(f"none of the {len(baseline)} tests called a decision point")
    verdicts: list[TestVerdict] = []
    judged: list[TestOutcome] = []
    for outcome in selected:
        recorded = FAILS_WITHOUT_THE_CORE.get(outcome.nodeid)
        if outcome.status is Status.PASSED and recorded is None:
            judged.append(outcome)
        elif recorded is not None and outcome.status is Status.FAILED:
            verdicts.append(TestVerdict(outcome.nodeid, Verdict.FAILS_WITHOUT_THE_CORE, recorded))
        elif recorded is not None:
            verdicts.append(TestVerdict(outcome.nodeid, Verdict.VLLM_PASSED, recorded))
        else:
            verdicts.append(
                TestVerdict(
                    outcome.nodeid, Verdict.VLLM_FAILED, outcome.error or outcome.status.value
                )
            )
    swapped = run_tests(workspace, "dropin", [o.nodeid for o in judged], reports, jobs)
    verdicts.extend(_verdict(swapped[o.nodeid]) for o in judged)
    return SuiteResult(len(baseline), tuple(sorted(verdicts, key=lambda v: v.nodeid)))


def _verdict(outcome: TestOutcome) -> TestVerdict:
    finding = EXPECTED_TO_DIFFER.get(outcome.nodeid)
    if outcome.status is not Status.FAILED:
        if finding is not None:
            return TestVerdict(outcome.nodeid, Verdict.STALE_EXCUSE, f"finding {finding}")
        return TestVerdict(outcome.nodeid, Verdict.PASSED, "")
    if finding is not None:
        return TestVerdict(outcome.nodeid, Verdict.EXPECTED_TO_DIFFER, f"finding {finding}")
    if outcome.unsupported is not None:
        option, value = outcome.unsupported
        return TestVerdict(outcome.nodeid, Verdict.UNSUPPORTED, option, f"{option}={value}")
    return TestVerdict(outcome.nodeid, Verdict.FAILED, outcome.error or "failed")
