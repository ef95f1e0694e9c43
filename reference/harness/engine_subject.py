"""The reference engine as a :class:`.subject.Subject` of the promise checks.

Only this module knows the engine's insides; the checks see the protocol. A
third party's engine class plugs in through ``engine_factory`` (called with
an ``EngineConfig``). Under a scenario with ``gaps`` (safety) the prompts
arrive ``gaps[i]`` steps apart into a small pool, so requests run together,
evict and preempt; otherwise each runs to completion first. Every step is
followed by the engine's own ``check``. Under a ``tier`` scenario a second
instance with nothing local shares the tier (which takes decode checkpoints),
and a probe must resume exactly where the tier's lookup said. ``eviction``
chooses the pool's eviction order, so the promises under pressure run with
each.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import attrs

from junction.core import GroupKind, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.eviction import EvictionPolicy, LeastRecentlyUsed
from junction.reference.engine.group_managers import MambaManager
from junction.reference.engine.policy import Policy
from junction.reference.engine.request import Request
from junction.reference.engine.tier import ExternalTier
from junction.reference.oracle.first_principles import OracleGroup
from junction.reference.policies.builtin import DensePolicy, JunctionPolicy
from junction.reference.policies.options import DEFAULT_OPTIONS

from .promise import Promise
from .scenario import Scenario
from .subject import Hits, Prefill, Resume
from .verdict import RequestState

__all__ = ["EngineFactory", "EngineRun", "EngineSubject"]

EngineFactory = Callable[[EngineConfig], Engine]


def _step_limit(tokens: int) -> int:
    """Steps after which a request that should have finished counts as stuck."""
    return 4 * tokens + 100


def _with_decode_room(config: EngineConfig, scenario: Scenario) -> EngineConfig:
    """The pool a scenario under pressure draws, grown by what decode checkpoints add
    to the longest request's peak (pinned states, held windows): the draws size it
    for a policy without them, and the pressure must stay the same."""
    longest = max(map(len, scenario.prompts)) + scenario.max_output_tokens
    without = Engine(attrs.evolve(config, policy=DensePolicy())).blocks_at_peak(longest)
    extra = Engine(config).blocks_at_peak(longest) - without
    return attrs.evolve(config, num_blocks=config.num_blocks + extra)


class EngineRun:
    """The engine after a scenario's prompts (a :class:`.subject.Run`)."""

    sub_block_states = False  # the engine serves a Mamba state only at its block's end

    def __init__(
        self,
        scenario: Scenario,
        policy: Policy,
        engine_factory: EngineFactory,
        eviction: EvictionPolicy,
    ) -> None:
        # The tier holds as much as the pool: no eviction there either. It takes
        # decode checkpoints (promise 8 with promise 9), which nothing but a policy
        # keeping them publishes.
        tier = (
            ExternalTier(scenario.num_blocks, decode_checkpoints=True)
            if scenario.promise is Promise.TIER
            else None
        )
        config = EngineConfig(
            scenario.geometry,
            num_blocks=scenario.num_blocks,
            max_num_batched_tokens=scenario.budget,
            policy=policy,
            tier=tier,
            eviction=eviction,
            speculative=scenario.speculative,
        )
        if scenario.gaps and getattr(policy, "keeps_decode_checkpoints", False) is True:
            config = _with_decode_room(config, scenario)
        self._config, self._factory = config, engine_factory
        self._output = scenario.max_output_tokens
        self.engine = engine_factory(config)
        self.resumes: list[Resume] = []
        self._spans: dict[int, list[tuple[int, int]]] = {}
        self._written: dict[int, set[int]] = {}  # internal prefill checkpoints
        self._written_by = [
            m.written for m in self.engine.coordinator.managers if isinstance(m, MambaManager)
        ]
        self._materialized: set[tuple[int, ...]] = set()
        self._transcripts: dict[int, tuple[int, ...]] = {}  # after each request's last step
        output = scenario.max_output_tokens
        if scenario.gaps:
            for prompt, gap in zip(scenario.prompts, scenario.gaps, strict=True):
                for _ in range(gap):
                    if not self.engine.idle:
                        self._step()
                self.engine.submit(prompt, output, finish=scenario.finish)
            self._drain(sum(map(len, scenario.prompts)) * 4, "requests")
        else:
            for index, prompt in enumerate(scenario.prompts):
                declared = scenario.declared if index == 0 else ()
                self.engine.submit(prompt, output, declared, finish=scenario.finish)
                self._drain(len(prompt) + output, f"{len(prompt)}-token prompt")

    def _drain(self, tokens: int, what: str) -> None:
        for _ in range(_step_limit(tokens)):
            if self.engine.idle:
                self.engine.check()  # nothing leaked once every request finished
                return
            self._step()
        raise AssertionError(f"no progress: {what} still running after the step limit")

    def _step(self) -> None:
        for request_id, start, tokens in self.engine.step():
            tokens_so_far = tuple(self.engine.requests[request_id].tokens)
            self._transcripts[request_id] = tokens_so_far
            spans = self._spans.setdefault(request_id, [])
            if not spans or spans[-1][1] != start:  # admitted: resumes at its hit
                self._resume(tokens_so_far, start)
            spans.append((start, start + tokens))
            self._materialized.add(tokens_so_far[: start + tokens])
            for written in self._written_by:  # a state the chunk wrote inside it
                if (position := written.pop(request_id, 0)) and start < position:
                    self._written.setdefault(request_id, set()).add(position)
                    self._materialized.add(tokens_so_far[:position])
        self.engine.check()

    def _resume(self, tokens: tuple[int, ...], hit: int) -> None:
        materialized = hit == 0 or tokens[:hit] in self._materialized
        self.resumes.append(Resume(len(tokens), hit, materialized))

    @property
    def geometry(self) -> HybridGeometry:
        return self.engine.geometry

    @property
    def policy(self) -> Policy:
        return self.engine.policy

    @property
    def prefills(self) -> list[Prefill]:
        return [
            Prefill(
                RequestState.of(request),
                tuple(self._spans.get(request_id, ())),
                written=tuple(sorted(self._written.get(request_id, ()))),
                transcript=self._transcripts.get(request_id, ()),
            )
            for request_id, request in self.engine.requests.items()
        ]

    def _probe(self, prompt: Sequence[int]) -> Request:
        return Request(-1, tuple(prompt), 1, self.geometry.hash_block_size)

    @property
    def tier_keeps_decode_checkpoints(self) -> bool:
        tier = self._config.tier
        return tier is not None and tier.decode_checkpoints

    def lookup(self, prompt: Sequence[int]) -> Hits:
        tier = self._config.tier
        if tier is not None:
            return self._lookup_elsewhere(prompt, tier)
        return self.lookup_here(prompt)

    def lookup_here(self, prompt: Sequence[int]) -> Hits:
        hits = self.engine.coordinator.lookup(self._probe(prompt))
        self._resume(tuple(prompt), hits.hit_length)
        return Hits(hits.hit_length, hits.longest_hit_length, hits.shared_prefix_boundary)

    def _lookup_elsewhere(self, prompt: Sequence[int], tier: ExternalTier) -> Hits:
        """The lookup on a fresh instance sharing the tier; the probe then runs there."""
        other = self._factory(self._config)
        hits = other.coordinator.lookup(self._probe(prompt), tier)
        request_id = other.submit(tuple(prompt), self._output)
        for _ in range(_step_limit(len(prompt) + self._output)):
            if other.idle:
                break
            other.step()
            other.check()
        resumed = other.requests[request_id].hit_length
        if resumed != hits.hit_length:
            raise AssertionError(
                f"the load path resumes where the tier lookup found: resumed at {resumed}, "
                f"the lookup found {hits.hit_length}"
            )
        self._resume(tuple(prompt), resumed)
        return Hits(hits.hit_length, hits.longest_hit_length, hits.shared_prefix_boundary)

    def cached_sets(self, prompt: Sequence[int]) -> list[OracleGroup]:
        pool, chain = self.engine.pool, self._probe(prompt).chain
        groups = []
        for manager in self.engine.coordinator.managers:
            spec, size = manager.spec, manager.block_size
            if manager.sub_block_hits:  # full attention matching hash units
                units = frozenset(
                    j
                    for j in range(len(chain.hashes))
                    if pool.lookup_unit(manager.group_id, chain.hashes[j])
                )
                groups.append(OracleGroup("full", chain.unit, None, units, spec.eagle_group))
                continue
            cached = set()
            for i in range(chain.num_hashed_tokens // size):
                block_hash = chain.block_hash(i, size)
                if block_hash is None:  # i < num_hashed_tokens // size: always hashed
                    raise LookupError(f"block {i} of group {manager.group_id} has no hash")
                block = pool.cached.get((manager.group_id, block_hash))
                # Only an exact state serves a Mamba hit (promise 7).
                if block and (
                    spec.kind is not GroupKind.MAMBA or block.state_position == (i + 1) * size
                ):
                    cached.add(i)
            groups.append(
                OracleGroup(spec.kind.value, size, spec.window, frozenset(cached), spec.eagle_group)
            )
        return groups

    def kept(self, group_id: int) -> frozenset[Hashable]:
        return frozenset(h for (group, h) in self.engine.pool.cached if group == group_id)

    def key(self, prefill: int, group_id: int, end: int) -> Hashable | None:
        size = self.geometry.groups[group_id].block_size
        if end % size or end < size:
            return None
        request = self.engine.requests[prefill]
        return request.chain.block_hash(end // size - 1, size)

    def split(self, request: RequestState, num_new_tokens: int, budget: int) -> int:
        return self.engine.policy.split(self.geometry, request, num_new_tokens, budget)


class EngineSubject:
    """The reference engine (or a third party's class) running ``policy``, evicting by
    ``eviction``."""

    name = "engine"

    def __init__(
        self,
        policy: Policy,
        engine_factory: EngineFactory = Engine,
        eviction: EvictionPolicy | None = None,
    ) -> None:
        self.policy = policy
        self.engine_factory = engine_factory
        self.eviction = LeastRecentlyUsed() if eviction is None else eviction

    def run(self, scenario: Scenario) -> EngineRun:
        return EngineRun(scenario, self.policy, self.engine_factory, self.eviction)

    def dense(self) -> EngineSubject:
        # The same engine: a policy's engine options (its backend) stay on.
        policy = self.policy
        options = policy.options if isinstance(policy, JunctionPolicy) else DEFAULT_OPTIONS
        return EngineSubject(DensePolicy(options), self.engine_factory, self.eviction)
