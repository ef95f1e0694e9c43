"""Documented contracts the oracle comparison does not reach (found by ``make mutmut``).

The oracle properties compare answers for the arguments the strategies draw;
these pin what the docstrings promise beyond that:

* default arguments are the documented neutral values (no junction, no EAGLE,
  no partial hits, ``H = b``, the module's own ``lcp``);
* without a dropping lookup the lookup limit changes nothing;
* full attention is looked up first and once per reconciliation;
* the mask is exactly its :class:`MaskPlan` (periodic runs and boundary runs),
  checked on every small range, including ranges that start periods away
  from block 0 and shorter or longer than a period;
* promised positions are positive, sorted and on the hit grid.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from .core_under_test import (
    GroupKind,
    GroupLookup,
    GroupSpec,
    HybridGeometry,
    MaskPlan,
    checkpoint_stop,
    floor_to,
    last_cacheable_position,
    mamba_block_aligned_split,
    mask_plan,
    promised_positions,
    reachable_block_mask,
    reconcile_hits,
    shared_prefix_boundary,
)
from .oracle_adapters import finders_for
from .strategies import geometries, group_specs, reconcile_inputs, split_inputs

SPLIT_DEFAULTS = dict(
    shared_prefix_boundary=0,
    use_eagle=False,
    hash_block_size=None,
    partial_hits=False,
    max_prefill_tokens=None,
    num_new_local_computed_tokens=0,
    num_external_computed_tokens=0,
    last_cacheable=None,
    hash_lookahead_tokens=0,
    exact_junction_stop=False,
    prefill_checkpoints=None,
)


@given(split_inputs(), st.data())
def test_split_defaults_are_the_neutral_values(args: dict[str, Any], data: st.DataObject) -> None:
    """Leaving an argument out is passing its documented neutral value."""
    names = data.draw(st.sets(st.sampled_from(sorted(SPLIT_DEFAULTS))))
    if "hash_block_size" in names:
        # The default unit is the block: a checkpoint grid on a finer unit is invalid with it.
        args = {**args, "prefill_checkpoints": None}
    explicit = {**args, **{name: SPLIT_DEFAULTS[name] for name in names}}
    omitted = {k: v for k, v in explicit.items() if k not in names}
    assert mamba_block_aligned_split(**omitted) == mamba_block_aligned_split(**explicit)


@given(split_inputs())
def test_split_hash_unit_defaults_to_the_block(args: dict[str, Any]) -> None:
    # A checkpoint grid on a finer hash unit is invalid with the block as the unit.
    args = {**args, "prefill_checkpoints": None}
    same_unit = {**args, "hash_block_size": args["block_size"]}
    assert mamba_block_aligned_split(**{**args, "hash_block_size": None}) == (
        mamba_block_aligned_split(**same_unit)
    )


@given(split_inputs())
def test_split_with_its_own_lcp_passed_in_is_unchanged(args: dict[str, Any]) -> None:
    lcp = last_cacheable_position(
        args["num_tokens"], args["block_size"], args["use_eagle"], args["hash_lookahead_tokens"]
    )
    assert mamba_block_aligned_split(**args, last_cacheable=lcp) == mamba_block_aligned_split(
        **args
    )


def _without_dropping_lookups(geometry: HybridGeometry) -> HybridGeometry:
    return HybridGeometry(
        geometry.groups, geometry.hash_block_size, partial_hits=geometry.partial_hits
    )


@given(reconcile_inputs(), st.data())
def test_lookup_limit_only_bounds_dropping_lookups(
    case: tuple[HybridGeometry, list[frozenset[int]], int, int], data: st.DataObject
) -> None:
    """Without EAGLE, or under EAGLE with groups that never drop only (Mamba groups
    and groups that are not EAGLE groups), the lookup limit changes nothing."""
    geometry, cached, max_hit, _ = case
    kept = [
        k for k, g in enumerate(geometry.groups) if g.kind is GroupKind.MAMBA or not g.eagle_group
    ]
    mamba = [k for k in kept if geometry.groups[k].kind is GroupKind.MAMBA]
    if mamba and data.draw(st.booleans()):
        # EAGLE needs an EAGLE group: a Mamba one, which drops nothing.
        groups = [
            attrs.evolve(geometry.groups[k], eagle_group=True) if k == mamba[0] else g
            for k, g in ((k, geometry.groups[k]) for k in kept)
        ]
        cached = [cached[k] for k in kept]
        geometry = HybridGeometry(groups, geometry.hash_block_size, use_eagle=True)
    else:
        geometry = HybridGeometry(
            geometry.groups, geometry.hash_block_size, partial_hits=geometry.partial_hits
        )
    limit = data.draw(st.integers(0, max_hit + 2))
    finders = finders_for(geometry, cached)
    assert reconcile_hits(geometry, finders, max_hit, limit) == reconcile_hits(
        geometry, finders, max_hit
    )


@given(group_specs(), st.integers(1, 16), st.sets(st.integers(0, 20)), st.integers(0, 80))
def test_a_group_that_is_not_an_eagle_group_never_drops(
    spec: GroupSpec, alignment: int, cached: set[int], bound: int
) -> None:
    """A target-model group's lookup and mask are the same asked with EAGLE's drop
    or without: it needs nothing past a hit (its finder is asked directly here;
    reconciliation never asks it to drop)."""
    spec = attrs.evolve(spec, eagle_group=False)
    finder = GroupLookup(spec, alignment).finder(cached.__contains__)
    assert finder(bound, True) == finder(bound, False)
    for interval in (None, 0):
        assert mask_plan(alignment, spec, True, interval) == mask_plan(
            alignment, spec, False, interval
        )


def test_lookup_limit_below_a_full_hit_without_eagle() -> None:
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
    finders = finders_for(geometry, [frozenset(range(4)), frozenset({1})])
    assert reconcile_hits(geometry, finders, 8, 5).hit_length == 8


@given(reconcile_inputs())
def test_full_attention_is_looked_up_first_and_once(
    case: tuple[HybridGeometry, list[frozenset[int]], int, int],
) -> None:
    geometry, cached, max_hit, limit = case
    calls: list[int] = []

    def recording(index: int, finder: Any) -> Any:
        def find(bound: int, drop: bool) -> int:
            calls.append(index)
            return finder(bound, drop)  # type: ignore[no-any-return]

        return find

    finders = [recording(k, f) for k, f in enumerate(finders_for(geometry, cached))]
    reconcile_hits(geometry, finders, max_hit, limit)
    full = [k for k, g in enumerate(geometry.groups) if g.kind is GroupKind.FULL]
    assert sorted(calls[: len(full)]) == full
    assert all(calls.count(k) == 1 for k in full), calls


def _plan_keeps(plan: MaskPlan, block: int, boundaries: tuple[int, ...], final: int | None) -> bool:
    """The :class:`MaskPlan` docstring, block by block."""
    period, run, shift, block_size, alignment, keeps_boundaries, segment, keeps_final = plan
    if period and block >= shift and (block - shift) % period >= period - run:
        return True
    ends: list[int] = []
    if segment:
        # Segment ends up to a few runs past the block (ends grow with k).
        positions = (floor_to(k * segment, alignment) for k in range(1, block + run + 3))
        ends += [p // block_size + shift for p in positions if p > 0]
    if keeps_boundaries:
        ends += [floor_to(x, alignment) // block_size + shift for x in boundaries]
    if keeps_final and final is not None:
        ends.append(final)
    return any(end - run <= block < end for end in ends)


def _sparse_plans() -> Iterator[tuple[int, GroupSpec, bool, int | None, MaskPlan]]:
    specs = [GroupSpec.mamba(b) for b in (1, 2)] + [
        GroupSpec.sliding_window(b, w) for b in (1, 2) for w in (1, 2, 3, 5)
    ]
    for spec, factor, eagle in itertools.product(specs, (1, 2, 3), (False, True)):
        alignment = factor * spec.block_size
        for interval in (None, 0, alignment, 2 * alignment, alignment + 1, 3):
            plan = mask_plan(alignment, spec, eagle, interval)
            if plan is not None:
                yield alignment, spec, eagle, interval, plan


def test_mask_is_exactly_its_plan_on_every_small_range() -> None:
    checked = 0
    for alignment, spec, eagle, interval, plan in _sparse_plans():
        block = spec.block_size
        horizon = 2 * max(plan.period, 2, plan.segment // block + 1) + 3
        for start, length in itertools.product(range(horizon), range(horizon)):
            middle = (start + length // 2) * block
            for boundaries, final in (((), None), ((middle + alignment - 1, 0), start + 1)):
                got = reachable_block_mask(
                    start,
                    start + length,
                    alignment,
                    spec,
                    eagle,
                    interval,
                    boundaries,
                    final_segment_end_block=final,
                )
                want = [
                    _plan_keeps(plan, i, boundaries, final) for i in range(start, start + length)
                ]
                assert got == want, (start, length, alignment, spec, eagle, interval, boundaries)
                checked += 1
    assert checked > 10_000, checked


@given(geometries(), st.integers(1, 80), st.data())
def test_promised_positions_are_positive_sorted_and_on_the_hit_grid(
    geometry: HybridGeometry, prompt: int, data: st.DataObject
) -> None:
    junction = data.draw(st.integers(0, prompt))
    positions = promised_positions(geometry, prompt, junction)
    assert list(positions) == sorted(set(positions))
    assert all(p > 0 and p % geometry.hit_grid_tokens == 0 for p in positions), positions
    if not junction:
        assert promised_positions(geometry, prompt) == positions


@given(geometries(), st.integers(1, 80), st.data())
def test_checkpoint_stop_without_a_junction_is_with_junction_zero(
    geometry: HybridGeometry, prompt: int, data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, prompt))
    end = data.draw(st.integers(start, prompt + 1))
    assert checkpoint_stop(
        geometry, start=start, end=end, num_prompt_tokens=prompt
    ) == checkpoint_stop(
        geometry, start=start, end=end, num_prompt_tokens=prompt, shared_prefix_boundary=0
    )


@given(st.integers(0, 100), st.integers(0, 100))
def test_shared_prefix_boundary_is_the_longest_hit_when_it_exceeds_the_hit(
    hit: int, extra: int
) -> None:
    """``J = ℓ`` when the groups disagree (``ℓ > h``), 0 when they agree: the
    public rule, which reconciliation applies through the same private rule."""
    assert shared_prefix_boundary(hit, hit + extra) == (hit + extra if extra else 0)
