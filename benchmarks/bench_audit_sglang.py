"""Core against SGLang 0.5.23, per lookup, side by side on identical inputs.

The decision both make per request is the lookup: how far the cache serves
a prompt (``h``) and how far full attention alone does (``ℓ``, whence the
junction). SGLang's side is ``UnifiedRadixCache.match_prefix`` on its tree
(Rust core, SGLang's default, and the Python one), after the prompt was
prefilled through ``audit.sglang.cache`` (16-token pages, Mamba chunk 64,
2,048-token chunks: a state every 64 tokens of the first 1,024 and the
prompt's last chunk). The core's side is ``HitReconciler.reconcile`` with
``GroupLookup`` finders over the same cached blocks, read from SGLang's tree
once before timing (what an engine with a block index hands the core;
SGLang's tree is both its index and its lookup, so its time includes the
walk). Each side timed through pyperf (``benchmarks.timing``), in one
process (a worker's start-up would be mostly SGLang's import); the ratio is
core / SGLang (below 1.0: core is faster). Before timing, each case asserts both give the same
``(h, ℓ)``.

Needs SGLang (``make audit-sglang-setup``). Run: ``make bench-audit``
(``python -m benchmarks.bench_audit_sglang``).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from junction.audit.sglang.cache import TreeCore
from junction.audit.sglang.subject import SglangSubject
from junction.core import GroupLookup, GroupSpec, HitReconciler, HybridGeometry
from junction.reference.harness import Scenario

from .timing import runner, side_by_side

PAGE, CHUNK = 16, 64


@attrs.frozen
class Case:
    name: str
    core: Callable[[], tuple[int, int]]
    sglang: Callable[[], tuple[int, int]]


def _case(name: str, core: TreeCore, shared: int) -> Case:
    geometry = HybridGeometry([GroupSpec.full(PAGE), GroupSpec.mamba(PAGE)], PAGE)
    prompt = tuple(range(64 * PAGE + 7))
    probe = (*prompt[:shared], -1, *range(-2, -2 - 3 * PAGE, -1))
    scenario = Scenario("reconciliation", geometry, [prompt], probe, 2048)
    run = SglangSubject(core, CHUNK).run(scenario)
    cache, maximum = run.cache, len(probe) - 1
    bound = maximum // PAGE * PAGE
    full, mamba = (set(group.cached) for group in run.cached_sets(probe))
    reconciler = HitReconciler(geometry)
    lookups = [GroupLookup(group, geometry.alignment_tokens) for group in geometry.groups]

    def ours() -> tuple[int, int]:
        finders = [lookups[0].finder(full.__contains__), lookups[1].finder(mamba.__contains__)]
        hits = reconciler.reconcile(finders, maximum)
        return hits.hit_length, hits.longest_hit_length

    def theirs() -> tuple[int, int]:
        result = cache.match(probe[:bound])
        return int(result.device_prefix_len), int(result.full_kv_hit_length)

    assert ours() == theirs(), (ours(), theirs())
    return Case(f"lookup full + Mamba, {name} ({core.value} core)", ours, theirs)


def cases() -> list[Case]:
    return [
        _case(name, core, shared)
        for core in TreeCore
        for name, shared in (("resend of 1031 tokens", 64 * PAGE + 7), ("sibling sharing 700", 700))
    ]


def main() -> None:
    made = runner(__spec__.name, in_process=True, processes=5)
    rows = [(case.name, case.core, case.sglang) for case in cases()]
    side_by_side(made, ("core", "SGLang"), rows)


if __name__ == "__main__":
    main()
