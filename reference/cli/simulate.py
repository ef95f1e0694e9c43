"""``python -m junction.reference simulate``: the options, the progress line and the outputs.

Argparse and printing only: what a run computes is
``junction.reference.simulator`` (geometries, variants, the workload, the
runs, the table, the report, the plot). Standard output is the table and
nothing else, byte for byte what ``docs/demo/simulate.txt`` holds; the
workload line, the progress line and the list of files written go to
standard error. Option values the simulator would reject (an ``R`` that is
not a multiple of a geometry's ``L``, a bad trace), an ``--out`` that cannot
be written and a simulation too large for memory (``simulator.memory``) exit
with status 2 naming the option, before anything runs. The files are
one set (``cli.outputs``): written together once every run has ended, or not
at all; ``--no-plot`` removes the PNGs left from an earlier run, so the folder
never mixes two runs. A set that cannot be written at the end (the disk
filled up meanwhile) exits with status 1 and leaves the previous set.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn, cast

import attrs

from junction.core import HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.tier import TierSaving
from junction.reference.policies.builtin import DensePolicy
from junction.reference.simulator.geometries import DEFAULT_GEOMETRIES, GEOMETRIES
from junction.reference.simulator.instances import ROUTES
from junction.reference.simulator.latency_plot import render_ttft_plot
from junction.reference.simulator.memory import (
    TRACE_BYTES_PER_FILE_BYTE,
    SimulationSize,
    builtin_prompt_tokens,
    memory_limit,
    size_in_words,
)
from junction.reference.simulator.parallel import (
    BuiltinSource,
    RunSpec,
    TraceSource,
    run_all,
    workers,
)
from junction.reference.simulator.plot import render_plot
from junction.reference.simulator.pool import PoolSize
from junction.reference.simulator.report import report
from junction.reference.simulator.result import RunResult
from junction.reference.simulator.run import (
    ARRIVALS,
    EVICTION_POLICIES,
    Arrivals,
    Settings,
    simulate,
)
from junction.reference.simulator.table import format_table, format_tier, format_times
from junction.reference.simulator.variants import sweep_variants, table_variants
from junction.reference.simulator.workload import (
    Workload,
    builtin_workload,
    hash_trace_workload,
    trace_workload,
)
from junction.reference.workloads.drive import PoolTooSmall
from junction.reference.workloads.mooncake import HashTraceRequest
from junction.reference.workloads.step_time import StepTimeModel
from junction.reference.workloads.trace import TraceError, TraceRequest
from junction.reference.workloads.tracefile import parse_any_trace, read_trace_text

from . import outputs, terminal
from .arguments import (
    geometry_name,
    int_at_least,
    output_path,
    pool_blocks,
    pool_fraction,
    pool_tokens,
)

__all__ = ["add_parser"]

DESCRIPTION = """\
The reference engine runs one workload (built in, or a trace) on each
built-in hybrid geometry under four retention policies:

* dense: every materialised block is cached (R = None);
* interval R: one checkpoint per R-token segment plus the replay
  boundary, never the junction;
