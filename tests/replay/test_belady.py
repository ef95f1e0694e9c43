"""Belady's eviction is what it says, and it is no bound.

Belady (``pool.ReplayPool``) evicts the free block whose next use, by a
request the pool serves whose lookup can match it, lies furthest ahead, the
deepest on ties. The property checks every eviction it makes on drawn
geometries, workloads and pools (refusals included) against that rule,
computed here from the prompts themselves. It is not optimal: a request
holds blocks of its own, recomputes some already cached, and a sparse group
serves a lookup only where its hit lands, so another order can hit more
(:data:`NO_BOUND`, each case against the order that beats it).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from junction.command import dispatch as main
from junction.core import GroupKind, GroupSpec, HybridGeometry, cdiv, floor_to
from junction.reference.replay import (
    Point,
    PointResult,
    PrefixKeys,
    ReplayPool,
    ReplayRequest,
    future_uses,
    replay,
)

from .engine_side import FLOPS, token_requests
from .test_equal_to_engine import REPLAYED, geometries

ORDERS = ("belady", "lru", "fifo", "flop-aware")
NEVER = 1 << 62
Requests = list[tuple[list[int], int]]


@st.composite
def streams(draw: st.DrawFn) -> tuple[HybridGeometry, str, int, int, Requests]:
    """A geometry, a policy, a pool from one that refuses the longest requests to one
    with room to spare, a step budget and a workload with resends, extended turns and
    shared prefixes."""
    geometry = draw(geometries())
    policy = draw(st.sampled_from(sorted(REPLAYED)))
    base = draw(st.lists(st.integers(0, 3), min_size=4, max_size=40))
    requests: Requests = []
    for _ in range(draw(st.integers(2, 14))):
        outputs = draw(st.integers(1, 6))
        if requests and draw(st.booleans()):
            prompt = draw(st.sampled_from(requests))[0]
            more = draw(st.lists(st.integers(0, 3), max_size=12))
            requests.append(([*prompt, *more], outputs))
            continue
        shared = draw(st.integers(0, len(base)))
        tail = draw(st.lists(st.integers(0, 3), min_size=0 if shared else 1, max_size=20))
        requests.append(([*base[:shared], *tail], outputs))
    longest = max(len(p) + n for p, n in requests)
    per_request = sum(
        2 if g.kind is GroupKind.MAMBA else cdiv(longest, g.block_size) for g in geometry.groups
    )
    num_blocks = draw(st.integers(max(2, per_request // 2), 2 * per_request + 1))
    return geometry, policy, num_blocks, draw(st.integers(4, 64)), requests


class Rule:
    """Belady's victim as the rule states it, from the prompts: per key, the prefix it
    caches; per request, the (group, prefix) its lookup can match."""

    def __init__(self, geometry: HybridGeometry, requests: Requests) -> None:
        unit, width = geometry.hash_block_size, len(geometry.groups)
        keys = PrefixKeys(unit)
        self.stream: list[ReplayRequest] = []
        self.prefix: dict[int, tuple[int, ...]] = {}  # a prompt unit's key -> its prefix
        self.reach: list[set[tuple[int, tuple[int, ...]]]] = []
        for prompt, outputs in requests:
            units = keys.tokens(prompt)
            self.stream.append(ReplayRequest(len(prompt), outputs, units))
            for index, node in enumerate(units):
                self.prefix[node] = tuple(prompt[: (index + 1) * unit])
            end = floor_to(max(len(prompt) - 1, 0), geometry.alignment_tokens)
            self.reach.append(
                {
                    (group, tuple(prompt[:stop]))
                    for group, spec in enumerate(geometry.groups)
                    for stop in range(spec.block_size, end + 1, spec.block_size)
                }
            )
        self.width = width

    def rank(self, pool: ReplayPool, key: int, served: Sequence[bool]) -> tuple[int, int]:
        """(next use, end) of a free key: the victim's is the largest."""
        ends = pool.ends or {}
        prefix = self.prefix.get(key // self.width)
        found = NEVER
        if prefix is not None:  # an output's key is in no prompt
            wanted = (key % self.width, prefix)
            later = range(pool.now + 1, len(self.reach))
            found = next((r for r in later if served[r] and wanted in self.reach[r]), NEVER)
        return found, ends[key]


@given(streams())
def test_each_belady_eviction_takes_the_block_used_furthest_ahead(
    scenario: tuple[HybridGeometry, str, int, int, Requests],
) -> None:
    geometry, policy, num_blocks, budget, requests = scenario
    rule = Rule(geometry, requests)
    checked = []
    chosen = ReplayPool._victim

    def victim(pool: ReplayPool) -> int:
        key = chosen(pool)
        longest = pool._longest
        served = [
            longest is None or r.prompt_tokens + r.output_tokens - 1 <= longest for r in rule.stream
        ]
        best = max(rule.rank(pool, free, served) for free in pool.free)
        assert rule.rank(pool, key, served) == best
        checked.append(key)
        return key

    point = Point(policy, geometry.retention_interval, num_blocks, "belady")
    uses = future_uses(geometry, rule.stream)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ReplayPool, "_victim", victim)
        replay(geometry, rule.stream, [point], max_num_batched_tokens=budget, uses=uses)


