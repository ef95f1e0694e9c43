"""The bug zoo: one mutant per defect class of docs/domain.md ("Defect classes").

Each is a small, readable change to the default ``junction`` policy (or, for
the two lookup defects and the tier connector's saving, which no policy can
cause, and an eviction defect, to the reference engine), with the upstream
report it reproduces where there is one. ``test_bug_zoo`` runs the public
conformance harness on each and requires it to name a violated promise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from junction.core import (
    GroupKind,
    GroupSpec,
    HitReconciliation,
    HybridGeometry,
    checkpoint_stop,
    floor_to,
)
from junction.reference.engine.block_pool import Block, BlockPool
from junction.reference.engine.coordinator import Coordinator, decode_lag
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.finish import FinishReason
from junction.reference.engine.group_managers import MambaManager
from junction.reference.engine.policy import Policy, RequestView
from junction.reference.engine.request import Request
from junction.reference.engine.tier import TierConnector, TierSaving
from junction.reference.harness import Promise
from junction.reference.policies.bound import boundaries
from junction.reference.policies.builtin import (
    JunctionPolicy,
    junction_with_decode_checkpoints,
    junction_with_retired_decode_checkpoints,
    junction_with_two_decode_checkpoints,
)
from junction.reference.policies.options import JunctionOptions


class JunctionHintFirstStepOnly(JunctionPolicy):
    """Pre-#47782: the split hears of the junction only on a request's first step."""

    name = "mutant: split ignores the junction on later chunks (pre-#47782)"

    def split_junction(self, request: RequestView) -> int:
        return request.shared_prefix_boundary if request.num_computed_tokens == 0 else 0


class JunctionDroppedFromMask(JunctionPolicy):
    """Pre-#47782: under R = 0 the sparse mask keeps the replay boundary only."""

    name = "mutant: sparse mask drops the junction state under R = 0 (pre-#47782)"

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        boundaries = super().reachable_boundaries(geometry, group, request)
        junction = request.shared_prefix_boundary
        if geometry.retention_interval != 0 or not junction:
            return boundaries
        drop = geometry.eagle_drop_tokens
        return tuple(x for x in boundaries if x not in (junction, junction - drop))


class StateOnePastLookup(JunctionPolicy):
    """#50409: the replay state is kept at ``N - N mod b``, one token past every lookup."""

    name = "mutant: last cacheable position N - N mod b (#50409)"

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        prompt = request.num_prompt_tokens
        boundaries = set(super().reachable_boundaries(geometry, group, request))
        boundaries.discard(prompt - 1)
        boundaries.add(floor_to(prompt, geometry.scheduler_block_size))
        return tuple(sorted(boundaries))


class ChunkGridOfMambaBlock(JunctionPolicy):
    """#54076: chunks are aligned to the Mamba block, not the scheduler block ``L``."""

    name = "mutant: chunk grid uses the Mamba group's block size (#54076)"

    def chunk_grid(self, geometry: HybridGeometry) -> int:
        return min(g.block_size for g in geometry.groups if g.kind is GroupKind.MAMBA)


class EagleMambaStateOneBlockHigh(JunctionPolicy):
    """#53945, #54713: under EAGLE the Mamba replay state sits above where lookups land."""

    name = "mutant: EAGLE Mamba replay state one block above the landing point (#53945)"

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        boundaries = super().reachable_boundaries(geometry, group, request)
        if group.kind is not GroupKind.MAMBA or not geometry.use_eagle:
            return boundaries
        kept = (request.num_prompt_tokens - 1, request.shared_prefix_boundary)
        return tuple(x for x in boundaries if x in kept)


class SlidingWindowKeepsOnlyNeed(JunctionPolicy):
    """#57613: SWA keeps ``need`` blocks at the replay boundary only, so a lookup
    landing lower (EAGLE drop, the prompt's last whole block) finds no tail."""

    name = "mutant: SWA keeps only the replay boundary's need blocks (#57613)"

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        boundaries = super().reachable_boundaries(geometry, group, request)
        if group.kind is not GroupKind.SLIDING_WINDOW:
            return boundaries
        kept = (request.num_prompt_tokens - 1, request.shared_prefix_boundary)
        return tuple(x for x in boundaries if x in kept)


