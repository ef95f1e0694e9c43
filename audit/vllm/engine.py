"""A real vLLM 0.33.0 ``KVCacheManager``, driven the way its scheduler drives it.

The audit needs vLLM's cache in states real requests leave, so this builds
the real thing for a core geometry and runs prompts through it one request
at a time as ``Scheduler.schedule`` does: lookup (which sets the junction),
prefill chunk by chunk clipped by vLLM's own split, ``allocate_slots``
(caching through the groups' masks), free. Every mask call, split and lookup
is recorded (beside ``core.reconcile_hits`` on the same pool), with chunk
ends as the prefixes whose Mamba state exists. Modelled: vLLM's defaults
(no connector, no explicit EAGLE group, no lookahead, no MTP, no prefill
checkpoints), prompts only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from junction.core import GroupKind, HitReconciliation, HybridGeometry, InvalidArgument
from junction.reference.errors import PoolExhausted
from junction.reference.harness.verdict import RequestState
from junction.upstream.vllm_0_33.env import vllm
from junction.upstream.vllm_0_33.specs import kv_cache_config

from .lookup import GroupView, core_reconcile, pool_views
from .split import SchedulerStandIn, make_request

__all__ = [
    "Lookup",
    "MaskCall",
    "Prefill",
    "RequestState",
    "SplitCall",
    "VllmEngine",
]


@attrs.frozen
class MaskCall:
    """One ``reachable_block_mask`` call vLLM's caching path made, and its answer."""

    group_id: int
    request: RequestState
    start_block: int
    end_block: int
    alignment_tokens: int
    use_eagle: bool
    retention_interval: int | None
    boundaries: tuple[int, ...]
    answer: tuple[bool, ...] | None


@attrs.frozen
class SplitCall:
    """One ``_mamba_block_aligned_split`` call: the request before it, its inputs, its answer."""

    request: RequestState
    num_new_tokens: int
    num_new_local_computed_tokens: int
    max_num_scheduled_tokens: int
    long_prefill_token_threshold: int
    answer: int


@attrs.frozen
class Lookup:
    """``get_computed_blocks`` for a request next to core's reconciliation of the same pool."""

    tokens: tuple[int, ...]
    hit_length: int
    shared_prefix_boundary: int
    core: HitReconciliation
    views: tuple[GroupView, ...]
    max_hit_length: int
    hashed_tokens: int
    # Whether a chunk end of an earlier request left the state of exactly
    # tokens[:hit_length] (align mode writes Mamba states only at chunk ends).
    state_materialized: bool


@attrs.frozen
class Prefill:
    """One prompt's run: its admission lookup, where its chunks ended, its hash chain."""

    tokens: tuple[int, ...]
    lookup: Lookup
    chunk_ends: tuple[int, ...]
    stalled: bool  # the split scheduled nothing although prefill remained
    block_hashes: tuple[bytes, ...]


