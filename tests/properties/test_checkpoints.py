"""The promised positions: where lookups land, and the split's stop among them.

* ``checkpoint_stop`` is the earliest of ``promised_positions`` strictly inside
  the chunk (the direct segment arithmetic agrees with the enumeration), and
  ``promised_stop`` the earliest of any boundaries floored to the hit grid
  and the segment boundaries.
* Core alone, wired as an engine that vendors only ``core`` wires it
  (``reachable_boundaries`` into ``reachable_block_mask`` on the hit grid),
  keeps only blocks the oracle says some promised position needs (economy).
* First principles: a resend of a prompt, with full attention holding the
  blocks a finished request leaves (whole blocks of the prompt, or more once
  output tokens filled the last one), lands where full attention alone can
  serve it (the oracle tries every length). That landing point, on the hit
  grid, is promised. The oracle never sees the formula.
* The next turn: a finished request's ``decode_checkpoint`` is where the
  oracle's follow-up (the prompt and the whole answer resent, with or without
  new text) resumes when every group kept everything the request computed;
  a declared checkpoint adds to ``promised_positions`` exactly where the
  oracle's sibling sharing the prefix up to it resumes (with and without the
  EAGLE drop).
* Speculative decode steps: where the steps left Mamba states
  (``decode_step_state`` under each ``CrossedGridPoints``), the decode
  checkpoint is where the oracle's follow-up resumes on the states those
  steps wrote; one token a step is the plain answer.
"""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from junction.reference.oracle.first_principles import (
    OracleGroup,
    oracle_blocks_needed,
    oracle_declared_positions,
    oracle_decode_checkpoint,
    oracle_reconcile,
)

from .core_under_test import (
    CrossedGridPoints,
    GroupKind,
    HybridGeometry,
    checkpoint_stop,
    decode_checkpoint,
    decode_step_state,
    floor_to,
    promised_positions,
    promised_stop,
    reachable_block_mask,
    reachable_boundaries,
)
from .strategies import geometries


@st.composite
def geometries_with_retention(draw: st.DrawFn) -> HybridGeometry:
    geometry = draw(geometries())
    unit = geometry.hit_grid_tokens
    interval = draw(st.sampled_from([None, 0, 1, 2, 3]))
    if interval:
        block = geometry.scheduler_block_size
        interval = interval * unit * block // __import__("math").gcd(unit, block)
    return HybridGeometry(
        geometry.groups,
        geometry.hash_block_size,
        partial_hits=geometry.partial_hits,
        use_eagle=geometry.use_eagle,
        retention_interval=interval,
    )


@given(geometries_with_retention(), st.integers(1, 80), st.data())
def test_checkpoint_stop_is_the_earliest_promised_position_inside(
    geometry: HybridGeometry, prompt: int, data: st.DataObject
) -> None:
    junction = data.draw(st.integers(0, prompt))
    start = data.draw(st.integers(0, prompt))
    end = data.draw(st.integers(start, prompt + 1))
    promised = promised_positions(geometry, prompt, junction, max(end, 1))
    inside = [p for p in promised if start < p < end]
    got = checkpoint_stop(
        geometry, start=start, end=end, num_prompt_tokens=prompt, shared_prefix_boundary=junction
    )
    assert got == min(inside, default=end), (promised, got)


@given(geometries_with_retention(), st.lists(st.integers(0, 80), max_size=4), st.data())
def test_promised_stop_is_the_earliest_floored_boundary_or_segment_inside(
    geometry: HybridGeometry, boundaries: list[int], data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, 80))
    end = data.draw(st.integers(start, 81))
    grid, interval = geometry.hit_grid_tokens, geometry.retention_interval
    candidates = {floor_to(x, grid) for x in boundaries}
    if interval:
        candidates.update(range(interval, end, interval))
    inside = [p for p in candidates if start < p < end]
    got = promised_stop(geometry, boundaries, start=start, end=end)
    assert got == min(inside, default=end), (candidates, got)


