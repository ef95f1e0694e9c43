"""Hypothesis strategies over the whole parameter space of the three decisions.

Sizes stay small on purpose: corner cases live at block sizes 1-8 and a few
blocks, and small values shrink to readable counterexamples.
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import strategies as st

from .core_under_test import GroupSpec, HybridGeometry, PrefillCheckpoints, lcm

block_sizes = st.integers(1, 8)
windows = st.integers(1, 24)


@st.composite
def group_specs(
    draw: st.DrawFn, kinds: tuple[str, ...] = ("full", "sliding_window", "mamba")
) -> GroupSpec:
    kind = draw(st.sampled_from(kinds))
    block = draw(block_sizes)
    # Mostly EAGLE groups (a draft model's), as every group was before the flag.
    eagle_group = draw(st.sampled_from((True, True, False)))
    if kind == "full":
        return GroupSpec.full(block, eagle_group=eagle_group)
    if kind == "sliding_window":
        return GroupSpec.sliding_window(block, draw(windows), eagle_group=eagle_group)
    return GroupSpec.mamba(block, eagle_group=eagle_group)


@st.composite
def mask_inputs(draw: st.DrawFn) -> dict[str, Any]:
    """Arguments of ``reachable_block_mask`` (boundaries also outside the range)."""
    spec = draw(group_specs())
    block = spec.block_size
    # Alignments that are and are not whole numbers of this group's blocks.
    alignment = draw(st.one_of(st.integers(1, 4).map(lambda k: k * block), st.integers(1, 16)))
    unit = lcm(alignment, block)
    # Intervals on the group's grid and (any int) off it, except where core
    # rejects one: a Mamba group whose A and B do not divide one another.
    off_grid = st.integers(1, 60)
    if spec.kind.value == "mamba" and alignment % block and block % alignment:
        off_grid = off_grid.filter(lambda r: r % unit == 0)
    interval = draw(
        st.one_of(st.none(), st.just(0), st.integers(1, 6).map(lambda k: k * unit), off_grid)
    )
    start = draw(st.one_of(st.just(0), st.integers(0, 40)))
    end = draw(st.integers(start, start + 70))
    boundaries = draw(st.lists(st.integers(0, (end + 4) * block + 2 * unit), max_size=4))
    return dict(
        start_block=start,
        end_block=end,
        alignment_tokens=alignment,
        spec=spec,
        use_eagle=draw(st.booleans()),
        retention_interval=interval,
        reachable_boundaries=boundaries,
        final_segment_end_block=draw(st.one_of(st.none(), st.integers(0, end + 8))),
    )


@st.composite
def split_inputs(draw: st.DrawFn) -> dict[str, Any]:
    """Arguments of ``mamba_block_aligned_split``.

    Covers mid-block starts, budgets smaller than a block, resumed requests
    (``N > P``), local and external hits, junctions below, inside and
    beyond the chunk, and the three engine options: hash lookahead tokens
    (below, at and past a block), the exact junction stop, and internal
    prefill checkpoints on the hash unit or coarser grids, with tiles that
    often and seldom fit.
    """
    block = draw(block_sizes)
    hash_unit = draw(st.sampled_from([h for h in range(1, block + 1) if block % h == 0]))
    prompt = draw(st.integers(1, 12 * block))
    total = prompt + draw(st.integers(0, 2 * block))
    # Mostly prefill: decode steps pass through unchanged and teach little.
    computed = draw(st.one_of(st.integers(0, prompt - 1), st.integers(0, total)))
    local = draw(st.one_of(st.just(0), st.integers(0, total - computed)))
    external = draw(st.one_of(st.just(0), st.integers(0, total - computed - local)))
    start = computed + local + external
    # Often the whole rest: the chunk that reaches the prefill's end is where
    # internal checkpoints act.
    new = draw(st.one_of(st.integers(0, total - start + 2), st.just(total - start)))
    inside = st.integers(start + 1, max(start + new - 1, start + 1))
    junction = draw(
        st.one_of(
            st.just(0),
            st.integers(0, total + block),
            st.integers(max(start - block, 0), start + new + block),
            inside,
            inside,
        )
    )
    return dict(
        num_computed_tokens=computed,
        num_new_tokens=new,
        num_prompt_tokens=prompt,
        num_tokens=total,
        block_size=block,
        shared_prefix_boundary=junction,
        use_eagle=draw(st.booleans()),
        hash_block_size=hash_unit,
        partial_hits=draw(st.booleans()),
        max_prefill_tokens=draw(st.one_of(st.none(), st.just(block), st.integers(1, 3 * block))),
        num_new_local_computed_tokens=local,
        num_external_computed_tokens=external,
        hash_lookahead_tokens=draw(st.one_of(st.just(0), st.integers(0, 2 * block + 1))),
        exact_junction_stop=draw(st.booleans()),
        prefill_checkpoints=draw(st.one_of(st.none(), prefill_checkpoints(hash_unit, block))),
    )


@st.composite
def prefill_checkpoints(draw: st.DrawFn, hash_unit: int, block: int) -> PrefillCheckpoints:
    """A backend writing checkpoints on the hash unit, the block or a coarser grid."""
    unit = draw(st.sampled_from([hash_unit, block, 2 * block, 3 * hash_unit]))
    alignment = draw(st.sampled_from([1, hash_unit, unit, 2 * hash_unit, 3]))
    return PrefillCheckpoints(alignment, unit, draw(st.booleans()))


@st.composite
def geometries(draw: st.DrawFn, max_groups: int = 4) -> HybridGeometry:
    groups = draw(st.lists(group_specs(), min_size=1, max_size=max_groups))
    block_sizes_ = [g.block_size for g in groups]
    hash_unit = draw(
        st.sampled_from(
            [h for h in range(1, min(block_sizes_) + 1) if all(b % h == 0 for b in block_sizes_)]
        )
    )
    use_eagle = draw(st.booleans())
    if use_eagle and not any(g.eagle_group for g in groups):
        # EAGLE needs an EAGLE group: make one of them the draft model's.
        index = draw(st.integers(0, len(groups) - 1))
        groups[index] = attrs.evolve(groups[index], eagle_group=True)
    return HybridGeometry(groups, hash_unit, partial_hits=draw(st.booleans()), use_eagle=use_eagle)


@st.composite
def reconcile_inputs(
    draw: st.DrawFn,
) -> tuple[HybridGeometry, list[frozenset[int]], int, int]:
    """A geometry, each group's cached blocks of the request's chain, ``M``, and the
    EAGLE lookup limit (the hashed tokens: ``M`` or ``M + 1``, or fewer)."""
    geometry = draw(geometries())
    longest = max(g.block_size for g in geometry.groups)
    max_hit = draw(st.integers(0, 12 * longest))
    chain = max_hit // min(g.block_size for g in geometry.groups) + 2
    # Mostly-cached chains with holes: the interesting case for sparse groups.
    mostly_cached = st.lists(st.integers(0, 3).map(bool), min_size=chain, max_size=chain)
    cached = [
        frozenset(i for i, hit in enumerate(draw(mostly_cached)) if hit) for _ in geometry.groups
    ]
    limit = draw(st.sampled_from([max_hit, max_hit + 1, max(max_hit - 1, 0)]))
    return geometry, cached, max_hit, limit
