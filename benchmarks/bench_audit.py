"""Core against vLLM 0.33.0, per call, side by side on identical inputs.

For each decision the same inputs go to the core and to the vLLM function it
replaces, each side timed through pyperf (``benchmarks.timing``), in one
process (a worker's start-up would be mostly vLLM's import); the ratio is
core time / vLLM time (below 1.0: core is faster). The core
side is the per-call API an engine uses: what is fixed per engine or group
is bound once, outside the timing (``core.ChunkSplitter``, ``core.GroupMask``,
``core.HitReconciler`` with ``upstream.vllm_0_33.readers.group_readers``), and each timed
call checks what changes per call. Before timing, each case asserts that the
bound call, the free function and vLLM give the same answer.

* split: ``ChunkSplitter.split`` vs ``Scheduler._mamba_block_aligned_split``
  (on ``audit.vllm.split.SchedulerStandIn`` with a real ``Request``);
* mask: ``GroupMask.reachable_block_mask`` vs ``SlidingWindowManager`` /
  ``MambaManager.reachable_block_mask`` on real specs, 64 and 4,096 newly
  full blocks;
* lookup: ``HitReconciler.reconcile`` with finders reading vLLM's block pool
  (built per call, as an engine would) vs
  ``HybridKVCacheCoordinator.find_longest_cache_hit``, on the same pool after
  the prompt was cached through vLLM's own ``KVCacheManager``.

Needs vLLM (``make audit-setup``). Run: ``make bench-audit``
(``python -m benchmarks.bench_audit``).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from junction.audit.vllm.engine import VllmEngine
from junction.audit.vllm.lookup import pool_finders, reader_finders
from junction.audit.vllm.split import SchedulerStandIn, make_request
from junction.core import (
    ChunkSplitter,
    GroupMask,
    GroupSpec,
    HitReconciler,
    HybridGeometry,
    mamba_block_aligned_split,
    reachable_block_mask,
    reconcile_hits,
)
from junction.upstream.vllm_0_33.readers import group_readers
from junction.upstream.vllm_0_33.specs import manager_class, vllm_geometry, vllm_spec

from .timing import runner, side_by_side

BLOCK = 16


@attrs.frozen
class Case:
    name: str
    core: Callable[[], object]
    vllm: Callable[[], object]


def _split_case(name: str, geometry: HybridGeometry, computed: int, junction: int) -> Case:
    prompt = 64 * BLOCK + 7
    wanted, budget = 20 * BLOCK, 2048
    request = make_request(list(range(prompt)), prompt)
    request.num_computed_tokens = computed
    request.shared_prefix_boundary = junction
    stand_in = SchedulerStandIn(geometry, budget)
    # What an engine binds once; the call checks the request's counts.
    splitter = ChunkSplitter(
        geometry.mamba_block_size,
        geometry.hash_block_size,
        geometry.use_eagle,
        geometry.partial_hits,
        budget,
    )

    def ours() -> int:
        return splitter.split(
            num_computed_tokens=computed,
            num_new_tokens=wanted,
            num_prompt_tokens=prompt,
            num_tokens=prompt,
            shared_prefix_boundary=junction,
        )

    def theirs() -> int:
        return stand_in.split(request, wanted)

    assert ours() == theirs()
    assert ours() == mamba_block_aligned_split(
        num_computed_tokens=computed,
        num_new_tokens=wanted,
        num_prompt_tokens=prompt,
        num_tokens=prompt,
        block_size=geometry.mamba_block_size,
        shared_prefix_boundary=junction,
        use_eagle=geometry.use_eagle,
        hash_block_size=geometry.hash_block_size,
        partial_hits=geometry.partial_hits,
        max_prefill_tokens=budget,
    )
    return Case(name, ours, theirs)


def _mask_case(
    name: str, geometry: HybridGeometry, group: GroupSpec, start: int, blocks: int
) -> Case:
    boundaries = [(start + blocks) * BLOCK - 1, (start + blocks * 5 // 8) * BLOCK]
    spec, manager = vllm_spec(group), manager_class(group)
    alignment, eagle = geometry.alignment_tokens, geometry.use_eagle
    interval, end = geometry.retention_interval, start + blocks
    # What an engine binds once per group; the call checks the range and boundaries.
    bound = GroupMask(alignment, group, eagle, interval)

    def ours() -> object:
        return bound.reachable_block_mask(start, end, boundaries)

    def theirs() -> object:
        return manager.reachable_block_mask(
            start_block=start,
            end_block=end,
            alignment_tokens=alignment,
            kv_cache_spec=spec,
            use_eagle=eagle,
            retention_interval=interval,
            reachable_boundaries=boundaries,
            dcp_world_size=1,  # as its caching path (cache_blocks) calls it
        )

    assert ours() == theirs()
    assert ours() == reachable_block_mask(start, end, alignment, group, eagle, interval, boundaries)
    return Case(f"mask {blocks} blocks, {name}", ours, theirs)


def _lookup_case(name: str, geometry: HybridGeometry, probe_shared: int) -> Case:
    prompt = tuple(range(64 * BLOCK + 7))
    engine = VllmEngine(geometry)
    engine.prefill(prompt, 2048)
    probe = (*prompt[:probe_shared], -1, *range(-2, -2 - 3 * BLOCK, -1))
    request = make_request(list(probe), len(probe), hash_block_size=geometry.hash_block_size)
    hashes = request.block_hashes
    coordinator, pool = engine.manager.coordinator, engine.block_pool
    maximum, limit = len(probe) - 1, len(hashes) * geometry.hash_block_size
    # What an engine binds once; each call builds the request's finders.
    reconciler, readers = HitReconciler(geometry), group_readers(geometry)

    def ours() -> tuple[int, int]:
        hits = reconciler.reconcile(reader_finders(readers, pool, hashes), maximum, limit)
        return hits.hit_length, hits.shared_prefix_boundary

    def theirs() -> tuple[int, int]:
        _, hit, uncached = coordinator.find_longest_cache_hit(hashes, maximum)
        return hit, hit + uncached if uncached else 0

    assert ours() == theirs(), (ours(), theirs())
    free = reconcile_hits(geometry, pool_finders(geometry, pool, hashes), maximum, limit)
    assert ours() == (free.hit_length, free.shared_prefix_boundary)
    return Case(name, ours, theirs)


def cases() -> list[Case]:
    swa, mamba = GroupSpec.sliding_window(BLOCK, 4 * BLOCK), GroupSpec.mamba(BLOCK)
    full = GroupSpec.full(BLOCK)
    plain = vllm_geometry([full, mamba], BLOCK)
    partial = vllm_geometry([full, GroupSpec.mamba(4 * BLOCK)], BLOCK, use_eagle=True)
    window = [full, swa]
    return [
        _split_case("split (mid-block start, junction)", plain, 5 * BLOCK + 3, 17 * BLOCK),
        _split_case("split (partial hits, EAGLE, junction)", partial, 5 * BLOCK, 17 * BLOCK),
        *(
            case
            for blocks in (64, 4096)
            for case in (
                _mask_case("SWA, R=None (periodic)", vllm_geometry(window, BLOCK), swa, 0, blocks),
                _mask_case(
                    "SWA, R=0 (boundaries)",
                    vllm_geometry(window, BLOCK, use_eagle=True, retention_interval=0),
                    swa,
                    0,
                    blocks,
                ),
                _mask_case(
                    "SWA, R=8L (segments + boundaries)",
                    vllm_geometry(window, BLOCK, retention_interval=8 * BLOCK),
                    swa,
                    3,
                    blocks,
                ),
                _mask_case(
                    "Mamba, R=0 (boundaries)",
                    vllm_geometry([full, mamba], BLOCK, retention_interval=0),
                    mamba,
                    0,
                    blocks,
                ),
                _mask_case(
                    "Mamba, R=4L (segments + boundaries)",
                    vllm_geometry([full, mamba], BLOCK, retention_interval=4 * BLOCK),
                    mamba,
                    0,
                    blocks,
                ),
            )
        ),
        _lookup_case(
            "lookup full + SWA, resend (1031 tokens)", vllm_geometry(window, BLOCK), 64 * BLOCK + 7
        ),
        _lookup_case("lookup full + SWA, sibling sharing 700", vllm_geometry(window, BLOCK), 700),
        _lookup_case(
            "lookup full + Mamba, R=0, sibling sharing 700",
            vllm_geometry([full, mamba], BLOCK, retention_interval=0),
            700,
        ),
    ]


def main() -> None:
    made = runner(__spec__.name, in_process=True, processes=5)
    side_by_side(made, ("core", "vLLM"), [(case.name, case.core, case.vllm) for case in cases()])


if __name__ == "__main__":
    main()
