"""A verdict counts its examples: what a time-boxed run must not drop, or pass on too few.

Written as a policy author who knows the run stops at ``--seconds`` would
attack it: slow only where it deviates, slow only at the deadline, slow
everywhere, failing once and never again. Each case runs the real command
(or ``run_conformance(isolated=True)``) and checks the verdict, its example
count and the time taken: ``--seconds`` + ``--call-seconds`` + 5 s at most.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from junction.core import InvalidArgument
from junction.reference.harness import Verdict, run_conformance
from junction.reference.harness.runner import MIN_EXAMPLES
from tests.groups import WALL_CLOCK

ROOT = Path(__file__).resolve().parents[2]
POLICIES = "tests.cli.counting_policies"
SLACK = 5.0  # past --seconds + --call-seconds: start-up, grace, stopping the worker


def _fuzz(policy: str, seconds: float, call_seconds: float, *more: str) -> tuple[int, str, str]:
    argv = ["fuzz", "--policy", f"{POLICIES}:{policy}", "--seconds", str(seconds)]
    argv += ["--call-seconds", str(call_seconds), "--promise", "replay", *more]
    limit = seconds + call_seconds + SLACK
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "junction", *argv],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=limit + 30,  # a hang fails the test instead of the suite
    )
    elapsed = time.monotonic() - started
    assert elapsed < limit, f"took {elapsed:.1f} s, more than {limit} s"
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done.returncode, done.stdout, done.stderr


@WALL_CLOCK
def test_a_violating_policy_slow_only_where_it_deviates_fails(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    code, out, err = _fuzz("SlowWhereItDeviates", 3, 1, "--json", str(report))
    assert code == 1, out
    (verdict,) = json.loads(report.read_text())["verdicts"]
    assert verdict["status"] != "kept", out
    assert "fuzz: replay " in err.strip().splitlines()[-1]


@WALL_CLOCK
def test_an_honest_policy_judged_on_too_few_examples_fails_saying_how_many(
    tmp_path: Path,
) -> None:
    report = tmp_path / "report.json"
    code, out, err = _fuzz("SlowEverywhere", 3, 1, "--json", str(report))
    assert code == 1, out
    data = json.loads(report.read_text())
    (verdict,) = data["verdicts"]
    assert data["min_examples"] == MIN_EXAMPLES
    assert verdict["status"] == "too few" and 0 < verdict["examples"] < MIN_EXAMPLES
    assert f"at least {MIN_EXAMPLES} examples per promise" in out
    line = err.strip().splitlines()[-1]
    assert line.startswith("fuzz: replay too few: judged on ") and "--min-examples" in line
    # The same policy passes when the caller asks for fewer.
    code, out, _ = _fuzz("SlowEverywhere", 3, 1, "--min-examples", "1")
    assert code == 0, out


@WALL_CLOCK
def test_a_failure_that_does_not_fail_again_is_a_verdict_with_its_counterexample(
    tmp_path: Path,
) -> None:
    report = tmp_path / "report.json"
    code, out, err = _fuzz("ViolatesOnce", 20, 2, "--json", str(report))
    assert code == 1, err
    (verdict,) = json.loads(report.read_text())["verdicts"]
    # Its answers changed between the two runs: a violation, or the declaration it broke.
    assert verdict["status"] in ("violated", "error") and verdict["flaky"], verdict
    assert verdict["counterexample"]["promise"] == "replay"
    assert "did not fail again when replayed" in verdict["message"]
    assert "scenario: {" in out and len(err.splitlines()) < 5


@WALL_CLOCK
def test_a_policy_that_deviates_only_in_the_example_running_at_the_deadline_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its deviation's calls are slow, so the example it deviates on is the one the
    # deadline finds running: dropped unjudged, the promise read "kept".
    seconds, call_seconds = 4.0, 2.0
    started = time.monotonic()
    monkeypatch.setenv("FUZZ_DEADLINE", repr(started + seconds))
    report = run_conformance(
        f"{POLICIES}:DeviatesAtTheDeadline",
        isolated=True,
        seconds=seconds,
        call_seconds=call_seconds,
        promises=["split"],
        min_examples=1,
    )
    assert time.monotonic() - started < seconds + call_seconds + SLACK
    (verdict,) = report.verdicts
    assert verdict.status in (Verdict.VIOLATED, Verdict.TIMEOUT), report.table()
    assert verdict.counterexample is not None


@WALL_CLOCK
def test_a_correct_policy_answering_past_the_deadline_within_its_call_limit_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seconds, call_seconds = 4.0, 4.0
    started = time.monotonic()
    monkeypatch.setenv("FUZZ_DEADLINE", repr(started + seconds))
    report = run_conformance(
        f"{POLICIES}:SlowAtTheDeadline",
        isolated=True,
        seconds=seconds,
        call_seconds=call_seconds,
        promises=["replay"],
    )
    assert time.monotonic() - started < seconds + call_seconds + SLACK
    assert report.passed, report.table()


@WALL_CLOCK
def test_an_example_still_running_at_the_hard_limit_is_judged_a_timeout() -> None:
    # Timed by the policy's own calls, not by a deadline it reads: an example that
    # is near its end when a deadline-triggered slowdown starts would finish in time.
    seconds, call_seconds = 3.0, 2.0
    started = time.monotonic()
    report = run_conformance(
        f"{POLICIES}:SlowerThanTheRun",
        isolated=True,
        seconds=seconds,
        call_seconds=call_seconds,
        promises=["split"],
        min_examples=1,
    )
    assert time.monotonic() - started < seconds + call_seconds + SLACK
    (verdict,) = report.verdicts
    assert verdict.status is Verdict.TIMEOUT, report.table()
    assert verdict.counterexample is not None and verdict.examples >= 1
    assert "--seconds 3 + --call-seconds 2 + 1 s" in verdict.error


def test_a_promise_judged_on_fewer_than_the_minimum_is_too_few() -> None:
    report = run_conformance("junction", examples=5, promises=["replay"], min_examples=6)
    (verdict,) = report.verdicts
    assert verdict.status is Verdict.TOO_FEW and verdict.examples == 5
    assert not report.passed and "judged on 5 examples, fewer than 6" in verdict.message
    report = run_conformance("junction", examples=5, promises=["replay"])  # min(10, examples)
    assert report.passed, report.table()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_the_minimum_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(InvalidArgument, match=r"^min_examples="):
        run_conformance("junction", examples=5, min_examples=bad)  # type: ignore[arg-type]