def each_order(
    geometry: HybridGeometry, policy: str, num_blocks: int, budget: int, requests: Requests
) -> dict[str, PointResult]:
    stream = token_requests(geometry, requests)
    points = [Point(policy, geometry.retention_interval, num_blocks, e) for e in ORDERS]
    uses = future_uses(geometry, stream)
    found = replay(geometry, stream, points, max_num_batched_tokens=budget, flops=FLOPS, uses=uses)
    return {result.point.eviction: result for result in found}


def _zeros(*requests: tuple[int, int]) -> Requests:
    """Prompts of ``n`` zeros, each with its output tokens."""
    return [([0] * length, outputs) for length, outputs in requests]


ENDS_IN_3 = ([0] * 23 + [3], 6)
ENDS_IN_30 = ([0] * 23 + [3, 0], 1)

# (geometry, pool, step budget, requests, Belady's hit tokens, (the better order, its)).
NO_BOUND = {
    # The seventh request's lookup stops at P - 1, before the block ending 24, which is
    # cached: it computes a copy of its own, not cached (the key is taken). Belady then
    # evicts the cached one (its use, the last request, is furthest ahead); LRU evicts
    # others, and the last request hits it.
    "one attention group": (
        HybridGeometry([GroupSpec.full(4)], 1),
        9,
        4,
        [
            *_zeros((10, 1), (22, 1), (10, 1)),
            ENDS_IN_30,
            *_zeros((10, 3), (3, 2)),
            ENDS_IN_3,
            *_zeros((10, 1)),
            ENDS_IN_30,
        ],
        92,
        ("lru", 96),
    ),
    # The same under EAGLE: the third request recomputes the block past its hit; Belady
    # evicts the cached copy after its own was refused the key, FIFO before.
    "EAGLE": (
        HybridGeometry([GroupSpec.full(8)], 4, use_eagle=True),
        5,
        5,
        _zeros((23, 2), (1, 1), (23, 3), (23, 1), (23, 1), (1, 1), (23, 1)),
        24,
        ("fifo", 32),
    ),
    # A hit needs both groups' blocks; Belady weighs each group's alone.
    "two groups": (
        HybridGeometry([GroupSpec.full(4), GroupSpec.full(8)], 2),
        9,
        5,
        _zeros((4, 1), (15, 3), (13, 5), (1, 1), (15, 1)),
        0,
        ("fifo", 8),
    ),
    # A window of one token under EAGLE reads one block at the hit, yet every window
    # block a resent prompt contains counts as used: Belady keeps blocks no lookup reads.
    "sliding window": (
        HybridGeometry([GroupSpec.full(2), GroupSpec.sliding_window(2, 1)], 2, use_eagle=True),
        7,
        4,
        _zeros(*[(6, 1), (1, 1)] * 2, *[(6, 1)] * 4, (1, 1), *[(6, 1)] * 4),
        30,
        ("lru", 36),
    ),
}


@pytest.mark.parametrize("case", NO_BOUND.values(), ids=NO_BOUND.keys())
def test_belady_is_no_bound(case) -> None:  # type: ignore[no-untyped-def]
    geometry, num_blocks, budget, requests, hits, (order, better) = case
    found = each_order(geometry, "dense", num_blocks, budget, requests)
    assert (found["belady"].hit_tokens, found[order].hit_tokens) == (hits, better)


def test_a_refused_request_does_not_make_belady_evict_a_parent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Llama 3.1 8B at 65 blocks of 16 tokens. A (640 tokens) caches 40 blocks; A with
    a tail (1,100 tokens) is refused; B (480 tokens) must evict; A comes again. All of
    A's blocks are next used by the last request: Belady evicts the deepest, as LRU
    does (the least recently freed, A's tail), and both hit 544 tokens of A."""
    rows = [(640, [1, 2]), (1100, [1, 2, 3]), (480, [10]), (640, [1, 2])]
    trace = tmp_path / "four.jsonl.gz"
    lines = [
        {"timestamp": t, "input_length": n, "output_length": 1, "hash_ids": ids}
        for t, (n, ids) in enumerate(rows)
    ]
    trace.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in lines).encode()))
    out = tmp_path / "points.json"
    argv = ["hbm", "--trace", str(trace), "--model", "llama-3.1-8b", "--hbm", "0.126953125"]
    assert main([*argv, "--evictions", "lru,belady", "--json", str(out)]) == 0
    points = json.loads(out.read_text())["points"]
    assert {(p["eviction"], p["hit_tokens"], p["refused"]) for p in points} == {
        ("lru", 544, 1),
        ("belady", 544, 1),
    }
    # The refused request's prompt is a miss: 544 of 2,860 prompt tokens.
    assert {(p["refused_prompt_tokens"], p["token_hit_rate"]) for p in points} == {
        (1100, 544 / 2860)
    }
    assert "refused requests (counted as misses):        1" in capsys.readouterr().out
