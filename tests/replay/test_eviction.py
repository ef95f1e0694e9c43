"""The replay's eviction orders on a case small enough to follow by hand.

Full attention, blocks of 4; a pool of 5 usable blocks. A (9 tokens) then B
(9 other tokens) each cache two blocks and free them tail first, so the free
queue is A1, A0, B1, B0 and one unhashed block is left. C (5 tokens) needs
two blocks: the unhashed one and one eviction. LRU evicts A1 (freed first),
FIFO A0 (cached first), Belady a block of B (never used again, while a resend
of A comes next). The resend of A then hits 4, 0 and 8 tokens.
"""

from __future__ import annotations

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.replay import Point, PrefixKeys, ReplayRequest, future_uses, replay

A, B, C = list(range(9)), list(range(100, 109)), list(range(200, 205))


@pytest.mark.parametrize(("eviction", "hit"), [("lru", 4), ("fifo", 0), ("belady", 8)])
def test_each_order_evicts_its_own_victim(eviction: str, hit: int) -> None:
    geometry = HybridGeometry([GroupSpec.full(4)], 4)
    keys = PrefixKeys(4)
    stream = [ReplayRequest(len(p), 1, keys.tokens(p)) for p in (A, B, C, A)]
    point = Point("junction", None, 6, eviction)
    (result,) = replay(
        geometry, stream, [point], uses=future_uses(geometry, stream), keep_records=True
    )
    assert [r.usage.evictions for r in result.records[:3]] == [0, 0, 1]
    assert result.records[-1].hit == hit


def test_belady_sees_a_use_pass_in_a_refused_request() -> None:
    """A's blocks are next used by B, which the pool refuses (too long to hold); when C
    must evict, their next use is D, not B: Belady still finds a victim among them."""
    geometry = HybridGeometry([GroupSpec.full(4)], 4)
    keys = PrefixKeys(4)
    prompts = (A, [*A, *range(300, 330)], list(range(400, 413)), A)
    stream = [ReplayRequest(len(p), 1, keys.tokens(p)) for p in prompts]
    point = Point("junction", None, 6, "belady")
    (result,) = replay(
        geometry, stream, [point], uses=future_uses(geometry, stream), keep_records=True
    )
    assert result.refused == 1
    assert [r.usage.evictions for r in result.records[:2]] == [0, 1]


def test_a_refused_request_is_a_miss_in_both_rates() -> None:
    """A (9 tokens) twice in a pool of 5 blocks; B (39 tokens) between them is refused:
    the resend hits 8 of A's 9 tokens, out of 57 prompt tokens in all."""
    geometry = HybridGeometry([GroupSpec.full(4)], 4)
    keys = PrefixKeys(4)
    prompts = (A, list(range(300, 339)), A)
    stream = [ReplayRequest(len(p), 1, keys.tokens(p)) for p in prompts]
    (result,) = replay(geometry, stream, [Point("junction", None, 6)])
    assert (result.refused, result.refused_tokens, result.hit_tokens) == (1, 39, 8)
    assert result.token_hit_rate == 8 / 57
    assert result.prefill_saved_share == 8 / 57
