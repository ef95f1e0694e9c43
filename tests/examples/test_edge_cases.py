"""Edge cases a reader can check by hand (each one killed a ``make mutmut`` survivor).

Defaults that must be neutral, a boundary landing exactly on 0, a block of
one token, and the whole-block landing point of partial hits.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

from junction.core import (
    ChunkSplitter,
    GroupMask,
    GroupSpec,
    HybridGeometry,
    InvalidArgument,
    OffGridInterval,
    checkpoint_stop,
    group_finder,
    mamba_block_aligned_split,
    mask_plan,
    next_grid_point,
    prefill_end,
    promised_positions,
    promised_stop,
    reachable_boundaries,
    reconcile_hits,
    segment_boundaries,
    sliding_window_need,
)


def test_split_defaults_no_junction_no_eagle_no_partial_hits() -> None:
    # b = 1: with a junction at 1 the chunk would stop there; P - 1 = 3 is the stop.
    chunk = dict(num_computed_tokens=0, num_new_tokens=4, num_prompt_tokens=4, num_tokens=4)
    assert mamba_block_aligned_split(**chunk, block_size=1) == 3
    # The bound split's own defaults (junction, local and external tokens) too.
    assert ChunkSplitter(1).split(**chunk) == 3
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


def test_boundaries_leave_out_what_floors_to_zero_and_allow_blocks_of_one_token() -> None:
    # P = d: a resend under EAGLE lands at P - d = 0, no resumption: left out.
    assert reachable_boundaries(16, 0, 16) == (15,)
    assert reachable_boundaries(20, 16, 16) == (4, 16, 19)
    assert reachable_boundaries(1) == ()  # P = 1: the replay boundary is 0
    assert reachable_boundaries(2) == (1,)  # the default grid of 1 keeps 1
    # On the hit grid: 4 floors to itself and stays, 3 and 1 floor to 0.
    assert reachable_boundaries(5, 0, 0, hit_grid_tokens=4) == (4,)
    assert reachable_boundaries(5, 0, 4, hit_grid_tokens=4) == (4,)
    assert reachable_boundaries(5, 0, 4, hit_grid_tokens=1) == (1, 4)
    assert reachable_boundaries(20, 16, 16, hit_grid_tokens=5) == (16, 19)
    # promised_positions hands the hit grid on: a prompt of 3 on a grid of 4
    # promises nothing (its replay boundary 2 floors to 0), under EAGLE either.
    for eagle in (False, True):
        geometry = HybridGeometry(
            [GroupSpec.full(4), GroupSpec.sliding_window(4, 3)], 4, use_eagle=eagle
        )
        assert promised_positions(geometry, 3) == ()
        assert promised_positions(geometry, 5) == (4,)
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


def test_prefill_end_is_the_prompt_or_all_but_the_last_token() -> None:
    assert prefill_end(5, 5) == 5  # a fresh prompt: N - 1 = 4 < P
    assert prefill_end(5, 6) == 5  # one output token: it is the one decode computes
    assert prefill_end(5, 8) == 7  # resumed with 3 outputs: 2 of them are prefilled again


def test_sliding_window_need_counts_window_blocks_and_the_eagle_peek() -> None:
    assert sliding_window_need(1, 4, False) == 0  # W = 1 sees no earlier token
    assert sliding_window_need(1, 4, True) == 1
    assert sliding_window_need(5, 4, False) == 1  # 4 tokens back: one block
    assert sliding_window_need(6, 4, False) == 2
    assert sliding_window_need(6, 4, True) == 3
    assert sliding_window_need(4, 1, False) == 3
    assert GroupSpec.sliding_window(4, 6).blocks_for_hit(True) == 3


def test_segment_boundaries_are_multiples_of_r_strictly_below_the_end() -> None:
    assert list(segment_boundaries(4, 12)) == [4, 8]
    assert list(segment_boundaries(4, 13)) == [4, 8, 12]
    assert list(segment_boundaries(1, 3)) == [1, 2]
    assert list(segment_boundaries(4, 4)) == []
    assert list(segment_boundaries(4, 0)) == []
    assert list(segment_boundaries(0, 12)) == []  # R = 0: semantic checkpoints only
    assert list(segment_boundaries(None, 12)) == []  # dense: no segments


def test_first_window_block_is_the_oldest_block_the_window_still_reads() -> None:
    swa = GroupSpec.sliding_window(4, 6)  # window [p - 5, p)
    assert [swa.first_window_block(p) for p in (0, 5, 8, 9, 12, 13)] == [0, 0, 0, 1, 1, 2]
    assert GroupSpec.sliding_window(4, 1).first_window_block(8) == 2  # W = 1 reads nothing
    assert GroupSpec.sliding_window(1, 3).first_window_block(7) == 5
    assert GroupSpec.sliding_window(1, 3).first_window_block(2) == 0  # [0, 2): from block 0


def test_next_grid_point_is_strictly_past_the_value() -> None:
    assert [next_grid_point(v, 4) for v in (-1, 0, 3, 4, 5)] == [0, 4, 4, 8, 8]
    assert next_grid_point(5, 1) == 6


def test_mamba_block_size_is_the_first_mamba_groups_block_else_l() -> None:
    assert HybridGeometry([GroupSpec.full(64), GroupSpec.mamba(16)], 16).mamba_block_size == 16
    mixed = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(8), GroupSpec.mamba(2)], 2)
    assert mixed.mamba_block_size == 8
    swa = HybridGeometry([GroupSpec.full(4), GroupSpec.sliding_window(6, 8)], 2)
    assert swa.mamba_block_size == swa.scheduler_block_size == 12


def test_every_group_is_an_eagle_group_by_default() -> None:
    """The default keeps what EAGLE meant before groups carried the flag: every
    group drops (Mamba drops nothing), so a Mamba-only geometry under EAGLE is valid."""
    groups = [GroupSpec.full(4), GroupSpec.sliding_window(4, 8), GroupSpec.mamba(4)]
    assert all(group.eagle_group for group in groups)
    assert HybridGeometry([GroupSpec.mamba(4)], 4, use_eagle=True).eagle_drop_tokens == 0
    draft_only = HybridGeometry(
        [GroupSpec.full(4, eagle_group=False), GroupSpec.sliding_window(2, 8)], 2, use_eagle=True
    )
    assert draft_only.eagle_drop_tokens == 2  # the draft window's block, not the full group's 4
    target = GroupSpec.sliding_window(2, 8, eagle_group=False)
    assert (target.blocks_for_hit(True), GroupSpec.sliding_window(2, 8).blocks_for_hit(True)) == (
        4,
        5,
    )


def test_the_split_has_no_hash_lookahead_by_default() -> None:
    # EAGLE, b = 1, P = 1, N = 2: one lookahead token moves the stop from 1 to 2.
    chunk = dict(num_computed_tokens=0, num_new_tokens=2, num_prompt_tokens=1, num_tokens=2)
    split = dict(**chunk, block_size=1, use_eagle=True, hash_block_size=1)
    assert mamba_block_aligned_split(**split) == 1
    assert mamba_block_aligned_split(**split, hash_lookahead_tokens=1) == 2


def test_a_promised_position_at_the_chunk_start_is_not_its_stop() -> None:
    # The junction at 4 = start: the stop is strictly inside (4, 12), so none: 12.
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
    assert (
        checkpoint_stop(geometry, start=4, end=12, num_prompt_tokens=20, shared_prefix_boundary=4)
        == 12
    )


def test_a_boundary_at_zero_is_accepted_and_never_a_stop() -> None:
    # Boundaries are ints >= 0; 0 lies inside no chunk (start >= 0), so the stop is the end.
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
    assert promised_stop(geometry, (0,), start=0, end=12) == 12


def test_a_mask_too_long_for_a_list_names_its_start_in_the_rule() -> None:
    # Both paths: a Mamba group under R = 0 (one block per boundary) and under R = 8.
    most = sys.maxsize // 8
    for interval in (0, 8):
        with pytest.raises(InvalidArgument) as info:
            GroupMask(4, GroupSpec.mamba(4), False, interval).reachable_block_mask(7, 8 + most)
        rule = f"must be <= start_block (7) + {most}: no list holds a longer mask"
        assert info.value.rule == rule


def test_mask_plan_takes_the_off_grid_interval_form_it_is_given() -> None:
    # Mamba b = 4, R = 6: vLLM's floored form keeps the group dense; segment ends do not.
    floored = OffGridInterval.FLOORED_INTERVAL
    assert mask_plan(4, GroupSpec.mamba(4), False, 6, floored) is None
    assert mask_plan(4, GroupSpec.mamba(4), False, 6) is not None


def test_a_group_whose_answer_a_later_group_shortened_is_asked_again() -> None:
    # b = 4, W = 4 (one block per hit), M = 12. Full attention holds blocks 0-2; the
    # window blocks 1-2 (hits at 8 and 12, not 4); Mamba the state at 4. Round one:
    # 12, the window 12, Mamba 4. Round two asks the window about 4: it serves only 0.
    geometry = HybridGeometry(
        [GroupSpec.full(4), GroupSpec.sliding_window(4, 4), GroupSpec.mamba(4)], 4
    )
    cached = ({0, 1, 2}, {1, 2}, {0})
    finders = [
        group_finder(group, blocks.__contains__, alignment_tokens=4)
        for group, blocks in zip(geometry.groups, cached, strict=True)
    ]
    result = reconcile_hits(geometry, finders, 12)
    assert (result.hit_length, result.longest_hit_length, result.shared_prefix_boundary) == (
        0,
        12,
        12,
    )


def test_finders_ask_only_about_the_chains_blocks_by_int_index() -> None:
    # An engine's predicate may index its block-hash chain, which holds the blocks
    # reaching into [0, bound): a float index or one past the chain raises.
    chain = [True, True, False, True]  # blocks 0-3 of 4 tokens
    found = [
        group_finder(spec, chain.__getitem__, alignment_tokens=4)(16, False)
        for spec in (GroupSpec.full(4), GroupSpec.sliding_window(4, 4), GroupSpec.mamba(4))
    ]
    assert found == [8, 16, 16]
    # Every block cached: full attention's run stops at the bound, not one block past.
    whole = [True] * 4
    assert group_finder(GroupSpec.full(4), whole.__getitem__, alignment_tokens=4)(16, False) == 16


def test_a_geometry_sent_to_another_process_hashes_as_one_built_there() -> None:
    # GroupSpec caches its hash (a policy's mask bindings are keyed by it on
    # every call); the cache must not travel in a pickle (the fuzz worker
    # receives one) to a process whose string hashes are seeded differently.
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.sliding_window(4, 8)], 4)
    hash(geometry), hash(geometry.groups[1])  # fill both caches before pickling
    there = """
import pickle, sys
from junction.core import GroupSpec, HybridGeometry
got = pickle.loads(sys.stdin.buffer.read())
built = HybridGeometry([GroupSpec.full(4), GroupSpec.sliding_window(4, 8)], 4)
print(hash(got) == hash(built), hash(got.groups[1]) == hash(built.groups[1]))
"""
    seed = {"PYTHONHASHSEED": "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"}
    result = subprocess.run(
        [sys.executable, "-c", there],
        input=pickle.dumps(geometry),
        capture_output=True,
        check=True,
        env={**os.environ, **seed},
    )
    assert result.stdout.split() == [b"True", b"True"], result.stderr
