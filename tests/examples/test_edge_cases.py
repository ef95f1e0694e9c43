"""Edge cases a reader can check by hand (each one killed a ``make mutmut`` survivor).

Defaults that must be neutral, a boundary landing exactly on 0, a block of
one token, and the whole-block landing point of partial hits.
"""

from __future__ import annotations

from junction.core import (
    GroupSpec,
    HybridGeometry,
    checkpoint_stop,
    mamba_block_aligned_split,
    promised_positions,
    reachable_boundaries,
)


def test_split_defaults_no_junction_no_eagle_no_partial_hits() -> None:
    # b = 1: with a junction at 1 the chunk would stop there; P - 1 = 3 is the stop.
    chunk = dict(num_computed_tokens=0, num_new_tokens=4, num_prompt_tokens=4, num_tokens=4)
    assert mamba_block_aligned_split(**chunk, block_size=1) == 3
    # lcp is floor_4(9 - 1) = 8 without EAGLE (4 with it).
    assert (
        mamba_block_aligned_split(
            num_computed_tokens=0, num_new_tokens=9, num_prompt_tokens=9, num_tokens=9, block_size=4
        )
        == 8
    )
    # From lcp = 8 to the end: only partial hits stop at the tail floor_1(9) = 9.
    tail = dict(num_computed_tokens=8, num_new_tokens=2, num_prompt_tokens=10, num_tokens=10)
    assert mamba_block_aligned_split(**tail, block_size=4, hash_block_size=1) == 2
    assert (
        mamba_block_aligned_split(**tail, block_size=4, hash_block_size=1, partial_hits=True) == 1
    )


def test_split_accepts_a_last_cacheable_position_of_zero() -> None:
    chunk = dict(num_computed_tokens=0, num_new_tokens=4, num_prompt_tokens=4, num_tokens=4)
    assert mamba_block_aligned_split(**chunk, block_size=4, last_cacheable=0) == 4


def test_boundaries_keep_a_landing_point_of_zero_and_blocks_of_one_token() -> None:
    # P = d: a resend under EAGLE lands at P - d = 0 (">= 0" includes it).
    assert reachable_boundaries(16, 0, 16) == (0, 15)
    assert reachable_boundaries(20, 16, 16) == (0, 4, 16, 19)
    # A whole block of one token is a valid block size: w = P.
    assert reachable_boundaries(5, 0, 0, (1,)) == (4,)
    assert reachable_boundaries(9, 0, 2, (4,)) == (6, 7, 8)


def test_partial_hits_promise_the_prompts_last_whole_full_attention_block() -> None:
    # Full attention caches whole blocks of 4: a resend of 7 tokens reaches 4,
    # not 6 (the replay boundary); both are promised, on the hit grid of 2.
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(2)], 1, partial_hits=True)
    assert geometry.sub_block_full_attention_sizes == (4,)
    assert promised_positions(geometry, 7) == (4, 6)


def test_no_junction_by_default() -> None:
    # Hit grid 1: a default junction of 1 would be promised and stop the chunk there.
    geometry = HybridGeometry([GroupSpec.full(1), GroupSpec.mamba(1)], 1)
    assert promised_positions(geometry, 5) == (4,)
    assert checkpoint_stop(geometry, start=0, end=4, num_prompt_tokens=5) == 4
