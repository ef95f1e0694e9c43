"""Simulated block operations per second of the reference engine (a benchmark, not a test).

Runs an agent workload (one shared system prompt, sessions of several turns,
10,000 requests by default) on full attention + sliding window + Mamba in
align mode, and counts block-pool operations (allocations, frees, hit
references, cachings, lookups: ``BlockPool.operations``). Prints operations,
the time (wall clock, and this process's CPU time, which another process on
a shared machine disturbs less), the rates, and the run's metrics. Run:
``make bench-engine``; ``--profile`` (with one ``--engine``) prints the top of a
cProfile.

``--engine`` chooses what runs: the engine as interpreted, as compiled by
mypyc (``junction.reference.engine.compiled``: the same source, built by
``make compiled-engine``, refused when stale), or ``both`` (the default):
each in its own child process, alternating, ``--rounds`` times (5 by
default), then the median CPU rate of each and their ratio. ``both`` fails
unless the two engines did exactly the same operations and steps with the
same metrics.

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
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine import compiled
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


def agents(args: argparse.Namespace) -> None:
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
    if args.json:
        result = {"operations": operations, "cpu": cpu, "steps": metrics.steps}
        print(json.dumps({**result, "metrics": repr(metrics)}))
        return
    print(
        f"{len(arrivals):,} requests, R={args.retention}: {operations:,} block operations in "
        f"{elapsed:.1f} s = {operations / elapsed:,.0f} ops/s "
        f"(CPU {cpu:.1f} s = {operations / cpu:,.0f} ops/s); {metrics.steps:,} steps, "
        f"hit rate {metrics.token_hit_rate:.3f}, evictions {metrics.evictions:,}, "
        f"preemptions {metrics.preemptions}"
    )
    if profiler:
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


def side_by_side(args: argparse.Namespace) -> None:
    """Both engines in child processes, alternating; their medians and ratio."""
    # Once, before any run: a stale build names what changed.
    environments = {
        "interpreted": compiled.interpreted_environment(),
        "compiled": compiled.environment(),
    }
    runs: dict[str, list[dict[str, Any]]] = {"interpreted": [], "compiled": []}
    flags = [f"--requests={args.requests}", f"--turns={args.turns}", "--json"]
    flags.append(f"--retention={'none' if args.retention is None else args.retention}")
    for _ in range(args.rounds):
        for engine in runs:
            command = [sys.executable, "-P", "-m", "benchmarks.bench_engine", *flags]
            done = subprocess.run(
                [*command, f"--engine={engine}"],
                env=environments[engine],
                capture_output=True,
                text=True,
                check=True,
            )
            run = json.loads(done.stdout.splitlines()[-1])
            runs[engine].append(run)
            rate = run["operations"] / run["cpu"]
            print(
                f"{engine:>11}: {run['operations']:,} operations, CPU {run['cpu']:.2f} s "
                f"= {rate:,.0f} ops/s"
            )
    outcomes = {(r["operations"], r["steps"], r["metrics"]) for rs in runs.values() for r in rs}
    if len(outcomes) != 1:
        raise SystemExit(f"the engines' runs differ: {sorted(outcomes)}")
    medians = {
        engine: statistics.median(r["operations"] / r["cpu"] for r in rs)
        for engine, rs in runs.items()
    }
    print(
        f"{args.requests:,} requests, {args.rounds} rounds, the same "
        f"{runs['compiled'][0]['operations']:,} operations in each run: median CPU rate "
        f"interpreted {medians['interpreted']:,.0f} ops/s, compiled {medians['compiled']:,.0f} "
        f"ops/s ({medians['compiled'] / medians['interpreted']:.2f}x)"
    )


def in_this_process(args: argparse.Namespace) -> None:
    """``--engine interpreted`` or ``compiled`` here (compiled: re-run in its environment)."""
    if args.engine == "compiled":
        try:
            compiled.assert_compiled()
        except compiled.StaleBuild:
            environment = compiled.environment()
            if os.environ.get("PYTHONPATH") == environment["PYTHONPATH"]:
                raise  # already run in the build's environment: again would loop
            argv = [sys.executable, "-P", "-m", "benchmarks.bench_engine", *sys.argv[1:]]
            os.execve(sys.executable, argv, environment)
    if args.trace:
        trace(args)
    else:
        agents(args)


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
    parser.add_argument(
        "--engine",
        choices=["both", "interpreted", "compiled"],
        default="both",
        help="both (default: side by side in child processes), or one, in this process",
    )
    parser.add_argument("--rounds", type=int, default=5, help="runs of each engine with both")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--trace",
        type=int,
        default=0,
        metavar="N",
        help="replay the first N requests of the Mooncake conversation trace instead",
    )
    args = parser.parse_args()
    if args.engine == "both" and (args.trace or args.profile):
        parser.error("--trace and --profile run one engine: give --engine interpreted|compiled")
    if args.engine == "both":
        side_by_side(args)
    else:
        in_this_process(args)


if __name__ == "__main__":
    main()
