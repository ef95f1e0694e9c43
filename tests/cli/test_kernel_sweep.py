"""``junction kernel-sweep`` rejects bad usage in one line, exit 2.

A bound below 1 once ran an empty sweep and reported success; a device torch
does not know (``nosuch``) or this machine lacks (``cuda`` without CUDA)
ended in a traceback. Each is now an argparse error: status 2, and stderr's
last line names the option, the value and the rule.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from junction.command import dispatch

PROG = "junction kernel-sweep"


def sweep(argv: list[str]) -> int:
    return dispatch(["kernel-sweep", *argv])


NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")

BAD_USAGE = [
    (["--bound", "0"], "argument --bound: 0 must be >= 1"),
    (["--bound", "-1"], "argument --bound: -1 must be >= 1"),
    (["--bound", "x"], "argument --bound: 'x' is not an int"),
    (
        ["--device", "nosuch"],
        "argument --device: 'nosuch' is not a torch device (e.g. cpu, cuda, cuda:1)",
    ),
    (["--device", "cuda:x"], "argument --device: 'cuda:x' is not a torch device"),
    (["--device", "meta"], "argument --device: 'meta' is not available on this machine"),
    pytest.param(
        ["--device", "cuda"],
        "argument --device: 'cuda' is not available on this machine (available: cpu",
        marks=NO_CUDA,
    ),
]


@pytest.mark.parametrize(("argv", "message"), BAD_USAGE)
def test_bad_usage_exits_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        sweep(argv)
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1].startswith(f"{PROG}: error: {message}")


def test_triton_on_cpu_needs_the_interpreter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(SystemExit) as info:
        sweep(["--device", "cpu", "--backend", "triton"])
    assert info.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"{PROG}: error: backend='triton': Triton runs on CUDA tensors")


@pytest.mark.parametrize("argv", [["--bound", "0"], ["--device", "nosuch"]])
def test_the_process_prints_no_traceback(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "junction", "kernel-sweep", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1].startswith(f"{PROG}: error: argument {argv[0]}: ")
