"""End-to-end promises of SPEC section 7 through the reference engine, no eviction pressure.

Requests run one after another (each to completion) over random geometries,
prompts and budgets, for retention None / 0 / > 0 and EAGLE on/off; a later
request is then looked up with the engine's own coordinator.

Scope, stated where the literal promise cannot hold for any policy:
* "as far as full attention alone" (promises 1 and 2) is asserted literally
  without EAGLE. Under EAGLE a sliding-window group must match one of *its*
  blocks past the hit, which can lie beyond what full attention's smaller
  drop unit needs; there the promise asserted is that sparse retention loses
  nothing: the hit equals the hit of the same history under dense retention.
  The same holds with partial hits: full attention then lands on hash units
  inside a block, where a Mamba group (whose finder serves block ends only)
  has no state.
* Segments (promise 3) is asserted without EAGLE, for the same reason.
"""

from __future__ import annotations

import attrs
from hypothesis import example, given
from hypothesis import strategies as st

from core import GroupKind, GroupSpec, HybridGeometry, floor_to, last_cacheable_position
from reference.engine import Engine, EngineConfig
from reference.oracle import OracleGroup, oracle_reconcile
from reference.request import Request


@st.composite
def geometries(draw: st.DrawFn, retention: bool = True) -> HybridGeometry:
    block = st.sampled_from([2, 4, 8])
    groups = [GroupSpec.full(draw(block))]
    for kind in draw(
        st.lists(st.sampled_from(["sliding_window", "mamba"]), min_size=1, max_size=2)
    ):
        size = draw(block)
        groups.append(
            GroupSpec.sliding_window(size, draw(st.integers(1, 20)))
            if kind == "sliding_window"
            else GroupSpec.mamba(size)
        )
    probe = HybridGeometry(groups, 2)
    unit = probe.scheduler_block_size
    return HybridGeometry(
        groups,
        2,
        partial_hits=draw(st.booleans()),
        use_eagle=draw(st.booleans()),
        retention_interval=draw(st.sampled_from([None, 0, unit, 2 * unit])),
    )


def literal(geometry: HybridGeometry) -> bool:
    return not geometry.use_eagle and not geometry.partial_hits


def _block_hash(probe: Request, index: int, size: int) -> int:
    block_hash = probe.chain.block_hash(index, size)
    assert block_hash is not None, f"block {index} of {probe} is not hashed"
    return block_hash


