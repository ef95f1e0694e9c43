"""Reading a trace file: gzip or plain, and which format it is (one record per format).

Each format is one :class:`TraceFormat` of :data:`FORMATS`: how to tell it
from the fields of the file's first non-blank line, its parser and a line
saying what it is. A line with a hash-id field is a hash-id trace
(``workloads.mooncake``), anything else a token-id trace
(``workloads.trace``), whose parser names what is wrong. Adding a format is
one record (docs/architecture.md, "Walk-through: adding a trace format"). A
file is gzip when it starts with gzip's magic bytes, whatever its name, and
the decompressed text is capped (``max_bytes``) so a small file cannot
expand without bound; only a regular file is read (``workloads.files``).
Detection by content, not by name or by trying each
parser: a malformed line is reported against the right format.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from .files import InputFileError, read_input
from .mooncake import FIELDS as HASH_FIELDS
from .mooncake import HashTraceRequest, parse_hash_trace
from .trace import TraceError, TraceRequest, decode_line, numbered_lines, parse_trace

__all__ = [
    "FORMATS",
    "TraceFormat",
    "TraceRequests",
    "detect_format",
    "load_any_trace",
    "parse_any_trace",
    "read_trace_text",
    "text_digest",
]

TraceRequests = list[TraceRequest] | list[HashTraceRequest]


@attrs.frozen
class TraceFormat:
    """A trace format: ``detect`` (from the first record's fields), ``parse``, ``description``."""

    name: str
    detect: Callable[[Mapping[str, object]], bool]
    parse: Callable[[str, str], TraceRequests]
    description: str


def _hash_fields(record: Mapping[str, object]) -> bool:
    return bool(set(record) & set(HASH_FIELDS))


def _any_record(record: Mapping[str, object]) -> bool:
    return True


# In detection order; the last accepts any record, so its parser names what is wrong.
FORMATS: tuple[TraceFormat, ...] = (
    TraceFormat(
        "mooncake",
        _hash_fields,
        parse_hash_trace,
        "hash-id prompts, Mooncake's format: timestamp, input_length, output_length, hash_ids",
    ),
    TraceFormat(
        "token-ids",
        _any_record,
        parse_trace,
        "token-id prompts: prompt, and optionally session and output_tokens",
    ),
)


def read_trace_text(path: str | Path, max_bytes: int) -> str:
    """The file's text, gunzipped when it is gzip; a file that is not regular, or
    text over ``max_bytes``, is a :class:`TraceError` (``workloads.files``)."""
    source = str(path)
    try:
        return read_input(path, max_bytes, gunzip=True).decode("utf-8")
    except InputFileError as error:
        raise TraceError(source, 0, None, str(error)) from None
    except UnicodeDecodeError as error:
        raise TraceError(source, 0, None, f"cannot read: {error}") from None


def text_digest(text: str) -> str:
    """The SHA-256 of a trace's (decompressed) text: what a worker checks it read."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def detect_format(text: str, source: str) -> TraceFormat:
    """The format of ``text``: the first of :data:`FORMATS` accepting its first record."""
    for number, line in numbered_lines(text):
        record = decode_line(source, number, line)
        return next(f for f in FORMATS if f.detect(record))
    return FORMATS[-1]  # no record: its parser says the trace has no requests


def parse_any_trace(text: str, source: str) -> TraceRequests:
    """Every request of a trace of any format; raises :class:`TraceError`."""
    return detect_format(text, source).parse(text, source)


def load_any_trace(path: str | Path, max_bytes: int) -> TraceRequests:
    """Read (gunzipping if needed) and parse a trace file of either format."""
    return parse_any_trace(read_trace_text(path, max_bytes), str(path))
