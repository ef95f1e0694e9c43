"""Core against vLLM 0.33.0, per call, side by side on identical inputs.

For each decision the same inputs go to the core function and to the vLLM
function it replaces, timed in one run, alternating, so machine noise hits
both alike; the ratio is core time / vLLM time (below 1.0: core is faster).

* split: ``core.mamba_block_aligned_split`` vs ``Scheduler._mamba_block_aligned_split``
  (on ``audit.split.SchedulerStandIn`` with a real ``Request``);
* mask: ``core.reachable_block_mask`` vs ``SlidingWindowManager`` /
  ``MambaManager.reachable_block_mask`` on real specs, 64 newly full blocks;
* lookup: ``core.reconcile_hits`` with finders reading vLLM's block pool vs
  ``HybridKVCacheCoordinator.find_longest_cache_hit``, on the same pool after
  the prompt was cached through vLLM's own ``KVCacheManager``.

Needs vLLM (``make audit-setup``). Run: ``make bench-audit``
(``python -m benchmarks.bench_audit``).
"""

from __future__ import annotations

import argparse
import statistics
import timeit
from collections.abc import Callable

import attrs

from junction.audit.lookup import pool_finders
from junction.audit.specs import manager_class, vllm_geometry, vllm_spec
from junction.audit.split import SchedulerStandIn, make_request
from junction.audit.vllm_engine import VllmEngine
from junction.core import (
    GroupSpec,
    HybridGeometry,
    mamba_block_aligned_split,
    reachable_block_mask,
    reconcile_hits,
)

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
    block = geometry.mamba_block_size

    def ours() -> int:
        return mamba_block_aligned_split(
            num_computed_tokens=computed,
            num_new_tokens=wanted,
            num_prompt_tokens=prompt,
            num_tokens=prompt,
            block_size=block,
            shared_prefix_boundary=junction,
            use_eagle=geometry.use_eagle,
            hash_block_size=geometry.hash_block_size,
            partial_hits=geometry.partial_hits,
            max_prefill_tokens=budget,
        )

    def theirs() -> int:
        return stand_in.split(request, wanted)

    assert ours() == theirs()
    return Case(name, ours, theirs)


def _mask_case(name: str, geometry: HybridGeometry, group: GroupSpec, start: int) -> Case:
    boundaries = [64 * BLOCK - 1, 40 * BLOCK]
    spec, manager = vllm_spec(group), manager_class(group)
    alignment, eagle = geometry.alignment_tokens, geometry.use_eagle
    interval, end = geometry.retention_interval, start + 64

    def ours() -> object:
        return reachable_block_mask(start, end, alignment, group, eagle, interval, boundaries)

    def theirs() -> object:
        return manager.reachable_block_mask(
            start_block=start,
            end_block=end,
            alignment_tokens=alignment,
            kv_cache_spec=spec,
            use_eagle=eagle,
            retention_interval=interval,
            reachable_boundaries=boundaries,
        )

    assert ours() == theirs()
    return Case(name, ours, theirs)


def _lookup_case(name: str, geometry: HybridGeometry, probe_shared: int) -> Case:
    prompt = tuple(range(64 * BLOCK + 7))
    engine = VllmEngine(geometry)
    engine.prefill(prompt, 2048)
    probe = (*prompt[:probe_shared], -1, *range(-2, -2 - 3 * BLOCK, -1))
    request = make_request(list(probe), len(probe), hash_block_size=geometry.hash_block_size)
    hashes = request.block_hashes
    coordinator, pool = engine.manager.coordinator, engine.block_pool
    maximum, limit = len(probe) - 1, len(hashes) * geometry.hash_block_size

    def ours() -> tuple[int, int]:
        hits = reconcile_hits(geometry, pool_finders(geometry, pool, hashes), maximum, limit)
        return hits.hit_length, hits.shared_prefix_boundary

    def theirs() -> tuple[int, int]:
        _, hit, uncached = coordinator.find_longest_cache_hit(hashes, maximum)
        return hit, hit + uncached if uncached else 0

    assert ours() == theirs(), (ours(), theirs())
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
        _mask_case("mask SWA, R=None (periodic)", vllm_geometry(window, BLOCK), swa, 0),
        _mask_case(
            "mask SWA, R=0 (boundaries)",
            vllm_geometry(window, BLOCK, use_eagle=True, retention_interval=0),
            swa,
            0,
        ),
        _mask_case(
            "mask SWA, R=8L (segments + boundaries)",
            vllm_geometry(window, BLOCK, retention_interval=8 * BLOCK),
            swa,
            3,
        ),
        _mask_case(
            "mask Mamba, R=0 (boundaries)",
            vllm_geometry([full, mamba], BLOCK, retention_interval=0),
            mamba,
            0,
        ),
        _mask_case(
            "mask Mamba, R=4L (segments + boundaries)",
            vllm_geometry([full, mamba], BLOCK, retention_interval=4 * BLOCK),
            mamba,
            0,
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


def per_call_us(call: Callable[[], object], number: int) -> float:
    return timeit.timeit(call, number=number) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--number", type=int, default=2_000)
    args = parser.parse_args()
    print(f"median per call (us) over {args.repeats} alternating repeats x {args.number:,} calls")
    print(f"  {'core':>8}  {'vLLM':>8}  {'ratio':>6}  case")
    for case in cases():
        ours, theirs = [], []
        for _ in range(args.repeats):
            ours.append(per_call_us(case.core, args.number))
            theirs.append(per_call_us(case.vllm, args.number))
        mine, other = statistics.median(ours), statistics.median(theirs)
        print(f"  {mine:8.2f}  {other:8.2f}  {mine / other:6.2f}  {case.name}")


if __name__ == "__main__":
    main()
