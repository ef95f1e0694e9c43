"""The vLLM suite's rule (``make vllm-suite``, part of ``make verify``), fed recorded outcomes.

No vLLM test runs here: the two runs' outcomes are written as the plugin
writes them (JSON lines), read back, and judged. What must hold:

* only the tests that called a decision point are selected, and only those
  with a vLLM answer (passed unmodified, not recorded failing) run with the
  core;
* a refusal (``UnsupportedOption``) fails the suite, even where an excuse
  is listed; a wrong answer fails it unless the test's expectation is
  listed against a recorded finding; a stale excuse, a recorded vLLM
  failure that passes, an unrecorded one, a table entry the count run did
  not select and a test skipped with the core all fail it;
* the report's count line is ``N passed, M failed (of T ...)``;
* without vLLM the suite skips, unless ``--require-vllm`` is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from junction.audit.vllm.suite import cli, expected
from junction.audit.vllm.suite.expected import ExpectedDifference
from junction.audit.vllm.suite.outcome import Status, TestOutcome, read_outcomes
from junction.audit.vllm.suite.report import render
from junction.audit.vllm.suite.suite import Verdict, judge, selected, to_swap
from junction.command import dispatch

DECISION = ("find_longest_cache_hit",)


def _recorded(tmp_path: Path, name: str, outcomes: list[TestOutcome]) -> dict[str, TestOutcome]:
    """Write ``outcomes`` as a run's report and read them back, as the suite does."""
    report = tmp_path / f"{name}.jsonl"
    report.write_text("".join(o.to_json() + "\n" for o in outcomes), encoding="utf-8")
    return read_outcomes(report)


def _baseline(tmp_path: Path, **statuses: Status) -> dict[str, TestOutcome]:
    """A count run: ``t::<name>`` called a decision point; ``t::quiet`` did not."""
    outcomes = [TestOutcome(f"t::{name}", status, DECISION) for name, status in statuses.items()]
    outcomes.append(TestOutcome("t::quiet", Status.PASSED))
    return _recorded(tmp_path, "count", outcomes)


def _verdicts(
    tmp_path: Path,
    swapped: list[TestOutcome],
    *,
    excuses: Mapping[str, ExpectedDifference] | None = None,
    known: Mapping[str, str] | None = None,
    **statuses: Status,
) -> tuple[dict[str, Verdict], bool]:
    result = judge(
        _baseline(tmp_path, **statuses),
        _recorded(tmp_path, "dropin", swapped),
        excuses or {},
        known or {},
    )
    return {v.nodeid: v.verdict for v in result.verdicts}, result.ok


def test_the_tests_that_called_a_decision_are_selected_and_those_with_a_vllm_answer_run(
    tmp_path: Path,
) -> None:
    baseline = _baseline(tmp_path, a=Status.PASSED, b=Status.FAILED, c=Status.FAILED)
    assert selected(baseline) == ["t::a", "t::b", "t::c"]
    assert to_swap(baseline, {"t::c": "recorded"}) == ["t::a"]


def test_every_test_passing_with_the_core_holds_the_rule(tmp_path: Path) -> None:
    swapped = [TestOutcome("t::a", Status.PASSED), TestOutcome("t::b", Status.PASSED)]
    verdicts, ok = _verdicts(tmp_path, swapped, a=Status.PASSED, b=Status.PASSED)
    assert verdicts == {"t::a": Verdict.PASSED, "t::b": Verdict.PASSED} and ok


def test_a_refusal_breaks_the_rule_even_where_an_excuse_is_listed(tmp_path: Path) -> None:
    refused = TestOutcome("t::a", Status.FAILED, (), ("is_eagle_group", "[1]"), "call: ...")
    for excuses in ({}, {"t::a": ExpectedDifference("t::a", "mamba-grid")}):
        result = judge(
            _baseline(tmp_path, a=Status.PASSED),
            _recorded(tmp_path, "dropin", [refused]),
            excuses,
            {},
        )
        (verdict,) = result.verdicts
        assert (verdict.verdict, verdict.reason, verdict.detail) == (
            Verdict.UNSUPPORTED,
            "is_eagle_group",
            "is_eagle_group=[1]",
        )
        assert not result.ok and result.exercising == 1


def test_a_wrong_answer_breaks_the_rule_unless_its_expectation_encodes_a_finding(
    tmp_path: Path,
) -> None:
    wrong = [TestOutcome("t::a", Status.FAILED, (), None, "call: assert 1 == 2")]
    assert _verdicts(tmp_path, wrong, a=Status.PASSED) == ({"t::a": Verdict.FAILED}, False)
    excused = {"t::a": ExpectedDifference("t::a", "mamba-grid")}
    verdicts, ok = _verdicts(tmp_path, wrong, excuses=excused, a=Status.PASSED)
    assert verdicts == {"t::a": Verdict.EXPECTED_TO_DIFFER} and ok
    result = judge(
        _baseline(tmp_path, a=Status.PASSED), _recorded(tmp_path, "d", wrong), excused, {}
    )
    assert "finding mamba-grid" in render(result)


