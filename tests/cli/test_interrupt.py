"""Ctrl-C on the entry points the fuzz and simulate tests do not cover: exit 130, one line.

``junction kernel-sweep`` and ``junction audit findings`` go through
``terminal.interruptible`` like every subcommand; each is started for real,
interrupted mid-run, and must end with status 130, "interrupted" as its last
line, no traceback and nothing on stdout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.groups import WALL_CLOCK

ROOT = Path(__file__).resolve().parents[2]
pytestmark = WALL_CLOCK


def _interrupt(*argv: str, loads: str, after: float) -> tuple[int, str, str]:
    """Start ``junction ARGV``, interrupt it ``after`` seconds into its run, return its ending.

    A signal that lands inside the imports of ``loads``, the module that runs
    it (torch takes seconds on a loaded machine), is not the run's, so the
    wait starts with the time this machine takes to import it now, measured
    in throwaway runs.
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    timings = []
    for _ in range(2):  # the first may also compile the bytecode the command will reuse
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", f"import {loads}"], cwd=ROOT, env=env, check=True)
        timings.append(time.monotonic() - start)
    loading = min(timings)
    process = subprocess.Popen(
        [sys.executable, "-m", "junction", *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(loading + after)
    assert process.poll() is None, "the command ended before it was interrupted"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    return process.returncode, out.decode(), err.decode()


def test_ctrl_c_in_the_kernel_sweep_exits_130_with_one_line() -> None:
    pytest.importorskip("torch")
    code, out, err = _interrupt(
        "kernel-sweep", "--bound", "6", loads="junction.reference.cli.kernel_sweep", after=4.0
    )
    assert code == 130, err
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err
    assert "bound reached" not in out  # the summary line of a finished kernel sweep


# The audit's work after its imports is about two seconds (against ten of
# imports), too short to hit by timing alone: a signal sent late lands in the
# interpreter's teardown, after the section is written, and CI saw exactly
# that. So the audit runs here with its vLLM section announced on stderr
# first, and the signal goes out when that line arrives: it then lands in
# the real re-run of the counterexamples, every time.
_ANNOUNCED_AUDIT = """
import sys
from junction.audit.vllm import findings
from junction.command import main
real = findings.findings_markdown
def announced():
    print("auditing", file=sys.stderr, flush=True)
    return real()
findings.findings_markdown = announced
sys.exit(main(["audit", "findings"]))
"""


def test_ctrl_c_in_the_audit_exits_130_with_one_line() -> None:
    pytest.importorskip("vllm")
    process = subprocess.Popen(
        [sys.executable, "-c", _ANNOUNCED_AUDIT],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    before = ""  # what the imports may log before the announcement
    while not before.endswith("auditing\n"):
        line = process.stderr.readline().decode()
        assert line, f"the audit ended without starting: {before}"
        before += line
    process.send_signal(signal.SIGINT)
    out, rest = process.communicate(timeout=60)
    err = before + rest.decode()
    assert (process.returncode, out.decode()) == (130, ""), err
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err
