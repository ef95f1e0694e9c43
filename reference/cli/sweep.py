"""``junction sweep``: every combination of a simulation sweep, in parallel.

The sweep is the product workloads x pool sizes x geometries x variants (the
policies at every retention interval; dense once). Each combination is one
run (``simulator.parallel``), in ``--jobs`` worker processes or on a Ray
cluster (``--ray``); ``sweep.json`` and ``sweep.txt`` are byte for byte the
same wherever the runs ran. Standard output is the tables; progress and the
files written go to standard error, and the two files are one set
(``cli.outputs``). Everything checkable before a run (geometries, policies,
intervals, Ray, traces, ``--out``, the workers' memory) exits 2 naming the
option, a trace read, parsed and sized here once (``cli.inputs``: a malformed
line, a file that is not regular, a clock with an outlier exit 2); a pool too
small for a request ends it with 1. Why a command of its own: docs/design/sweep-command.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from junction.reference.simulator.geometries import DEFAULT_GEOMETRIES, GEOMETRIES
from junction.reference.simulator.memory import (
    TRACE_BYTES_PER_FILE_BYTE,
    SimulationSize,
    builtin_prompt_tokens,
    memory_limit,
    size_in_words,
)
from junction.reference.simulator.parallel import (
    ArrivalsChoice,
    BuiltinSource,
    NotTimestamped,
    RayUnreachable,
    RunSpec,
    TraceSource,
    WorkloadSource,
    ray_endpoint,
    run_all,
    workers,
)
from junction.reference.simulator.pool import PoolSize
from junction.reference.simulator.result import RunResult
from junction.reference.simulator.run import Settings
from junction.reference.simulator.table import format_table, format_times
from junction.reference.simulator.variants import COMPARED_POLICIES, Variant
from junction.reference.simulator.workload import trace_file_workload
from junction.reference.workloads.drive import PoolTooSmall
from junction.reference.workloads.trace import TraceError

from . import options, outputs, terminal
from .inputs import InputError, check_clock, load_trace

__all__ = ["add_options", "run", "sweep_specs"]

JSON, TEXT = "sweep.json", "sweep.txt"
DEFAULT_INTERVALS = (0, 256)


def _ray_address(text: str) -> str:
    """``--ray``'s value, its form checked while the arguments are read (before any work)."""
    if text != "auto":
        try:
            ray_endpoint(text)
        except RayUnreachable as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return text


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``sweep``'s options on its parser."""
    parser.description = __doc__
    options.add_trace(
        parser,
        repeatable=True,
        note="; on a Ray cluster, an absolute path every node has (default: the built-in "
        "agent workload)",
    )
    options.add_builtin_workload(parser)
    options.add_seed(parser)
    options.add_geometry(parser)
    options.add_policy(
        parser,
        repeatable=True,
        note=f" (default: {', '.join(COMPARED_POLICIES)}; dense runs once, the others at every R)",
    )
    options.add_intervals(
        parser,
        minimum=0,  # 0: the replay boundary alone
        default=DEFAULT_INTERVALS,
        default_text=",".join(map(str, DEFAULT_INTERVALS)),
    )
    options.add_pools(parser, repeatable=True)
    options.add_step(parser, chunk=256)
    options.add_scheduling(parser)
    where = parser.add_mutually_exclusive_group()
    options.add_jobs(where, default=None)
    where.add_argument(
        "--ray",
        type=_ray_address,
        metavar="ADDRESS|auto",
        help="run on the Ray cluster at HOST:PORT or ray://HOST:PORT; auto: a local Ray "
        "(the cluster running here, or a new one); needs the ray extra",
    )
    options.add_out(parser, default=Path("out/sweep"), writes="sweep.json and sweep.txt")


