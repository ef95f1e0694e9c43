"""A hash-id trace (``workloads.mooncake``) as the replay's requests, in arrival order."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from junction.reference.workloads.hash_prompts import HashArrival, PromptBuilder
from junction.reference.workloads.mooncake import (
    HASH_BLOCK_TOKENS,
    HashTraceRequest,
    parse_hash_trace,
)
from junction.reference.workloads.tracefile import read_trace_text

from .keys import PrefixKeys
from .sweep import ReplayRequest

__all__ = ["answered_requests", "hash_trace_requests", "replay_requests"]


def replay_requests(requests: Sequence[HashTraceRequest], unit: int) -> list[ReplayRequest]:
    """``requests`` by timestamp (file order on ties, as ``simulator.workload``), keyed
    on hash units of ``unit`` tokens."""
    keys = PrefixKeys(unit)
    return [
        ReplayRequest(r.input_length, r.output_length, keys.hash_ids(r.hash_ids, r.input_length))
        for r in sorted(requests, key=lambda r: r.timestamp)
    ]


def _block_ids(builder: PromptBuilder, request: HashTraceRequest) -> list[int]:
    """The ids whose tokens the request's blocks carry, as ``PromptBuilder.tokens``
    builds them: a partial last block's taken from its continuation's, in turn."""
    ids = list(request.hash_ids)
    if request.input_length % HASH_BLOCK_TOKENS:
        while ids[-1] in builder.rebuilt:
            ids[-1] = builder.rebuilt[ids[-1]]
    return ids


def answered_requests(arrivals: Sequence[HashArrival], unit: int) -> list[ReplayRequest]:
    """Arrivals of a hash-id trace in order (``simulator.workload.hash_trace_workload``
    with ``answers_from_continuations``), each answer keyed as its continuation's prompt
    carries it, so a later prompt that resends it can hit its blocks."""
    keys = PrefixKeys(unit)
    found = []
    for arrival in arrivals:
        request, continuation = arrival.request, arrival.continuation
        ids = _block_ids(arrival.builder, request)
        if continuation is None:
            units = keys.hash_ids(ids, request.input_length)
        else:
            following = _block_ids(arrival.builder, continuation.request)
            units = keys.answered(ids, request.input_length, following, continuation.end)
        found.append(ReplayRequest(request.input_length, request.output_length, units))
    return found


def hash_trace_requests(
    path: Path, unit: int, first: int = 0, max_bytes: int = 2**31
) -> list[ReplayRequest]:
    """:func:`replay_requests` of the trace file's first ``first`` lines in file order
    (0: all), its text (gunzipped) at most ``max_bytes``."""
    requests = parse_hash_trace(read_trace_text(path, max_bytes), str(path))
    return replay_requests(requests[:first] if first else requests, unit)
