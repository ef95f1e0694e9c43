"""The hybrid coordinator: one request's view across every group.

It reconciles the groups' hits at admission (``core.HitReconciler``) and
stores the junction on the request, allocates a step's slots in every group
at once (all or nothing), and hands each group the end of the step (caching
through the mask, window release, Mamba state hand-over), and, for a policy
that keeps decode checkpoints, where the next turn would resume. A chunk
that ends before every group's :meth:`GroupManager.quiet_until` asks no
manager at all, only stamping the Mamba states it continues
(:meth:`GroupManager.quiet_state`): the answers depend only on the groups'
own blocks for the request, which stay as they are between its steps, so the
skip changes nothing in a run.
"""

from __future__ import annotations

import functools

from junction.core import (
    CrossedGridPoints,
    HitReconciler,
    HitReconciliation,
    HybridGeometry,
    decode_checkpoint,
    decode_step_state,
    deepest_decode_state,
    floor_to,
)
from junction.reference.engine.block_pool import Block, BlockPool, NoFreeBlocks
from junction.reference.engine.group_managers import BlockIndex, GroupManager, make_manager
from junction.reference.engine.policy import CheckedPolicy
from junction.reference.engine.request import NextTurnView, Request
from junction.reference.engine.retirement import DecodeCheckpointLedger

__all__ = ["Coordinator"]


@functools.lru_cache(maxsize=256)
def decode_lag(geometry: HybridGeometry) -> int:
    """How far below the computed tokens ``c`` a next turn may resume: the most
    ``c - core.decode_checkpoint(c + 1)`` (it repeats every scheduler block ``L``),
    or ``L - 1`` (a policy keeping the latest scheduler-aligned state), whichever
    is more. A policy whose positions lie lower is found by ``Engine.check``."""
    period = geometry.scheduler_block_size
    lag = max(
        computed - decode_checkpoint(geometry, computed + 1)
        for computed in range(1, 3 * period)  # from 2L on, the lag repeats
    )
    return max(lag, period - 1)


