"""A hash-id trace (``workloads.mooncake``) as the replay's requests, in arrival order."""

from __future__ import annotations

import gzip
from pathlib import Path

from junction.reference.workloads.mooncake import parse_hash_trace

from .keys import PrefixKeys
from .sweep import ReplayRequest

__all__ = ["hash_trace_requests"]


def hash_trace_requests(path: Path, unit: int, first: int = 0) -> list[ReplayRequest]:
    """The trace's requests by timestamp (file order on ties, as ``simulator.workload``),
    the first ``first`` of them (0: all), keyed on hash units of ``unit`` tokens."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    requests = sorted(parse_hash_trace(data.decode(), str(path)), key=lambda r: r.timestamp)
    if first:
        requests = requests[:first]
    keys = PrefixKeys(unit)
    return [
        ReplayRequest(r.input_length, r.output_length, keys.hash_ids(r.hash_ids, r.input_length))
        for r in requests
    ]
