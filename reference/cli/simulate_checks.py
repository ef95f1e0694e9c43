"""What ``simulate`` refuses before anything runs, each refusal naming the option.

Every check here ends in ``parser.error`` (status 2, one line) or returns
what the run goes on with: the geometries asked for, each ``R`` a multiple of
their ``L``; the workload, its size checked against the memory limit before
it is built (a trace's file size before it is read); each geometry's pool;
the arrivals; the workers' memory; a tier and several instances. Sizes are
the estimates of ``simulator.memory``. The options themselves are
``cli.simulate_options``; the run and its outputs ``cli.simulate``.
"""

from __future__ import annotations

import argparse

from junction.core import HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.policies.builtin import DensePolicy
from junction.reference.simulator.geometries import DEFAULT_GEOMETRIES, GEOMETRIES
from junction.reference.simulator.memory import (
    SimulationSize,
    builtin_prompt_tokens,
    memory_limit,
    size_in_words,
)
from junction.reference.simulator.pool import PoolSize
from junction.reference.simulator.run import Arrivals, Settings
from junction.reference.simulator.workload import (
    Workload,
    builtin_workload,
    trace_file_workload,
)
from junction.reference.workloads.hash_prompts import HashArrival

from .inputs import InputError, check_clock, load_trace

__all__ = [
    "check_engines",
    "check_tier",
    "check_workers",
    "checked_arrivals",
    "checked_geometries",
    "load_workload",
    "pools_checked",
]


