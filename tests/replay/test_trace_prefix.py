"""The fast replay equals the reference engine on the first thousand requests of the
Mooncake conversation trace (examples/traces), request by request: a Mamba preset
(Qwen3-Next's blocks of 544), every compared retention variant, a pool that evicts."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from junction.reference.replay import PrefixKeys, ReplayRequest
from junction.reference.simulator.geometries import GEOMETRIES
from junction.reference.simulator.variants import table_variants
from junction.reference.workloads.hash_prompts import PromptBuilder
from junction.reference.workloads.mooncake import HashTraceRequest, parse_hash_trace

from .engine_side import assert_equal, engine_records, replay_records

TRACE = Path(__file__).resolve().parents[2] / "examples/traces/mooncake-conversation.jsonl.gz"
POOL = 4000  # blocks: about a third of what the first thousand requests cache


@pytest.fixture(scope="module")
def first_thousand() -> list[HashTraceRequest]:
    requests = parse_hash_trace(gzip.decompress(TRACE.read_bytes()).decode(), str(TRACE))
    return sorted(requests, key=lambda r: r.timestamp)[:1000]  # stable: file order on ties


@pytest.mark.parametrize("variant", table_variants(544), ids=lambda v: v.label)
def test_the_replay_equals_the_engine_on_the_trace(first_thousand, variant) -> None:  # type: ignore[no-untyped-def]
    geometry = GEOMETRIES["qwen3-next"].build(variant.retention_interval, False)
    keys = PrefixKeys(geometry.hash_block_size)
    stream = [
        ReplayRequest(r.input_length, r.output_length, keys.hash_ids(r.hash_ids, r.input_length))
        for r in first_thousand
    ]
    found = replay_records(geometry, variant.policy, POOL, "lru", 2048, stream)
    builder = PromptBuilder()
    prompts = [(builder.prompt(r), r.output_length) for r in first_thousand]
    expected = engine_records(geometry, variant.policy, POOL, "lru", 2048, prompts)
    assert expected[0][-1].usage.evictions > 0
    assert_equal(expected, found)
