"""Eviction policies: the FLOP model's arithmetic and what each order picks.

LRU giving exactly the engine's earlier runs is every other engine test (they
run with the default); the state machine and the conformance harness run
both orders under pressure. Here: the cost model against sums token by
token, the FLOP-aware choice on hand-built candidates, and the bad names.
"""

from __future__ import annotations

from collections import OrderedDict

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.block_pool import Block
from junction.reference.engine.eviction import (
    FlopAware,
    FlopAwareOrder,
    FlopModel,
    LayerCost,
    LeastRecentlyUsed,
    eviction_policy,
)

MODEL = FlopModel(
    full=LayerCost(7, 3),
    sliding_window=LayerCost(5, 2),
    mamba=LayerCost(11),
    shared_flops_per_token=13,
)
FULL, SWA, MAMBA = GroupSpec.full(4), GroupSpec.sliding_window(4, 6), GroupSpec.mamba(8)


def by_token(spec: GroupSpec, start: int, end: int) -> int:
    cost = MODEL.cost(spec.kind)
    keys = [t + 1 if spec.window is None else min(t + 1, spec.window) for t in range(start, end)]
    return sum(cost.linear_flops_per_token + cost.attention_flops_per_pair * k for k in keys)


@pytest.mark.parametrize("spec", [FULL, SWA, MAMBA], ids=["full", "swa", "mamba"])
@pytest.mark.parametrize(("start", "end"), [(0, 0), (0, 1), (0, 6), (3, 7), (5, 20), (8, 40)])
def test_the_cost_of_a_span_is_the_sum_over_its_tokens(
    spec: GroupSpec, start: int, end: int
) -> None:
    assert MODEL.flops(spec, start, end) == by_token(spec, start, end)


def test_what_a_block_saves_and_a_hit_saves() -> None:
    # A full block: its tokens, with the shared layers; a window block: its tokens;
    # a Mamba state: the recurrent layers of its whole prefix.
    assert MODEL.block_flops(FULL, 12) == by_token(FULL, 8, 12) + 13 * 4
    assert MODEL.block_flops(SWA, 12) == by_token(SWA, 8, 12)
    assert MODEL.block_flops(MAMBA, 16) == 11 * 16
    geometry = HybridGeometry((FULL, SWA, MAMBA), 4)
    assert (
        MODEL.prefix_flops(geometry, 16)
        == sum(by_token(spec, 0, 16) for spec in (FULL, SWA, MAMBA)) + 13 * 16
    )
    with pytest.raises(ValueError, match="kind='mamba': this FLOP model has no cost for it"):
        FlopModel(full=LayerCost(1)).cost(MAMBA.kind)


def cached(block_id: int, group_id: int, end: int, parent: int, key: int) -> Block:
    block = Block(block_id)
    block.key, block.end, block.parent = (group_id, key), end, parent
    return block


def test_flop_aware_keeps_a_long_state_over_an_older_attention_leaf() -> None:
    order = FlopAwareOrder(FlopAware(MODEL, window=8, initial_alpha=2.0), (FULL, MAMBA))
    state = cached(1, 1, 64, 0, 100)  # a Mamba state for 64 tokens, freed first
    leaf = cached(2, 0, 8, 50, 200)  # the end of a two-block attention chain
    head = cached(3, 0, 4, 0, 50)  # the chain's first block: leaf continues it
    for block in (state, leaf, head):
        order.cached(block)
    candidates = OrderedDict((b.block_id, b) for b in (state, leaf, head))
    assert LeastRecentlyUsed().order(HybridGeometry((FULL, MAMBA), 4)).victim(candidates) is state
    assert order.victim(candidates) is leaf  # the head is inside a chain: not a candidate
    order.evicted(leaf)
    del candidates[leaf.block_id]
    assert order.victim(candidates) is head
    # alpha at its lower bound: recency all but decides, as LRU does.
    lru_like = FlopAwareOrder(
        FlopAware(MODEL, window=8, alpha_bound=1e9, initial_alpha=1e-9), (FULL, MAMBA)
    )
    assert lru_like.victim(candidates) is state


def test_alpha_follows_the_ghost_feedback() -> None:
    order = FlopAwareOrder(FlopAware(MODEL, window=8, initial_alpha=2.0, step=2.0), (FULL, MAMBA))
    state, leaf = cached(1, 1, 64, 0, 100), cached(2, 0, 4, 0, 200)
    for block in (state, leaf):
        order.cached(block)
    assert order.victim(OrderedDict([(1, state), (2, leaf)])) is leaf  # kept the state
    order.revived(state)  # a hit on the state it kept
    assert order.alpha == 4.0
    order.evicted(leaf)
    order.cached(leaf)  # the prefix it evicted was computed again
    assert order.alpha == 2.0 and order.adjustments == 2


def test_an_unknown_eviction_policy_is_named() -> None:
    assert eviction_policy("lru", MODEL) == LeastRecentlyUsed()
    assert eviction_policy("flop-aware", MODEL) == FlopAware(MODEL)
    with pytest.raises(ValueError, match="eviction='lfu': expected one of lru, flop-aware"):
        eviction_policy("lfu", MODEL)