class SegmentsMarkedNotStopped(JunctionPolicy):
    """#53479: under R > 0 the mask marks segment states the split never stops at."""

    name = "mutant: mask and split disagree under R > 0 (#53479)"

    def stop(self, geometry: HybridGeometry, request: RequestView, end: int) -> int:
        return super().stop(attrs.evolve(geometry, retention_interval=0), request, end)


class SubBlockJunctionFlooredFromStart(JunctionPolicy):
    """A sub-block junction floored relative to the chunk start, not to the grid:
    only the split's own start-relative junction stop is left."""

    name = "mutant: sub-block junction floored from the start, not the grid"

    def stop(self, geometry: HybridGeometry, request: RequestView, end: int) -> int:
        return checkpoint_stop(
            geometry,
            start=request.num_computed_tokens,
            end=end,
            num_prompt_tokens=request.num_prompt_tokens,
        )


class RetentionZeroKeepsEverything(JunctionPolicy):
    """R = 0 read as dense: every tail and state is kept (the memory blow-up)."""

    name = "mutant: R = 0 treated as dense retention"

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> list[bool] | None:
        if geometry.retention_interval == 0:
            return None
        return super().block_mask(geometry, group, request, start_block, end_block, boundaries)


class PromptSidePositionsOnly(JunctionPolicy):
    """vLLM 0.33.0: only the prompt's positions are kept (replay, junction), none
    for the next turn, although the policy says it keeps decode checkpoints."""

    name = "mutant: decode checkpoints on, but only the prompt's positions kept (vLLM 0.33)"

    def __init__(self) -> None:
        super().__init__(JunctionOptions(decode_checkpoints=True))

    def decode_checkpoints(self, geometry: HybridGeometry, request: RequestView) -> tuple[int, ...]:
        return ()


class DeclaredCheckpointsDroppedFromMask(JunctionPolicy):
    """RFC #55697 unkept: the split stops at a declared checkpoint, but the sparse
    mask hears of the prompt's and the junction's positions only."""

    name = "mutant: declared checkpoints left out of the sparse mask (RFC #55697)"

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        return boundaries(
            request.num_prompt_tokens,
            self.junction(request),
            geometry.eagle_drop_tokens,
            geometry.sub_block_full_attention_sizes,
            geometry.hit_grid_tokens,
            (),
        )


# -- engine mutants: lookup defects no retention policy can cause ------------


class _OverEagerCoordinator(Coordinator):
    def lookup(self, request: Request) -> HitReconciliation:
        hits = super().lookup(request)
        return attrs.evolve(hits, shared_prefix_boundary=hits.longest_hit_length)


class OverEagerJunctionEngine(Engine):
    """#56142: the junction is set even when every group agrees (``J = ℓ`` always)."""

    name = "engine mutant: junction set though all groups agree (#56142)"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.coordinator = _OverEagerCoordinator(self.geometry, self.pool, self.policy)


class _MidBlockStateManager(MambaManager):
    def after_step(self, request: Request) -> None:
        end, size = request.num_computed_tokens, self.block_size
        super().after_step(request)
        state = self.latest[request.request_id]
        index = end // size - 1
        # The state after ``end`` tokens, keyed as the last whole block's.
        if end % size and index >= 0 and state.key is None:
            self.cache_block(request, state, index)


class MambaResumesMidBlockEngine(Engine):
    """ROCm ATOM #1759: a state saved mid-block serves a hit at the block's end."""

    name = "engine mutant: a hit resumes Mamba from a mid-block state (ATOM #1759)"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        managers = self.coordinator.managers
        for index, manager in enumerate(managers):
            if isinstance(manager, MambaManager):
                managers[index] = _MidBlockStateManager(
                    manager.group_id,
                    manager.spec,
                    self.geometry,
                    self.pool,
                    self.policy,
                    manager.crossed,
                )


class ReplayOnlyConnectorEngine(Engine):
    """vLLM 0.33.0's Mooncake store connector: its save mask hears of the replay boundary
    only, so a junction's sliding-window tail never reaches the external tier."""

    name = "engine mutant: a connector mask with the replay boundary only (vLLM 0.33 Mooncake)"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(attrs.evolve(config, tier_saving=TierSaving.VLLM_0_33))