class VllmEngine:
    """vLLM's KV-cache manager for one geometry, fed prompts one at a time."""

    def __init__(self, geometry: HybridGeometry, *, num_blocks: int = 8192) -> None:
        if len(geometry.groups) < 2:
            rule = "the audit drives vLLM's hybrid coordinator: give two groups or more"
            raise InvalidArgument("geometry", geometry, rule)
        v = vllm()
        self.geometry = geometry
        self.manager = v.manager.KVCacheManager(
            kv_cache_config(geometry.groups, num_blocks, geometry.retention_interval),
            max_model_len=1 << 16,
            scheduler_block_size=geometry.scheduler_block_size,
            hash_block_size=geometry.hash_block_size,
            enable_caching=True,
            use_eagle=geometry.use_eagle,
        )
        coordinator = self.manager.coordinator
        if bool(coordinator.enable_partial_hash_hits) != geometry.partial_hits:
            raise InvalidArgument(
                "geometry",
                geometry,
                "vLLM turns partial hits "
                f"{'on' if coordinator.enable_partial_hash_hits else 'off'} "
                "(build it with upstream.vllm_0_33.specs.vllm_geometry)",
            )
        self.block_pool = coordinator.block_pool
        self.has_mamba = any(g.kind is GroupKind.MAMBA for g in geometry.groups)
        self.mask_calls: list[MaskCall] = []
        self.split_calls: list[SplitCall] = []
        self.lookups: list[Lookup] = []
        self.prefills: list[Prefill] = []
        self.materialized: set[tuple[int, ...]] = set()
        self._current: Any = None
        for group_id, manager in enumerate(coordinator.single_type_managers):
            self._spy(group_id, manager)

    def _spy(self, group_id: int, manager: Any) -> None:
        original = manager.reachable_block_mask  # the classmethod, bound

        def reachable_block_mask(*args: Any, **kwargs: Any) -> Any:
            answer = original(*args, **kwargs)
            if args or self._current is None:
                return answer  # a Mamba checkpoint re-check, not the caching path
            self.mask_calls.append(
                MaskCall(
                    group_id,
                    RequestState.of(self._current),
                    int(kwargs["start_block"]),
                    int(kwargs["end_block"]),
                    int(kwargs["alignment_tokens"]),
                    bool(kwargs["use_eagle"]),
                    kwargs["retention_interval"],
                    tuple(int(x) for x in kwargs["reachable_boundaries"]),
                    None if answer is None else tuple(bool(flag) for flag in answer),
                )
            )
            return answer

        manager.reachable_block_mask = reachable_block_mask

    # -- lookup ---------------------------------------------------------------
    def _lookup(self, request: Any) -> tuple[Lookup, Any]:
        blocks, hit, junction = self.manager.get_computed_blocks(request)
        hashes = request.block_hashes
        hashed = len(hashes) * self.geometry.hash_block_size
        views = tuple(pool_views(self.geometry, self.block_pool, hashes))
        maximum = int(request.num_tokens) - 1
        tokens = tuple(int(t) for t in request.all_token_ids)
        lookup = Lookup(
            tokens,
            int(hit),
            int(junction),
            core_reconcile(self.geometry, views, maximum, hashed),
            views,
            maximum,
            hashed,
            hit == 0 or tokens[:hit] in self.materialized,
        )
        self.lookups.append(lookup)
        return lookup, blocks

    def lookup(self, tokens: Sequence[int]) -> Lookup:
        """vLLM's lookup for a prompt, without admitting it."""
        request = make_request(
            list(tokens), len(tokens), hash_block_size=self.geometry.hash_block_size
        )
        return self._lookup(request)[0]

    # -- prefill --------------------------------------------------------------
    def _decode(self, request: Any, tokens: tuple[int, ...], answer: Sequence[int]) -> None:
        """Decode ``answer`` after the prompt: append a token, compute it the next step."""
        for index, token in enumerate(answer):
            request.append_output_token_ids(token)
            if index == len(answer) - 1:
                break  # the last token is sampled, never computed
            if self.manager.allocate_slots(request, 1) is None:
                raise PoolExhausted("vLLM's pool cannot fit the answer's next token")
            request.num_computed_tokens += 1
            self.materialized.add((*tokens, *answer)[: request.num_computed_tokens])
            self.manager.new_step_starts()

    def prefill(
        self,
        tokens: Sequence[int],
        budget: int,
        long_prefill_token_threshold: int = 0,
        output: Sequence[int] = (),
    ) -> Prefill:
        """Admit a prompt, prefill it chunk by chunk within ``budget`` tokens a step, free it.

        ``output``: the answer's tokens to decode first, one a step, as vLLM's scheduler
        does (each sampled token appended, then computed by the next step; the last
        is sampled, never computed), so a finished request's blocks and states are
        what its next turn finds (promise 9)."""
        tokens = tuple(tokens)
        prompt = len(tokens)
        request = make_request(list(tokens), prompt, hash_block_size=self.geometry.hash_block_size)
        self.manager.new_step_starts()
        lookup, blocks = self._lookup(request)
        request.shared_prefix_boundary = lookup.shared_prefix_boundary
        stand_in = (
            SchedulerStandIn(self.geometry, budget, long_prefill_token_threshold)
            if self.has_mamba
            else None
        )
        hit = lookup.hit_length
        computed, first, stalled = hit, True, False
        chunk_ends: list[int] = []
        self._current = request
        try:
            while computed < prompt:
                new = prompt - computed
                if 0 < long_prefill_token_threshold < new:
                    new = long_prefill_token_threshold
                new = min(new, budget)
                local = hit if first else 0
                if stand_in is not None:
                    before = RequestState.of(request)
                    answer = stand_in.split(request, new, local, 0)
                    self.split_calls.append(
                        SplitCall(before, new, local, budget, long_prefill_token_threshold, answer)
                    )
                    if answer == 0:
                        stalled = True
                        break
                    new = answer
                allocated = self.manager.allocate_slots(
                    request,
                    new,
                    num_new_computed_tokens=local,
                    new_computed_blocks=blocks if first else None,
                )
                if allocated is None:
                    raise PoolExhausted(f"vLLM's pool cannot fit a {prompt}-token prompt")
                computed += new
                request.num_computed_tokens = computed
                chunk_ends.append(computed)
                self.materialized.add(tokens[:computed])
                first = False
                self.manager.new_step_starts()
            if not stalled:
                self._decode(request, tokens, output)
        finally:
            self._current = None
            self.manager.free(request)
        run = Prefill(
            tokens,
            lookup,
            tuple(chunk_ends),
            stalled,
            tuple(bytes(h) for h in request.block_hashes),
        )
        self.prefills.append(run)
        return run
