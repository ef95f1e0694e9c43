"""Simulated block operations per second of the reference engine (a benchmark, not a test).

Runs an agent workload (one shared system prompt, sessions of several turns,
10,000 requests by default) on full attention + sliding window + Mamba in
align mode, and counts block-pool operations (allocations, frees, hit
references, cachings, lookups: ``BlockPool.operations``). Timed through
pyperf (``benchmarks.timing``), in one process, in CPU time; every run must
do exactly the same operations and steps with the same metrics. Prints the
operations, the median CPU seconds and the rate. Run: ``make
bench-engine``; ``--profile`` prints the top of a cProfile of one run.

``--trace N`` instead replays the first N requests of the committed Mooncake
conversation trace (``examples/traces``), one at a time with their recorded
output lengths, on the same geometry, and prints the engine's cost per
million prompt tokens and per output token, and how much the process grew:
what a whole-trace replay multiplies. The growth stays flat because a
finished request releases its tokens.
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import pstats
import sys
import time
from pathlib import Path

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.workloads.drive import run_workload
from junction.reference.workloads.hash_prompts import PromptBuilder
from junction.reference.workloads.mooncake import parse_hash_trace
from junction.reference.workloads.sessions import agent_sessions

from .timing import runner

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


def agents(args: argparse.Namespace) -> tuple[float, tuple[int, int, str]]:
    """One run of the agent workload: this thread's CPU seconds in the
    engine (the workload and the engine built outside them), and the run's
    operations, steps and metrics."""
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
    started = time.thread_time()
    metrics = run_workload(engine, arrivals)
    return time.thread_time() - started, (engine.pool.operations, metrics.steps, repr(metrics))


def profile(args: argparse.Namespace) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    agents(args)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(18)


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


def timed(args: argparse.Namespace) -> None:
    """The agent workload through pyperf; every run must agree with the first."""
    outcomes: list[tuple[int, int, str]] = []

    def runs(loops: int) -> float:
        spent = 0.0
        for _ in range(loops):
            seconds, outcome = agents(args)
            spent += seconds
            outcomes.append(outcome)
            if outcome != outcomes[0]:
                raise SystemExit(f"the runs differ: {outcomes[0]} and {outcome}")
        return spent

    made = runner(__spec__.name, in_process=True, processes=3)
    seconds = made.bench_time_func("agent workload", runs).median()
    operations, steps, metrics = outcomes[0]
    print(
        f"{args.requests:,} requests, R={args.retention}: {operations:,} block operations, "
        f"{steps:,} steps in each run; median CPU {seconds:.2f} s = "
        f"{operations / seconds:,.0f} ops/s\n{metrics}"
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
    parser.add_argument(
        "--trace",
        type=int,
        default=0,
        metavar="N",
        help="replay the first N requests of the Mooncake conversation trace instead",
    )
    args, rest = parser.parse_known_args()
    sys.argv[1:] = rest  # pyperf's own options
    if args.trace:
        trace(args)
    elif args.profile:
        profile(args)
    else:
        timed(args)


if __name__ == "__main__":
    main()