class _EvictsHeldStatePool(BlockPool):
    """Under pressure, evicts a cached Mamba state a request still holds, as if free."""

    def allocate(self, count: int) -> list[Block]:
        if count > len(self.free_unhashed):
            held = (b for b in self.blocks[1:] if b.ref_count and b.state_position and b.key)
            pinned = next(held, None)
            if pinned is not None:  # its reference count is ignored: it is recycled
                self._evict(pinned)
                pinned.ref_count = 0
                self.free_unhashed[pinned.block_id] = pinned
        return super().allocate(count)


class EvictsHeldJunctionStateEngine(Engine):
    """An eviction that ignores reference counts: a pinned junction (or replay) state
    that a running request still resumes from is evicted and handed to another."""

    name = "engine mutant: eviction drops a pinned junction state while referenced"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.pool = _EvictsHeldStatePool(config.num_blocks, config.eviction.order(self.geometry))
        self.coordinator = Coordinator(self.geometry, self.pool, self.policy)


class _PublishesOneGridStepOffManager(MambaManager):
    """Publishes each pinned decode state under the key of the grid point below it."""

    def publish(self, request: Request, positions: Sequence[int]) -> list[Block]:
        step = self.geometry.hit_grid_tokens // self.block_size
        for position, block in sorted(self.pins.get(request.request_id, {}).items()):
            index = position // self.block_size - 1 - step
            if index >= 0 and block.key is None:
                self.cache_block(request, block, index)
        return []


class DecodeCheckpointOneGridStepOffEngine(Engine):
    """SGLang #35412: a decode checkpoint attached one grid step off (the state after
    ``p`` tokens found as the state after ``p - G``): a later request would resume
    the recurrence mid-stream, wrong output with no error."""

    name = "engine mutant: the decode checkpoint published one grid step off (SGLang #35412)"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        managers = self.coordinator.managers
        for index, manager in enumerate(managers):
            if isinstance(manager, MambaManager):
                managers[index] = _PublishesOneGridStepOffManager(
                    manager.group_id,
                    manager.spec,
                    self.geometry,
                    self.pool,
                    self.policy,
                    manager.crossed,
                )


class _LosesStoppedCheckpointCoordinator(Coordinator):
    def publish(self, request: Request) -> tuple[int, ...]:
        if request.finish_reason is not FinishReason.STOPPED:
            return super().publish(request)
        return ()


class StoppedCheckpointLostEngine(Engine):
    """A stop-token finish taken for an abort: the request's pinned decode states are
    given back uncached, so the next turn of every stopped request misses its answer
    (the finish PR #50551 publishes on)."""

    name = "engine mutant: the decode checkpoint lost on a stopped finish"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.coordinator = _LosesStoppedCheckpointCoordinator(
            self.geometry, self.pool, self.policy, self.coordinator.crossed
        )


class _OneTokenStepsCoordinator(Coordinator):
    def after_step(self, request: Request) -> None:
        request.decode_states_from = None  # every grid point reached taken for a state
        super().after_step(request)


class OneTokenStepAssumedEngine(Engine):
    """The step model docs/findings.md once stated ("one token a step"): decode
    checkpoints kept where the next turn lands, as if every grid point reached held
    a state. Under speculative steps that leave a passed block end uncached
    (tokenspeed #1584/#1597) none sits there, and the state the steps did leave
    below it is given back: the next turn resumes at the prompt's."""

    name = "engine mutant: decode checkpoints placed as if one token a step"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.coordinator = _OneTokenStepsCoordinator(
            self.geometry, self.pool, self.policy, self.coordinator.crossed
        )


class _StepEndStateManager(MambaManager):
    def _capture(self, request: Request) -> None:
        block = self.spare[request.request_id]
        super()._capture(request)
        if block.state_position:  # the passed block end's key, the step end's state
            block.state_position = request.num_computed_tokens


class PassedBlockEndKeyedWithStepEndEngine(Engine):
    """A speculative step that passes a Mamba block end keys the state it ends with
    as that block end's (the column of its last accepted token, not the one at the
    block end: the speculative form of ATOM #1759 that SGLang #35821's clamp of
    the tracked column guards against): a later request would resume the
    recurrence past its tokens."""

    name = "engine mutant: a passed block end keyed with the step end's state (speculative)"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        managers = self.coordinator.managers
        for index, manager in enumerate(managers):
            if isinstance(manager, MambaManager):
                managers[index] = _StepEndStateManager(
                    manager.group_id,
                    manager.spec,
                    self.geometry,
                    self.pool,
                    self.policy,
                    manager.crossed,
                )


