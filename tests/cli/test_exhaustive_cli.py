"""``junction exhaustive`` against hostile bounds.

A bound below 1 is bad usage; a bound whose walk is estimated over
``MAX_SECONDS`` is refused up front (status 2) with the input count and the
estimated time, at once, whatever its size; one estimated over
``WARN_SECONDS`` says both before it starts. The counts are
``count_inputs``, checked here against the enumerations themselves.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from junction import core
from junction.command import dispatch
from junction.reference.cli import exhaustive as cli_main
from junction.reference.oracle.exhaustive import (
    count_inputs,
    mask_inputs,
    next_turn_inputs,
    reconcile_inputs,
    split_inputs,
)

PREFIX = "junction exhaustive: error: "


def exhaustive(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Exit status, the last line of standard error, and standard output."""
    try:
        code = dispatch(["exhaustive", *argv])
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.err.strip().splitlines()[-1], captured.out


@pytest.mark.parametrize("bound", [1, 2])
def test_the_counts_are_the_enumerations_sizes(bound: int) -> None:
    assert count_inputs(bound) == {
        "reachable_block_mask": sum(1 for _ in mask_inputs(core, bound)),
        "mamba_block_aligned_split": sum(1 for _ in split_inputs(bound)),
        "reconcile_hits": sum(1 for _ in reconcile_inputs(core, bound)),
        "promised_positions": sum(1 for _ in next_turn_inputs(core, bound)),
    }


@pytest.mark.parametrize(
    ("bound", "message"),
    [
        ("0", "argument --bound: 0 must be >= 1"),
        ("-5", "argument --bound: -5 must be >= 1"),
        ("x", "argument --bound: 'x' is not an int"),
        ("1e3", "argument --bound: '1e3' is not an int"),
    ],
)
def test_a_bad_bound_is_bad_usage(
    bound: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, line, out = exhaustive(["--bound", bound], capsys)
    assert code == 2 and line == f"junction exhaustive: error: {message}"
    assert out == ""


@pytest.mark.parametrize(
    ("bound", "size"),
    [
        ("8", "2,684,429,268 inputs, about 14 hours"),
        ("1000", "10^608 inputs, about 10^596 years"),
        ("1001", "more than 10^608 inputs, more than 10^596 years"),
        (str(10**100), "more than 10^608 inputs, more than 10^596 years"),
    ],
)
def test_a_walk_over_the_limit_is_refused_at_once_with_its_size(
    bound: str, size: str, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.perf_counter()
    code, line, out = exhaustive(["--bound", bound], capsys)
    assert time.perf_counter() - started < 2
    assert code == 2 and out == ""
    assert line == (
        f"{PREFIX}--bound {bound}: the walk would check {size} at 50,000-200,000 inputs/s; "
        "the limit is 4 hours (bound 7 at most)"
    )


def test_the_warning_comes_before_the_walk(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_main, "WARN_SECONDS", -1)

    def walk(*args: object, **kwargs: object) -> object:
        err = capsys.readouterr().err
        assert err == "exhaustive, bound 2: 897,738 inputs, about 11 s (estimated)\n"
        raise KeyboardInterrupt  # the test has seen what it needed

    monkeypatch.setattr(cli_main, "check_exhaustively", walk)
    with pytest.raises(KeyboardInterrupt):
        dispatch(["exhaustive", "--bound", "2"])


def test_bound_3_the_default_runs_without_a_warning() -> None:
    inputs, seconds, clamped = cli_main._walk_size(3)
    assert inputs == sum(count_inputs(3).values()) and not clamped
    assert seconds < cli_main.WARN_SECONDS < cli_main._walk_size(4)[1]
    assert cli_main._largest_bound() == 7


def test_end_to_end_bound_1000_exits_2_at_once() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "junction", "exhaustive", "--bound", "1000"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"{PREFIX}--bound 1000: the walk would check 10^608 inputs, about 10^596 years at "
        "50,000-200,000 inputs/s; the limit is 4 hours (bound 7 at most)"
    ]
