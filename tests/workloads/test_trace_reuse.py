"""Acceptance: a sequential dense replay with an unbounded pool hits what the hash ids allow.

``workloads.hash_reuse.reusable_tokens`` computes, from the conversation
trace's ids alone, the tokens a replay can hit (the longest prefix shared
with an earlier prompt, in 16-token blocks, at most ``P - 1``); the
reference engine, replaying the same requests one at a time with every block
retained (dense) on full attention + sliding window (gpt-oss's layout,
blocks of 16) and a pool that never evicts, must hit exactly that.

The whole trace replayed sequentially decodes its 4.1 million output tokens
one step each (tens of minutes here), so ``make verify`` replays its first
:data:`CI_REQUESTS` requests and compares the exact figure on that prefix;
``pytest --whole-trace`` runs the whole trace (``make demo-trace`` also
prints both figures for it). On the whole trace the direct figure is the
trace README's 54,097,440 of 144,793,823 prompt tokens (0.3736).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from junction.reference.simulator.geometries import GEOMETRIES
from junction.reference.simulator.pool import PoolSize, working_set
from junction.reference.simulator.run import Settings, run_one
from junction.reference.simulator.variants import Variant
from junction.reference.simulator.workload import Workload, hash_trace_workload
from junction.reference.workloads.hash_reuse import distinct_blocks, reusable_tokens
from junction.reference.workloads.mooncake import HashTraceRequest
from junction.reference.workloads.sessions import Arrival
from junction.reference.workloads.tracefile import load_any_trace

CONVERSATION = Path(__file__).parents[2] / "examples" / "traces" / "mooncake-conversation.jsonl.gz"
CI_REQUESTS = 400


def conversation(limit: int | None) -> list[HashTraceRequest]:
    requests = load_any_trace(CONVERSATION, 2**30)
    hashed = [r for r in requests if isinstance(r, HashTraceRequest)]
    return sorted(hashed, key=lambda r: r.timestamp)[:limit]  # the replay's order


def test_the_direct_figure_on_hand_made_prompts() -> None:
    requests = [
        HashTraceRequest(1, 0, 1030, 1, (7, 8, 9)),
        HashTraceRequest(2, 1, 1100, 1, (7, 8, 5)),  # ids 7, 8: 1,024 tokens
        HashTraceRequest(3, 2, 700, 1, (7, 8)),  # id 8 cut: 700 - 1 = 699 -> 688
        HashTraceRequest(4, 3, 2000, 1, (7, 8, 9, 4)),  # request 1's 1,030 tokens -> 1,024
        HashTraceRequest(5, 4, 512, 1, (1,)),  # nothing
        HashTraceRequest(6, 5, 1024, 1, (7, 8)),  # all seen, but the last token is computed
    ]
    hit = 1024 + 688 + 1024 + 0 + 1008
    assert reusable_tokens(requests, 16) == (hit, 1030 + 1100 + 700 + 2000 + 512 + 1024)
    with pytest.raises(ValueError, match="block_size=0: must be an int >= 1"):
        reusable_tokens(requests, 0)


def test_the_whole_trace_figure_is_the_readmes() -> None:
    assert reusable_tokens(conversation(None), 16) == (54_097_440, 144_793_823)


@pytest.mark.parametrize(
    "limit",
    [
        pytest.param(CI_REQUESTS, id=f"first-{CI_REQUESTS}", marks=pytest.mark.slow),
        pytest.param(
            None,
            id="whole-trace",
            marks=pytest.mark.whole_trace,
        ),
    ],
)
def test_a_sequential_dense_replay_hits_exactly_the_direct_figure(limit: int | None) -> None:
    requests = conversation(limit)
    workload = hash_trace_workload("conversation", requests)
    geometry = GEOMETRIES["gpt-oss"].build(None, False)
    blocks = PoolSize("unbounded", None).blocks(geometry, workload)
    assert blocks is not None
    settings = Settings(
        num_blocks=blocks,
        max_num_batched_tokens=2048,
        chunk_tokens=256,
        use_eagle=False,
        concurrency=1,
        seed=0,
        arrivals="sequential",
    )
    result = run_one("gpt-oss", Variant("dense", None), workload, settings)
    hit, looked_up = reusable_tokens(requests, 16)
    assert result.evictions == 0
    assert (result.hit_tokens, result.lookup_tokens) == (hit, looked_up)
    assert hit > 0.05 * looked_up  # the prefix does reuse: the comparison is not 0 == 0


@pytest.mark.parametrize("geometry", ["gpt-oss", "nemotron-h", "qwen3-next"])
def test_the_working_set_from_ids_is_the_one_from_hashing_the_prompts(geometry: str) -> None:
    requests = conversation(300)
    lazy = hash_trace_workload("conversation", requests)
    built = Workload("built", tuple((Arrival(t.prompt, t.max_output_tokens),) for t in lazy.turns))
    layout = GEOMETRIES[geometry].build(None, False)
    assert working_set(layout, lazy) == working_set(layout, built) > 0
    sizes = {group.block_size for group in layout.groups}
    assert all(distinct_blocks(requests, size) > 0 for size in sizes)