class RetiresItsOwnTurnEngine(Engine):
    """Retirement off by one: the turn that publishes counts against its path's
    budget, so under a budget of one its own decode checkpoint is retired once the
    request lets go of it, and its next turn resumes at the prompt's state."""

    name = "engine mutant: retirement counts the publishing turn against its own budget"

    def _finish(self, request: Request) -> None:
        positions = self.coordinator.decode_positions.get(request.request_id, ())
        super()._finish(request)
        ledger = self.coordinator.ledger
        if ledger is not None and positions:
            key = request.chain.hashes[max(positions) // ledger.unit - 1]
            turn = ledger.turns.pop(key, None)
            if turn is not None:
                ledger.retired += self.pool.retire(turn.blocks)


class UnreachedCheckpointRetiredAtOnceEngine(Engine):
    """The time to live read as none at all ("a checkpoint no next turn has reached
    goes first"): a decode checkpoint no request has resumed from yet is retired as
    its own request lets go of it, so its next turn finds none there."""

    name = "engine mutant: an unreached decode checkpoint retired at its publication"

    def _finish(self, request: Request) -> None:
        super()._finish(request)
        ledger = self.coordinator.ledger
        if ledger is not None:
            for key, turn in list(ledger.unreached.items()):
                del ledger.unreached[key], ledger.turns[key]
                ledger.retired += self.pool.retire(turn.blocks)


class LastStateLeftToTheBudgetEngine(Engine):
    """The kept path ignored: a turn's checkpoint expires while the checkpoint at its
    prompt's replay state stays in the ledger, so a sibling publishing past that
    state retires the path's last state and the expired turn's next turn resumes
    below it. A trade-off the policy declares, not a promise: caught by
    ``tests/engine/test_retirement.py``'s property, not by the harness."""

    name = "engine mutant: an expired turn's path left to a sibling's budget"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        if self.coordinator.ledger is not None:
            self.coordinator.ledger.keep_path = False


class MarginOutsideTheLagEngine(Engine):
    """Two decode checkpoints, the pins reaching only as far as one: the engine ignores
    the policy's declared margin, so the earlier checkpoint's state (or a window's
    blocks there) is given back while the request still decodes."""

    name = "engine mutant: the pins' reach leaves out a second checkpoint's margin"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.coordinator.decode_lag = self._decode_lag = decode_lag(self.geometry)


class _AttentionOnlyConnector(TierConnector):
    def request_finished(self, request: Request, published: Sequence[int]) -> None:
        super().request_finished(request, ())

    def answer_blocks(self, request: Request) -> list[Block]:
        groups = self.geometry.groups
        blocks = super().answer_blocks(request)
        return [b for b in blocks if b.key and groups[b.key[0]].kind is GroupKind.FULL]


class DecodeCheckpointNotSavedEngine(Engine):
    """The tier's save path drops the decode checkpoint: a finished request's answer
    goes to the tier as attention KV only, not the published state (nor a window's
    blocks there), as LMCache stored a hybrid model's attention alone (LMCache
    #2845): a next turn on another instance resumes at the prompt's state."""

    name = "engine mutant: the tier saves the answer's attention, not its decode checkpoint"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        tier = config.tier
        if tier is not None:
            self.connector = _AttentionOnlyConnector(
                tier, config.tier_saving, self.geometry, self.pool, self.coordinator, self.policy
            )


@attrs.frozen
class Mutant:
    """A zoo entry: the policy (and engine) to run, and the promise it must break.

    The zoo runs each mutant against that one promise only: it is the one the
    defect is about (docs/domain.md, "Defect classes", lists the others it
    also breaks), and one promise costs a fraction of all ten.
    """

    key: str
    name: str
    policy: Callable[[], Policy]
    promise: Promise
    engine: Callable[[EngineConfig], Engine] = Engine
    # The harness's examples it runs on (test_bug_zoo's bound unless the defect
    # needs a rarer scenario).
    examples: int = 200


def _policy(cls: type[JunctionPolicy], promise: str) -> Mutant:
    return Mutant(cls.__name__, cls.name, cls, Promise(promise))


def _engine(
    cls: type[
        OverEagerJunctionEngine
        | MambaResumesMidBlockEngine
        | ReplayOnlyConnectorEngine
        | EvictsHeldJunctionStateEngine
        | StoppedCheckpointLostEngine
    ],
    promise: str,
) -> Mutant:
    return Mutant(cls.__name__, cls.name, JunctionPolicy, Promise(promise), cls)


# One row per defect class: the mutant and the promise the zoo requires it to break.
ZOO: tuple[Mutant, ...] = (
    _policy(JunctionHintFirstStepOnly, "junction"),
    _policy(JunctionDroppedFromMask, "junction"),
    _policy(StateOnePastLookup, "replay"),
    _policy(ChunkGridOfMambaBlock, "split"),
    _policy(EagleMambaStateOneBlockHigh, "junction"),
    _policy(SlidingWindowKeepsOnlyNeed, "replay"),
    _policy(SegmentsMarkedNotStopped, "split"),
    _policy(SubBlockJunctionFlooredFromStart, "split"),
    _policy(RetentionZeroKeepsEverything, "economy"),
    _engine(OverEagerJunctionEngine, "reconciliation"),
    _engine(MambaResumesMidBlockEngine, "economy"),
    _engine(ReplayOnlyConnectorEngine, "tier"),
    _engine(EvictsHeldJunctionStateEngine, "safety"),
    _policy(PromptSidePositionsOnly, "next_turn"),
    # Run with decode checkpoints on (the default policy's option): off, nothing is pinned.
    Mutant(
        DecodeCheckpointOneGridStepOffEngine.__name__,
        DecodeCheckpointOneGridStepOffEngine.name,
        lambda: JunctionPolicy(JunctionOptions(decode_checkpoints=True)),
        Promise.NEXT_TURN,
        DecodeCheckpointOneGridStepOffEngine,
    ),
    _policy(DeclaredCheckpointsDroppedFromMask, "declared_prefix"),
    Mutant(
        StoppedCheckpointLostEngine.__name__,
        StoppedCheckpointLostEngine.name,
        lambda: JunctionPolicy(JunctionOptions(decode_checkpoints=True)),
        Promise.NEXT_TURN,
        StoppedCheckpointLostEngine,
    ),
    # The two speculative-step defects: next-turn scenarios draw the engine's steps.
    Mutant(  # needs speculative steps leaving a state below an unwritten landing
        OneTokenStepAssumedEngine.__name__,
        OneTokenStepAssumedEngine.name,
        lambda: JunctionPolicy(JunctionOptions(decode_checkpoints=True)),
        Promise.NEXT_TURN,
        OneTokenStepAssumedEngine,
        examples=400,
    ),
    Mutant(
        PassedBlockEndKeyedWithStepEndEngine.__name__,
        PassedBlockEndKeyedWithStepEndEngine.name,
        lambda: JunctionPolicy(JunctionOptions(decode_checkpoints=True)),
        Promise.NEXT_TURN,
        PassedBlockEndKeyedWithStepEndEngine,
    ),
    # Retirement (a budget of one turn per path): run with it declared.
    Mutant(
        RetiresItsOwnTurnEngine.__name__,
        RetiresItsOwnTurnEngine.name,
        junction_with_retired_decode_checkpoints,
        Promise.NEXT_TURN,
        RetiresItsOwnTurnEngine,
    ),
    # The tier holding decode checkpoints (promise 8 with promise 9): run with them kept.
    Mutant(
        DecodeCheckpointNotSavedEngine.__name__,
        DecodeCheckpointNotSavedEngine.name,
        junction_with_decode_checkpoints,
        Promise.TIER,
        DecodeCheckpointNotSavedEngine,
    ),
    # Two decode checkpoints (a margin): run with it declared.
    Mutant(
        MarginOutsideTheLagEngine.__name__,
        MarginOutsideTheLagEngine.name,
        junction_with_two_decode_checkpoints,
        Promise.NEXT_TURN,
        MarginOutsideTheLagEngine,
    ),
    # The time to live of unreached decode checkpoints: run with it declared.
    Mutant(
        UnreachedCheckpointRetiredAtOnceEngine.__name__,
        UnreachedCheckpointRetiredAtOnceEngine.name,
        junction_with_retired_decode_checkpoints,
        Promise.NEXT_TURN,
        UnreachedCheckpointRetiredAtOnceEngine,
    ),
)