* R=0 unpinned: the replay boundary only (vLLM before PR #47782);
* R=0 pinned: the replay boundary and the junction (the default policy).

It prints one table per geometry (token hit rate, system-prompt hit rate,
prefill tokens computed and the share of prompt tokens saved, forward steps,
sparse-group blocks retained at the peak and at the end, evictions, prefill
FLOPs saved under the geometry's FLOP model), then one
of modelled times per geometry (time to first token and queueing: p50, p90,
p99; the makespan), writes a JSON file with every number, a PNG plot of hit
rate against retained blocks (over a sweep of retention intervals, pinned and
unpinned) and a PNG of each policy's distribution of time to first token.

Arrivals (--arrivals): sessions is closed-loop, like agents: --concurrency
sessions are open at a time, each sends its next turn once the previous one
has finished, and a new session opens when one ends (the default without
timestamps). trace sends each request at its timestamp on the engine's clock
(the default for a trace with timestamps). sequential sends one request at a
time, each once the previous finished: nothing competes for the pool, the
upper bound of reuse.

The runs are independent: --jobs of them at once in worker processes
(simulator.parallel; default the CPU count), each loading the workload
from its source; the progress line then counts a run's requests when it
ends. With --jobs 1 they run one after another in this process and the
progress line counts every request as it finishes.

Instances and an external tier (--instances N, --tier BLOCKS): N engines,
each with its own pool, save to and load from one shared store of BLOCKS
blocks (least recently used evicted first); each request goes to one
instance by --route (round-robin over requests in arrival order, or session:
a session's turns on one instance). --tier-saving says what the save path
hands the retention policy's mask: policy (its own boundaries: the default
policy's include the junction) or vllm-0.33 (vLLM 0.33.0's Mooncake store
connector: the replay boundary only); repeat it to run both. A third table
then gives each instance's hit rate, the tokens loaded from the tier and its
occupancy. Several instances need trace or sequential arrivals.

Times are modelled, not measured: the engine's clock advances by a step-time
model from what each step scheduled (--step-ms, --prefill-token-us,
--attention-us-per-ktoken, --decode-row-us; the defaults are illustrative).

A turn of the built-in workload resends the whole session so far, so turns
reuse their predecessors' prompts and every session shares the system
prompt. The system-prompt hit rate counts, over every request, the tokens of
the longest prefix shared by all prompts (the system prompt) that the request
reused.
"""

DEFAULT_INTERVALS = (64, 128, 256, 512, 1024)
# --row: the table's rows by name, in table_variants' order.
ROWS = ("dense", "interval", "unpinned", "pinned")
JSON, TEXT, PLOT = "simulate.json", "simulate.txt", "simulate.png"
TTFT_PLOT = "simulate-ttft.png"


def _intervals(text: str) -> tuple[int, ...]:
    if text == "none":
        return ()
    values = []
    for item in text.split(","):
        try:
            value = int(item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{item!r} is not an int") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{value}: intervals must be >= 1")
        values.append(value)
    return tuple(sorted(set(values)))


def _milliseconds(text: str) -> float:
    """A cost of the step-time model: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < 1e9:  # also rejects nan and inf
        raise argparse.ArgumentTypeError(f"{text}: a cost must be a number in [0, 1e9)")
    return value


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``simulate`` on ``python -m junction.reference``'s subcommands."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "simulate",
        help="retention policies on an agent workload: hit rate vs retained blocks",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    at_least_1 = int_at_least(1)
    parser.add_argument(
        "--geometry",
        type=geometry_name,
        action="append",
        metavar="NAME",
        help=f"geometry to run, repeatable ({', '.join(GEOMETRIES)}; "
        f"default: {' and '.join(DEFAULT_GEOMETRIES)})",
    )
    parser.add_argument(
        "--sessions", type=at_least_1, default=48, help="agent sessions (default 48)"
    )
    parser.add_argument("--turns", type=at_least_1, default=4, help="turns per session (default 4)")
    parser.add_argument(
        "--system-prompt",
        type=at_least_1,
        default=1500,
        metavar="TOKENS",
        help="system prompt tokens (default 1500)",
    )
    parser.add_argument(
        "--concurrency", type=at_least_1, default=8, help="sessions open at once (default 8)"
    )
    pool = parser.add_mutually_exclusive_group()
    pool.add_argument(
        "--blocks",
        type=pool_blocks,
        default=PoolSize("blocks", 40_000),
        metavar="N|unbounded",
        help="KV-cache pool size in blocks, or unbounded (never evicts); lower it for "
        "eviction pressure (default 40000)",
    )
    pool.add_argument(
        "--pool-tokens",
        dest="blocks",
        type=pool_tokens,
        metavar="N",
        help="instead: a pool holding N tokens in every group at once",
    )
    pool.add_argument(
        "--pool-fraction",
        dest="blocks",
        type=pool_fraction,
        metavar="F",
        help="instead: F in (0, 1] of the working set (every distinct full prompt block)",
    )
    parser.add_argument(
        "--budget",
        type=at_least_1,
        default=2048,
        metavar="TOKENS",
        help="tokens scheduled per step (default 2048)",
    )
    parser.add_argument(
        "--chunk",
        type=int_at_least(0),
        default=256,
        metavar="TOKENS",
        help="prefill tokens per request per step, 0 for no cap (default 256)",
    )
    parser.add_argument(
        "--interval",
        type=at_least_1,
        default=256,
        metavar="R",
        help="the table's interval policy R, a multiple of every geometry's L (default 256)",
    )
    parser.add_argument(
        "--intervals",
        type=_intervals,
        metavar="R,R,...|none",
        help="the plot's sweep of R (default "
        + ",".join(map(str, DEFAULT_INTERVALS))
        + "; none for a trace: the table's rows alone, four runs per geometry)",
    )
    parser.add_argument(
        "--eviction",
        choices=EVICTION_POLICIES,
        default="lru",
        help="which free cached block a full pool recycles: lru (least recently freed, "
        "the default) or flop-aware (after Marconi: recency and prefill FLOPs saved per "
        "byte under the geometry's FLOP model; docs/eviction.md)",
    )
    parser.add_argument(
        "--arrivals",
        choices=ARRIVALS,
        help="when requests are sent: sessions (closed loop, --concurrency at once), trace "
        "(at their timestamps), sequential (one at a time); default: trace for a trace "
        "with timestamps, else sessions",
    )
    model = StepTimeModel()
    for option, field, unit in (
        ("--step-ms", "step_ms", "ms per step"),
        ("--prefill-token-us", "prefill_token_us", "us per prefill token"),
        (
            "--attention-us-per-ktoken",
            "attention_us_per_ktoken",
            "us per prefill token per 1,000 tokens of context",
        ),
        ("--decode-row-us", "decode_row_us", "us per decode row"),
    ):
        parser.add_argument(
            option,
            type=_milliseconds,
            default=getattr(model, field),
            metavar="X",
            help=f"step-time model: {unit} (default {getattr(model, field):g})",
        )
    parser.add_argument(
        "--eagle",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="EAGLE speculative decoding (default off)",
    )
    parser.add_argument("--seed", type=int_at_least(0), default=0, help="workload seed (default 0)")
    parser.add_argument(
        "--trace",
        metavar="FILE",
        help="replay a JSONL trace instead, token-id or hash-id (Mooncake), plain or gzip "
        "(docs/trace-format.md)",
    )
    parser.add_argument(
        "--requests",
        type=at_least_1,
        metavar="N",
        help="with --trace: replay only its first N requests (file order)",
    )
    parser.add_argument(
        "--out",
        type=output_path,
        default=Path("out"),
        metavar="DIR",
        help="where simulate.json and simulate.png go (default out/)",
    )
    parser.add_argument(
        "--row",
        choices=ROWS,
        action="append",
        help="run only these rows of the table, repeatable, and no sweep (default all four "
        "and the --intervals sweep; a tier's comparison needs only pinned)",
    )
    parser.add_argument(
        "--instances",
        type=at_least_1,
        default=1,
        metavar="N",
        help="engine instances sharing the tier (default 1)",
    )
    parser.add_argument(
        "--tier",
        type=at_least_1,
        metavar="BLOCKS",
        help="an external KV store tier of BLOCKS blocks that the instances share",
    )
    parser.add_argument(
        "--route",
        choices=ROUTES,
        default="round-robin",
        help="which instance a request goes to (default round-robin)",
    )
    parser.add_argument(
        "--tier-saving",
        choices=[saving.value for saving in TierSaving],
        action="append",
        help="what the tier's save path hands the mask, repeatable (default policy)",
    )
    parser.add_argument("--no-plot", action="store_true", help="skip the PNGs")
    parser.add_argument(
        "--jobs",
        type=at_least_1,
        metavar="N",
        help=f"runs at once, in worker processes (default: the CPU count, {os.cpu_count()} "
        "here; 1: one after another in this process, the progress line counting each request)",
    )
    parser.set_defaults(run=lambda args: run(args, parser))
    return parser


def _checked_geometries(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[str]:
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


def _fail(parser: argparse.ArgumentParser, error: Exception | str) -> NoReturn:
    parser.error(str(error))


def _check_size(
    size: SimulationSize, source: str, args: argparse.Namespace, parser: argparse.ArgumentParser
) -> None:
    """Refuse (status 2) a pool, or a pool and a workload, over the memory limit."""
    limit = memory_limit()
    over = f"over the limit of {size_in_words(limit.bytes)} ({limit.source})"
    pool = args.blocks.option
    if args.blocks.kind != "blocks":
        pool += f" ({size.blocks:,} blocks)"
    if size.pool_bytes > limit.bytes:
        _fail(
            parser,
            f"{pool}: the pool would need about {size_in_words(size.pool_bytes)}, {over}",
        )
    if size.total_bytes > limit.bytes:
        _fail(
            parser,
            f"the simulation would need about {size_in_words(size.total_bytes)} "
            f"(a workload of {size.prompt_tokens:,} prompt tokens from {source}: "
            f"{size_in_words(size.workload_bytes)}; a pool of {pool}: "
            f"{size_in_words(size.pool_bytes)}), {over}",
        )


def _known_pool(args: argparse.Namespace, geometries: list[str]) -> int:
    """The largest pool known before the workload is (blocks, tokens), else 0."""
    pool: PoolSize = args.blocks
    return max(
        pool.blocks(GEOMETRIES[name].build(None, args.eagle), None) or 0 for name in geometries
    )


def _workload(
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
    trace = Path(args.trace)
    _check_size(SimulationSize(0, pool, workload_built=False), str(trace), args, parser)
    if trace.exists() and not trace.is_file():  # a device or a pipe: no size to check
        _fail(parser, f"--trace {trace}: must be a regular file (its size is checked first)")
    limit = memory_limit()
    file_size = trace.stat().st_size if trace.exists() else 0  # missing: reading says
    if file_size * TRACE_BYTES_PER_FILE_BYTE > limit.bytes:
        _fail(
            parser,
            f"--trace {trace}: a file of {size_in_words(file_size)} would need about "
            f"{size_in_words(file_size * TRACE_BYTES_PER_FILE_BYTE)} to load, over the limit "
            f"of {size_in_words(limit.bytes)} ({limit.source})",
        )
    try:
        text = read_trace_text(trace, limit.bytes // TRACE_BYTES_PER_FILE_BYTE)
        requests = parse_any_trace(text, args.trace)
    except TraceError as error:
        _fail(parser, f"--trace: {error}")
    if args.requests is not None:
        requests = requests[: args.requests]
    if requests and isinstance(requests[0], HashTraceRequest):
        hashed = requests
        tokens = sum(request.input_length for request in hashed)
        # Prompts are built at submission (hash_prompts.HashArrival): only the run's share.
        size = SimulationSize(tokens, pool, workload_built=False)
        _check_size(size, f"--trace {trace}", args, parser)
        return hash_trace_workload(args.trace, hashed)
    workload = trace_workload(args.trace, cast(list[TraceRequest], requests))
    size = SimulationSize(workload.prompt_tokens, pool, workload_built=False)
    _check_size(size, f"--trace {trace}", args, parser)
    return workload


def _pools(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    geometries: list[str],
    workload: Workload,
) -> int | dict[str, int]:
    """The pool of each geometry (one int for ``--blocks N``), checked against memory."""
    pool: PoolSize = args.blocks
    if pool.kind == "blocks" and isinstance(pool.value, int):
        return pool.value
    pools = {
        name: pool.blocks(GEOMETRIES[name].build(None, args.eagle), workload) or 0
        for name in geometries
    }
    size = SimulationSize(workload.prompt_tokens, max(pools.values()), workload_built=False)
    _check_size(size, workload.source, args, parser)
    return pools


def _source(args: argparse.Namespace) -> BuiltinSource | TraceSource:
    """Where a worker process loads the workload from (never its tokens: they are rebuilt)."""
    if args.trace is None:
        return BuiltinSource(args.seed, args.sessions, args.turns, args.system_prompt)
    return TraceSource(args.trace, args.requests)


def _check_workers(
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
    blocks = max(settings.blocks_for(name) for name in args.geometry or DEFAULT_GEOMETRIES)
    size = SimulationSize(workload.prompt_tokens, blocks, workload.holds_prompts)
    each = size.total_bytes
    limit = memory_limit()
    if each * jobs > limit.bytes:
        _fail(
            parser,
            f"--jobs {jobs}: {jobs} workers would need about {size_in_words(each * jobs)} "
            f"({size_in_words(each)} each), over the limit of {size_in_words(limit.bytes)} "
            f"({limit.source}); use fewer --jobs or a smaller pool",
        )


def _arrivals(
    args: argparse.Namespace, parser: argparse.ArgumentParser, workload: Workload
) -> Arrivals:
    """``--arrivals``, or its default: ``trace`` when every request has a timestamp."""
    arrivals: Arrivals | None = args.arrivals
    if arrivals is None:
        return "trace" if workload.timestamped else "sessions"
    if arrivals == "trace" and not workload.timestamped:
        _fail(
            parser,
            "--arrivals trace: the workload has no timestamps (the built-in workload and "
            "token-id traces have none); use sessions or sequential",
        )
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


def _check_tier(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    geometries: list[str],
    workload: Workload,
    settings: Settings,
) -> None:
    """Refuse several instances in a closed loop, and a tier below one request's need."""
    if settings.instances > 1 and settings.arrivals == "sessions":
        _fail(
            parser,
            f"--instances {settings.instances}: several instances need --arrivals trace or "
            "sequential (a closed loop would cross the instances' clocks)",
        )
    if args.tier is None:
        return
    for name in geometries:
        geometry = GEOMETRIES[name].build(None, args.eagle)
        need, index = _request_need(geometry, settings, workload)
        if args.tier < need:
            _fail(
                parser,
                f"--tier {args.tier}: smaller than one request's need (request {index} needs "
                f"{need:,} blocks under geometry {name})",
            )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.requests is not None and args.trace is None:
        parser.error("--requests: only with --trace (the first N requests of the trace)")
    if args.intervals is None:  # a trace's runs are long: the table's rows alone
        args.intervals = DEFAULT_INTERVALS if args.trace is None else ()
    geometries = _checked_geometries(args, parser)
    if not args.no_plot and importlib.util.find_spec("matplotlib") is None:
        parser.error(
            "the plot needs matplotlib: run `make setup` (or pip install -e '.[demo]'), "
            "or pass --no-plot"
        )
    try:
        outputs.check_folder("--out", args.out, (JSON, TEXT, PLOT, TTFT_PLOT))
    except outputs.OutputError as error:
        _fail(parser, error)
    workload = _workload(args, parser, geometries)
    settings = Settings(
        num_blocks=_pools(args, parser, geometries, workload),
        max_num_batched_tokens=args.budget,
        chunk_tokens=args.chunk,
        use_eagle=args.eagle,
        concurrency=args.concurrency,
        seed=args.seed,
        arrivals=_arrivals(args, parser, workload),
        step_time=StepTimeModel(
            args.step_ms, args.prefill_token_us, args.attention_us_per_ktoken, args.decode_row_us
        ),
        instances=args.instances,
        tier_blocks=args.tier or 0,
        route=args.route,
        eviction=args.eviction,
    )
    _check_tier(args, parser, geometries, workload, settings)
    savings = list(dict.fromkeys(args.tier_saving or [TierSaving.POLICY.value]))
    runs_settings = [attrs.evolve(settings, tier_saving=saving) for saving in savings]
    if not settings.tiered:
        runs_settings = runs_settings[:1]
    table = table_variants(args.interval)
    if args.row:
        table = tuple(v for name, v in zip(ROWS, table, strict=True) if name in args.row)
    # --row names the runs exactly: no sweep points besides them.
    sweep = () if args.row else sweep_variants(args.intervals)
    variants = list(dict.fromkeys((*table, *sweep)))
    print(
        f"workload: {workload.source}; {workload.requests} requests, "
        f"{workload.prompt_tokens:,} prompt tokens, system prompt (shared prefix) "
        f"{workload.shared_prefix_tokens} tokens; arrivals: {settings.arrivals}",
        file=sys.stderr,
    )
    runs = len(geometries) * len(variants) * len(runs_settings)
    jobs = workers(args.jobs, runs)
    _check_workers(args, parser, workload, settings, jobs)
    try:
        with terminal.progress("requests", runs * workload.requests) as advance:
            if jobs == 1:

                def done(result: RunResult) -> None:
                    advance(0, status=f"{result.geometry} {result.variant.label} done")

                results = [
                    result
                    for each in runs_settings
                    for result in simulate(workload, geometries, variants, each, done, advance)
                ]
            else:  # a worker's run is heard of when it ends: all its requests at once

                def ended(result: RunResult) -> None:
                    label = f"{result.geometry} {result.variant.label} done"
                    advance(workload.requests, status=label)

                specs = [
                    RunSpec(_source(args), name, variant, each)
                    for each in runs_settings
                    for name in geometries
                    for variant in variants
                ]
                results = run_all(specs, jobs=jobs, on_result=ended)
    except PoolTooSmall as error:
        print(
            f"python -m junction.reference simulate: error: {error}; use more --blocks",
            file=sys.stderr,
        )
        return 1
    rows = {
        name: [r for v in table for r in results if r.geometry == name and r.variant == v]
        for name in geometries
    }
    text = "\n\n".join(format_table(name, rows[name]) for name in geometries)
    text += (
        f"\n\narrivals: {settings.arrivals}; eviction: {settings.eviction}; "
        f"{settings.step_time.describe()}\n\n"
    )
    text += "\n\n".join(format_times(name, rows[name]) for name in geometries)
    if settings.tiered:
        text += "\n\n" + "\n\n".join(format_tier(name, rows[name]) for name in geometries)
    print(text)
    document = report(workload, geometries, settings, args.interval, args.intervals, results)
    files = {JSON: (json.dumps(document, indent=1) + "\n").encode(), TEXT: (text + "\n").encode()}
    if not args.no_plot:
        files[PLOT] = render_plot(geometries, results)
        files[TTFT_PLOT] = render_ttft_plot(geometries, results, table)
    try:
        stale = (PLOT, TTFT_PLOT) if args.no_plot else ()
        written = outputs.commit(args.out, files, stale=stale)
    except outputs.OutputError as error:
        print(f"{parser.prog}: error: {error}; nothing written", file=sys.stderr)
        return 1
    print(f"wrote {', '.join(map(str, written))}", file=sys.stderr)
    return 0
