"""Core equals the first-principles oracle on every decision (decisions 1-3 of docs/domain.md).

Each property also records which region of the space the example hit
(``hypothesis.event``), so ``--hypothesis-show-statistics`` shows that the
interesting cases — sparse masks, clipped chunks, junctions — are exercised.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import event, example, given
from hypothesis import strategies as st

from junction.reference.oracle.first_principles import (
    OracleGroup,
    oracle_blocks_needed,
    oracle_in_prefill,
    oracle_last_cacheable_position,
    oracle_reconcile,
    oracle_split,
)

from .core_under_test import (
    GroupKind,
    GroupLookup,
    GroupSpec,
    HitReconciler,
    cdiv,
    last_cacheable_position,
    longest_full_attention_hit,
    longest_mamba_hit,
    longest_sliding_window_hit,
    mamba_block_aligned_split,
    prefill_end,
    reachable_block_mask,
    reconcile_hits,
    sliding_window_need,
)
from .oracle_adapters import finders_for, oracle_hits, oracle_mask
from .strategies import group_specs, mask_inputs, reconcile_inputs, split_inputs


@given(mask_inputs())
# An off-grid interval's segment end past the range (k * R = 160, the range's
# blocks end at token 156) floors into it (to 156, block 51's state): the
# oracle once stopped looking at the range's end and dropped that state.
@example(
    {
        "start_block": 0,
        "end_block": 52,
        "alignment_tokens": 6,
        "spec": GroupSpec.mamba(3),
        "use_eagle": False,
        "retention_interval": 5,
        "reachable_boundaries": [],
        "final_segment_end_block": None,
    }
)
def test_reachable_block_mask_matches_oracle(args: dict[str, Any]) -> None:
    got = reachable_block_mask(**args)
    want = oracle_mask(args)
    event(f"{args['spec'].kind.value}: {'dense' if got is None else 'sparse'}")
    assert got == want, f"{args}: core={got} oracle={want}"


@given(split_inputs())
def test_split_matches_oracle(args: dict[str, Any]) -> None:
    got = mamba_block_aligned_split(**args)
    want = oracle_split(**args)
    start = (
        args["num_computed_tokens"]
        + args["num_new_local_computed_tokens"]
        + args["num_external_computed_tokens"]
    )
    event("clipped" if got < args["num_new_tokens"] else "whole chunk")
    if start < args["shared_prefix_boundary"] < start + args["num_new_tokens"]:
        event("junction inside the chunk")
    checkpoints = args["prefill_checkpoints"]
    if checkpoints is not None:
        event("internal checkpoints: " + ("splits" if got != want else "agree"))
    assert got == want, f"{args}: core={got} oracle={want}"


@given(reconcile_inputs())
def test_reconciliation_matches_oracle(case: tuple[Any, list[frozenset[int]], int, int]) -> None:
    geometry, cached, max_hit, limit = case
    got = reconcile_hits(geometry, finders_for(geometry, cached), max_hit, limit)
    want = oracle_hits(geometry, cached, max_hit, limit)
    event("junction" if got.shared_prefix_boundary else "no junction")
    assert (got.hit_length, got.longest_hit_length, got.shared_prefix_boundary) == want, (
        f"{geometry} cached={cached} M={max_hit} limit={limit}: core={got} oracle={want}"
    )


def _leading_run(cached: frozenset[int]) -> Any:
    """A ``CachedRun`` over ``cached``, answering only within its limit."""

    def cached_run(limit: int) -> int:
        return next((index for index in range(limit) if index not in cached), limit)

    return cached_run


def _never_asked(index: int) -> bool:
    raise AssertionError(f"is_cached({index}) asked: a full-attention finder given a run asks it")


@given(reconcile_inputs())
def test_reconciliation_with_cached_runs_matches_oracle(
    case: tuple[Any, list[frozenset[int]], int, int],
) -> None:
    """Full-attention finders handed ``cached_run`` (and an ``is_cached`` that
    fails if asked) reconcile as the oracle: the run replaces the per-block scan."""
    geometry, cached, max_hit, limit = case
    finders = [
        GroupLookup(spec, geometry.alignment_tokens).finder(_never_asked, _leading_run(blocks))
        if spec.kind is GroupKind.FULL
        else GroupLookup(spec, geometry.alignment_tokens).finder(blocks.__contains__, None)
        for spec, blocks in zip(geometry.groups, cached, strict=True)
    ]
    got = HitReconciler(geometry).reconcile(finders, max_hit, limit)
    want = oracle_hits(geometry, cached, max_hit, limit)
    assert (got.hit_length, got.longest_hit_length, got.shared_prefix_boundary) == want, (
        f"{geometry} cached={cached} M={max_hit} limit={limit}: core={got} oracle={want}"
    )


@given(
    st.integers(1, 300),
    st.integers(1, 32),
    st.booleans(),
    st.one_of(st.integers(0, 40), st.integers(0, 400)),
)
def test_last_cacheable_position_matches_oracle(
    tokens: int, unit: int, use_eagle: bool, lookahead: int
) -> None:
    """Core's floor formula equals the deepest position a lookup lands at, found by walking."""
    got = last_cacheable_position(tokens, unit, use_eagle, lookahead)
    assert got == oracle_last_cacheable_position(tokens, unit, use_eagle, lookahead)


