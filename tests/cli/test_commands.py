"""The command lines: what they print and how they exit."""

from __future__ import annotations

import pytest

from junction.command import dispatch as reference


def sweep(argv: list[str]) -> int:
    return reference(["kernel-sweep", *argv])


def test_exhaustive_prints_counts_and_agrees(capsys: pytest.CaptureFixture[str]) -> None:
    assert reference(["exhaustive", "--bound", "1"]) == 0
    captured = capsys.readouterr()
    assert "reachable_block_mask" in captured.out and "every input agrees" in captured.out
    assert "188,656 inputs in" in captured.out
    # Progress (the bar may cut the total short on a narrow terminal).
    assert "188656/" in captured.err and "promised_positions" in captured.err


def test_exhaustive_rejects_a_bad_bound(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        reference(["exhaustive", "--bound", "0"])
    assert info.value.code == 2
    assert "argument --bound: 0 must be >= 1" in capsys.readouterr().err


def test_sweep_reports_the_bound_and_rate(capsys: pytest.CaptureFixture[str]) -> None:
    assert sweep(["--bound", "1", "--device", "cpu", "--backend", "torch"]) == 0
    captured = capsys.readouterr()
    assert "bound reached 1" in captured.out and "inputs/s, 0 disagreements" in captured.out
    assert "101212/? " in captured.err and "bound 1 mask" in captured.err  # the progress line