class History:
    """An engine that ran some requests to completion, recording their chunks."""

    def __init__(self, geometry: HybridGeometry, budget: int, prompts: list[tuple[int, ...]]):
        self.engine = Engine(EngineConfig(geometry, num_blocks=5000, max_num_batched_tokens=budget))
        self.chunks: list[tuple[int, int, int]] = []
        for prompt in prompts:
            self.engine.submit(prompt, max_output_tokens=2)
            while not self.engine.idle:
                self.chunks += self.engine.step()
                self.engine.check()
        assert self.engine.pool.evictions == 0

    def lookup(self, prompt: tuple[int, ...]) -> tuple[int, int, int]:
        probe = Request(-1, prompt, 1, self.engine.geometry.hash_block_size)
        hits = self.engine.coordinator.lookup(probe)
        want = oracle_reconcile(self.oracle_groups(probe), *self.oracle_settings(probe))
        got = (hits.hit_length, hits.longest_hit_length, hits.shared_prefix_boundary)
        assert got == want, f"engine {got} != oracle {want} on the engine's cache"  # promise 6
        return got

    def oracle_groups(self, probe: Request) -> list[OracleGroup]:
        groups = []
        for manager in self.engine.coordinator.managers:
            spec, size = manager.spec, manager.block_size
            if manager.sub_block_hits:  # full attention matching hash units
                hashes = probe.chain.hashes
                units = frozenset(
                    j
                    for j in range(len(hashes))
                    if self.engine.pool.lookup_unit(manager.group_id, hashes[j])
                )
                groups.append(OracleGroup("full", probe.chain.unit, None, units))
                continue
            cached = frozenset(
                i
                for i in range(probe.chain.num_hashed_tokens // size)
                if self.engine.pool.cached.get((manager.group_id, _block_hash(probe, i, size)))
                and (spec.kind is not GroupKind.MAMBA or self._state_at(manager.group_id, probe, i))
            )
            groups.append(OracleGroup(spec.kind.value, size, spec.window, cached))
        return groups

    def _state_at(self, group_id: int, probe: Request, index: int) -> bool:
        size = self.engine.geometry.groups[group_id].block_size
        block = self.engine.pool.cached[(group_id, _block_hash(probe, index, size))]
        return block.state_position == (index + 1) * size  # promise 7: only exact states serve

    def oracle_settings(self, probe: Request) -> tuple[int, bool, int, int]:
        geometry = self.engine.geometry
        limit = probe.chain.num_hashed_tokens
        return geometry.alignment_tokens, geometry.use_eagle, probe.num_tokens - 1, limit


tokens = st.lists(st.integers(0, 40), min_size=1, max_size=60).map(tuple)
budgets = st.integers(4, 48)


@given(geometries(), tokens, budgets)
@example(  # found by `make fuzz`: the EAGLE resend must land where the split kept a state
    HybridGeometry(
        [GroupSpec.full(2), GroupSpec.mamba(2)], 2, use_eagle=True, retention_interval=0
    ),
    (0,) * 10,
    4,
)
@example(  # found by `make fuzz`: full attention caches whole blocks only
    HybridGeometry(
        [GroupSpec.full(8), GroupSpec.mamba(2)], 2, partial_hits=True, retention_interval=0
    ),
    (0,) * 11,
    4,
)
@example(  # full attention reaches the prompt's last whole block, minus the EAGLE drop
    HybridGeometry(
        [GroupSpec.full(4), GroupSpec.mamba(2)],
        2,
        partial_hits=True,
        use_eagle=True,
        retention_interval=0,
    ),
    (0,) * 10,
    4,
)
def test_promise_1_replay(geometry: HybridGeometry, prompt: tuple[int, ...], budget: int) -> None:
    hit, full_attention, _ = History(geometry, budget, [prompt]).lookup(prompt)
    if literal(geometry):
        assert full_attention == floor_to(len(prompt) - 1, geometry.alignment_tokens)
        assert hit == full_attention, f"resend hit {hit}, full attention alone {full_attention}"
    else:
        dense = attrs.evolve(geometry, retention_interval=None)
        dense_hit, _, _ = History(dense, budget, [prompt]).lookup(prompt)
        assert hit == dense_hit, (
            f"resend hit {hit} under R={geometry.retention_interval}, {dense_hit} dense"
        )


@given(geometries(), tokens, tokens, tokens, budgets)
def test_promise_2_junction(
    geometry: HybridGeometry,
    shared: tuple[int, ...],
    tail_y: tuple[int, ...],
    tail_z: tuple[int, ...],
    budget: int,
) -> None:
    x, y, z = (*shared, 101, *tail_y), (*shared, 102, *tail_y), (*shared, 103, *tail_z)
    hit, full_attention, _ = History(geometry, budget, [x, y]).lookup(z)
    if literal(geometry):
        assert hit == full_attention, (
            f"third request hit {hit}, full attention alone {full_attention}"
        )
    else:
        dense = attrs.evolve(geometry, retention_interval=None)
        dense_hit, _, _ = History(dense, budget, [x, y]).lookup(z)
        assert hit == dense_hit, (
            f"third request hit {hit} under R={geometry.retention_interval}, {dense_hit} dense"
        )


@given(geometries(), tokens, st.integers(0, 60), tokens, budgets)
def test_promise_3_segments(
    geometry: HybridGeometry,
    prompt: tuple[int, ...],
    shared: int,
    tail: tuple[int, ...],
    budget: int,
) -> None:
    interval = geometry.retention_interval
    if geometry.use_eagle or not interval:
        return
    history = History(geometry, budget, [prompt])
    other = (*prompt[:shared], 999, *tail)
    hit, _, _ = history.lookup(other)
    chunk_ends = {start + n for _, start, n in history.chunks}
    reach = min(shared, len(prompt)) if shared < len(prompt) else len(prompt) - 1
    reach = min(reach, len(other) - 1)
    segments = [s for s in range(interval, reach + 1, interval) if s in chunk_ends]
    assert hit >= max(segments, default=0), f"hit {hit}, materialised segments {segments}"


@given(geometries(), tokens, tokens, budgets)
def test_promise_5_split_soundness(
    geometry: HybridGeometry, x: tuple[int, ...], y: tuple[int, ...], budget: int
) -> None:
    history = History(geometry, budget, [x, (*x[: len(x) // 2], 7, *y)])
    engine = history.engine
    if not any(g.kind is GroupKind.MAMBA for g in geometry.groups):
        return
    grid = geometry.scheduler_block_size
    for request in engine.requests.values():
        prompt = request.num_prompt_tokens
        promised = set(engine.policy.checkpoint_positions(geometry, request))
        chunks = [(s, n) for rid, s, n in history.chunks if rid == request.request_id]
        for start, n in chunks:
            assert 0 < n <= budget
            if start + n < prompt:
                # Not the final prompt chunk: a grid point, a forced sub-block
                # advance, a promised position or (partial hits) the prompt's tail.
                tail = last_cacheable_position(prompt, geometry.hash_block_size, geometry.use_eagle)
                allowed = (start + n) % grid == 0 or grid > budget or start + n in promised
                allowed |= geometry.partial_hits and start + n == tail
                assert allowed, (request, start, n, sorted(promised))
        ends = {s + n for s, n in chunks}
        first = min(s for s, _ in chunks)
        for position in promised:
            if first < position < prompt:
                assert position in ends, (request, position, sorted(ends))
