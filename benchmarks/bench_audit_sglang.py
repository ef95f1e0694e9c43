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
walk). Timed in one run, alternating; the ratio is core / SGLang (below 1.0:
core is faster). Before timing, each case asserts both give the same
``(h, ℓ)``.

Needs SGLang (``make audit-sglang-setup``). Run: ``make bench-audit``
(``python -m benchmarks.bench_audit_sglang``).
"""

from __future__ import annotations

import argparse
import statistics
import timeit
from collections.abc import Callable

import attrs

from junction.audit.sglang.cache import TreeCore
from junction.audit.sglang.subject import SglangSubject
from junction.core import GroupLookup, GroupSpec, HitReconciler, HybridGeometry
from junction.reference.harness import Scenario

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


def per_call_us(call: Callable[[], object], number: int) -> float:
    return timeit.timeit(call, number=number) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--number", type=int, default=500)
    args = parser.parse_args()
    print(f"median per call (us) over {args.repeats} alternating repeats x {args.number:,} calls")
    print(f"  {'core':>8}  {'SGLang':>8}  {'ratio':>6}  case")
    for case in cases():
        ours, theirs = [], []
        for _ in range(args.repeats):
            ours.append(per_call_us(case.core, args.number))
            theirs.append(per_call_us(case.sglang, args.number))
        mine, other = statistics.median(ours), statistics.median(theirs)
        print(f"  {mine:8.2f}  {other:8.2f}  {mine / other:6.2f}  {case.name}")


if __name__ == "__main__":
    main()
