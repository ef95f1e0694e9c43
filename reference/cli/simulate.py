"""``junction simulate``: the run, the progress line and the outputs.

Parse, compute, render: what a run computes is ``junction.reference.simulator``;
the options are ``cli.simulate_options`` and what is refused before anything
runs ``cli.simulate_checks``. Standard output is the table and nothing else,
byte for byte what ``docs/demo/simulate.txt`` holds; the workload line, progress and files
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
from junction.reference.simulator.workload import Workload
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
from .simulate_options import DEFAULT_INTERVALS, ROWS

__all__ = ["Plan", "policy_rows", "run"]

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


def _source(args: argparse.Namespace) -> BuiltinSource | TraceSource:
    """Where a worker process loads the workload from (never its tokens: they are rebuilt)."""
    if args.trace is None:
        return BuiltinSource(args.seed, args.sessions, args.turns, args.system_prompt)
    return TraceSource(args.trace, args.requests, getattr(args, "trace_digest", None))


@attrs.frozen
class Plan:
    """A checked run: the workload, the geometries, the settings (one per ``--tier-saving``),
    the table's rows and every variant run (the rows and the sweep's points)."""

    workload: Workload
    geometries: tuple[str, ...]
    settings: tuple[Settings, ...]
    table: tuple[Variant, ...]
    variants: tuple[Variant, ...]
    jobs: int

    @property
    def runs(self) -> int:
        return len(self.geometries) * len(self.variants) * len(self.settings)


def _plan(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Plan:
    """Parse: every check that can refuse the run (exit 2 naming the option) before it starts."""
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
    each = [attrs.evolve(settings, tier_saving=saving) for saving in savings]
    table = table_variants(args.interval)
    if args.row:
        table = tuple(v for name, v in zip(ROWS, table, strict=True) if name in args.row)
    table = (*table, *policy_rows(args.policy or (), parser))
    # --row names the runs exactly: no sweep points besides them.
    sweep = () if args.row else sweep_variants(args.intervals)
    variants = tuple(dict.fromkeys((*table, *sweep)))
    runs_settings = tuple(each if settings.tiered else each[:1])
    runs = len(geometries) * len(variants) * len(runs_settings)
    jobs = workers(args.jobs, runs)
    check_workers(args, parser, workload, settings, jobs)
    return Plan(workload, tuple(geometries), runs_settings, table, variants, jobs)


def _simulate(plan: Plan, args: argparse.Namespace) -> list[RunResult]:
    """Compute: every run, in this process or in ``plan.jobs`` workers, with a progress line."""
    workload = plan.workload
    with terminal.progress("requests", plan.runs * workload.requests) as advance:
        if plan.jobs == 1:

            def done(result: RunResult) -> None:
                advance(0, status=f"{result.geometry} {result.variant.label} done")

            return [
                result
                for each in plan.settings
                for result in simulate(
                    workload, plan.geometries, plan.variants, each, done, advance
                )
            ]

        def ended(result: RunResult) -> None:  # a worker's run is heard of when it ends
            advance(workload.requests, status=f"{result.geometry} {result.variant.label} done")

        specs = [
            RunSpec(_source(args), name, variant, each)
            for each in plan.settings
            for name in plan.geometries
            for variant in plan.variants
        ]
        return run_all(specs, jobs=plan.jobs, on_result=ended)


def _text(plan: Plan, results: list[RunResult]) -> str:
    """Render: the tables standard output shows (and ``simulate.txt`` holds)."""
    settings = plan.settings[0]
    rows = {
        name: [r for v in plan.table for r in results if r.geometry == name and r.variant == v]
        for name in plan.geometries
    }
    text = "\n\n".join(format_table(name, rows[name]) for name in plan.geometries)
    text += (
        f"\n\narrivals: {settings.arrivals}; eviction: {settings.eviction}; "
        f"{settings.step_time.describe()}\n\n"
    )
    text += "\n\n".join(format_times(name, rows[name]) for name in plan.geometries)
    if settings.tiered:
        text += "\n\n" + "\n\n".join(format_tier(name, rows[name]) for name in plan.geometries)
    return text


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Parse (:func:`_plan`), compute (:func:`_simulate`), render (the tables and the files)."""
    plan = _plan(args, parser)
    workload, settings = plan.workload, plan.settings[0]
    print(
        f"workload: {workload.source}; {workload.requests} requests, "
        f"{workload.prompt_tokens:,} prompt tokens, system prompt (shared prefix) "
        f"{workload.shared_prefix_tokens} tokens; arrivals: {settings.arrivals}",
        file=sys.stderr,
    )
    try:
        results = _simulate(plan, args)
    except TraceError as error:  # a worker found the trace changed since it was checked
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    except PoolTooSmall as error:
        print(f"{parser.prog}: error: {error}; use more --blocks", file=sys.stderr)
        return 1
    text = _text(plan, results)
    print(text)
    geometries = plan.geometries
    document = report(workload, geometries, settings, args.interval, args.intervals, results)
    files = {JSON: (json.dumps(document, indent=1) + "\n").encode(), TEXT: (text + "\n").encode()}
    if not args.no_plot:
        files[PLOT] = render_plot(geometries, results)
        files[TTFT_PLOT] = render_ttft_plot(geometries, results, plan.table)
    stale = (PLOT, TTFT_PLOT) if args.no_plot else ()
    return outputs.write_set(parser.prog, args.out, files, stale=stale)