@given(st.integers(1, 300), st.integers(0, 300))
def test_prefill_end_is_where_the_oracle_stops_prefilling(prompt: int, output: int) -> None:
    tokens = prompt + output
    end = prefill_end(prompt, tokens)
    assert oracle_in_prefill(end - 1, prompt, tokens)
    assert not any(oracle_in_prefill(p, prompt, tokens) for p in range(end, tokens + 1))


@given(st.integers(1, 64), st.integers(1, 16), st.booleans(), st.integers(0, 3))
def test_sliding_window_need_is_the_blocks_a_grid_point_reads(
    window: int, block: int, use_eagle: bool, extra: int
) -> None:
    """At any grid point past the window's reach, the oracle reads exactly ``need`` blocks."""
    position = (cdiv(window, block) + extra) * block
    needed = oracle_blocks_needed("sliding_window", position, block, window, use_eagle)
    assert sliding_window_need(window, block, use_eagle) == len(needed)


@given(group_specs(), st.integers(1, 16), st.data())
def test_each_free_finder_is_the_longest_hit_one_group_serves(
    spec: Any, alignment: int, data: st.DataObject
) -> None:
    """``longest_*_hit(is_cached, bound)`` is the largest length the group serves
    with its EAGLE drop inside ``bound``: one group reconciled alone, with
    ``M`` and the lookup limit both ``bound`` (the oracle tries every length).
    Every bound up to past the chain, with and without EAGLE, per cache state."""
    block = spec.block_size
    chain = data.draw(st.integers(1, 10))
    cached = frozenset(
        i
        for i, hit in enumerate(
            data.draw(st.lists(st.integers(0, 3), min_size=chain, max_size=chain))
        )
        if hit
    )
    is_cached = cached.__contains__
    group = OracleGroup(spec.kind.value, block, spec.window, cached)
    for bound, use_eagle in itertools.product(range((chain + 2) * block), (False, True)):
        if spec.kind.value == "full":
            drop = min(alignment, block) if use_eagle else 0
            got = longest_full_attention_hit(
                is_cached, bound, block_size=block, alignment_tokens=alignment, drop_tokens=drop
            )
        elif spec.kind.value == "sliding_window":
            got = longest_sliding_window_hit(
                is_cached,
                bound,
                block_size=block,
                window=spec.window,
                alignment_tokens=alignment,
                use_eagle=use_eagle,
            )
        else:
            got = longest_mamba_hit(is_cached, bound, block_size=block, alignment_tokens=alignment)
        want, _, _ = oracle_reconcile([group], alignment, use_eagle, bound, bound)
        assert type(got) is int, f"{got!r}: a length is an int"
        assert got == want, (
            f"{spec} A={alignment} eagle={use_eagle} bound={bound} cached={sorted(cached)}"
        )
