"""``fuzz`` as a gate a policy cannot forge, and a run that leaves nothing behind (issue 24).

The forging policies (``forging_policies``) are vLLM 0.33.0's policy, which
breaks the replay promise, plus an attack on the gate: each made ``fuzz``
exit 0 while the harness ran in the policy's process. Each case runs the
real command in a subprocess, capturing its output as ``$(fuzz ...)`` would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.groups import WALL_CLOCK

ROOT = Path(__file__).resolve().parents[2]
pytestmark = WALL_CLOCK
POLICIES = "tests.cli.forging_policies"


def _fuzz(
    policy: str, seconds: float, *more: str, env: dict[str, str] | None = None
) -> tuple[int, str, str, float]:
    argv = [sys.executable, "-m", "junction", "fuzz", "--policy", policy]
    argv += ["--seconds", str(seconds), *more]
    started = time.monotonic()
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=seconds + 30,  # a hang fails the test, not the suite
    )
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def _last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1] if stderr.strip() else ""


@pytest.mark.parametrize(
    ("policy", "verdict"),
    [
        ("PatchesTheChecks", "violated"),
        ("NameRunsCodeInTheParent", "violated"),
        ("ForgesMessagesOnItsPipe", "violated"),
        ("ForgesFramesOnEveryPipe", "violated|error"),
        ("AnswersMakeExamplesInvalid", "error"),
    ],
)
def test_a_forging_policy_fails_the_gate_naming_the_promise(policy: str, verdict: str) -> None:
    code, out, err, _ = _fuzz(f"{POLICIES}:{policy}", 8, "--promise", "replay")
    assert code == 1, (out, err)
    assert "Traceback" not in err
    assert re.match(rf"fuzz: replay ({verdict}): ", _last_line(err)), err
    assert re.search(rf"^  replay +({verdict}) ", out, re.M), out


def test_the_forged_name_reaches_the_report_as_plain_text() -> None:
    code, out, _, _ = _fuzz(f"{POLICIES}:NameRunsCodeInTheParent", 8, "--promise", "replay")
    assert code == 1 and "policy 'vllm-0.33', seed 0" in out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("policy", ["Forks", "SpawnsADetachedChild", "IgnoresSigtermAndHangs"])
def test_a_policy_that_starts_processes_leaves_none_and_holds_no_pipe(
    policy: str, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    seconds = 4.0
    code, out, err, elapsed = _fuzz(
        f"{POLICIES}:{policy}",
        seconds,
        "--promise",
        "split",
        "--call-seconds",
        "1",
        env={"FORGING_PIDS": str(pids)},
    )
    hard_limit = seconds + 1 + 1  # --seconds + --call-seconds + 1 s: an example may end there
    assert elapsed < hard_limit + 2, f"the caller got its output after {elapsed:.1f} s"
    # The default policy keeps its promises; the one that hangs is a timeout.
    assert code == (1 if policy == "IgnoresSigtermAndHangs" else 0), (out, err)
    assert "Traceback" not in err
    started = [int(line) for line in pids.read_text().split()]
    assert started, "the policy started nothing"
    deadline = time.monotonic() + 1.0  # a killed orphan may wait a moment for init to reap it
    while any(map(_alive, started)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in started if _alive(pid)], "a process outlived the run"