def sweep_specs(
    sources: Sequence[WorkloadSource],
    pools: Sequence[PoolSize],
    geometries: Sequence[str],
    policies: Sequence[str],
    intervals: Sequence[int],
    settings: Settings,
    arrivals: ArrivalsChoice,
) -> list[RunSpec]:
    """Every combination, workload outermost (a worker then loads each workload once)."""
    variants = [
        variant
        for policy in policies
        for variant in (
            [Variant(policy, None)]
            if policy == "dense"
            else [Variant(policy, interval) for interval in intervals]
        )
    ]
    return [
        RunSpec(source, geometry, variant, settings, pool, arrivals)
        for source in sources
        for pool in pools
        for geometry in geometries
        for variant in variants
    ]


def _sources(
    args: argparse.Namespace, parser: argparse.ArgumentParser, tokens: dict[str, int]
) -> list[WorkloadSource]:
    """The workloads, each trace loaded and checked (``cli.inputs``); ``tokens``
    receives each trace's prompt tokens."""
    if args.trace is None:
        if args.requests is not None:
            parser.error("--requests: only with --trace (the first N requests of each trace)")
        if args.arrivals == "trace":
            parser.error("--arrivals trace: the built-in workload has no timestamps")
        return [BuiltinSource(args.seed, args.sessions, args.turns, args.system_prompt)]
    sources: list[WorkloadSource] = []
    for trace in dict.fromkeys(args.trace):
        try:  # read and parsed once here: every worker must read exactly this text
            loaded = load_trace("--trace", trace, args.requests)
            if args.arrivals in (None, "trace"):
                check_clock("--trace", loaded.requests)
        except InputError as error:
            parser.error(str(error))
        tokens[trace] = trace_file_workload(trace, loaded.requests).prompt_tokens
        sources.append(TraceSource(trace, args.requests, loaded.digest))
    return sources


def _check_geometries(
    args: argparse.Namespace, parser: argparse.ArgumentParser, geometries: Sequence[str]
) -> None:
    for name in geometries:
        block = GEOMETRIES[name].scheduler_block
        for value in args.intervals:
            if value % block:
                parser.error(
                    f"--intervals {value}: must be a multiple of the scheduler block "
                    f"L={block} of geometry {name}"
                )


def _check_memory(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    sources: Sequence[WorkloadSource],
    pools: Sequence[PoolSize],
    geometries: Sequence[str],
    processes: int,
    tokens: dict[str, int],
) -> None:
    """Refuse a sweep whose workers together would need more than the memory limit.

    What is known before a run: the built-in workload's size, a trace file's
    loading size and its prompt tokens (``tokens``), and pools given in blocks
    or tokens.
    """
    limit = memory_limit()
    known = [
        pool.blocks(GEOMETRIES[name].build(None, args.eagle), None) or 0
        for pool in pools
        for name in geometries
    ]
    for source in sources:
        if isinstance(source, BuiltinSource):
            built = builtin_prompt_tokens(
                source.sessions, source.turns, source.system_prompt_tokens
            )
            per_worker = SimulationSize(built, max(known), workload_built=True).total_bytes
        else:
            loading = Path(source.path).stat().st_size * TRACE_BYTES_PER_FILE_BYTE
            size = SimulationSize(tokens[source.path], max(known), workload_built=False)
            per_worker = loading + size.total_bytes
        if per_worker * processes > limit.bytes:
            parser.error(
                f"{source.option}: {processes} workers would need about "
                f"{size_in_words(per_worker * processes)} ({size_in_words(per_worker)} each), "
                f"over the limit of {size_in_words(limit.bytes)} ({limit.source}); "
                f"use fewer --jobs or a smaller pool"
            )


def _tables(specs: Sequence[RunSpec], results: Sequence[RunResult], settings_line: str) -> str:
    """One table and one times table per (workload, pool, geometry), in the sweep's order."""
    groups: dict[tuple[str, str, str], list[RunResult]] = {}
    for spec, result in zip(specs, results, strict=True):
        pool = spec.pool.option if spec.pool is not None else ""
        groups.setdefault((spec.source.option, pool, spec.geometry), []).append(result)
    parts = []
    for (source, pool, geometry), rows in groups.items():
        parts.append(
            f"workload {source}; pool {pool}\n{format_table(geometry, rows)}\n\n"
            f"{format_times(geometry, rows)}"
        )
    return "\n\n".join(parts) + f"\n\n{settings_line}"


