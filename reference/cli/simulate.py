"""``python -m junction.reference simulate``: the run, the progress line and the outputs.

Argparse and printing only: what a run computes is
``junction.reference.simulator``; the options are ``cli.simulate_options``
and what is refused before anything runs ``cli.simulate_checks``. Standard
output is the table and nothing else, byte for byte what
``docs/demo/simulate.txt`` holds; the workload line, progress and files
written go to standard error. A value the simulator would reject, an
``--out`` that cannot be written or a simulation too large for memory exits
2 naming the option, before anything runs. The files are one set
(``cli.outputs``), written together at the end or not at all (status 1,
the previous set left); ``--no-plot`` removes PNGs of an earlier run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Sequence
from typing import Any

import attrs

from junction.reference.engine.policy import PolicyError
from junction.reference.engine.tier import TierSaving
from junction.reference.policies.registry import resolve_policy
from junction.reference.simulator.latency_plot import render_ttft_plot
from junction.reference.simulator.parallel import (
    BuiltinSource,
    RunSpec,
    TraceSource,
    run_all,
    workers,
)
from junction.reference.simulator.plot import render_plot
from junction.reference.simulator.report import report
from junction.reference.simulator.result import RunResult
from junction.reference.simulator.run import Settings, simulate
from junction.reference.simulator.table import format_table, format_tier, format_times
from junction.reference.simulator.variants import Variant, sweep_variants, table_variants
from junction.reference.workloads.drive import PoolTooSmall
from junction.reference.workloads.step_time import StepTimeModel
from junction.reference.workloads.trace import TraceError

from . import outputs, terminal
from .simulate_checks import (
    check_engines,
    check_tier,
    check_workers,
    checked_arrivals,
    checked_geometries,
    load_workload,
    pools_checked,
)
from .simulate_options import DEFAULT_INTERVALS, DESCRIPTION, ROWS, add_options

__all__ = ["add_parser"]

JSON, TEXT, PLOT = "simulate.json", "simulate.txt", "simulate.png"
TTFT_PLOT = "simulate-ttft.png"


def policy_rows(names: Sequence[str], parser: argparse.ArgumentParser) -> tuple[Variant, ...]:
    """``--policy``: each policy a row at R = 0 (dense: every block); one that does not load
    is a usage error (exit 2), before anything runs."""
    for name in names:
        try:
            resolve_policy(name)
        except PolicyError as error:
            parser.error(f"--policy {name}: {error}")
    return tuple(Variant(name, None if name == "dense" else 0) for name in names)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``simulate`` on ``python -m junction.reference``'s subcommands."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "simulate",
        help="retention policies on an agent workload: hit rate vs retained blocks",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(parser)
    parser.set_defaults(run=lambda args: run(args, parser))
    return parser


def _source(args: argparse.Namespace) -> BuiltinSource | TraceSource:
    """Where a worker process loads the workload from (never its tokens: they are rebuilt)."""
    if args.trace is None:
        return BuiltinSource(args.seed, args.sessions, args.turns, args.system_prompt)
    return TraceSource(args.trace, args.requests, getattr(args, "trace_digest", None))


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.requests is not None and args.trace is None:
        parser.error("--requests: only with --trace (the first N requests of the trace)")
    if args.intervals is None:  # a trace's runs are long: the table's rows alone
        args.intervals = DEFAULT_INTERVALS if args.trace is None else ()
    geometries = checked_geometries(args, parser)
    if not args.no_plot and importlib.util.find_spec("matplotlib") is None:
        parser.error(
            "the plot needs matplotlib: run `make setup` (or pip install -e '.[demo]'), "
            "or pass --no-plot"
        )
    try:
        outputs.check_folder("--out", args.out, (JSON, TEXT, PLOT, TTFT_PLOT))
    except outputs.OutputError as error:
        parser.error(str(error))
    workload = load_workload(args, parser, geometries)
    settings = Settings(
        num_blocks=pools_checked(args, parser, geometries, workload),
        max_num_batched_tokens=args.budget,
        chunk_tokens=args.chunk,
        use_eagle=args.eagle,
        concurrency=args.concurrency,
        seed=args.seed,
        arrivals=checked_arrivals(args, parser, workload),
        step_time=StepTimeModel(
            args.step_ms, args.prefill_token_us, args.attention_us_per_ktoken, args.decode_row_us
        ),
        instances=args.instances,
        tier_blocks=args.tier or 0,
        route=args.route,
        eviction=args.eviction,
    )
    check_tier(args, parser, geometries, workload, settings)
    check_engines(args, parser, workload, settings)
    savings = list(dict.fromkeys(args.tier_saving or [TierSaving.POLICY.value]))
    runs_settings = [attrs.evolve(settings, tier_saving=saving) for saving in savings]
    if not settings.tiered:
        runs_settings = runs_settings[:1]
    table = table_variants(args.interval)
    if args.row:
        table = tuple(v for name, v in zip(ROWS, table, strict=True) if name in args.row)
    table = (*table, *policy_rows(args.policy or (), parser))
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
    check_workers(args, parser, workload, settings, jobs)
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
    except TraceError as error:  # a worker found the trace changed since it was checked
        print(f"python -m junction.reference simulate: error: {error}", file=sys.stderr)
        return 1
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
    stale = (PLOT, TTFT_PLOT) if args.no_plot else ()
    return outputs.write_set(parser.prog, args.out, files, stale=stale)
