"""The split's three engine options on small worked examples (docs/domain.md, decision 2).

Each case is worked by hand from the rule in the domain document; the
properties and the exhaustive walk check the same rules against the oracle
on every small input.
"""

from __future__ import annotations

from junction.core import (
    ChunkSplitter,
    PrefillCheckpoints,
    last_cacheable_position,
    mamba_block_aligned_split,
)

FRESH = dict(num_computed_tokens=0, num_new_tokens=18, num_prompt_tokens=18, num_tokens=18)


def test_lookahead_hashes_move_the_last_cacheable_position_down() -> None:
    # 9 tokens on a grid of 4: a lookup proves 8 only if k tokens follow it.
    assert last_cacheable_position(9, 4, False) == 8
    assert last_cacheable_position(9, 4, False, 1) == 8
    assert last_cacheable_position(9, 4, False, 2) == 4
    # EAGLE: the unit past the hit, [4, 8), must be hashed: 8 + k <= 12.
    assert last_cacheable_position(12, 4, True) == 8
    assert last_cacheable_position(12, 4, True, 1) == 4
    assert last_cacheable_position(12, 4, True, 4) == 4
    assert last_cacheable_position(12, 4, True, 5) == 0
    # More lookahead tokens than tokens: nothing is proven, 0 (never below).
    assert last_cacheable_position(1, 1, False, 2) == 0
    assert last_cacheable_position(3, 4, False, 9) == 0
    prompt = dict(num_computed_tokens=0, num_new_tokens=9, num_prompt_tokens=9, num_tokens=9)
    assert mamba_block_aligned_split(**prompt, block_size=4) == 8
    assert mamba_block_aligned_split(**prompt, block_size=4, hash_lookahead_tokens=2) == 4


def test_lookahead_moves_the_partial_tail_too() -> None:
    # b = 8, H = 2, P = N = 7: lcp 0; the tail is floor_2(6) = 6, or floor_2(4) = 4 with k = 3.
    prompt = dict(num_computed_tokens=0, num_new_tokens=7, num_prompt_tokens=7, num_tokens=7)
    partial = dict(block_size=8, hash_block_size=2, partial_hits=True)
    assert mamba_block_aligned_split(**prompt, **partial) == 6
    assert mamba_block_aligned_split(**prompt, **partial, hash_lookahead_tokens=3) == 4


def test_the_exact_junction_stop_stops_at_the_junction_itself_within_the_prompt() -> None:
    chunk = dict(num_computed_tokens=0, num_new_tokens=16, num_tokens=20, block_size=4)
    floored = mamba_block_aligned_split(**chunk, num_prompt_tokens=20, shared_prefix_boundary=6)
    exact = mamba_block_aligned_split(
        **chunk, num_prompt_tokens=20, shared_prefix_boundary=6, exact_junction_stop=True
    )
    assert (floored, exact) == (4, 6)
    # Past the prompt (a resumed request) no state is saved inside a block: floored.
    assert (
        mamba_block_aligned_split(
            **chunk, num_prompt_tokens=5, shared_prefix_boundary=6, exact_junction_stop=True
        )
        == 4
    )
    # At the prompt's last token it still is a prompt position.
    assert (
        mamba_block_aligned_split(
            **chunk, num_prompt_tokens=6, shared_prefix_boundary=6, exact_junction_stop=True
        )
        == 6
    )


def test_an_internal_checkpoint_replaces_the_stops_that_only_materialise_it() -> None:
    # b = H = 4, P = N = 18: the checkpoint is floor_4(17) = 16, the chunk [0, 18).
    assert mamba_block_aligned_split(**FRESH, block_size=4) == 16
    written = PrefillCheckpoints(alignment=4, unit=4)
    assert mamba_block_aligned_split(**FRESH, block_size=4, prefill_checkpoints=written) == 18
    # 16 is not a whole number of tiles of 5: the backend cannot write it.
    untiled = PrefillCheckpoints(alignment=5, unit=4)
    assert mamba_block_aligned_split(**FRESH, block_size=4, prefill_checkpoints=untiled) == 16
    # The junction is another request's state: still a stop.
    assert (
        mamba_block_aligned_split(
            **FRESH, block_size=4, prefill_checkpoints=written, shared_prefix_boundary=9
        )
        == 8
    )