@given(geometries(), st.integers(1, 80), st.booleans())
def test_a_resend_lands_on_a_promised_position(
    geometry: HybridGeometry, prompt: int, last_block_filled: bool
) -> None:
    unit = geometry.hash_block_size
    groups = []
    for spec in geometry.groups:
        if spec.kind is not GroupKind.FULL:
            continue
        size = spec.block_size
        whole = (prompt + (size if last_block_filled else 0)) // size
        if size > geometry.alignment_tokens:  # matched by hash unit inside cached blocks
            units = frozenset(range(whole * size // unit))
            groups.append(OracleGroup("full", unit, None, units, spec.eagle_group))
        else:
            groups.append(
                OracleGroup("full", size, None, frozenset(range(whole)), spec.eagle_group)
            )
    if not groups:
        return
    lookup_limit = prompt // unit * unit  # the resend's hashed tokens
    hit, _, _ = oracle_reconcile(
        groups, geometry.alignment_tokens, geometry.use_eagle, prompt - 1, lookup_limit
    )
    grid = geometry.hit_grid_tokens
    landing = hit // grid * grid
    promised = promised_positions(geometry, prompt)
    assert landing == 0 or landing in promised, (hit, landing, promised)


@given(geometries(), st.integers(1, 80), st.data())
def test_core_alone_keeps_only_blocks_a_promised_position_needs(
    geometry: HybridGeometry, prompt: int, data: st.DataObject
) -> None:
    """Economy of core wired by itself: with ``R = 0`` every block a sparse group
    keeps is read, by first principles, to resume at some promised position."""
    alignment = geometry.alignment_tokens
    junction = data.draw(st.integers(0, (prompt - 1) // alignment)) * alignment
    geometry = HybridGeometry(
        geometry.groups,
        geometry.hash_block_size,
        partial_hits=geometry.partial_hits,
        use_eagle=geometry.use_eagle,
        retention_interval=0,
    )
    grid = geometry.hit_grid_tokens
    boundaries = reachable_boundaries(
        prompt,
        junction,
        geometry.eagle_drop_tokens,
        geometry.sub_block_full_attention_sizes,
        hit_grid_tokens=grid,
    )
    promised = promised_positions(geometry, prompt, junction)
    for spec in geometry.groups:
        size = spec.block_size
        full_blocks = prompt // size
        mask = reachable_block_mask(0, full_blocks, grid, spec, geometry.use_eagle, 0, boundaries)
        if mask is None:
            assert spec.kind is GroupKind.FULL
            continue
        needed = set().union(
            *(
                oracle_blocks_needed(spec.kind.value, x, size, spec.window, geometry.use_eagle)
                for x in promised
            )
        )
        kept = {index for index, keep in enumerate(mask) if keep}
        assert kept <= needed, (spec, boundaries, promised, sorted(kept - needed))


def _plain(geometry: HybridGeometry) -> list[tuple[str, int, int | None, bool]]:
    return [(g.kind.value, g.block_size, g.window, g.eagle_group) for g in geometry.groups]


@given(geometries(), st.integers(1, 60), st.integers(1, 30))
def test_the_decode_checkpoint_is_where_the_next_turn_resumes(
    geometry: HybridGeometry, prompt: int, answer: int
) -> None:
    finished = prompt + answer
    want = oracle_decode_checkpoint(
        _plain(geometry),
        geometry.hash_block_size,
        geometry.alignment_tokens,
        geometry.use_eagle,
        finished,
    )
    assert decode_checkpoint(geometry, finished) == want
    base = set(promised_positions(geometry, prompt))
    got = set(promised_positions(geometry, prompt, finished_tokens=finished))
    assert got == base | ({want} - {0}), (sorted(got), sorted(base), want)


@given(
    geometries(),
    st.integers(1, 40),
    st.lists(st.integers(1, 5), min_size=1, max_size=12),
    st.sampled_from(list(CrossedGridPoints)),
)
def test_the_decode_checkpoint_follows_the_states_the_steps_wrote(
    geometry: HybridGeometry, prompt: int, sizes: list[int], crossed: CrossedGridPoints
) -> None:
    """Decode begins at the prompt's end; each step computes 1 to 5 tokens (the
    sampled one and the drafts it accepted)."""
    steps = [prompt]
    for size in sizes:
        steps.append(steps[-1] + size)
    finished = steps[-1] + 1
    written = [decode_step_state(geometry, a, b, crossed) for a, b in itertools.pairwise(steps)]
    got = decode_checkpoint(geometry, finished, states_from=prompt, written_states=written)
    want = oracle_decode_checkpoint(
        _plain(geometry),
        geometry.hash_block_size,
        geometry.alignment_tokens,
        geometry.use_eagle,
        finished,
        steps,
        crossed.value,
    )
    assert got == want, (steps, written, got, want)
    if set(sizes) == {1}:  # one token a step: every grid point reached holds a state
        assert got == decode_checkpoint(geometry, finished)


@given(geometries(), st.integers(1, 60), st.data())
def test_a_declared_checkpoint_is_promised_where_a_sibling_resumes(
    geometry: HybridGeometry, prompt: int, data: st.DataObject
) -> None:
    declared = data.draw(st.lists(st.integers(0, prompt), max_size=3))
    junction = data.draw(st.integers(0, prompt))
    base = set(promised_positions(geometry, prompt, junction))
    got = set(promised_positions(geometry, prompt, junction, declared_checkpoints=declared))
    want = set(base)
    for position in declared:
        want |= oracle_declared_positions(
            _plain(geometry), geometry.alignment_tokens, geometry.use_eagle, position
        )
    assert got == want, (sorted(got), sorted(want))
