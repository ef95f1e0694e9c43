"""Guards that count everything (issue 24): instances and tiers, the address-space limit,
an out-of-memory that slipped past them, and the kernel sweep's options."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from junction.command import dispatch as main
from junction.reference.cli import simulate_checks
from junction.reference.simulator.memory import MemoryLimit, memory_limit
from tests.cli.in_process import run_in_process

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def eight_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine whose limit is 8 GiB, whatever this one has."""
    monkeypatch.setattr(simulate_checks, "memory_limit", lambda: MemoryLimit(8 * 2**30, "test"))


def test_1500_instances_are_refused_with_one_line(
    eight_gib: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", "--instances", "1500", "--arrivals", "sequential", "--sessions", "4"]
    ended = run_in_process(main, [*argv, "--no-plot", "--out", str(tmp_path / "out")], capsys)
    assert ended.code == 2
    assert "--instances 1500: a run would need about 13.4 GiB (1,500 pools of 40,000 blocks" in (
        ended.last_line
    )
    assert not (tmp_path / "out").exists()


def test_a_tier_counts_too(
    eight_gib: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", "--instances", "2", "--arrivals", "sequential", "--sessions", "4"]
    argv += ["--tier", "40000000", "--no-plot", "--out", str(tmp_path / "out")]
    ended = run_in_process(main, argv, capsys)
    assert ended.code == 2 and "a tier of 40,000,000" in ended.last_line


def _limited(argv: list[str], address_space: int) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return subprocess.run(
        [sys.executable, "-m", "junction", *argv],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


def test_under_an_address_space_limit_a_too_large_run_is_one_line(tmp_path: Path) -> None:
    started = time.monotonic()
    argv = ["simulate", "--blocks", "6000000", "--sessions", "4", "--no-plot"]
    done = _limited([*argv, "--out", str(tmp_path / "out")], 1_500_000_000)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "over the limit of 1.1 GiB (80 % of the address-space limit" in done.stderr
    assert time.monotonic() - started < 30


def test_the_limit_reads_the_address_space_limit() -> None:
    code = "from junction.reference.simulator.memory import memory_limit; print(memory_limit())"
    check = subprocess.run(
        [sys.executable, "-c", code],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (10**9, 10**9)),
    )
    assert "bytes=800000000" in check.stdout and "address-space" in check.stdout
    assert memory_limit().bytes > 0


def test_an_out_of_memory_the_estimates_missed_is_one_line() -> None:
    script = (
        "import sys\nfrom junction.reference.cli import terminal\n"
        "def main():\n    raise MemoryError\n"
        "sys.exit(terminal.interruptible(main))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=ENV, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: out of memory (the machine's, or the address-space limit, ulimit -v); "
        "nothing written"
    ]


def _kernel_sweep(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "junction", "kernel-sweep", *argv],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("seconds", ["inf", "nan", "-1", "0"])
def test_kernel_sweep_rejects_a_seconds_that_is_no_deadline(seconds: str) -> None:
    done = _kernel_sweep(f"--seconds={seconds}", "--device", "cpu")
    assert done.returncode == 2
    assert "argument --seconds: must be a finite number > 0" in done.stderr


def test_kernel_sweep_refuses_a_bound_over_its_limit_like_exhaustive() -> None:
    started = time.monotonic()
    done = _kernel_sweep("--bound", "40", "--device", "cpu")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--bound 40: core alone would take about" in done.stderr
    assert "the limit is 4 hours" in done.stderr
    assert time.monotonic() - started < 60
