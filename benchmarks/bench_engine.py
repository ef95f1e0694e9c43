"""Simulated block operations per second of the reference engine (a benchmark, not a test).

Runs an agent workload (one shared system prompt, sessions of several turns,
10,000 requests by default) on full attention + sliding window + Mamba in
align mode, and counts block-pool operations (allocations, frees, hit
references, cachings, lookups: ``BlockPool.operations``). Prints operations,
the time (wall clock, and this process's CPU time, which another process on
a shared machine disturbs less), the rates, and the run's metrics, for each
of ``--rounds`` runs (5 by default), then the median CPU rate; the runs must
do exactly the same operations and steps with the same metrics. Run:
``make bench-engine``; ``--profile`` prints the top of a cProfile of one run.

``--trace N`` instead replays the first N requests of the committed Mooncake
conversation trace (``examples/traces``), one at a time with their recorded
output lengths, on the same geometry, and prints the engine's cost per
million prompt tokens and per output token, and how much the process grew:
what a whole-trace replay multiplies (145 million prompt tokens). The growth
stays flat because a finished request releases its tokens.
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import pstats
import statistics
import time
from pathlib import Path
from typing import Any

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.workloads.drive import run_workload
from junction.reference.workloads.hash_prompts import PromptBuilder
from junction.reference.workloads.mooncake import parse_hash_trace
from junction.reference.workloads.sessions import agent_sessions

TRACE = Path(__file__).resolve().parents[1] / "examples/traces/mooncake-conversation.jsonl.gz"


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


def resident_mib() -> float:
    """This process's resident memory (Linux ``/proc``), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise OSError("no VmRSS in /proc/self/status")


def agents(args: argparse.Namespace) -> dict[str, Any]:
    """One run of the agent workload; its operations, CPU time, steps and metrics."""
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
    started, cpu_started = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    metrics = run_workload(engine, arrivals)
    if profiler:
        profiler.disable()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    operations = engine.pool.operations
    print(
        f"{len(arrivals):,} requests, R={args.retention}: {operations:,} block operations in "
        f"{elapsed:.1f} s = {operations / elapsed:,.0f} ops/s "
        f"(CPU {cpu:.1f} s = {operations / cpu:,.0f} ops/s); {metrics.steps:,} steps, "
        f"hit rate {metrics.token_hit_rate:.3f}, evictions {metrics.evictions:,}, "
        f"preemptions {metrics.preemptions}"
    )
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(18)
    return {"operations": operations, "cpu": cpu, "steps": metrics.steps, "metrics": repr(metrics)}


def trace(args: argparse.Namespace) -> None:
    requests = parse_hash_trace(gzip.decompress(TRACE.read_bytes()).decode(), str(TRACE))
    requests = requests[: args.trace]
    builder, engine = PromptBuilder(), build(args.retention)
    resident = resident_mib()
    prompt_tokens = output_tokens = 0
    cpu_started = time.process_time()
    for request in requests:
        prompt_tokens += request.input_length
        output_tokens += request.output_length
        engine.submit(builder.prompt(request), request.output_length)
        while not engine.idle:
            engine.step()
    cpu = time.process_time() - cpu_started
    metrics = engine.metrics
    print(
        f"Mooncake conversation trace, first {len(requests):,} requests one at a time, "
        f"R={args.retention}: {prompt_tokens / 1e6:.1f} M prompt + {output_tokens:,} output "
        f"tokens in CPU {cpu:.1f} s ({cpu / prompt_tokens * 1e6:.2f} s per M prompt tokens, "
        f"with the prompts' building and the decode); {engine.pool.operations:,} block "
        f"operations = {engine.pool.operations / cpu:,.0f} ops/s; hit rate "
        f"{metrics.token_hit_rate:.3f}; the process grew by {resident_mib() - resident:,.0f} MiB"
    )


def rounds(args: argparse.Namespace) -> None:
    """``--rounds`` runs of the agent workload; the median CPU rate. The runs must agree."""
    runs = [agents(args) for _ in range(args.rounds)]
    outcomes = {(r["operations"], r["steps"], r["metrics"]) for r in runs}
    if len(outcomes) != 1:
        raise SystemExit(f"the runs differ: {sorted(outcomes)}")
    median = statistics.median(r["operations"] / r["cpu"] for r in runs)
    print(
        f"{args.requests:,} requests, {args.rounds} rounds, the same "
        f"{runs[0]['operations']:,} operations in each run: median CPU rate {median:,.0f} ops/s"
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
    parser.add_argument("--rounds", type=int, default=5, help="runs of the agent workload")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--trace",
        type=int,
        default=0,
        metavar="N",
        help="replay the first N requests of the Mooncake conversation trace instead",
    )
    args = parser.parse_args()
    if args.trace:
        trace(args)
    elif args.profile:
        agents(args)
    else:
        rounds(args)


if __name__ == "__main__":
    main()
