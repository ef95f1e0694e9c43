"""Request traces: JSON Lines files of token-id prompts, parsed strictly.

One JSON object per line (blank lines skipped), documented for users in
``docs/trace-format.md``::

    {"prompt": [101, 7, 7, 42], "output_tokens": 8, "session": "agent-1"}

``prompt`` is required (token ids in ``[0, 2**31)``); ``output_tokens``
(default 16) and ``session`` (a string or int: a session's lines are its
turns, in file order) are optional. Anything else is an error naming the
file, the line and the field, including what JSON allows but a trace must
not hold (huge ints, deep nesting, a key given twice, one session named as
both ``1`` and ``"1"``), so none reaches the interpreter's limits as a
traceback (docs/design/strict-traces.md).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import attrs

from junction.core import JunctionError

Line = TypeVar("Line")

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_OUTPUT_TOKENS",
    "MAX_TOKEN_ID",
    "TraceError",
    "TraceRequest",
    "decode_line",
    "int_digits",
    "load_trace",
    "nested_too_deep",
    "numbered_lines",
    "parse_lines",
    "parse_trace",
    "shown",
]

MAX_TOKEN_ID = 2**31 - 1
MAX_INT_DIGITS = 20  # an int64 has 19; a token id 10
MAX_DEPTH = 8  # a trace line nests 2 deep: {"prompt": [...]}
MAX_OUTPUT_TOKENS = 2**20  # more than any model's context; a larger count is a typo
DEFAULT_OUTPUT_TOKENS = 16
_FIELDS = ("prompt", "output_tokens", "session")


class TraceError(JunctionError, ValueError):
    """A malformed trace; the message names the source, the line and the field."""

    def __init__(self, source: str, line: int, field: str | None, problem: str) -> None:
        where = f"{source}:{line}" + (f": field {field!r}" if field else "")
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.line = line
        self.field = field
        self.problem = problem

    def __reduce__(self) -> tuple[type[TraceError], tuple[str, int, str | None, str]]:
        # Unpickling (a worker's error sent back to its caller) calls the class with
        # these, not with the one message ``args`` holds.
        return TraceError, (self.source, self.line, self.field, self.problem)


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


class _LongInt:
    """An int beyond CPython's digit limit, as the second decoding keeps it: its length."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def int_digits(value: object) -> int | None:
    """The length of an int with more than :data:`MAX_INT_DIGITS` digits, else ``None``."""
    if isinstance(value, _LongInt):
        return value.digits
    if type(value) is int and abs(value) >= 10**MAX_INT_DIGITS:
        return len(str(abs(value)))
    return None