def checked_geometries(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[str]:
    """The geometries asked for, each once; every ``R`` must be a multiple of each one's ``L``."""
    geometries: list[str] = list(dict.fromkeys(args.geometry or DEFAULT_GEOMETRIES))
    for name in geometries:
        block = GEOMETRIES[name].scheduler_block
        for option, values in (("--interval", (args.interval,)), ("--intervals", args.intervals)):
            for value in values:
                if value % block:
                    parser.error(
                        f"{option} {value}: must be a multiple of the scheduler block "
                        f"L={block} of geometry {name}"
                    )
    return geometries


def _check_size(
    size: SimulationSize, source: str, args: argparse.Namespace, parser: argparse.ArgumentParser
) -> None:
    """Refuse (status 2) a pool, or a pool and a workload, over the memory limit."""
    limit = memory_limit()
    over = f"over the limit of {size_in_words(limit.bytes)} ({limit.source})"
    pool = args.pool.option
    if args.pool.kind != "blocks":
        pool += f" ({size.blocks:,} blocks)"
    if size.pool_bytes > limit.bytes:
        parser.error(f"{pool}: the pool would need about {size_in_words(size.pool_bytes)}, {over}")
    if size.total_bytes > limit.bytes:
        parser.error(
            f"the simulation would need about {size_in_words(size.total_bytes)} "
            f"(a workload of {size.prompt_tokens:,} prompt tokens from {source}: "
            f"{size_in_words(size.workload_bytes)}; a pool of {pool}: "
            f"{size_in_words(size.pool_bytes)}), {over}"
        )


def _known_pool(args: argparse.Namespace, geometries: list[str]) -> int:
    """The largest pool known before the workload is (blocks, tokens), else 0."""
    pool: PoolSize = args.pool
    return max(
        pool.blocks(GEOMETRIES[name].build(None, args.eagle), None) or 0 for name in geometries
    )


def load_workload(
    args: argparse.Namespace, parser: argparse.ArgumentParser, geometries: list[str]
) -> Workload:
    """The workload, its size checked before it is built (a trace's: before it is read)."""
    pool = _known_pool(args, geometries)
    if args.trace is None:
        tokens = builtin_prompt_tokens(args.sessions, args.turns, args.system_prompt)
        source = f"--sessions {args.sessions} --turns {args.turns} "
        source += f"--system-prompt {args.system_prompt}"
        _check_size(SimulationSize(tokens, pool, workload_built=True), source, args, parser)
        return builtin_workload(args.seed, args.sessions, args.turns, args.system_prompt)
    _check_size(SimulationSize(0, pool, workload_built=False), args.trace, args, parser)
    try:
        loaded = load_trace("--trace", args.trace, args.requests)
    except InputError as error:
        parser.error(str(error))
    args.trace_digest = loaded.digest  # what --jobs workers must read again
    requests = loaded.requests
    # A hash-id trace's prompts are built at submission (hash_prompts.HashArrival).
    workload = trace_file_workload(args.trace, requests)
    size = SimulationSize(workload.prompt_tokens, pool, workload_built=False)
    _check_size(size, f"--trace {args.trace}", args, parser)
    return workload


def pools_checked(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    geometries: list[str],
    workload: Workload,
) -> int | dict[str, int]:
    """The pool of each geometry (one int for ``--blocks N``), checked against memory."""
    pool: PoolSize = args.pool
    if pool.kind == "blocks" and isinstance(pool.value, int):
        return pool.value
    pools = {
        name: pool.blocks(GEOMETRIES[name].build(None, args.eagle), workload) or 0
        for name in geometries
    }
    size = SimulationSize(workload.prompt_tokens, max(pools.values()), workload_built=False)
    _check_size(size, workload.source, args, parser)
    return pools


def check_workers(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    workload: Workload,
    settings: Settings,
    jobs: int,
) -> None:
    """Refuse (status 2) ``jobs`` workers that together would exceed the memory limit.

    Each holds the workload (its prompts too, unless built at submission) and one run
    at once (the estimate of ``simulator.memory``).
    """
    if jobs == 1:
        return
    size = _run_size(args, workload, settings)
    each = size.total_bytes
    limit = memory_limit()
    if each * jobs > limit.bytes:
        parser.error(
            f"--jobs {jobs}: {jobs} workers would need about {size_in_words(each * jobs)} "
            f"({size_in_words(each)} each), over the limit of {size_in_words(limit.bytes)} "
            f"({limit.source}); use fewer --jobs or a smaller pool"
        )


def _run_size(args: argparse.Namespace, workload: Workload, settings: Settings) -> SimulationSize:
    """One run's estimate: the workload, every instance's pool and the tier."""
    blocks = max(settings.blocks_for(name) for name in args.geometry or DEFAULT_GEOMETRIES)
    return SimulationSize(
        workload.prompt_tokens,
        blocks,
        workload.holds_prompts,
        instances=settings.instances,
        tier_blocks=settings.tier_blocks,
    )


def check_engines(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    workload: Workload,
    settings: Settings,
) -> None:
    """Refuse (status 2) a run whose instances' pools and tier exceed the memory limit."""
    size = _run_size(args, workload, settings)
    limit = memory_limit()
    if size.total_bytes > limit.bytes:
        parser.error(
            f"--instances {settings.instances}: a run would need about "
            f"{size_in_words(size.total_bytes)} ({settings.instances:,} pools of "
            f"{size.blocks:,} blocks and a tier of {settings.tier_blocks:,}: "
            f"{size_in_words(size.pool_bytes)}; the workload: "
            f"{size_in_words(size.workload_bytes)}), "
            f"over the limit of {size_in_words(limit.bytes)} ({limit.source})"
        )


def checked_arrivals(
    args: argparse.Namespace, parser: argparse.ArgumentParser, workload: Workload
) -> Arrivals:
    """``--arrivals``, or its default: ``trace`` when every request has a timestamp."""
    arrivals: Arrivals | None = args.arrivals
    if arrivals is None:
        arrivals = "trace" if workload.timestamped else "sessions"
    elif arrivals == "trace" and not workload.timestamped:
        parser.error(
            "--arrivals trace: the workload has no timestamps (the built-in workload and "
            "token-id traces have none); use sessions or sequential"
        )
    if arrivals == "trace":
        try:
            check_clock(
                "--trace", [t.request for t in workload.turns if isinstance(t, HashArrival)]
            )
        except InputError as error:
            parser.error(str(error))
    return arrivals


def _request_need(
    geometry: HybridGeometry, settings: Settings, workload: Workload
) -> tuple[int, int]:
    """The most blocks one request of the workload needs at once (the pool's measure),
    and that request's index."""
    # A pool never runs here: the engine only sizes requests, with the run's chunk limit.
    engine = Engine(
        EngineConfig(
            geometry,
            num_blocks=2,
            max_num_batched_tokens=settings.max_num_batched_tokens,
            long_prefill_token_threshold=settings.chunk_tokens,
            policy=DensePolicy(),
        )
    )
    needs = [
        engine.blocks_at_peak(turn.prompt_length + turn.max_output_tokens - 1)
        for turn in workload.turns
    ]
    index = max(range(len(needs)), key=needs.__getitem__)
    return needs[index], index


def check_tier(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    geometries: list[str],
    workload: Workload,
    settings: Settings,
) -> None:
    """Refuse several instances in a closed loop, and a tier below one request's need."""
    if settings.instances > 1 and settings.arrivals == "sessions":
        parser.error(
            f"--instances {settings.instances}: several instances need --arrivals trace or "
            "sequential (a closed loop would cross the instances' clocks)"
        )
    if args.tier is None:
        return
    for name in geometries:
        geometry = GEOMETRIES[name].build(None, args.eagle)
        need, index = _request_need(geometry, settings, workload)
        if args.tier < need:
            parser.error(
                f"--tier {args.tier}: smaller than one request's need (request {index} needs "
                f"{need:,} blocks under geometry {name})"
            )