def _document(
    args: argparse.Namespace,
    geometries: Sequence[str],
    specs: Sequence[RunSpec],
    results: Sequence[RunResult],
    settings: Settings,
) -> dict[str, Any]:
    """The JSON: the sweep's dimensions, the engine settings, and every run with its cell."""
    engine = {
        "max_num_batched_tokens": settings.max_num_batched_tokens,
        "chunk_tokens": settings.chunk_tokens,
        "use_eagle": settings.use_eagle,
        "concurrency": settings.concurrency,
        "seed": settings.seed,
        "arrivals": args.arrivals or "default",
        "step_time": settings.step_time.describe(),
    }
    return {
        "sweep": {
            "workloads": list(dict.fromkeys(spec.source.option for spec in specs)),
            "pools": list(dict.fromkeys(spec.pool.option for spec in specs if spec.pool)),
            "geometries": {name: GEOMETRIES[name].description for name in geometries},
            "policies": list(dict.fromkeys(spec.variant.policy for spec in specs)),
            "intervals": list(args.intervals),
        },
        "settings": engine,
        "runs": [
            {
                "workload": spec.source.option,
                "pool": spec.pool.option if spec.pool is not None else None,
                **result.to_json(),
            }
            for spec, result in zip(specs, results, strict=True)
        ],
    }


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    geometries = list(dict.fromkeys(args.geometry or DEFAULT_GEOMETRIES))
    policies = list(dict.fromkeys(args.policy or COMPARED_POLICIES))
    pools = list(dict.fromkeys(args.pools or [options.DEFAULT_POOL]))
    _check_geometries(args, parser, geometries)
    tokens: dict[str, int] = {}
    sources = _sources(args, parser, tokens)
    if args.ray is not None and importlib.util.find_spec("ray") is None:
        parser.error(f"--ray {args.ray}: Ray is not installed (pip install -e '.[ray]')")
    try:
        outputs.check_folder("--out", args.out, (JSON, TEXT))
    except outputs.OutputError as error:
        parser.error(str(error))
    settings = Settings(
        num_blocks=2,  # each run's pool replaces it (RunSpec.pool)
        max_num_batched_tokens=args.budget,
        chunk_tokens=args.chunk,
        use_eagle=args.eagle,
        concurrency=args.concurrency,
        seed=args.seed,
    )
    arrivals: ArrivalsChoice = args.arrivals or "default"
    specs = sweep_specs(sources, pools, geometries, policies, args.intervals, settings, arrivals)
    # A local Ray runs a task per CPU here; a remote cluster's memory is its own to manage.
    remote = args.ray is not None and args.ray != "auto"
    processes = 1 if remote else workers(args.jobs, len(specs))
    _check_memory(args, parser, sources, pools, geometries, processes, tokens)
    where = f"on Ray ({args.ray})" if args.ray is not None else f"in {processes} process(es)"
    print(f"sweep: {len(specs)} runs {where}", file=sys.stderr)
    try:
        with terminal.progress("sweep", len(specs)) as advance:

            def done(result: RunResult) -> None:
                advance(status=f"{result.geometry} {result.variant.label}")

            results = run_all(specs, jobs=args.jobs, ray=args.ray, on_result=done)
    except RayUnreachable as error:
        parser.error(f"--ray {args.ray}: {error}")
    except TraceError as error:
        parser.error(f"--trace: {error}")
    except NotTimestamped as error:
        parser.error(f"--arrivals trace: {error}; use sessions or sequential")
    except PoolTooSmall as error:
        print(f"{parser.prog}: error: {error}; use a larger pool", file=sys.stderr)
        return 1
    text = _tables(specs, results, f"arrivals: {arrivals}; {settings.step_time.describe()}")
    print(text)
    document = _document(args, geometries, specs, results, settings)
    files = {JSON: (json.dumps(document, indent=1) + "\n").encode(), TEXT: (text + "\n").encode()}
    return outputs.write_set(parser.prog, args.out, files)
