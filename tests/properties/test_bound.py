"""The bound per-call API, reused as an engine reuses it, against the oracle.

The free functions are calls of a fresh binding, so every other property
already runs the bound path once per binding. What only these properties
see is a binding *reused*: one ``GroupMask``, ``ChunkSplitter``,
``GroupLookup`` or ``HitReconciler`` answering a sequence of calls, with
the caller mutating what it got back in between (a binding shares its
pre-tiled runs and derived tables across calls; none of that may leak).
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from junction.reference.oracle.first_principles import oracle_split

from .core_under_test import ChunkSplitter, GroupLookup, GroupMask, GroupSpec, HitReconciler
from .oracle_adapters import oracle_hits, oracle_mask
from .strategies import mask_inputs, reconcile_inputs, split_inputs


@given(mask_inputs(), st.data())
def test_a_reused_group_mask_answers_every_call_as_the_oracle(
    args: dict[str, Any], data: st.DataObject
) -> None:
    binding = GroupMask(
        args["alignment_tokens"], args["spec"], args["use_eagle"], args["retention_interval"]
    )
    block = args["spec"].block_size
    for _ in range(data.draw(st.integers(1, 4))):
        start = data.draw(st.integers(0, 60))
        end = data.draw(st.integers(start, start + 90))
        boundaries = data.draw(st.lists(st.integers(0, (end + 4) * block), max_size=3))
        final = data.draw(st.one_of(st.none(), st.integers(0, end + 8)))
        call = {**args, "start_block": start, "end_block": end}
        call["reachable_boundaries"] = boundaries
        call["final_segment_end_block"] = final
        got = binding.reachable_block_mask(start, end, boundaries, final)
        assert got == oracle_mask(call), call
        if got:
            got[:] = [not kept for kept in got]  # the caller owns what it got


@given(split_inputs(), st.data())
def test_a_reused_chunk_splitter_answers_every_call_as_the_oracle(
    args: dict[str, Any], data: st.DataObject
) -> None:
    engine = tuple(field.name for field in attrs.fields(ChunkSplitter))
    binding = ChunkSplitter(*(args[name] for name in engine))
    for _ in range(data.draw(st.integers(1, 4))):
        request = data.draw(split_inputs())
        call = {**request, **{name: args[name] for name in engine}}
        start = sum(
            call[name]
            for name in (
                "num_computed_tokens",
                "num_new_local_computed_tokens",
                "num_external_computed_tokens",
            )
        )
        if start > call["num_tokens"]:
            continue
        per_call = {name: value for name, value in call.items() if name not in engine}
        assert binding.split(**per_call) == oracle_split(**call), call


@given(reconcile_inputs(), st.data())
def test_a_reused_reconciler_and_lookups_answer_every_request_as_the_oracle(
    case: tuple[Any, list[frozenset[int]], int, int], data: st.DataObject
) -> None:
    geometry, cached, max_hit, limit = case
    reconciler = HitReconciler(geometry)
    lookups = [GroupLookup(spec, geometry.alignment_tokens) for spec in geometry.groups]
    chain = max(max(blocks, default=0) for blocks in cached) + 2
    for _ in range(data.draw(st.integers(1, 3))):
        finders = [
            lookup.finder(blocks.__contains__)
            for lookup, blocks in zip(lookups, cached, strict=True)
        ]
        got = reconciler.reconcile(finders, max_hit, limit)
        want = oracle_hits(geometry, cached, max_hit, limit)
        assert (got.hit_length, got.longest_hit_length, got.shared_prefix_boundary) == want
        assert reconciler.hit_lengths(finders, max_hit, limit) == want[:2]
        # The next request: other cached blocks, another bound.
        cached = [
            frozenset(data.draw(st.lists(st.integers(0, chain), max_size=chain)))
            for _ in geometry.groups
        ]
        max_hit = data.draw(st.integers(0, max_hit + 8))
        limit = data.draw(st.sampled_from([max_hit, max_hit + 1, max(max_hit - 1, 0)]))


# A binding pre-tiles the periodic runs of its first blocks (core.mask._TILED_BLOCKS,
# in a list of whole periods covering at least that many blocks plus one period);
# ranges that end past them, and periods longer than them, take the untiled path.
_PAST_TILES = 8192


@given(
    st.sampled_from(["sliding_window", "mamba"]),
    st.integers(1, 4),
    st.integers(1, 9),
    st.data(),
)
def test_masks_past_the_pre_tiled_blocks_match_the_oracle(
    kind: str, block: int, window: int, data: st.DataObject
) -> None:
    spec = (
        GroupSpec.sliding_window(block, window)
        if kind == "sliding_window"
        else GroupSpec.mamba(block)
    )
    long_period = data.draw(st.booleans())
    # Periods at and just past the tiles' reach (the binding's two paths).
    period = (
        data.draw(st.sampled_from(range(_PAST_TILES - 1, _PAST_TILES + 3)))
        if long_period
        else data.draw(st.integers(2, 9))
    )
    interval = period * block
    for use_eagle in (False, True):
        shift = 1 if use_eagle and kind == "sliding_window" else 0
        if long_period:  # few runs, short ranges
            # Every range of a few blocks at or near a period boundary (where the
            # runs are), one shorter than a period reaching into two runs (runs of
            # 3 blocks or more), and one anywhere.
            ranges = [
                (start, start + length)
                for multiple in range(3)
                for offset in range(-2, 3)
                if (start := multiple * period + offset) >= 0
                for length in (0, 1, 2, 12)
            ]
            ranges.append((period + shift - 1, 2 * period + shift - 2))
            anywhere = data.draw(st.integers(0, 3 * period))
            ranges.append((anywhere, anywhere + data.draw(st.integers(0, 50))))
        else:  # ranges that end inside, at and past the tiles
            start = data.draw(st.integers(0, 2 * period))
            tiled = period * (_PAST_TILES // period + 2) - (start - shift) % period
            ranges = [(start, start + length) for length in (tiled - 1, tiled, tiled + 1)]
            ranges.append((start, start + tiled + data.draw(st.integers(2, 3 * period))))
        binding = GroupMask(block, spec, use_eagle, interval)
        # One draw of boundaries for all the ranges (a draw per range overruns
        # Hypothesis's buffer, which then drops the example unseen).
        picks = data.draw(st.lists(st.integers(0, 3 * period + 60), max_size=3))
        for start, end in ranges:
            boundaries = [pick * block for pick in picks]
            args = dict(
                start_block=start,
                end_block=end,
                alignment_tokens=block,
                spec=spec,
                use_eagle=use_eagle,
                retention_interval=interval,
                reachable_boundaries=boundaries,
            )
            got = binding.reachable_block_mask(start, end, boundaries)
            assert got == oracle_mask(args), {**args, "spec": spec}
