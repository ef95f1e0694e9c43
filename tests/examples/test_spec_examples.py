"""Worked examples from docs/domain.md, one per upstream situation, as readable anchors.

The properties prove core equals the oracle everywhere; these pin a few
numbers a reader can check by hand against the spec's formulas.
"""

from __future__ import annotations

import pytest

from junction.core import (
    GroupSpec,
    HybridGeometry,
    group_finder,
    last_cacheable_position,
    mamba_block_aligned_split,
    reachable_block_mask,
    reachable_boundaries,
    reconcile_hits,
)


def test_geometry_derives_scheduler_block_and_alignment() -> None:
    groups = [GroupSpec.full(16), GroupSpec.sliding_window(32, 128), GroupSpec.mamba(64)]
    assert HybridGeometry(groups, 16).scheduler_block_size == 64
    assert HybridGeometry(groups, 16).alignment_tokens == 64
    assert HybridGeometry(groups, 16, partial_hits=True).alignment_tokens == 16
    # Reconciled hits also sit on every sparse group's block grid.
    assert HybridGeometry(groups, 16, partial_hits=True).hit_grid_tokens == 64
    assert HybridGeometry(groups[:2], 16, partial_hits=True).hit_grid_tokens == 32
    assert HybridGeometry(groups, 16, use_eagle=True).eagle_drop_tokens == 32


def test_eagle_boundaries_also_promise_where_a_lookup_lands() -> None:
    assert reachable_boundaries(200, 128) == (128, 199)
    assert reachable_boundaries(200, 128, eagle_drop_tokens=16) == (112, 128, 184, 199)
    assert reachable_boundaries(10, 0, eagle_drop_tokens=16) == (9,)
    # Partial hits: full attention caches whole blocks, so P - 1 floored to L too.
    assert reachable_boundaries(11, 0, whole_block_sizes=(8,)) == (8, 10)
    # ... and under EAGLE a resend lands a drop below that whole block (6), or
    # below P once output tokens filled the last block (8).
    assert reachable_boundaries(10, 0, 2, whole_block_sizes=(4,)) == (6, 8, 9)


def test_block_aligned_prompt_keeps_its_state_where_a_resend_looks_up() -> None:
    # vLLM #50409: with P = N = 64 and b = 16, `N - N mod b` = 64 is one token
    # past every lookup (a resend looks up at most 63 tokens). The state must be at 48.
    assert last_cacheable_position(64, 16, use_eagle=False) == 48
    assert last_cacheable_position(64, 16, use_eagle=True) == 48
    assert last_cacheable_position(65, 16, use_eagle=True) == 48
    chunk = dict(num_prompt_tokens=64, num_tokens=64, block_size=16, num_new_tokens=64)
    assert mamba_block_aligned_split(num_computed_tokens=0, **chunk) == 48


@pytest.mark.parametrize(
    ("junction", "why"),
    [
        # Pre-#47782 the junction only shaped the first chunk. Here the request
        # is already 64 tokens in; the chunk must still end at the junction.
        (160, "on the grid: stop exactly there"),
        # Mid-block junction: the stop is s + floor_b(J - s) = 64 + 96 = 160.
        (170, "mid-block: floored relative to the start"),
    ],
)
def test_split_honours_the_junction_on_later_chunks(junction: int, why: str) -> None:
    step = mamba_block_aligned_split(
        num_computed_tokens=64,
        num_new_tokens=256,
        num_prompt_tokens=1000,
        num_tokens=1000,
        block_size=16,
        shared_prefix_boundary=junction,
    )
    assert step == 96, why


def test_budget_smaller_than_a_block_advances_sub_block() -> None:
    args = dict(num_prompt_tokens=1000, num_tokens=1000, block_size=64)
    assert mamba_block_aligned_split(num_computed_tokens=0, num_new_tokens=32, **args) == 0
    assert (
        mamba_block_aligned_split(
            num_computed_tokens=0, num_new_tokens=32, max_prefill_tokens=32, **args
        )
        == 32
    )
    # From mid-block, the next grid point is a mandatory stop.
    assert (
        mamba_block_aligned_split(
            num_computed_tokens=32, num_new_tokens=128, max_prefill_tokens=32, **args
        )
        == 32
    )


def test_retention_zero_keeps_the_junction_and_replay_states() -> None:
    # Pre-#47782 an R = 0 mask dropped the junction state.
    mask = reachable_block_mask(
        0, 12, 16, GroupSpec.mamba(16), False, 0, reachable_boundaries(200, 128)
    )
    assert mask is not None
    assert [i for i, keep in enumerate(mask) if keep] == [7, 11]


def test_sliding_window_keeps_need_blocks_per_boundary() -> None:
    # W = 33, B = 16: need = cdiv(32, 16) = 2 blocks ending at floor_A(199) = 192.
    spec = GroupSpec.sliding_window(16, 33)
    mask = reachable_block_mask(0, 14, 16, spec, False, 0, reachable_boundaries(200))
    assert mask is not None
    assert [i for i, keep in enumerate(mask) if keep] == [10, 11]
    # EAGLE adds the peek block just past the boundary.
    mask = reachable_block_mask(0, 14, 16, spec, True, 0, reachable_boundaries(200))
    assert mask is not None
    assert [i for i, keep in enumerate(mask) if keep] == [10, 11, 12]


def test_junction_is_set_only_when_groups_disagree() -> None:
    geometry = HybridGeometry([GroupSpec.full(16), GroupSpec.mamba(16)], 16)

    def reconcile(full: set[int], mamba: set[int]) -> tuple[int, int, int]:
        finders = [
            group_finder(g, c.__contains__, alignment_tokens=16)
            for g, c in zip(geometry.groups, (full, mamba), strict=True)
        ]
        r = reconcile_hits(geometry, finders, 199)
        return r.hit_length, r.longest_hit_length, r.shared_prefix_boundary

    assert reconcile(set(range(8)), {3}) == (64, 128, 128)
    assert reconcile(set(range(8)), {7}) == (128, 128, 0)  # #56142: agreeing groups, no junction
    assert reconcile(set(range(8)), {2, 9}) == (48, 128, 128)  # never past the full-attention hit