def test_an_excuse_whose_test_passes_or_was_not_selected_breaks_the_rule(tmp_path: Path) -> None:
    excused = {
        "t::a": ExpectedDifference("t::a", "mamba-grid"),
        "t::gone": ExpectedDifference("t::gone", "mamba-grid"),
    }
    passing = [TestOutcome("t::a", Status.PASSED)]
    verdicts, ok = _verdicts(tmp_path, passing, excuses=excused, a=Status.PASSED)
    assert verdicts == {"t::a": Verdict.STALE_EXCUSE, "t::gone": Verdict.NOT_SELECTED}
    assert not ok


def test_a_test_skipped_with_the_core_proved_nothing(tmp_path: Path) -> None:
    skipped = [TestOutcome("t::a", Status.SKIPPED)]
    assert _verdicts(tmp_path, skipped, a=Status.PASSED) == ({"t::a": Verdict.FAILED}, False)


def test_recorded_vllm_failures_are_left_out_and_must_stay_failures(tmp_path: Path) -> None:
    known = {"t::b": "fails on this CPU", "t::c": "fails on this CPU", "t::gone": "fails"}
    swapped = [TestOutcome("t::a", Status.PASSED)]
    statuses = {"a": Status.PASSED, "b": Status.FAILED, "c": Status.PASSED, "d": Status.FAILED}
    verdicts, ok = _verdicts(tmp_path, swapped, known=known, **statuses)
    assert verdicts == {
        "t::a": Verdict.PASSED,
        "t::b": Verdict.FAILS_WITHOUT_THE_CORE,  # still failing: accepted, not counted
        "t::c": Verdict.VLLM_PASSED,  # passes now: the record is wrong
        "t::d": Verdict.VLLM_FAILED,  # fails unrecorded
        "t::gone": Verdict.NOT_SELECTED,
    }
    assert not ok
    verdicts, ok = _verdicts(
        tmp_path, swapped, known={"t::b": "x"}, a=Status.PASSED, b=Status.FAILED
    )
    assert ok
    result = judge(
        _baseline(tmp_path, a=Status.PASSED, b=Status.FAILED),
        _recorded(tmp_path, "dropin", swapped),
        {},
        {"t::b": "x"},
    )
    assert result.exercising == 1  # t::b has no vLLM answer: not in T


def test_the_report_counts_passed_and_failed_of_the_exercising_tests(tmp_path: Path) -> None:
    swapped = [
        TestOutcome("t::a", Status.PASSED),
        TestOutcome("t::b", Status.FAILED, (), ("final_segment_end_block", "300"), "call: ..."),
    ]
    result = judge(
        _baseline(tmp_path, a=Status.PASSED, b=Status.PASSED, c=Status.FAILED),
        _recorded(tmp_path, "dropin", swapped),
        {},
        {"t::c": "fails on this CPU"},
    )
    report = render(result).splitlines()
    assert report[0] == (
        "vLLM 0.33.0 tests with the core swapped in: 1 passed, 1 failed "
        "(of 2 exercising the three decisions; 4 collected)"
    )
    assert report[1] == "expected to differ (a recorded finding): 0"
    assert "  t::b  (final_segment_end_block=300)" in report
    assert report[-1] == "the suite's rule is broken by 1 tests (audit/vllm/suite/suite.py)"


def test_an_expected_difference_names_a_recorded_finding() -> None:
    assert ExpectedDifference("t::a", "mamba-grid").finding == "mamba-grid"
    with pytest.raises(ValueError, match=r"finding 'no-such-finding' is not a recorded finding"):
        ExpectedDifference("t::a", "no-such-finding")
    with pytest.raises(ValueError, match="listed twice"):
        expected._by_test((ExpectedDifference("t::a", "mamba-grid"),) * 2)
    # The committed tables: keyed by their tests, never one test in both.
    assert all(test == entry.test for test, entry in expected.EXPECTED_TO_DIFFER.items())
    assert not set(expected.EXPECTED_TO_DIFFER) & set(expected.FAILS_WITHOUT_THE_CORE)


@pytest.mark.parametrize(("required", "status"), [(False, 0), (True, 1)])
def test_without_vllm_the_suite_skips_unless_it_is_required(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    required: bool,
    status: int,
) -> None:
    monkeypatch.setattr(cli, "vllm_missing_reason", lambda: "vLLM 0.33.0 is not installed")
    flags = ["--require-vllm"] if required else []
    assert dispatch(["audit", "vllm-suite", "--cache", str(tmp_path / "cache"), *flags]) == status
    said = capsys.readouterr().err
    assert said.startswith(
        "junction audit vllm-suite: error: --require-vllm is given but"
        if required
        else "junction audit vllm-suite: skipped:"
    )
    assert not (tmp_path / "cache").exists()  # nothing fetched
