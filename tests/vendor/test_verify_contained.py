"""``vendor verify`` runs the copy in a contained child with a deadline (issue 24).

Before, the walk ran in-process: a copy whose ``__init__`` raised
``SystemExit(0)`` ended the command silently with status 0; a plausible
one-line edit (``cdiv`` as floor division) hung it for good; a copy whose
free ``mamba_block_aligned_split`` always answered 0 agreed, because the walk
asked the bound classes only; and ``copy`` left a 0700 folder.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from junction.command import dispatch as reference

ROOT = Path(__file__).resolve().parents[2]


def _verify(target: Path, *more: str) -> tuple[int, str, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "junction", "vendor", "verify", str(target), *more],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def test_a_copy_that_exits_zero_on_import_fails(vendored: Path) -> None:
    init = vendored / "__init__.py"
    init.write_text("raise SystemExit(0)\n" + init.read_text())
    code, _, err, _ = _verify(vendored, "--bound", "1")
    assert code == 1 and "Traceback" not in err
    assert "cannot import the copy: SystemExit(0)" in err.strip().splitlines()[-1]


def test_a_copy_that_exits_silently_during_the_walk_fails(vendored: Path) -> None:
    grid = vendored / "grid.py"
    grid.write_text(grid.read_text() + "\nimport os\nos._exit(0)\n")
    code, _, err, _ = _verify(vendored, "--bound", "1")
    assert code == 1
    assert "the copy stopped answering: it ended (exit status 0)" in err.strip().splitlines()[-1]


def test_the_cdiv_floor_division_edit_ends_within_its_deadline_with_exit_1(vendored: Path) -> None:
    grid = vendored / "grid.py"
    text = grid.read_text()
    assert "return -(-value // divisor)" in text
    grid.write_text(text.replace("return -(-value // divisor)", "return value // divisor"))
    code, _, err, elapsed = _verify(vendored, "--bound", "2", "--seconds", "20")
    assert code == 1 and "Traceback" not in err
    assert elapsed < 20 + 10, f"took {elapsed:.1f} s"


def test_a_free_function_that_always_answers_0_is_found(vendored: Path) -> None:
    split = vendored / "split.py"
    split.write_text(
        split.read_text() + "\n\ndef mamba_block_aligned_split(**kwargs):\n    return 0\n"
    )
    code, out, err, _ = _verify(vendored, "--bound", "1")
    assert code == 1, (out, err)
    assert "free mamba_block_aligned_split {" in out


def test_verify_still_passes_a_faithful_copy(vendored: Path) -> None:
    code, out, err, _ = _verify(vendored, "--bound", "1")
    assert code == 0, (out, err)
    assert "every input agrees" in out and "free mamba_block_aligned_split" in out


def test_copy_leaves_ordinary_permissions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "copy"
    umask = os.umask(0o022)
    try:
        assert reference(["vendor", "copy", str(target)]) == 0
    finally:
        os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
