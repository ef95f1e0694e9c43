"""The drop-in against vLLM 0.33.0's own code, per call, at vLLM's own call sites.

Each case of ``benchmarks.bench_audit`` calls vLLM's function as vLLM does
(``Scheduler._mamba_block_aligned_split``, ``SlidingWindowManager`` /
``MambaManager.reachable_block_mask``,
``HybridKVCacheCoordinator.find_longest_cache_hit``); here that same call is
timed twice, alternating in one run: once as installed vLLM has it, once with
``junction.dropin`` installed, so the second time includes everything
the adapter adds to the core (reading vLLM's arguments and attributes,
finding the binding, and for the lookup collecting the hit's blocks, which
the core's finders do not return). The ratio is drop-in / vLLM. Before
timing, each case asserts both give the same answer.

Needs vLLM (``make audit-setup``). Run: ``python -m benchmarks.bench_dropin``.
"""

from __future__ import annotations

import argparse
import statistics

from junction import dropin

from .bench_audit import cases, per_call_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--number", type=int, default=1_000)
    args = parser.parse_args()
    print(f"median per call (us) over {args.repeats} alternating repeats x {args.number:,} calls")
    print(f"  {'drop-in':>8}  {'vLLM':>8}  {'ratio':>6}  case")
    for case in cases():
        theirs = case.vllm()
        with dropin.swapped_in():
            assert case.vllm() == theirs, case.name
        swapped, own = [], []
        number = max(args.number * 64 // max(case.blocks, 64), 1)
        for _ in range(args.repeats):
            own.append(per_call_us(case.vllm, number))
            with dropin.swapped_in():
                swapped.append(per_call_us(case.vllm, number))
        mine, other = statistics.median(swapped), statistics.median(own)
        print(f"  {mine:8.2f}  {other:8.2f}  {mine / other:6.2f}  {case.name}")


if __name__ == "__main__":
    main()
