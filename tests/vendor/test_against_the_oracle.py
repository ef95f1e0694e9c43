"""A vendored copy, renamed, judged by the oracle: ``vendor verify`` (the walk) and the
project's properties through ``--core`` (a subprocess: the properties import the
core they judge once, at collection)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from junction.command import dispatch as reference

ROOT = Path(__file__).resolve().parents[2]
# vLLM #50409: the last cacheable position one token too far.
CORRECT = "return max(floor_to(num_tokens - max(1, lookahead), unit), 0)"
BROKEN = "return max(floor_to(num_tokens - lookahead, unit), 0)"


def break_split(copy: Path) -> None:
    split = copy / "split.py"
    text = split.read_text()
    assert CORRECT in text
    split.write_text(text.replace(CORRECT, BROKEN))


def renamed(vendored: Path) -> Path:
    """The copy moved to ``myengine/hybrid_retention``: no name of junction's left."""
    target = vendored.parent / "hybrid_retention"
    vendored.rename(target)
    return target


def test_verify_walks_a_renamed_copy(vendored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = renamed(vendored)
    assert reference(["vendor", "verify", "--bound", "1", str(target)]) == 0
    out = capsys.readouterr().out
    assert f"bound 1: {target} against the oracle" in out
    assert "reconcile_hits                     42,624 inputs" in out  # the walk's 188,656
    assert "289,868 inputs in" in out and "every input agrees" in out  # and free functions


def test_verify_finds_an_edited_copy_wrong(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    break_split(vendored)
    assert reference(["vendor", "verify", "--bound", "1", str(vendored)]) == 1
    out = capsys.readouterr().out
    assert "disagreements; first ones:" in out and "mamba_block_aligned_split {" in out


def test_verify_reports_a_copy_that_does_not_import(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (vendored / "grid.py").write_text("def broken(:\n")
    assert reference(["vendor", "verify", "--bound", "1", str(vendored)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot import the copy: SyntaxError" in err


def properties(engine_root: Path, *pytest_args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(engine_root), str(ROOT)]),
        "HYPOTHESIS_PROFILE": "mutmut",  # few examples, derandomized
    }
    command = [
        *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
        *("--core", "myengine.hybrid_retention", "--exhaustive-bound", "2"),
        *pytest_args,
    ]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_the_properties_pass_against_a_renamed_copy(vendored: Path) -> None:
    target = renamed(vendored)
    done = properties(target.parents[1], "-s", "tests/properties")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "bounded-exhaustive (bound 2)" in done.stdout


def test_the_properties_judge_the_copy_not_junction_core(vendored: Path) -> None:
    target = renamed(vendored)
    break_split(target)
    done = properties(target.parents[1], "-x", "tests/properties/test_core_vs_oracle.py")
    assert done.returncode == 1, done.stdout[-3000:]
    # junction.core is unedited: only the copy can have failed.
    assert (
        "FAILED tests/properties/test_core_vs_oracle.py::test_split_matches_oracle" in done.stdout
    )
