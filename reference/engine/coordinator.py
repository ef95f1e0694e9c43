"""The hybrid coordinator: one request's view across every group.

It reconciles the groups' hits (``core.HitReconciler``, bound once) at admission and
stores the junction on the request, allocates a step's slots in every group
at once (all or nothing, so a failed allocation leaves nothing half done),
and hands each group the end of the step (caching through the mask, window
release, Mamba state hand-over).

Most decode steps change nothing but the computed count: no group needs a
block, none fills one, no block leaves a window. After each step that did
something the coordinator asks the block-list groups how far the request can
now run quietly (:meth:`GroupManager.quiet_until`); chunks ending within that
skip those groups, and only per-chunk managers (Mamba) are asked. Those
groups' answers depend only on their own blocks for the request, which stay
as they are between its steps (a hit touches only cached blocks, and a
held block is never evicted), so the skip changes nothing in a run.
"""

from __future__ import annotations

from junction.core import HitReconciler, HitReconciliation, HybridGeometry
from junction.reference.engine.block_pool import BlockPool, NoFreeBlocks
from junction.reference.engine.group_managers import BlockIndex, GroupManager, make_manager
from junction.reference.engine.policy import CheckedPolicy
from junction.reference.engine.request import Request

__all__ = ["Coordinator"]


class Coordinator:
    def __init__(self, geometry: HybridGeometry, pool: BlockPool, policy: CheckedPolicy) -> None:
        self.geometry = geometry
        self.pool = pool
        self.managers: list[GroupManager] = [
            make_manager(group_id, spec, geometry, pool, policy)
            for group_id, spec in enumerate(geometry.groups)
        ]
        self.reconciler = HitReconciler(geometry)  # core's decision 1, bound once
        # Per running request: chunks ending at or before this skip quiet managers.
        self.quiet: dict[int, int] = {}

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
        self.quiet[request.request_id] = -1  # nothing known yet: ask every group
        request.shared_prefix_boundary = hits.shared_prefix_boundary if hits else 0
        return hits

    def blocks_needed(self, request: Request, num_tokens: int) -> int:
        return sum(m.blocks_needed(request, num_tokens) for m in self.managers)

    def allocate(self, request: Request, num_tokens: int) -> None:
        """Slots for ``[0, num_tokens)`` in every group; or ``NoFreeBlocks``, changing nothing."""
        quiet = num_tokens <= self.quiet[request.request_id]
        needed = 0
        for manager in self.managers:
            if manager.per_chunk or not quiet:
                needed += manager.blocks_needed(request, num_tokens)
        if not needed:  # most decode steps: every slot is there
            return
        counts = [m.blocks_needed(request, num_tokens) for m in self.managers]
        needed = sum(counts)
        if needed > self.pool.num_free:
            raise NoFreeBlocks(f"{request} needs {needed} blocks, {self.pool.num_free} free")
        for manager, count in zip(self.managers, counts, strict=True):
            if count:
                manager.allocate(request, num_tokens, count)

    def after_step(self, request: Request) -> None:
        rid = request.request_id
        if request.num_computed_tokens <= self.quiet[rid]:
            for manager in self.managers:
                if manager.per_chunk:
                    manager.after_step(request)
            return
        for manager in self.managers:
            manager.after_step(request)
        quiets = [m.quiet_until(request) for m in self.managers if not m.per_chunk]
        # Only per-chunk managers: nothing to skip, any value does.
        self.quiet[rid] = min(quiets) if quiets else request.num_tokens

    def free(self, request: Request) -> None:
        for manager in self.managers:
            manager.free(request)
        self.quiet.pop(request.request_id, None)

    def holders(self, request_ids: list[int]) -> dict[int, int]:
        """How many (request, group) pairs hold each block."""
        counts: dict[int, int] = {}
        for manager in self.managers:
            for request_id in request_ids:
                for block in manager.held(request_id):
                    counts[block.block_id] = counts.get(block.block_id, 0) + 1
        return counts