def shown(value: object) -> str:
    """``repr(value)``, cut short: a message stays one readable line."""
    digits = int_digits(value)
    if digits is not None:
        return f"an int of {digits:,} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Duplicated:
    """What the decoder makes of an object with a key given twice, for the field check."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __repr__(self) -> str:
        return f"<object with {self.key!r} twice>"


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Duplicated:
    record = dict(pairs)
    if len(record) == len(pairs):
        return record
    counts = Counter(key for key, _ in pairs)
    return _Duplicated(next(key for key, count in counts.items() if count > 1))


def _integer(text: str) -> int | _LongInt:
    digits = len(text.lstrip("-"))
    return int(text) if digits <= MAX_INT_DIGITS else _LongInt(digits)


def _decode(text: str) -> object:
    """``json.loads``; an int too long for CPython is decoded again as a :class:`_LongInt`."""
    try:
        return json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError:
        raise
    except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
        return json.loads(text, parse_int=_integer, object_pairs_hook=_object)


# A JSON string (skipped whole, so brackets inside strings do not count) or a bracket.
# A string that never closes runs to the end of the text: one match, not a failed
# scan from every later quote (quadratic in the line's length); such a line is not
# JSON, which the decoder then says.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def nested_too_deep(text: str, limit: int = MAX_DEPTH) -> tuple[str | None, int] | None:
    """``(top-level key, column)`` where ``text`` first nests deeper than ``limit``,
    in one pass (before ``json``, whose recursion a deep text would exhaust)."""
    if text.count("[") + text.count("{") <= limit:
        return None
    depth, key = 0, None
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > limit:
                return key, match.start() + 1
        elif token in ("]", "}"):
            depth -= 1
        elif depth == 1:
            key = token[1:-1]  # a key, or a string value after its key: the last is the key
    return None


def decode_line(source: str, number: int, text: str) -> dict[str, Any]:
    """One line as a JSON object, with the limits above; raises :class:`TraceError`.

    Shared by every trace format (``workloads.mooncake`` too), so each is
    exactly as strict about JSON itself.
    """
    deep = nested_too_deep(text)
    if deep is not None:
        field, column = deep
        raise TraceError(
            source, number, field, f"nested deeper than {MAX_DEPTH} levels at column {column}"
        )
    try:
        record = _decode(text)
    except json.JSONDecodeError as error:
        raise TraceError(
            source, number, None, f"not valid JSON ({error.msg} at column {error.colno})"
        ) from None
    if isinstance(record, _Duplicated):
        raise TraceError(source, number, record.key, "given twice; a field appears once per line")
    if not isinstance(record, dict):
        raise TraceError(
            source, number, None, f"must be a JSON object, got {type(record).__name__}"
        )
    return record


def _parse_line(source: str, number: int, text: str) -> TraceRequest:
    def fail(field: str | None, problem: str) -> TraceError:
        return TraceError(source, number, field, problem)

    record = decode_line(source, number, text)
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
        if int_digits(token) is not None:
            raise fail(
                "prompt", f"element {index} is {shown(token)}; token ids must be in [0, 2**31)"
            )
        if not _is_int(token):
            raise fail("prompt", f"element {index} is {shown(token)}; token ids must be ints")
        if not 0 <= token <= MAX_TOKEN_ID:
            raise fail("prompt", f"element {index} is {token}; token ids must be in [0, 2**31)")
    output_tokens = record.get("output_tokens", DEFAULT_OUTPUT_TOKENS)
    if not _is_int(output_tokens) or not 1 <= output_tokens <= MAX_OUTPUT_TOKENS:
        raise fail(
            "output_tokens",
            f"must be an int in [1, {MAX_OUTPUT_TOKENS:,}], got {shown(output_tokens)}",
        )
    session = record.get("session")
    if int_digits(session) is not None:
        raise fail(
            "session", f"must be an int of at most {MAX_INT_DIGITS} digits, got {shown(session)}"
        )
    if not (session is None or isinstance(session, str) or _is_int(session)):
        raise fail("session", f"must be a string or an int, got {shown(session)}")
    return TraceRequest(number, tuple(prompt), output_tokens, session)


def _check_sessions(source: str, requests: list[TraceRequest]) -> None:
    """No session named both as an int and as the string of its digits."""
    first: dict[str, TraceRequest] = {}
    for request in requests:
        if request.session is None:
            continue
        seen = first.setdefault(str(request.session), request)
        if type(seen.session) is not type(request.session):
            raise TraceError(
                source,
                request.line,
                "session",
                f"{request.session!r} here and {seen.session!r} on line {seen.line} name the "
                "same session as an int and as a string; write it one way",
            )


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(number, line)`` of every non-blank line, numbered from 1.

    A line ends at ``"\n"`` (an ``"\r"`` before it is dropped) and nowhere
    else: ``str.splitlines`` also breaks at U+2028, U+2029 and C0/C1
    separators, which a JSON string may hold raw, and its numbers would not
    be an editor's.
    """
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield number, line.removesuffix("\r")


def parse_lines(text: str, source: str, parse_line: Callable[[str, int, str], Line]) -> list[Line]:
    """``parse_line(source, number, line)`` of every non-blank line, in file order.

    Both trace formats read their lines this way; a trace without a request is
    a :class:`TraceError` on line 1.
    """
    requests = [parse_line(source, number, line) for number, line in numbered_lines(text)]
    if not requests:
        raise TraceError(source, 1, None, "the trace has no requests")
    return requests


def parse_trace(text: str, source: str = "<trace>") -> list[TraceRequest]:
    """Every request of a trace, in file order; raises :class:`TraceError`."""
    requests = parse_lines(text, source, _parse_line)
    _check_sessions(source, requests)
    return requests


def load_trace(path: str | Path) -> list[TraceRequest]:
    """Read and parse a trace file; an unreadable file is a :class:`TraceError` too."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TraceError(source, 0, None, f"cannot read: {error}") from None
    return parse_trace(text, source)
