"""Request traces: JSON Lines files of token-id prompts, parsed strictly.

One JSON object per line (blank lines are skipped)::

    {"prompt": [101, 7, 7, 42], "output_tokens": 8, "session": "agent-1"}

* ``prompt`` (required): a non-empty list of token ids, ints in ``[0, 2**31)``.
* ``output_tokens`` (optional, default 16): tokens to generate, an int ``>= 1``.
* ``session`` (optional): a string or int. Lines of one session are its turns,
  sent in file order, each once the previous turn has finished; a line
  without one is a session of its own. Sessions start in the order they
  first appear.

Anything else is an error naming the file, the line and the field: a line
that is not a JSON object, a missing or unknown field, a wrong type, a
negative or too large token id. The format is documented for users in
``docs/trace-format.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs

__all__ = ["MAX_TOKEN_ID", "TraceError", "TraceRequest", "load_trace", "parse_trace"]

MAX_TOKEN_ID = 2**31 - 1
DEFAULT_OUTPUT_TOKENS = 16
_FIELDS = ("prompt", "output_tokens", "session")


class TraceError(ValueError):
    """A malformed trace; the message names the source, the line and the field."""

    def __init__(self, source: str, line: int, field: str | None, problem: str) -> None:
        where = f"{source}:{line}" + (f": field {field!r}" if field else "")
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.line = line
        self.field = field
        self.problem = problem


@attrs.frozen
class TraceRequest:
    """One line of a trace: its line number, prompt, output length and session.

    ``session`` is ``None`` for a line that is a session of its own.
    """

    line: int
    prompt: tuple[int, ...]
    output_tokens: int
    session: str | int | None


def _is_int(value: object) -> bool:
    return type(value) is int  # bool is not a token id nor a count


def _parse_line(source: str, number: int, text: str) -> TraceRequest:
    def fail(field: str | None, problem: str) -> TraceError:
        return TraceError(source, number, field, problem)

    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise fail(None, f"not valid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(record, dict):
        raise fail(None, f"must be a JSON object, got {type(record).__name__}")
    unknown = sorted(set(record) - set(_FIELDS))
    if unknown:
        raise fail(unknown[0], f"unknown field (known: {', '.join(_FIELDS)})")
    if "prompt" not in record:
        raise fail("prompt", "missing (a list of token ids)")
    prompt = record["prompt"]
    if not isinstance(prompt, list):
        raise fail("prompt", f"must be a list of token ids, got {type(prompt).__name__}")
    if not prompt:
        raise fail("prompt", "must not be empty")
    for index, token in enumerate(prompt):
        if not _is_int(token):
            raise fail("prompt", f"element {index} is {token!r}; token ids must be ints")
        if not 0 <= token <= MAX_TOKEN_ID:
            raise fail("prompt", f"element {index} is {token}; token ids must be in [0, 2**31)")
    output_tokens = record.get("output_tokens", DEFAULT_OUTPUT_TOKENS)
    if not _is_int(output_tokens) or output_tokens < 1:
        raise fail("output_tokens", f"must be an int >= 1, got {output_tokens!r}")
    session = record.get("session")
    if not (session is None or isinstance(session, str) or _is_int(session)):
        raise fail("session", f"must be a string or an int, got {session!r}")
    return TraceRequest(number, tuple(prompt), output_tokens, session)


def parse_trace(text: str, source: str = "<trace>") -> list[TraceRequest]:
    """Every request of a trace, in file order; raises :class:`TraceError`."""
    requests = [
        _parse_line(source, number, line)
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]
    if not requests:
        raise TraceError(source, 1, None, "the trace has no requests")
    return requests


def load_trace(path: str | Path) -> list[TraceRequest]:
    """Read and parse a trace file; an unreadable file is a :class:`TraceError` too."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TraceError(source, 0, None, f"cannot read: {error}") from None
    return parse_trace(text, source)
