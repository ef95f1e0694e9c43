"""Every rejection site in ``core``, with the exact message it gives.

``tests/properties/test_bad_input.py`` proves that every invalid argument is
rejected and named; this table pins the words, one entry per ``raise`` or
``require_*`` call in ``core``: the argument, the value and the rule (with
the name of the argument a minimum comes from). An engine that vendors
``core`` may log or match these messages, so a change to one is a change of
interface (``make mutmut`` showed the words were otherwise unchecked).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from junction.core import (
    ChunkSplitter,
    GroupKind,
    GroupLookup,
    GroupSpec,
    HybridGeometry,
    InvalidArgument,
    PrefillCheckpoints,
    checkpoint_stop,
    group_finder,
    last_cacheable_position,
    mamba_block_aligned_split,
    mask_plan,
    prefill_end,
    promised_positions,
    promised_stop,
    reachable_block_mask,
    reachable_boundaries,
    reconcile_hits,
    replay_boundary,
    segment_boundaries,
    shared_prefix_boundary,
    sliding_window_need,
)

MAMBA4 = GroupSpec.mamba(4)
FULL4 = GroupSpec.full(4)
GEOMETRY = HybridGeometry([GroupSpec.full(4), MAMBA4], 4)
NOT_CALLABLE = 7
SPLIT = dict(
    num_computed_tokens=0, num_new_tokens=8, num_prompt_tokens=10, num_tokens=10, block_size=4
)


def _split(**changes: object) -> int:
    return mamba_block_aligned_split(**{**SPLIT, **changes})  # type: ignore[arg-type]


def _mask(**changes: object) -> object:
    args: dict[str, object] = dict(
        start_block=0, end_block=4, alignment_tokens=4, spec=MAMBA4, use_eagle=False
    )
    return reachable_block_mask(**{**args, **changes})  # type: ignore[arg-type]


def _geometry(**changes: object) -> HybridGeometry:
    args: dict[str, object] = dict(groups=[GroupSpec.full(4), MAMBA4], hash_block_size=2)
    return HybridGeometry(**{**args, **changes})  # type: ignore[arg-type]


def _finder_answering(found: object) -> Callable[[int, bool], object]:
    return lambda bound, drop: found


CASES: list[tuple[str, Callable[[], object], str]] = [
    # errors / boundaries / checkpoints
    ("replay P", lambda: replay_boundary(0), "num_prompt_tokens=0: must be >= 1"),
    (
        "boundaries J",
        lambda: reachable_boundaries(5, -1),
        "shared_prefix_boundary=-1: must be >= 0",
    ),
    ("boundaries d", lambda: reachable_boundaries(5, 0, -2), "eagle_drop_tokens=-2: must be >= 0"),
    (
        "boundaries sizes",
        lambda: reachable_boundaries(5, 0, 0, (4, 0)),
        "whole_block_sizes[1]=0: must be >= 1",
    ),
    (
        "boundaries grid",
        lambda: reachable_boundaries(5, hit_grid_tokens=0),
        "hit_grid_tokens=0: must be >= 1",
    ),
    (
        "boundaries P type",
        lambda: reachable_boundaries(True),  # type: ignore[arg-type]
        "num_prompt_tokens=True: must be an int >= 1",
    ),
    (
        "promised prefill_end",
        lambda: promised_positions(GEOMETRY, 8, 0, 0),
        "prefill_end=0: must be >= 1",
    ),
    (
        "checkpoint start",
        lambda: checkpoint_stop(GEOMETRY, start=-1, end=4, num_prompt_tokens=8),
        "start=-1: must be >= 0",
    ),
    (
        "checkpoint end",
        lambda: checkpoint_stop(GEOMETRY, start=5, end=4, num_prompt_tokens=8),
        "end=4: must be >= start (5)",
    ),
    (
        "promised stop start",
        lambda: promised_stop(GEOMETRY, (3,), start=-1, end=4),
        "start=-1: must be >= 0",
    ),
    (
        "promised stop end",
        lambda: promised_stop(GEOMETRY, (3,), start=5, end=4),
        "end=4: must be >= start (5)",
    ),
    (
        "promised stop start type",
        lambda: promised_stop(GEOMETRY, (3,), start=True, end=4),
        "start=True: must be an int >= 0",
    ),
    (
        "promised stop end type",
        lambda: promised_stop(GEOMETRY, (3,), start=1, end=4.0),  # type: ignore[arg-type]
        "end=4.0: must be an int >= start (1)",
    ),
    (
        "promised stop boundary",
        lambda: promised_stop(GEOMETRY, (3, -2), start=0, end=4),
        "reachable_boundaries[1]=-2: must be >= 0",
    ),
    (
        "promised stop boundary type",
        lambda: promised_stop(GEOMETRY, (True,), start=0, end=4),  # type: ignore[arg-type]
        "reachable_boundaries[0]=True: must be an int >= 0",
    ),
    # finders
    (
        "finder spec",
        lambda: group_finder("mamba", set().__contains__, alignment_tokens=4),  # type: ignore[arg-type]
        "spec='mamba': must be a GroupSpec",
    ),
    (
        "finder is_cached",
        lambda: group_finder(MAMBA4, NOT_CALLABLE, alignment_tokens=4),  # type: ignore[arg-type]
        "is_cached=7: must be callable: block index -> bool",
    ),
    (
        "finder A",
        lambda: group_finder(MAMBA4, set().__contains__, alignment_tokens=0),
        "alignment_tokens=0: must be >= 1",
    ),
    (
        "finder cached_run",
        lambda: GroupLookup(FULL4, 4).finder(bool, NOT_CALLABLE),  # type: ignore[arg-type]
        "cached_run=7: must be None or callable: limit -> leading cached blocks",
    ),
    (
        "finder cached_run's answer",
        lambda: GroupLookup(FULL4, 4).finder(bool, lambda limit: limit + 1)(8, False),
        "cached_run=3: asked for the cached run of at most 2 blocks: must return an int in [0, 2]",
    ),
    # geometry
    ("spec block", lambda: GroupSpec.mamba(0), "block_size=0: must be an int >= 1"),
    (
        "spec window",
        lambda: GroupSpec.sliding_window(4, 0),
        "window=0: a sliding window must be an int >= 1",
    ),
    (
        "spec window on full",
        lambda: GroupSpec(GroupKind.FULL, 4, 8),
        "window=8: only sliding-window groups have a window, not GroupKind.FULL",
    ),
    ("spec kind", lambda: GroupSpec("full", 4), "kind='full': must be a GroupKind"),  # type: ignore[arg-type]
    (
        "spec eagle_group",
        lambda: GroupSpec.full(4, eagle_group=1),  # type: ignore[arg-type]
        "eagle_group=1: must be a bool",
    ),
    ("eagle_lookup", lambda: MAMBA4.eagle_lookup(None), "use_eagle=None: must be a bool"),  # type: ignore[arg-type]
    (
        "blocks_for_hit eagle",
        lambda: GroupSpec.sliding_window(4, 8, eagle_group=False).blocks_for_hit(1),  # type: ignore[arg-type]
        "use_eagle=1: must be a bool",
    ),
    (
        "blocks_for_hit",
        lambda: MAMBA4.blocks_for_hit(False),
        f"spec={MAMBA4!r}: blocks_for_hit is defined for sliding-window groups",
    ),
    (
        "first_window_block",
        lambda: MAMBA4.first_window_block(4),
        f"spec={MAMBA4!r}: first_window_block is defined for sliding-window groups",
    ),
    (
        "first_window_block position",
        lambda: GroupSpec.sliding_window(4, 8).first_window_block(-1),
        "position=-1: must be >= 0",
    ),
    ("segments interval", lambda: segment_boundaries(-4, 8), "retention_interval=-4: must be >= 0"),
    ("segments end", lambda: segment_boundaries(4, -1), "prefill_end=-1: must be >= 0"),
    (
        "segments end type",
        lambda: segment_boundaries(None, 1.5),  # type: ignore[arg-type]
        "prefill_end=1.5: must be an int >= 0",
    ),
    ("need window", lambda: sliding_window_need(0, 4, False), "window=0: must be >= 1"),
    ("need block", lambda: sliding_window_need(8, 0, False), "block_size=0: must be >= 1"),
    ("need eagle", lambda: sliding_window_need(8, 4, 1), "use_eagle=1: must be a bool"),  # type: ignore[arg-type]
    (
        "need window type",
        lambda: sliding_window_need(8.0, 4, False),  # type: ignore[arg-type]
        "window=8.0: must be an int >= 1",
    ),
    (
        "geometry groups",
        lambda: _geometry(groups=[]),
        "groups=(): a geometry needs at least one group",
    ),
    (
        "geometry group",
        lambda: _geometry(groups=[MAMBA4, "full"]),
        "groups[1]='full': must be a GroupSpec",
    ),
    ("geometry H", lambda: _geometry(hash_block_size=0), "hash_block_size=0: must be an int >= 1"),
    (
        "geometry H divides",
        lambda: _geometry(hash_block_size=3),
        "hash_block_size=3: the hash unit must divide every block size; groups[0] has block_size=4",
    ),
    ("geometry flag", lambda: _geometry(use_eagle=1), "use_eagle=1: must be a bool"),
    (
        "geometry EAGLE group",
        lambda: _geometry(
            groups=[GroupSpec.full(4, eagle_group=False), GroupSpec.mamba(4, eagle_group=False)],
            use_eagle=True,
        ),
        "use_eagle=True: EAGLE needs at least one EAGLE group (GroupSpec.eagle_group); every "
        "group is marked as holding only the target model's layers",
    ),
    (
        "geometry R",
        lambda: _geometry(retention_interval=6),
        "retention_interval=6: must be None (dense), 0 (semantic checkpoints only) or a "
        "positive multiple of the scheduler block L=4",
    ),
    # mask
    ("mask A", lambda: _mask(alignment_tokens=0), "alignment_tokens=0: must be >= 1"),
    ("mask spec", lambda: _mask(spec=None), "spec=None: must be a GroupSpec"),
    ("mask flag", lambda: _mask(use_eagle=None), "use_eagle=None: must be a bool"),
    ("mask R", lambda: _mask(retention_interval=-4), "retention_interval=-4: must be >= 0"),
    (
        "mask R type",
        lambda: _mask(retention_interval=4.0),
        "retention_interval=4.0: must be an int >= 0",
    ),
    (
        "mask R off the grid",
        lambda: _mask(alignment_tokens=6, retention_interval=10),
        "retention_interval=10: off the grid of a Mamba group needs alignment_tokens=6 and "
        "block_size=4 to divide one another",
    ),
    (
        "mask R off the grid, on the block",
        lambda: _mask(alignment_tokens=6, retention_interval=20),
        "retention_interval=20: off the grid of a Mamba group needs alignment_tokens=6 and "
        "block_size=4 to divide one another",
    ),
    (
        "mask R off the grid, on the alignment",
        lambda: _mask(alignment_tokens=6, retention_interval=18),
        "retention_interval=18: off the grid of a Mamba group needs alignment_tokens=6 and "
        "block_size=4 to divide one another",
    ),
    (
        "mask off-grid form",
        lambda: _mask(off_grid_interval="floored"),
        "off_grid_interval='floored': must be an OffGridInterval",
    ),
    (
        "mask final end",
        lambda: _mask(final_segment_end_block=-1),
        "final_segment_end_block=-1: must be >= 0",
    ),
    (
        "mask final end, a Mamba group under R = 0 (one-block runs: the fast path)",
        lambda: _mask(retention_interval=0, final_segment_end_block=-1),
        "final_segment_end_block=-1: must be >= 0",
    ),
    (
        "mask final end type",
        lambda: _mask(final_segment_end_block=2.0),
        "final_segment_end_block=2.0: must be an int >= 0",
    ),
    ("mask start", lambda: _mask(start_block=-1), "start_block=-1: must be >= 0"),
    (
        "mask end",
        lambda: _mask(start_block=3, end_block=2),
        "end_block=2: must be >= start_block (3)",
    ),
    (
        "mask boundary",
        lambda: _mask(reachable_boundaries=[7, -1]),
        "reachable_boundaries[1]=-1: must be >= 0",
    ),
    (
        "mask_plan flag",
        lambda: mask_plan(4, MAMBA4, "no", None),  # type: ignore[arg-type]
        "use_eagle='no': must be a bool",
    ),
    # reconcile
    ("junction h", lambda: shared_prefix_boundary(-1, 0), "hit_length=-1: must be >= 0"),
    (
        "junction longest",
        lambda: shared_prefix_boundary(8, 4),
        "longest_hit_length=4: must be >= hit_length (8)",
    ),
    (
        "reconcile geometry",
        lambda: reconcile_hits(None, [], 0),
        "geometry=None: must be a HybridGeometry",
    ),  # type: ignore[arg-type]
    (
        "reconcile finders",
        lambda: reconcile_hits(GEOMETRY, [], 0),
        "finders=[]: need one finder per group (2), got 0",
    ),
    (
        "reconcile M",
        lambda: reconcile_hits(GEOMETRY, [_finder_answering(0)] * 2, -1),  # type: ignore[list-item]
        "max_hit_length=-1: must be >= 0",
    ),
    (
        "reconcile limit",
        lambda: reconcile_hits(GEOMETRY, [_finder_answering(0)] * 2, 9, -3),  # type: ignore[list-item]
        "lookup_limit=-3: must be >= 0",
    ),
    (
        "reconcile finder answer",
        lambda: reconcile_hits(GEOMETRY, [_finder_answering(8), _finder_answering(6)], 9),  # type: ignore[list-item]
        "finders[1]=6: a finder asked about candidate 8 (bound 8) must return an int in "
        "[0, 8] that is a multiple of A=4",
    ),
    # split
    ("lcp N", lambda: last_cacheable_position(0, 4, False), "num_tokens=0: must be >= 1"),
    ("lcp unit", lambda: last_cacheable_position(8, 0, False), "unit=0: must be >= 1"),
    (
        "lcp flag",
        lambda: last_cacheable_position(8, 4, 1),  # type: ignore[arg-type]
        "use_eagle=1: must be a bool",
    ),
    ("split c", lambda: _split(num_computed_tokens=-1), "num_computed_tokens=-1: must be >= 0"),
    ("split n", lambda: _split(num_new_tokens=-1), "num_new_tokens=-1: must be >= 0"),
    ("split P", lambda: _split(num_prompt_tokens=0), "num_prompt_tokens=0: must be >= 1"),
    ("prefill_end P", lambda: prefill_end(0, 4), "num_prompt_tokens=0: must be >= 1"),
    (
        "prefill_end N",
        lambda: prefill_end(5, 4),
        "num_tokens=4: must be >= num_prompt_tokens (5)",
    ),
    (
        "prefill_end N type",
        lambda: prefill_end(5, 6.0),  # type: ignore[arg-type]
        "num_tokens=6.0: must be an int >= num_prompt_tokens (5)",
    ),
    ("split N", lambda: _split(num_tokens=9), "num_tokens=9: must be >= num_prompt_tokens (10)"),
    ("split b", lambda: _split(block_size=0), "block_size=0: must be >= 1"),
    (
        "split J",
        lambda: _split(shared_prefix_boundary=-1),
        "shared_prefix_boundary=-1: must be >= 0",
    ),
    (
        "split J type",
        lambda: _split(shared_prefix_boundary=1.5),
        "shared_prefix_boundary=1.5: must be an int >= 0",
    ),
    ("split limit", lambda: _split(max_prefill_tokens=0), "max_prefill_tokens=0: must be >= 1"),
    (
        "split local",
        lambda: _split(num_new_local_computed_tokens=-1),
        "num_new_local_computed_tokens=-1: must be >= 0",
    ),
    (
        "split external",
        lambda: _split(num_external_computed_tokens=-1),
        "num_external_computed_tokens=-1: must be >= 0",
    ),
    ("split lcp", lambda: _split(last_cacheable=-1), "last_cacheable=-1: must be >= 0"),
    ("split eagle", lambda: _split(use_eagle=0), "use_eagle=0: must be a bool"),
    ("split partial", lambda: _split(partial_hits="yes"), "partial_hits='yes': must be a bool"),
    ("split H", lambda: _split(hash_block_size=0), "hash_block_size=0: must be >= 1"),
    (
        "split H divides",
        lambda: _split(hash_block_size=3),
        "hash_block_size=3: must divide block_size=4",
    ),
    (
        "split start",
        lambda: _split(
            num_computed_tokens=6, num_new_local_computed_tokens=3, num_external_computed_tokens=2
        ),
        "num_computed_tokens=6: the chunk start (computed + local + external = 11) must be <= "
        "num_tokens=10",
    ),
    (
        "lcp lookahead",
        lambda: last_cacheable_position(8, 4, False, -1),
        "hash_lookahead_tokens=-1: must be >= 0",
    ),
    (
        "split lookahead",
        lambda: _split(hash_lookahead_tokens=-2),
        "hash_lookahead_tokens=-2: must be >= 0",
    ),
    (
        "split exact junction",
        lambda: _split(exact_junction_stop=1),
        "exact_junction_stop=1: must be a bool",
    ),
    (
        "split checkpoints type",
        lambda: _split(prefill_checkpoints=(1, 4)),
        "prefill_checkpoints=(1, 4): must be None or a PrefillCheckpoints",
    ),
    (
        "split checkpoints unit",
        lambda: _split(hash_block_size=2, prefill_checkpoints=PrefillCheckpoints(1, 3)),
        "prefill_checkpoints=PrefillCheckpoints(alignment=1, unit=3, "
        "keyed_on_prefill_end=False): its unit must be a multiple of hash_block_size=2",
    ),
    (
        "written checkpoint start",
        lambda: ChunkSplitter(4).written_checkpoint(
            num_computed_tokens=11, num_new_tokens=0, num_prompt_tokens=8, num_tokens=10
        ),
        "num_computed_tokens=11: the chunk start must be <= num_tokens=10",
    ),
    (
        "written checkpoint negative start",
        lambda: ChunkSplitter(4).written_checkpoint(
            num_computed_tokens=-1, num_new_tokens=4, num_prompt_tokens=7, num_tokens=7
        ),
        "num_computed_tokens=-1: must be >= 0",
    ),
    (
        "written checkpoint new tokens",
        lambda: ChunkSplitter(4).written_checkpoint(
            num_computed_tokens=0, num_new_tokens=-1, num_prompt_tokens=7, num_tokens=7
        ),
        "num_new_tokens=-1: must be >= 0",
    ),
    (
        "written checkpoint prompt",
        lambda: ChunkSplitter(4).written_checkpoint(
            num_computed_tokens=0, num_new_tokens=4, num_prompt_tokens=0, num_tokens=7
        ),
        "num_prompt_tokens=0: must be >= 1",
    ),
    (
        "written checkpoint tokens",
        lambda: ChunkSplitter(4).written_checkpoint(
            num_computed_tokens=0, num_new_tokens=4, num_prompt_tokens=8, num_tokens=7
        ),
        "num_tokens=7: must be >= num_prompt_tokens (8)",
    ),
    ("checkpoints alignment", lambda: PrefillCheckpoints(0, 4), "alignment=0: must be >= 1"),
    ("checkpoints unit", lambda: PrefillCheckpoints(1, 0), "unit=0: must be >= 1"),
    (
        "checkpoints key",
        lambda: PrefillCheckpoints(1, 4, 1),  # type: ignore[arg-type]
        "keyed_on_prefill_end=1: must be a bool",
    ),
]


@pytest.mark.parametrize(("call", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_rejection_names_the_argument_value_and_rule(
    call: Callable[[], object], message: str
) -> None:
    with pytest.raises(InvalidArgument) as info:
        call()
    err = info.value
    assert str(err) == message
    assert f"{err.argument}={err.value!r}: {err.rule}" == message
