"""``fuzz`` against hostile policies: every way a policy can end a run early, silently or never.

Each case runs the real command in a subprocess with a wall-clock timeout and
checks the exit status, a one-line message naming the problem, no traceback,
and the time it took: the deadline plus a few seconds at most. The budgets
are small (``--seconds 3 --call-seconds 1``) so the file stays quick.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from junction.core import HybridGeometry
from junction.reference.engine.policy import PolicyError, RequestView
from junction.reference.harness import Scenario, Verdict, replay, run_conformance
from tests.cli import hostile_policies
from tests.groups import WALL_CLOCK

ROOT = Path(__file__).resolve().parents[2]
pytestmark = WALL_CLOCK
SLACK = 3.0  # seconds past the deadline a run may take (start-up, grace, stopping the worker)


def _command(*argv: str) -> list[str]:
    return [sys.executable, "-m", "junction", *argv]


def _env(extra_path: Path | None = None) -> dict[str, str]:
    paths = [str(ROOT)] + ([str(extra_path)] if extra_path else [])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def _run(*argv: str, limit: float, extra_path: Path | None = None) -> tuple[int, str, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        _command(*argv),
        cwd=ROOT,
        env=_env(extra_path),
        capture_output=True,
        text=True,
        timeout=limit + 20,  # a hang fails the test instead of the suite
    )
    elapsed = time.monotonic() - started
    assert elapsed < limit, f"took {elapsed:.1f} s, more than {limit} s"
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr, elapsed


def _last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


def _fuzz(policy: str, *more: str, seconds: float = 3.0) -> tuple[int, str, str]:
    argv = ["fuzz", "--policy", policy, "--seconds", str(seconds), "--call-seconds", "1", *more]
    code, out, err, _ = _run(*argv, limit=seconds + SLACK)
    return code, out, err


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("ExitsZero", r"split\(P=\d+.*\): raised SystemExit: 0"),
        ("Interrupts", r"checkpoint_positions\(P=\d+.*\): raised KeyboardInterrupt"),
        ("HugeMask", r"block_mask\(.*\): must return None or \d+ bools, got 10000000 elements"),
        ("HugePositions", r"checkpoint_positions\(.*\): returned 10000000 positions"),
        ("FalselyFixed", r"fixed_boundaries: declared True, but reachable_boundaries\(Group"),
    ],
)
def test_a_policy_that_raises_or_answers_absurdly_is_an_error(policy: str, message: str) -> None:
    code, out, err = _fuzz(f"tests.cli.hostile_policies:{policy}", "--promise", "economy")
    assert code == 1
    assert " error: policy 'junction': " in _last_line(err)
    assert re.search(message, _last_line(err)), err
    assert len(out) < 5000  # the ten million elements are not printed


@pytest.mark.parametrize("policy", ["SleepsForever", "LoopsForever", "TwoSecondsPerCall"])
def test_a_call_past_its_limit_is_a_timeout_with_its_scenario(policy: str, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    code, out, err = _fuzz(f"tests.cli.hostile_policies:{policy}", "--json", str(report))
    assert code == 1
    assert _last_line(err).startswith("fuzz: replay timeout: policy 'junction': split(P=")
    assert "did not return within 1 s (--call-seconds)" in _last_line(err)
    verdict = json.loads(report.read_text())["verdicts"][0]
    assert verdict["status"] == "timeout" and verdict["counterexample"]["promise"] == "replay"
    assert json.loads(report.read_text())["call_seconds"] == 1.0
    assert "scenario: {" in out


def test_a_loop_in_c_holding_the_gil_is_still_stopped() -> None:
    code, _, err = _fuzz("tests.cli.hostile_policies:LoopsInC", "--promise", "economy")
    assert code == 1
    assert "economy timeout: policy 'junction': checkpoint_positions(" in _last_line(err)


def _module(tmp_path: Path, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")
    return f"{name}:Policy"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("raise SystemExit\n", "load: raised SystemExit"),
        ("import sys\nsys.exit(3)\n", "load: raised SystemExit: 3"),
        ("import os\nos._exit(3)\n", "load: the process loading it ended (exit status 3)"),
    ],
)
def test_a_module_that_exits_on_import_cannot_be_loaded(
    body: str, message: str, tmp_path: Path
) -> None:
    policy = _module(tmp_path, "exits_on_import", body)
    code, out, err, _ = _run(
        "fuzz", "--policy", policy, "--seconds", "3", limit=3 + SLACK, extra_path=tmp_path
    )
    assert code == 2 and out == ""
    assert _last_line(err) == f"junction fuzz: error: policy 'exits_on_import:Policy': {message}"


def test_a_module_that_hangs_on_import_ends_at_the_deadline(tmp_path: Path) -> None:
    policy = _module(tmp_path, "hangs_on_import", "import time\ntime.sleep(1000)\n")
    code, out, err, elapsed = _run(
        "fuzz", "--policy", policy, "--seconds", "2", limit=2 + SLACK, extra_path=tmp_path
    )
    assert code == 1 and elapsed >= 2
    assert "the time ran out (--seconds 2) while loading the policy" in _last_line(err)
    assert "unchecked" in out


@pytest.mark.parametrize("seconds", ["inf", "nan", "0", "-1", "-inf"])
def test_seconds_must_be_finite_and_positive(seconds: str) -> None:
    code, out, err, _ = _run("fuzz", f"--seconds={seconds}", limit=SLACK)
    assert code == 2 and out == ""
    assert f"argument --seconds: must be a finite number > 0, got {seconds!r}" in err


def test_call_seconds_must_be_finite_and_positive() -> None:
    code, _, err, _ = _run("fuzz", "--call-seconds", "inf", limit=SLACK)
    assert code == 2 and "argument --call-seconds: must be a finite number > 0" in err


def test_a_budget_too_short_to_check_anything_fails_at_once() -> None:
    code, out, err, _ = _run("fuzz", "--seconds", "0.001", limit=2.0)  # start-up + well under 1 s
    assert code == 1
    assert "unchecked" in out and not re.search(r"^  \w+ +kept ", out, re.M)  # never a pass
    assert "nothing was checked" in _last_line(err)


def _interrupt(argv: list[str], after: float, tmp_path: Path) -> tuple[int, str, str]:
    process = subprocess.Popen(
        _command(*argv), cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    time.sleep(after)
    assert process.poll() is None, "the command ended before it was interrupted"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=10)
    return process.returncode, out.decode(), err.decode()


def test_ctrl_c_in_fuzz_exits_130_with_one_line(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text("{}")  # a stale report from an earlier run
    argv = ["fuzz", "--seconds", "30", "--json", str(report)]
    code, out, err = _interrupt(argv, 2.5, tmp_path)
    assert (code, out) == (130, "")
    assert _last_line(err) == "interrupted" and "Traceback" not in err
    assert not report.exists()


def test_ctrl_c_in_simulate_exits_130_with_one_line(tmp_path: Path) -> None:
    argv = ["simulate", "--sessions", "500", "--no-plot", "--out", str(tmp_path / "out")]
    code, out, err = _interrupt(argv, 2.5, tmp_path)
    assert (code, out) == (130, "")
    assert _last_line(err) == "interrupted" and "Traceback" not in err
    assert not (tmp_path / "out" / "simulate.json").exists()


def test_a_policy_that_never_returns_ends_at_the_deadline_with_a_scenario_that_replays() -> None:
    """The issue's acceptance case: ``--seconds 10``, the default call limit, within 20 s."""
    code, out, err, elapsed = _run(
        "fuzz",
        "--policy",
        "tests.cli.hostile_policies:SleepsForever",
        "--seconds",
        "10",
        "--promise",
        "replay",
        limit=20,
    )
    assert code == 1 and elapsed >= 10
    assert _last_line(err).startswith("fuzz: replay timeout: policy 'junction': split(")
    line = next(line for line in out.splitlines() if line.strip().startswith("scenario: "))
    scenario = Scenario.from_json(json.loads(line.split("scenario: ", 1)[1]))

    class Raises(hostile_policies.SleepsForever):  # the same call, failing at once
        def split(
            self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
        ) -> int:
            raise TimeoutError("here")

    with pytest.raises(PolicyError, match=r"split\(P=.*raised TimeoutError: here"):
        replay(scenario, Raises())


def test_in_process_a_base_exception_from_the_policy_is_an_error_verdict() -> None:
    """``run_conformance`` (no worker) too: ``SystemExit`` is a policy error, not an exit."""
    report = run_conformance(hostile_policies.ExitsZero(), examples=5, promises=["replay"])
    (verdict,) = report.verdicts
    assert verdict.status is Verdict.ERROR and "raised SystemExit: 0" in verdict.error
    assert verdict.counterexample is not None
