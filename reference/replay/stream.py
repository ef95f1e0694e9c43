"""A hash-id trace (``workloads.mooncake``) as the replay's requests, in arrival order."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from junction.reference.workloads.mooncake import HashTraceRequest, parse_hash_trace
from junction.reference.workloads.tracefile import read_trace_text

from .keys import PrefixKeys
from .sweep import ReplayRequest

__all__ = ["hash_trace_requests", "replay_requests"]


def replay_requests(requests: Sequence[HashTraceRequest], unit: int) -> list[ReplayRequest]:
    """``requests`` by timestamp (file order on ties, as ``simulator.workload``), keyed
    on hash units of ``unit`` tokens."""
    keys = PrefixKeys(unit)
    return [
        ReplayRequest(r.input_length, r.output_length, keys.hash_ids(r.hash_ids, r.input_length))
        for r in sorted(requests, key=lambda r: r.timestamp)
    ]


def hash_trace_requests(
    path: Path, unit: int, first: int = 0, max_bytes: int = 2**31
) -> list[ReplayRequest]:
    """:func:`replay_requests` of the trace file's first ``first`` lines in file order
    (0: all), its text (gunzipped) at most ``max_bytes``."""
    requests = parse_hash_trace(read_trace_text(path, max_bytes), str(path))
    return replay_requests(requests[:first] if first else requests, unit)
