"""SGLang 0.5.23's unified radix cache as a subject of the promise checks.

Adapts :class:`.cache.SglangCache` to the harness's subject protocol, beside
vLLM's adapter and the reference engine's, reading SGLang's answers in the
protocol's terms: the hit is ``device_prefix_len``; ``ℓ`` is
``full_kv_hit_length`` floored to the hit grid and the junction is ``ℓ`` when
``ℓ > h`` (as SGLang's ``mamba_branching_seqlen``); a cached block is read
through ``match_prefix``, never the tree's insides, so both tree cores read
alike. :func:`sglang_geometry` maps a harness geometry to the nearest one
SGLang expresses; economy and reconciliation are asked of full + Mamba
geometries only (a window's blocks are not visible through lookups).
Why the promises judge SGLang's own checkpoint grid: docs/design/sglang-driver.md.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from math import lcm

import attrs

from junction.core import GroupKind, GroupSpec, HybridGeometry
from junction.reference.errors import PoolExhausted
from junction.reference.harness import Hits, Prefill, RequestState, Resume, Scenario
from junction.reference.oracle.first_principles import OracleGroup
from junction.reference.policies.builtin import JunctionPolicy

from .cache import SglangCache, TreeCore, Unsupported

__all__ = ["POLICY", "Projection", "SglangRun", "SglangSubject", "sglang_projection"]

POLICY = JunctionPolicy()


@attrs.frozen
class Projection:
    """A harness geometry's nearest SGLang configuration: the geometry it runs and its
    checkpoint grid (``mamba_cache_chunk_size``)."""

    geometry: HybridGeometry
    mamba_chunk: int


def sglang_projection(geometry: HybridGeometry) -> Projection:
    """The first full group's block as the page (one token under a sliding window,
    whose allocator pages only by one), the first sparse group as Mamba states on
    that page tracked every ``lcm(page, its block)`` tokens, or as the window; no
    EAGLE, no partial hits, the same retention interval (positive ones on the new grid)."""
    full = next(g for g in geometry.groups if g.kind is GroupKind.FULL)
    sparse = next(g for g in geometry.groups if g.kind is not GroupKind.FULL)
    if sparse.kind is GroupKind.MAMBA:
        page, chunk = full.block_size, lcm(full.block_size, sparse.block_size)
        groups = [GroupSpec.full(page), GroupSpec.mamba(page)]
    else:
        page = chunk = 1
        groups = [GroupSpec.full(1), GroupSpec.sliding_window(1, sparse.window or 1)]
    interval = geometry.retention_interval
    if interval:
        interval = HybridGeometry(groups, page).scheduler_block_size
    return Projection(HybridGeometry(groups, page, retention_interval=interval), chunk)


class SglangRun:
    """SGLang's cache after a scenario's prompts (a ``harness.subject.Run``)."""

    sub_block_states = False  # a state serves only where its node ends
    policy = POLICY

    def __init__(
        self, scenario: Scenario, core: TreeCore, mamba_chunk: int, max_states_per_path: int
    ) -> None:
        # No larger than every token of the scenario in its own pages: nothing is
        # evicted either way, and SGLang zeroes its pools at construction.
        page = scenario.geometry.hash_block_size
        tokens = sum(len(p) + page for p in (*scenario.prompts, scenario.probe))
        pages = min(scenario.num_blocks, tokens // page + 1)
        self.cache = SglangCache(scenario.geometry, core, pages, mamba_chunk, max_states_per_path)
        for prompt in scenario.prompts:
            try:
                self.cache.prefill(prompt, scenario.budget)
            except PoolExhausted:
                continue
            self.cache.check()

    @property
    def geometry(self) -> HybridGeometry:
        return self.cache.geometry

    @property
    def prefills(self) -> list[Prefill]:
        prefills = []
        for run in self.cache.prefills:
            prompt = len(run.tokens)
            junction = run.admission.branching or 0
            state = RequestState(prompt, prompt, prompt, junction)
            prefills.append(Prefill(state, run.chunks, run.stalled))
        return prefills

    @property
    def resumes(self) -> list[Resume]:
        return [Resume(len(a.tokens), a.hit, a.state_materialized) for a in self.cache.admissions]

    def lookup(self, prompt: Sequence[int]) -> Hits:
        admission = self.cache.admit(prompt)
        longest = admission.full_hit
        return Hits(admission.hit, longest, longest if longest > admission.hit else 0)

    def _mamba(self) -> GroupSpec:
        mamba = self.geometry.groups[1]
        if mamba.kind is not GroupKind.MAMBA:
            raise Unsupported(
                "a sliding window's cached blocks are not visible through match_prefix"
            )
        return mamba

    def _states(self, prompt: Sequence[int], step: int) -> frozenset[int]:
        """Ends ``e`` (multiples of ``step``) where SGLang serves ``prompt[:e]`` whole."""
        tokens = tuple(prompt)
        return frozenset(
            end
            for end in range(step, len(tokens) + 1, step)
            if self.cache.match(tokens[:end]).device_prefix_len == end
        )

    def cached_sets(self, prompt: Sequence[int]) -> list[OracleGroup]:
        mamba = self._mamba()
        full, size = self.geometry.groups[0], mamba.block_size
        page = full.block_size
        reach = int(
            self.cache.match(tuple(prompt)[: len(prompt) // page * page]).full_kv_hit_length
        )
        return [
            OracleGroup("full", page, None, frozenset(range(reach // page))),
            OracleGroup(
                "mamba",
                size,
                None,
                frozenset(end // size - 1 for end in self._states(prompt, size)),
            ),
        ]

    def kept(self, group_id: int) -> frozenset[Hashable]:
        """Every prefix of a prefilled prompt, at a page end, where the group holds data."""
        self._mamba()
        page = self.geometry.hash_block_size
        kept: set[Hashable] = set()
        for run in self.cache.prefills:
            if group_id == 0:
                reach = int(self.cache.match(run.tokens).full_kv_hit_length)
                ends = frozenset(range(page, reach // page * page + 1, page))
            else:
                ends = self._states(run.tokens, page)
            kept.update(run.tokens[:end] for end in ends)
        return frozenset(kept)

    def key(self, prefill: int, group_id: int, end: int) -> Hashable | None:
        size = self.geometry.groups[group_id].block_size
        tokens = self.cache.prefills[prefill].tokens
        if end % size or not 0 < end <= len(tokens):
            return None
        return tokens[:end]

    def split(self, request: RequestState, num_new_tokens: int, budget: int) -> int:
        """The chunk the driver schedules (:meth:`.cache.SglangCache.chunk_end`)."""
        start = request.num_computed_tokens
        end = self.cache.chunk_end(start, request.num_prompt_tokens, budget)
        return min(end - start, num_new_tokens)


@attrs.frozen
class SglangSubject:
    """SGLang 0.5.23 on one tree core (the Rust one is SGLang's default), tracking
    Mamba states every ``mamba_chunk`` tokens (a multiple of the scenario's page),
    at most ``max_states_per_path`` per path (-1, SGLang's default: no cap)."""

    core: TreeCore = TreeCore.RUST
    mamba_chunk: int = 1
    max_states_per_path: int = -1

    @property
    def name(self) -> str:
        cap = f", {self.max_states_per_path} states a path" if self.max_states_per_path > 0 else ""
        return f"SGLang ({self.core.value} core, Mamba chunk {self.mamba_chunk}{cap})"

    def run(self, scenario: Scenario) -> SglangRun:
        return SglangRun(scenario, self.core, self.mamba_chunk, self.max_states_per_path)

    def dense(self) -> SglangSubject:
        """SGLang has no retention knob to widen (every tracked state is inserted)."""
        return self