def test_an_internal_checkpoint_needs_the_chunk_to_reach_the_prefill_end() -> None:
    written = PrefillCheckpoints(alignment=4, unit=4)
    short = {**FRESH, "num_new_tokens": 17}
    assert mamba_block_aligned_split(**short, block_size=4, prefill_checkpoints=written) == 16


def test_an_internal_checkpoint_needs_a_slot_past_the_initial_state() -> None:
    # b = 8, H = 2, P = N = 16: the checkpoint is floor_2(15) = 14, written into block 0
    # (the block before the chunk's last); lcp = 8 < 14 < 16 makes 14 a tail stop too.
    written = PrefillCheckpoints(alignment=1, unit=2)
    args = dict(block_size=8, hash_block_size=2, partial_hits=True, prefill_checkpoints=written)
    fresh = dict(num_computed_tokens=0, num_new_tokens=16, num_prompt_tokens=16, num_tokens=16)
    assert mamba_block_aligned_split(**fresh, **args) == 16
    # From 2 (initial state in block 0) or 12 (block 1) the backend cannot write block 0:
    # the chunk realigns at 8, or stops at the tail.
    for start, stop in ((2, 8), (12, 14)):
        rest = {**fresh, "num_computed_tokens": start, "num_new_tokens": 16 - start}
        assert mamba_block_aligned_split(**rest, **args) == stop - start


def test_each_condition_of_a_written_checkpoint() -> None:
    # Chunk [4, 20) on b = 8, H = 2, tiles of 4; the checkpoint at 16.
    tiles = PrefillCheckpoints(alignment=4, unit=2)
    assert tiles.writes(4, 20, 16, 2, 8)
    assert not tiles.writes(5, 20, 16, 2, 8)  # the start off the hash grid
    assert not tiles.writes(4, 20, 14, 2, 8)  # 10 tokens: not a whole number of tiles
    assert not tiles.writes(4, 20, 20, 2, 8)  # the checkpoint is the chunk's end
    assert not tiles.writes(4, 20, 4, 2, 8)  # ... or its start
    assert PrefillCheckpoints(1, 2).writes(4, 20, 6, 2, 8)  # one hash unit in: enough
    assert not PrefillCheckpoints(1, 2).writes(4, 20, 5, 2, 8)  # less than one
    # The slot written is the block before the chunk's last; it must lie past the
    # block of the initial state (that of token start - 1, none before token 0).
    assert tiles.writes(8, 20, 16, 2, 8)  # initial block 0, slot 1
    assert not tiles.writes(12, 20, 16, 2, 8)  # initial block 1, slot 1
    assert tiles.writes(0, 9, 4, 2, 8)  # no initial state, slot 0
    assert not tiles.writes(0, 8, 4, 2, 8)  # a chunk of one block writes no earlier slot


