"""Reading a user's input file: a regular file, capped, gunzipped within the cap.

Every command's input file (a trace, a model's ``config.json``, a saved
scenario or report) is read here, so each refuses alike and before it
allocates: a device (``/dev/zero`` never ends), a pipe (a FIFO would block
the open), a folder; a file, or a gzip's decompressed text, over the cap the
caller gives. The file is opened without blocking and judged by its open
descriptor, so what is checked is what is read. :func:`read_json` adds the
limits a trace line has (no int of more than :data:`DOCUMENT_INT_DIGITS`
digits, no nesting past a depth, checked in linear time) to a whole document.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import zlib
from pathlib import Path

from junction.core import JunctionError

from .trace import nested_too_deep

__all__ = [
    "DOCUMENT_BYTES",
    "DOCUMENT_DEPTH",
    "DOCUMENT_INT_DIGITS",
    "GZIP_MAGIC",
    "InputFileError",
    "NotJSON",
    "read_input",
    "read_json",
]

GZIP_MAGIC = b"\x1f\x8b"
DOCUMENT_BYTES = 64 * 2**20  # a config.json or a fuzz report is kilobytes
DOCUMENT_DEPTH = 32  # a report nests 7 deep, a config.json a few levels
# Far beyond any count a document holds (its reader checks the range, naming the
# field), far below CPython's 4,300 digits, past which ``json`` raises a bare ValueError.
DOCUMENT_INT_DIGITS = 100


class InputFileError(JunctionError, ValueError):
    """An input file that cannot be read as one; the message says why (callers name it)."""


class NotJSON(InputFileError):
    """A document that is not JSON; ``detail`` says where (``json``'s message)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"not valid JSON ({detail})")
        self.detail = detail


def _open_regular(path: str | Path) -> int:
    """A descriptor of ``path`` opened for reading, if it is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise InputFileError(f"cannot read: {error}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "a device, a pipe or a socket"
        raise InputFileError(f"cannot read: not a regular file ({kind})")
    return fd


def read_input(path: str | Path, max_bytes: int, *, gunzip: bool = False) -> bytes:
    """The bytes of the regular file ``path`` (gunzipped when ``gunzip`` and it starts
    with gzip's magic), at most ``max_bytes`` of them; :class:`InputFileError` otherwise."""
    fd = _open_regular(path)
    try:
        with os.fdopen(fd, "rb") as raw:
            size = os.fstat(raw.fileno()).st_size
            compressed = gunzip and raw.read(2) == GZIP_MAGIC
            raw.seek(0)
            if size > max_bytes and not compressed:
                raise InputFileError(f"its text is over {max_bytes:,} bytes ({size:,})")
            stream = gzip.GzipFile(fileobj=raw) if compressed else raw
            data = stream.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise InputFileError(f"cannot read: {error}") from None
    if len(data) > max_bytes:
        what = "decompressed text" if compressed else "text"
        raise InputFileError(f"its {what} is over {max_bytes:,} bytes")
    return data


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > DOCUMENT_INT_DIGITS:
        raise InputFileError(f"holds an int of {digits:,} digits (at most {DOCUMENT_INT_DIGITS})")
    return int(text)


def read_json(
    path: str | Path, max_bytes: int = DOCUMENT_BYTES, max_depth: int = DOCUMENT_DEPTH
) -> object:
    """The JSON document in ``path`` (:func:`read_input`), within the limits above."""
    try:
        text = read_input(path, max_bytes).decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputFileError(f"cannot read: {error}") from None
    deep = nested_too_deep(text, max_depth)
    if deep is not None:
        raise InputFileError(f"nested deeper than {max_depth} levels at character {deep[1]:,}")
    try:
        return json.loads(text, parse_int=_int)
    except json.JSONDecodeError as error:
        raise NotJSON(f"{error.msg} at line {error.lineno} column {error.colno}") from None
