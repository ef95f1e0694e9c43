"""Reading a trace file: gzip or plain, and which of the two formats it is.

One place decides the format, from the fields of the first non-blank line:
a line with any of ``timestamp``, ``input_length``, ``output_length`` or
``hash_ids`` is a hash-id trace (``workloads.mooncake``), anything else a
token-id trace (``workloads.trace``), whose parser then names what is wrong.
A file is gzip when it starts with gzip's magic bytes, whatever its name.
The decompressed text is capped (``max_bytes``): a small compressed file can
expand without bound, and the cap turns that into one error line instead of
an exhausted machine. Rejected: detecting by file name (a ``.jsonl`` that is
gzipped, or the reverse, would fail obscurely) and by trying one parser then
the other (a malformed line would be reported against the wrong format).
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from pathlib import Path

from .mooncake import FIELDS as HASH_FIELDS
from .mooncake import HashTraceRequest, parse_hash_trace
from .trace import TraceError, TraceRequest, decode_line, parse_trace

__all__ = ["GZIP_MAGIC", "load_any_trace", "parse_any_trace", "read_trace_text", "text_digest"]

GZIP_MAGIC = b"\x1f\x8b"


def read_trace_text(path: str | Path, max_bytes: int) -> str:
    """The file's text, gunzipped when it is gzip; over ``max_bytes`` is a :class:`TraceError`."""
    source = str(path)
    try:
        with open(path, "rb") as raw:
            compressed = raw.read(2) == GZIP_MAGIC
        opener = gzip.open if compressed else open
        with opener(path, "rb") as stream:
            data = stream.read(max_bytes + 1)
        if len(data) > max_bytes:
            what = "decompressed text" if compressed else "text"
            raise TraceError(
                source,
                0,
                None,
                f"its {what} is over {max_bytes:,} bytes, the most that fits memory",
            )
        return data.decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as error:
        raise TraceError(source, 0, None, f"cannot read: {error}") from None


def text_digest(text: str) -> str:
    """The SHA-256 of a trace's (decompressed) text: what a worker checks it read."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_any_trace(text: str, source: str) -> list[TraceRequest] | list[HashTraceRequest]:
    """Every request of a trace of either format; raises :class:`TraceError`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            if set(decode_line(source, number, line)) & set(HASH_FIELDS):
                return parse_hash_trace(text, source)
            break
    return parse_trace(text, source)


def load_any_trace(path: str | Path, max_bytes: int) -> list[TraceRequest] | list[HashTraceRequest]:
    """Read (gunzipping if needed) and parse a trace file of either format."""
    return parse_any_trace(read_trace_text(path, max_bytes), str(path))