def test_the_checkpoint_is_keyed_on_the_chunks_end_where_the_backend_writes_it() -> None:
    # b = H = 4, tiles of 8; P = 21, N = 29 (resumed), the whole rest [0, 29) asked.
    resumed = dict(num_computed_tokens=0, num_new_tokens=29, num_prompt_tokens=21, num_tokens=29)
    # The backend, keyed on the chunk's end 29, computes floor_4(28) = 28: off the tiles,
    # so it writes nothing, and the chunk stops at the replay state 28.
    chunk_end = PrefillCheckpoints(alignment=8, unit=4)
    assert mamba_block_aligned_split(**resumed, block_size=4, prefill_checkpoints=chunk_end) == 28
    # vLLM's scheduler keys it on the prefill's end 28: floor_4(27) = 24 fits the tiles,
    # so it runs through, for a checkpoint the backend does not write.
    vllm_form = PrefillCheckpoints(alignment=8, unit=4, keyed_on_prefill_end=True)
    assert mamba_block_aligned_split(**resumed, block_size=4, prefill_checkpoints=vllm_form) == 29
    # Ending at the prefill's end, both keys are one: 24 is written, the chunk runs to 28.
    prefill = {**resumed, "num_new_tokens": 28}
    for checkpoints in (chunk_end, vllm_form):
        assert (
            mamba_block_aligned_split(**prefill, block_size=4, prefill_checkpoints=checkpoints)
            == 28
        )


def test_the_written_slot_is_exact_integer_arithmetic_past_float_precision() -> None:
    # b = H = 1, tiles of 1: the chunk [s, s + 2) writes the checkpoint s + 1 into slot
    # s, past the initial state's block s - 1. At s = 2**53 + 4, (s - 1) / 1 as a float
    # rounds up to s: a float comparison would call the slot not past it.
    start = 2**53 + 4
    written = PrefillCheckpoints(alignment=1, unit=1)
    assert written.writes(start, start + 2, start + 1, 1, 1)
    chunk = dict(num_computed_tokens=start, num_new_tokens=2, num_prompt_tokens=start + 2)
    assert mamba_block_aligned_split(**chunk, num_tokens=start + 2, block_size=1) == 1
    assert (
        mamba_block_aligned_split(
            **chunk, num_tokens=start + 2, block_size=1, prefill_checkpoints=written
        )
        == 2
    )


def test_the_written_checkpoint_is_where_the_backend_writes_inside_the_chunk() -> None:
    # The cases above, asked where rather than how far: b = H = 4, P = N = 18.
    splitter = ChunkSplitter(4, 4, prefill_checkpoints=PrefillCheckpoints(4, 4))
    assert splitter.written_checkpoint(**FRESH) == 16
    # Short of the prefill's end, off the tiles, or without the option: none.
    assert splitter.written_checkpoint(**{**FRESH, "num_new_tokens": 17}) == 0
    untiled = ChunkSplitter(4, 4, prefill_checkpoints=PrefillCheckpoints(5, 4))
    assert untiled.written_checkpoint(**FRESH) == 0
    assert ChunkSplitter(4).written_checkpoint(**FRESH) == 0
    # Keyed on the chunk's end (29: floor_4(28) = 28, off tiles of 8) or on the
    # prefill's (28: floor_4(27) = 24, on them), as the split above decides.
    resumed = dict(num_computed_tokens=0, num_new_tokens=29, num_prompt_tokens=21, num_tokens=29)
    chunk_end = ChunkSplitter(4, 4, prefill_checkpoints=PrefillCheckpoints(8, 4))
    vllm_form = ChunkSplitter(4, 4, prefill_checkpoints=PrefillCheckpoints(8, 4, True))
    assert (chunk_end.written_checkpoint(**resumed), vllm_form.written_checkpoint(**resumed)) == (
        0,
        24,
    )
    # Under EAGLE the checkpoint is the EAGLE form of the last cacheable position.
    eagle = ChunkSplitter(4, 4, use_eagle=True, prefill_checkpoints=PrefillCheckpoints(4, 4))
    assert eagle.written_checkpoint(**FRESH) == 12
    # A decode chunk writes none (start 18 = the prefill's end).
    assert splitter.written_checkpoint(**{**FRESH, "num_computed_tokens": 18}) == 0
    # A one-token prompt: no position inside its one chunk.
    one = ChunkSplitter(1, prefill_checkpoints=PrefillCheckpoints(1, 1))
    assert (
        one.written_checkpoint(
            num_computed_tokens=0, num_new_tokens=1, num_prompt_tokens=1, num_tokens=1
        )
        == 0
    )
