"""The fast replay against the peer, kvcache-simulator 0.1.3 (the ``peer`` extra), on an
attention-only cache of the trace's own 512-token blocks, no eviction.

Where the two agree by construction (prompts of whole shared blocks and a
partial tail of their own) they find the same hit tokens. Three differences
of semantics are pinned, each a resend of one prompt:

* the last token is always recomputed (``M = P - 1``, decision 1): a prompt
  of whole blocks hits one block less here than in the peer, which counts
  every block of a resend;
* a prompt's partial last block is never cached (the engine hashes whole
  blocks only): the peer counts its tokens;
* the pool holds the running request's blocks, which the peer's capacity
  does not count.

Eviction under pressure differs too (docs/replay.md, "The peer"); BENCHMARKS.md
shows the two side by side on the whole conversation trace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.replay import Point, PrefixKeys, ReplayRequest, replay

Trace = Sequence[tuple[int, Sequence[int]]]  # (input_length, hash_ids) per request


def peer_hits(trace: Trace) -> int:
    """The peer's hit tokens with an unbounded cache, every request measured."""
    peer_trace = pytest.importorskip("kvcache_sim.trace")
    from kvcache_sim.plan import build_execution_plan
    from kvcache_sim.policies import simulate_ceiling

    lines = [json.dumps({"input_length": n, "hash_ids": list(ids)}) for n, ids in trace]
    parsed = peer_trace.parse_trace_lines(lines, block_size=512)
    return int(simulate_ceiling(build_execution_plan(parsed, warmup_fraction=0.0)).hitTokens)


def junction_hits(trace: Trace) -> int:
    """The fast replay's hit tokens: full attention on 512-token blocks, a pool it never fills."""
    geometry = HybridGeometry([GroupSpec.full(512)], 512)
    keys = PrefixKeys(512)
    stream = [ReplayRequest(n, 1, keys.hash_ids(ids, n)) for n, ids in trace]
    (result,) = replay(geometry, stream, [Point("dense", None, 10_000)])
    return result.hit_tokens


def test_both_find_the_same_whole_shared_blocks() -> None:
    trace = [
        (1024 + 100, [1, 2, 10]),
        (1536 + 7, [1, 2, 3, 11]),
        (512 + 300, [1, 12]),
        (1536 + 1, [1, 2, 3, 13]),
        (2048 + 50, [4, 5, 6, 7, 14]),
        (1024 + 20, [4, 5, 15]),
    ]
    assert junction_hits(trace) == peer_hits(trace) == 1024 + 512 + 1536 + 1024


def test_the_last_token_is_recomputed_here() -> None:
    trace = [(1024, [1, 2]), (1024, [1, 2])]
    assert (peer_hits(trace), junction_hits(trace)) == (1024, 512)


def test_a_partial_last_block_is_never_cached_here() -> None:
    trace = [(700, [1, 2]), (700, [1, 2])]
    assert (peer_hits(trace), junction_hits(trace)) == (700, 512)


def test_the_pool_holds_the_running_request_here() -> None:
    """Two blocks of room: the peer caches blocks of A and the resend hits some; the
    engine's pool must hold all of A's blocks while A runs (two whole and the
    partial one), so a pool of two refuses A altogether and nothing is hit."""
    pytest.importorskip("kvcache_sim")
    from kvcache_sim.plan import build_execution_plan
    from kvcache_sim.policies import simulate_policy
    from kvcache_sim.trace import parse_trace_lines

    trace = [(1024 + 100, [1, 2, 3]), (1024 + 100, [1, 2, 3])]
    lines = [json.dumps({"input_length": n, "hash_ids": list(ids)}) for n, ids in trace]
    plan = build_execution_plan(parse_trace_lines(lines, block_size=512), warmup_fraction=0.5)
    assert simulate_policy(plan, "lru", 2).hitTokens > 0
    geometry = HybridGeometry([GroupSpec.full(512)], 512)
    keys = PrefixKeys(512)
    stream = [ReplayRequest(n, 1, keys.hash_ids(ids, n)) for n, ids in trace]
    (result,) = replay(geometry, stream, [Point("dense", None, 3)], measure_from=1)
    assert (result.hit_tokens, result.refused) == (0, 1)