class Coordinator:
    """``crossed``: under speculative decode steps, what a Mamba block end passed inside
    a step keeps (``None``: one token a step)."""

    def __init__(
        self,
        geometry: HybridGeometry,
        pool: BlockPool,
        policy: CheckedPolicy,
        crossed: CrossedGridPoints | None = None,
    ) -> None:
        self.geometry = geometry
        self.pool = pool
        self.crossed = crossed
        self.managers: list[GroupManager] = [
            make_manager(group_id, spec, geometry, pool, policy, crossed)
            for group_id, spec in enumerate(geometry.groups)
        ]
        self.reconciler = HitReconciler(geometry)  # core's decision 1, bound once
        # Per running request: chunks ending at or before this ask no manager, and
        # only stamp the new position on the Mamba states they continue in.
        self.quiet: dict[int, int] = {}
        self.quiet_states: dict[int, list[Block]] = {}
        # Decode checkpoints: per decoding request, the policy's positions for its
        # next turn were it to finish now (asked after each step that did something).
        self.policy = policy
        self.keeps_decode = policy.keeps_decode_checkpoints
        self.decode_positions: dict[int, tuple[int, ...]] = {}
        # How far below the computed tokens a next turn may resume (0: off).
        lag = decode_lag(geometry) + policy.decode_checkpoint_margin
        self.decode_lag = lag if self.keeps_decode else 0
        # A budget of turns per path whose decode checkpoints stay cached, and a time to
        # live for those no request resumes from (None: off).
        budget = policy.decode_checkpoint_budget if self.keeps_decode else None
        ttl = policy.decode_checkpoint_ttl if self.keeps_decode else None
        keep_path = policy.decode_checkpoint_keep_path
        self.ledger = (
            None
            if budget is None and ttl is None
            else DecodeCheckpointLedger(
                pool, budget, ttl, geometry.hash_block_size, geometry.hit_grid_tokens, keep_path
            )
        )

    def lookup(self, request: Request, also: BlockIndex | None = None) -> HitReconciliation:
        """Reconcile the groups' hits for a request with no computed tokens (``M = N - 1``).

        With ``also`` (the external tier) a block counts as cached when either holds it.
        """
        finders = [manager.finder(request, also) for manager in self.managers]
        return self.reconciler.reconcile(
            finders, request.num_tokens - 1, request.chain.num_hashed_tokens
        )

    def admit(self, request: Request, caching: bool = True) -> HitReconciliation | None:
        """Look up and attach the hit; sets ``num_computed_tokens`` and the junction."""
        hits = self.lookup(request) if caching else None
        hit = hits.hit_length if hits else 0
        for manager in self.managers:
            manager.attach_hit(request, hit)
        request.num_computed_tokens = request.hit_length = hit
        # Under speculative steps, where decode began (a hit may reach the prefill's end).
        request.decode_states.clear()
        speculative = self.crossed is not None and hit >= request.prefill_end
        request.decode_states_from = hit if speculative else None
        self.quiet[request.request_id] = -1  # nothing known yet: ask every group
        request.shared_prefix_boundary = hits.shared_prefix_boundary if hits else 0
        if self.ledger is not None:
            self.ledger.admitted(request, hit)
        return hits

    def blocks_needed(self, request: Request, num_tokens: int) -> int:
        return sum(m.blocks_needed(request, num_tokens) for m in self.managers)

    def allocate(self, request: Request, num_tokens: int) -> None:
        """Slots for ``[0, num_tokens)`` in every group; or ``NoFreeBlocks``, changing nothing."""
        if num_tokens <= self.quiet[request.request_id]:
            return  # most decode steps: every slot is there, in every group
        counts = [m.blocks_needed(request, num_tokens) for m in self.managers]
        needed = sum(counts)
        if not needed:
            return
        if needed > self.pool.num_free:
            raise NoFreeBlocks(f"{request} needs {needed} blocks, {self.pool.num_free} free")
        # One pool call for every group (the same blocks, in the same order, as
        # one call per group would take).
        blocks, taken = self.pool.allocate(needed), 0
        for manager, count in zip(self.managers, counts, strict=True):
            if count:
                manager.allocate(request, num_tokens, blocks[taken : taken + count])
                taken += count
        # A speculative step may end below what it allocated for (its drafts): its
        # end asks every group even so (a Mamba spare is used or given back).
        self.quiet[request.request_id] = -1

    def after_step(self, request: Request) -> None:
        rid, end = request.request_id, request.num_computed_tokens
        if end <= self.quiet[rid]:
            for block in self.quiet_states[rid]:  # a Mamba state moves on in place
                block.state_position = end
            return
        if self.keeps_decode and end >= request.prefill_end:
            begun = request.decode_states_from
            if begun is not None and self.crossed is not None and request.step_start >= begun:
                left = decode_step_state(self.geometry, request.step_start, end, self.crossed)
                if left:
                    request.decode_states.append(left)
            self._track_decode(request, end)
        # One pass: a manager's quiet_until reads only its own blocks, which
        # no other manager's after_step touches.
        untils, states = [], []
        for manager in self.managers:
            manager.after_step(request)
            untils.append(manager.quiet_until(request))
            if manager.moves_state and (state := manager.quiet_state(request)) is not None:
                states.append(state)
        self.quiet[rid] = min(untils)
        self.quiet_states[rid] = states

    def _track_decode(self, request: Request, end: int) -> None:
        """Ask the policy where the next turn resumes were the request to finish now
        (``end`` computed, ``end + 1`` tokens), and tell every group the lowest and
        how far below ``end`` a later answer may still lie (the lag). Under
        speculative steps a position is kept as the deepest state the steps left
        at or below it (``core.deepest_decode_state``), which may lie below the
        lag; the steps' states below the lowest are forgotten."""
        positions = self.policy.decode_checkpoints(self.geometry, NextTurnView(request, end))
        begun = request.decode_states_from
        if begun is not None:  # each position's state: the deepest the steps left below it
            written = request.decode_states
            kept = {
                deepest_decode_state(self.geometry, x, states_from=begun, written_states=written)
                for x in positions
            }
            positions = tuple(sorted(kept - {0}))
        self.decode_positions[request.request_id] = positions
        grid = self.geometry.hit_grid_tokens
        # None now: a later answer may still lie down to the lag below (it grows with c).
        recent = max(end - self.decode_lag, 0)
        lowest = floor_to(min(positions) if positions else recent, grid)
        if request.decode_states:
            request.decode_states[:] = [s for s in request.decode_states if s >= lowest]
        recent = floor_to(recent, grid)
        for manager in self.managers:
            manager.track_decode(request, lowest, recent)

    def publish(self, request: Request) -> tuple[int, ...]:
        """The request finished: each group caches what its next turn reads at the
        policy's decode checkpoints (nothing unless the policy keeps them); the
        checkpoints' positions (what a tier saves reads there, cached now or before)."""
        positions = self.decode_positions.pop(request.request_id, ())
        cached: list[Block] = []
        if positions:
            cached = [block for m in self.managers for block in m.publish(request, positions)]
        if self.ledger is not None:  # it retires the turns this one passed, even so
            self.ledger.published(request, positions, cached)
        return positions

    def free(self, request: Request) -> None:
        for manager in self.managers:
            manager.free(request)
        self.quiet.pop(request.request_id, None)
        self.quiet_states.pop(request.request_id, None)
        self.decode_positions.pop(request.request_id, None)
        if self.ledger is not None:
            self.ledger.released()

    def holders(self, request_ids: list[int]) -> dict[int, int]:
        """How many (request, group) pairs hold each block."""
        counts: dict[int, int] = {}
        for manager in self.managers:
            for request_id in request_ids:
                for block in manager.held(request_id):
                    counts[block.block_id] = counts.get(block.block_id, 0) + 1
        return counts
