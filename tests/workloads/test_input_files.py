"""Reading an input file (``workloads.files``): regular files only, capped, gzip capped,
and a JSON document within the limits a trace line has. Every command reads its input
files here (tests/cli/test_inputs_hostile.py runs them end to end)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from junction.reference.workloads.files import InputFileError, read_input, read_json


def test_the_reader_judges_the_descriptor_it_reads(tmp_path: Path) -> None:
    """What a pre-check sees can change before the open: the open file itself is checked."""
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputFileError, match=r"^cannot read: not a regular file \(a device"):
        read_input(tmp_path / "fifo", 100)
    with pytest.raises(InputFileError, match=r"^cannot read: not a regular file \(a folder\)"):
        read_input(tmp_path, 100)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 33 + "]" * 33, "nested deeper than 32 levels at character 33"),
        ('{"a": "' + "[" * 100 + '"}', None),  # brackets in a string do not nest
        ('{"a": ' + "9" * 101 + "}", "holds an int of 101 digits (at most 100)"),
        ('{"a": 1', "not valid JSON (Expecting ',' delimiter at line 1 column 8)"),
        ("x" * 2000, "its text is over 1,000 bytes (2,000)"),
    ],
    ids=["deep", "brackets-in-a-string", "long-int", "not-json", "over-the-cap"],
)
def test_a_document_is_read_within_the_limits_of_a_trace_line(
    text: str, message: str | None, tmp_path: Path
) -> None:
    document = tmp_path / "d.json"
    document.write_text(text)
    if message is None:
        assert read_json(document, max_bytes=1000) == {"a": "[" * 100}
        return
    with pytest.raises(InputFileError) as info:
        read_json(document, max_bytes=1000)
    assert str(info.value) == message


def test_a_gzip_is_refused_at_its_cap_without_being_expanded(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"0" * 2**26, 9))  # 64 MiB in about 64 KiB
    with pytest.raises(InputFileError, match=r"^its decompressed text is over 1,048,576 bytes$"):
        read_input(bomb, 2**20, gunzip=True)
    assert read_input(bomb, 2**20)[:2] == b"\x1f\x8b"  # not asked to: the bytes as they are
