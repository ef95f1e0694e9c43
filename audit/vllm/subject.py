"""vLLM 0.33.0's own code as a subject of the promise checks.

Adapts :class:`audit.vllm.engine.VllmEngine` to the harness's subject
protocol, so the audit and the reference engine are judged by the same
lines. vLLM's here: its lookup, its pool and its split. The promised
positions are the ``vllm-0.33`` policy's, which the differential tests prove
are the positions vLLM's masks keep. As vLLM runs one request at a time, the
prompts are prefilled one after another and freed (no decode tokens), a
prompt the pool cannot fit is skipped, and a safety scenario's arrival gaps
are ignored; eviction still happens when the pool is small.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import attrs

from junction.core import HybridGeometry
from junction.reference.errors import PoolExhausted
from junction.reference.harness import Hits, Prefill, Promise, RequestState, Resume, Scenario
from junction.reference.oracle.first_principles import OracleGroup
from junction.reference.policies.vllm import VllmPolicy
from junction.upstream.vllm_0_33.env import vllm

from .engine import Lookup, VllmEngine
from .lookup import oracle_groups
from .split import vllm_split

__all__ = ["POLICY", "VllmRun", "VllmSubject"]

POLICY = VllmPolicy()


class VllmRun:
    """vLLM's cache after a scenario's prompts (a ``harness.subject.Run``)."""

    sub_block_states = True  # with partial hits vLLM keys a prompt's partial-tail state
    policy = POLICY

    def __init__(self, scenario: Scenario, geometry: HybridGeometry) -> None:
        self.engine = VllmEngine(geometry, num_blocks=scenario.num_blocks)
        # The next turn: the first prompt decodes an answer (tokens no prompt uses).
        next_turn = scenario.promise is Promise.NEXT_TURN
        answer = tuple(range(1000, 1000 + scenario.max_output_tokens)) if next_turn else ()
        self._answers: list[tuple[int, ...]] = []
        for index, prompt in enumerate(scenario.prompts):
            decoded = answer if index == 0 else ()
            try:
                self.engine.prefill(prompt, scenario.budget, output=decoded)
            except PoolExhausted:
                continue
            self._answers.append(decoded)
        self._probes: dict[tuple[int, ...], Lookup] = {}

    @property
    def geometry(self) -> HybridGeometry:
        return self.engine.geometry

    @property
    def prefills(self) -> list[Prefill]:
        prefills: list[Prefill] = []
        for run in self.engine.prefills:
            prompt = len(run.tokens)
            state = RequestState(prompt, prompt, prompt, run.lookup.shared_prefix_boundary)
            starts = (run.lookup.hit_length, *run.chunk_ends[:-1])
            chunks = tuple(zip(starts, run.chunk_ends, strict=False))
            answer = self._answers[len(prefills)]
            prefills.append(Prefill(state, chunks, run.stalled, transcript=(*run.tokens, *answer)))
        return prefills

    @property
    def resumes(self) -> list[Resume]:
        return [
            Resume(len(lookup.tokens), lookup.hit_length, lookup.state_materialized)
            for lookup in self.engine.lookups
        ]

    def _lookup(self, prompt: Sequence[int]) -> Lookup:
        """vLLM's lookup of ``prompt``, asked once per prompt (the pool does not change)."""
        tokens = tuple(prompt)
        if tokens not in self._probes:
            self._probes[tokens] = self.engine.lookup(tokens)
        return self._probes[tokens]

    def lookup(self, prompt: Sequence[int]) -> Hits:
        lookup = self._lookup(prompt)
        junction = lookup.shared_prefix_boundary
        # vLLM reports ℓ only through the junction: ℓ = J when U > 0, else h.
        return Hits(lookup.hit_length, junction or lookup.hit_length, junction)

    def cached_sets(self, prompt: Sequence[int]) -> list[OracleGroup]:
        return oracle_groups(self._lookup(prompt).views)

    def kept(self, group_id: int) -> frozenset[Hashable]:
        utils = vllm().utils
        return frozenset(
            bytes(utils.get_block_hash(key))
            for key in list(self.engine.block_pool.cached_block_hash_to_block._cache)
            if int(utils.get_group_id(key)) == group_id
        )

    def key(self, prefill: int, group_id: int, end: int) -> Hashable | None:
        # vLLM keys a block (or a partial-tail state) by the hash of its last hash unit.
        hashes = self.engine.prefills[prefill].block_hashes
        unit = end // self.geometry.hash_block_size - 1
        return hashes[unit] if 0 <= unit < len(hashes) else None

    def split(self, request: RequestState, num_new_tokens: int, budget: int) -> int:
        return vllm_split(
            self.geometry,
            num_prompt_tokens=request.num_prompt_tokens,
            num_tokens=request.num_tokens,
            num_computed_tokens=request.num_computed_tokens,
            shared_prefix_boundary=request.shared_prefix_boundary,
            num_new_tokens=num_new_tokens,
            max_num_scheduled_tokens=budget,
        )


@attrs.frozen
class VllmSubject:
    """vLLM 0.33.0 on the scenario's geometry, or (``dense``) with ``R = None``."""

    dense_retention: bool = False
    name = "vLLM"

    def run(self, scenario: Scenario) -> VllmRun:
        geometry = scenario.geometry
        if self.dense_retention:
            geometry = attrs.evolve(geometry, retention_interval=None)
        return VllmRun(scenario, geometry)

    def dense(self) -> VllmSubject:
        return VllmSubject(dense_retention=True)
