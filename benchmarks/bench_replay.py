"""The fast replay's sweep over the whole Mooncake conversation trace (a benchmark, not a test).

One preset (``qwen3-next`` by default), the simulator's four compared
retention variants (dense, interval R, R=0 unpinned, R=0 pinned; R = the
preset's scheduler block) times ``--pools`` pool sizes in blocks, one
eviction, sequential arrivals, in one pass over the trace
(``reference.replay``). Prints the wall time of reading and keying the
trace and of the sweep, and each point's hit rate, prefill saved and
evictions. Run: ``python -m benchmarks.bench_replay`` (under
``/usr/bin/time -v`` for the peak memory).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from junction.reference.replay import EVICTIONS, Point, future_uses
from junction.reference.replay import replay as run_replay
from junction.reference.replay.stream import hash_trace_requests
from junction.reference.simulator.geometries import PRESETS
from junction.reference.simulator.variants import table_variants

TRACE = Path(__file__).resolve().parents[1] / "examples/traces/mooncake-conversation.jsonl.gz"
POOLS = "2000,4000,8000,16000,32000,64000,128000,256000"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="qwen3-next")
    parser.add_argument("--pools", default=POOLS, help="pool sizes in blocks, comma-separated")
    parser.add_argument("--eviction", choices=EVICTIONS, default="lru")
    parser.add_argument("--requests", type=int, default=0, help="the first N requests (0: all)")
    args = parser.parse_args()
    started = time.perf_counter()
    choice = PRESETS[args.preset]
    geometry = choice.build(None, False)
    stream = hash_trace_requests(TRACE, geometry.hash_block_size, args.requests)
    uses = future_uses(geometry, stream) if args.eviction == "belady" else None
    read = time.perf_counter()
    pools = [int(size) for size in args.pools.split(",")]
    variants = table_variants(choice.scheduler_block)
    points = [
        Point(v.policy, v.retention_interval, size, args.eviction)
        for v in variants
        for size in pools
    ]
    results = run_replay(geometry, stream, points, flops=choice.flops, uses=uses)
    swept = time.perf_counter()
    print(
        f"{args.preset}, {len(stream):,} requests, {len(points)} points "
        f"({len(variants)} variants x {len(pools)} pools, {args.eviction}): read and keyed "
        f"{read - started:.1f} s, sweep {swept - read:.1f} s, total {swept - started:.1f} s wall"
    )
    for variant in variants:
        rates = [
            f"{r.point.num_blocks}: {r.token_hit_rate:.4f}"
            for r in results
            if (r.point.policy, r.point.retention_interval)
            == (variant.policy, variant.retention_interval)
        ]
        print(f"  {variant.label:>14}  hit rate by pool (blocks) {', '.join(rates)}")


if __name__ == "__main__":
    main()
