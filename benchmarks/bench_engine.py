"""Simulated block operations per second of the reference engine (a benchmark, not a test).

Runs an agent workload (one shared system prompt, sessions of several turns,
10,000 requests by default) on full attention + sliding window + Mamba in
align mode, and counts block-pool operations (allocations, frees, hit
references, cachings, lookups). Prints operations, wall time, the rate, and
the run's metrics. Run: ``make bench-engine``; ``--profile`` prints the top
of a cProfile.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.workloads.drive import run_workload
from junction.reference.workloads.sessions import agent_sessions


def build(retention_interval: int | None) -> Engine:
    geometry = HybridGeometry(
        [GroupSpec.full(16), GroupSpec.sliding_window(16, 128), GroupSpec.mamba(16)],
        16,
        retention_interval=retention_interval,
    )
    return Engine(
        EngineConfig(
            geometry, num_blocks=40_000, max_num_batched_tokens=2048, policy=JunctionPolicy()
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument(
        "--retention",
        type=lambda v: None if v == "none" else int(v),
        default=0,
        help="retention interval R: none (dense), 0 or a multiple of 16 (default 0)",
    )
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    arrivals = agent_sessions(
        0,
        sessions=args.requests // args.turns,
        turns=args.turns,
        system_prompt_tokens=512,
        message_tokens=(16, 128),
        output_tokens=(4, 32),
        gap_steps=2,
    )
    engine = build(args.retention)
    profiler = cProfile.Profile() if args.profile else None
    started = time.perf_counter()
    if profiler:
        profiler.enable()
    metrics = run_workload(engine, arrivals)
    if profiler:
        profiler.disable()
    elapsed = time.perf_counter() - started
    operations = engine.pool.operations
    print(
        f"{len(arrivals):,} requests, R={args.retention}: {operations:,} block operations in "
        f"{elapsed:.1f} s = {operations / elapsed:,.0f} ops/s; {metrics.steps:,} steps, "
        f"hit rate {metrics.token_hit_rate:.3f}, evictions {metrics.evictions:,}, "
        f"preemptions {metrics.preemptions}"
    )
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(18)


if __name__ == "__main__":
    main()
