"""BENCHMARKS.md holds one current table per benchmark: short, and no history.

Earlier figures live in git, so the file names no commit (a hash would date a
figure against code that has moved on) and stays within :data:`LINES` lines.
"""

from __future__ import annotations

import re

from tests.parts import ROOT

LINES = 250
# A hex word of 7 to 40 characters with a digit and a letter: how git names a commit.
COMMIT = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")


def test_a_commit_hash_is_seen_and_a_number_is_not() -> None:
    assert COMMIT.findall("at 2d0c6bf, before 097edd8") == ["2d0c6bf", "097edd8"]
    assert COMMIT.findall("2,409.3 million, 0.969, 1234567 inputs, deadbeefs") == []


def test_benchmarks_md_is_current_tables_only() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    assert len(text.splitlines()) <= LINES, f"BENCHMARKS.md is over {LINES} lines"
    assert COMMIT.findall(text) == [], "BENCHMARKS.md names commits: git has the history"
