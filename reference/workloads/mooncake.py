"""Hash-id traces (the Mooncake format): prompts recorded as prefix block ids, parsed strictly.

One JSON object per line (blank lines skipped), as the Mooncake FAST'25
traces publish them::

    {"timestamp": 0, "input_length": 1030, "output_length": 12, "hash_ids": [7, 8, 9]}

Every field is required and no other allowed: ``timestamp`` an int ms
``>= 0``, ``input_length`` in ``[1, 2**31)``, ``output_length`` in
``[1, 2**20]``, and exactly ``ceil(input_length / 512)`` ``hash_ids`` in
``[0, 2**31)`` (a replay must not invent or drop sharing). An error names the
file, the line and the field; lines are decoded by ``trace.decode_line``, as
strict as the token-id format. Prompt tokens come from ``workloads.hash_prompts``.
"""

from __future__ import annotations

import attrs

from junction.core import InvalidArgument
from junction.reference.errors import int_between

from .trace import (
    MAX_OUTPUT_TOKENS,
    MAX_TOKEN_ID,
    TraceError,
    decode_line,
    int_digits,
    parse_lines,
    shown,
)

__all__ = ["FIELDS", "HASH_BLOCK_TOKENS", "HashTraceRequest", "parse_hash_trace"]

HASH_BLOCK_TOKENS = 512
FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")


def _hash_ids(
    instance: HashTraceRequest, attribute: attrs.Attribute[tuple[int, ...]], value: object
) -> None:
    blocks = -(-instance.input_length // HASH_BLOCK_TOKENS)
    if not isinstance(value, tuple) or len(value) != blocks:
        raise InvalidArgument(attribute.name, value, f"must be a tuple of {blocks} ids")


@attrs.frozen
class HashTraceRequest:
    """One line of a hash-id trace: its line number and its four fields."""

    line: int
    timestamp: int = attrs.field(validator=int_between(0, 2**63 - 1))
    input_length: int = attrs.field(validator=int_between(1, MAX_TOKEN_ID))
    output_length: int = attrs.field(validator=int_between(1, MAX_OUTPUT_TOKENS))
    hash_ids: tuple[int, ...] = attrs.field(validator=_hash_ids)


def _int_field(
    source: str, number: int, record: dict[str, object], field: str, low: int, high: int
) -> int:
    value = record[field]
    if int_digits(value) is not None or type(value) is not int or not low <= value <= high:
        raise TraceError(
            source, number, field, f"must be an int in [{low:,}, {high:,}], got {shown(value)}"
        )
    return value


def _parse_line(source: str, number: int, text: str) -> HashTraceRequest:
    record = decode_line(source, number, text)
    unknown = sorted(set(record) - set(FIELDS))
    if unknown:
        raise TraceError(source, number, unknown[0], f"unknown field (known: {', '.join(FIELDS)})")
    for field in FIELDS:
        if field not in record:
            raise TraceError(source, number, field, "missing (a hash-id trace line has all four)")
    timestamp = _int_field(source, number, record, "timestamp", 0, 2**63 - 1)
    input_length = _int_field(source, number, record, "input_length", 1, MAX_TOKEN_ID)
    output_length = _int_field(source, number, record, "output_length", 1, MAX_OUTPUT_TOKENS)
    ids = record["hash_ids"]
    if not isinstance(ids, list):
        raise TraceError(
            source, number, "hash_ids", f"must be a list of ints, got {type(ids).__name__}"
        )
    for index, value in enumerate(ids):
        if (
            int_digits(value) is not None
            or type(value) is not int
            or not 0 <= value <= MAX_TOKEN_ID
        ):
            raise TraceError(
                source,
                number,
                "hash_ids",
                f"element {index} is {shown(value)}; hash ids must be ints in [0, 2**31)",
            )
    blocks = -(-input_length // HASH_BLOCK_TOKENS)
    if len(ids) != blocks:
        raise TraceError(
            source,
            number,
            "hash_ids",
            f"has {len(ids)} ids; input_length {input_length:,} needs {blocks} "
            f"(one per {HASH_BLOCK_TOKENS}-token block, the last may be partial)",
        )
    return HashTraceRequest(number, timestamp, input_length, output_length, tuple(ids))


def parse_hash_trace(text: str, source: str = "<trace>") -> list[HashTraceRequest]:
    """Every request of a hash-id trace, in file order; raises :class:`TraceError`."""
    return parse_lines(text, source, _parse_line)
