"""``junction hbm``: hit rate against pool size (or HBM), fast.

Replays a hash-id trace (the Mooncake conversation trace by default) with
sequential arrivals on one preset, for the compared retention variants x
``--pools`` x ``--evictions``, in one pass (``reference.replay``, proven
equal to the reference engine request by request). Prints one table per
eviction, writes every point to ``--json`` and draws hit rate against pool
size to ``--plot`` (the band to Belady's offline eviction shaded when
``belady`` is among the evictions: a reference, not a bound). A request a
pool is too small to hold is refused and counts as a miss in every rate;
each table shows the refusals per pool. ``--answers continuations`` keys a
finished request's answer as the later request continuing its prompt resends
it (``fresh`` by default: keys no prompt has). With a model (``--model``,
``--model-config``) pools are GiB (``--hbm``), laid out as vLLM 0.33.0 does
or as ``--layout`` names (``reference.replay.layouts``). Each served
request's TTFT is modelled as alone in the engine (``simulate --arrivals
sequential``'s). The trace, the replay's memory and the outputs are checked
before the run as every command's are (``cli.inputs``, ``cli.outputs``): one
line, exit 2; ``--json`` and ``--plot`` are one set.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import attrs

from junction.core import HybridGeometry
from junction.reference.cli import inputs, outputs, terminal
from junction.reference.engine.eviction import FlopModel
from junction.reference.replay import Point, PointResult, ReplayRequest, future_uses
from junction.reference.replay.layouts import SGLANG_SLOTS_PER_REQUEST
from junction.reference.replay.models import ModelConfigError
from junction.reference.replay.parallel import replay_in_parallel
from junction.reference.replay.stream import answered_requests, replay_requests
from junction.reference.replay.sweep import compiled_points
from junction.reference.simulator.geometries import PRESETS
from junction.reference.simulator.result import Latency
from junction.reference.simulator.variants import Variant, table_variants
from junction.reference.simulator.workload import hash_trace_workload
from junction.reference.workloads.hash_prompts import HashArrival
from junction.reference.workloads.mooncake import HashTraceRequest
from junction.reference.workloads.step_time import StepTimeModel

from .hbm_options import DEFAULT_GIB, TRACE, declare_options, layout_refusal, model_layout

__all__ = ["TRACE", "add_options", "run"]


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``hbm``'s options on its parser (``cli.hbm_options``)."""
    parser.description = __doc__
    declare_options(parser)


def _rates(results: list[PointResult], variant: Variant, eviction: str) -> list[tuple[int, float]]:
    """(pool, hit rate) of one variant under one eviction, by pool."""
    setting = (variant.policy, variant.retention_interval)
    return sorted(
        (r.point.num_blocks, r.token_hit_rate)
        for r in results
        if (r.point.policy, r.point.retention_interval) == setting and r.point.eviction == eviction
    )


def _table(
    results: list[PointResult],
    variants: tuple[Variant, ...],
    eviction: str,
    labels: dict[int, str],
    unit: str,
) -> str:
    pools = sorted({r.point.num_blocks for r in results})
    header = "  ".join(f"{labels[p]:>8}" for p in pools)
    rows = [f"hit rate, {eviction} eviction; pool in {unit}: {header}"]
    for variant in variants:
        rates = "  ".join(f"{rate:>8.4f}" for _, rate in _rates(results, variant, eviction))
        rows.append(f"{variant.label:>45}: {rates}")
    # A pool refuses by the groups' peaks alone: the same requests in every row.
    refused = {r.point.num_blocks: r.refused for r in results if r.point.eviction == eviction}
    if any(refused.values()):
        counts = "  ".join(f"{refused[pool]:>8,}" for pool in pools)
        rows.append(f"{'refused requests (counted as misses)':>45}: {counts}")
    return "\n".join(rows)


def _ttft(result: PointResult) -> Latency | None:
    """The served requests' TTFT distribution (``simulate``'s percentiles), if any."""
    return Latency.of(result.ttft_ms) if result.ttft_ms else None


def _costs(
    results: list[PointResult],
    variants: tuple[Variant, ...],
    eviction: str,
    labels: dict[int, str],
    unit: str,
) -> str:
    """Time and compute per variant and pool: TTFT p50 / p90, prefill tokens (and, with a
    preset's FLOP model, FLOPs) saved."""
    pools = sorted({r.point.num_blocks for r in results})
    by_point = {
        (r.point.policy, r.point.retention_interval, r.point.num_blocks): r
        for r in results
        if r.point.eviction == eviction
    }
    header = "  ".join(f"{labels[p]:>15}" for p in pools)
    flops = any(r.prefill_flops_saved for r in results)
    rows = [f"TTFT p50 / p90 ms (served requests), {eviction} eviction; pool in {unit}: {header}"]
    saved = "prefill tokens; FLOPs saved" if flops else "prefill tokens saved"
    savings = [f"{saved}, {eviction} eviction; pool in {unit}: {header}"]
    for variant in variants:
        points = [by_point[(variant.policy, variant.retention_interval, p)] for p in pools]
        latencies = [_ttft(r) for r in points]
        cells = [f"{t.p50:,.0f} / {t.p90:,.0f}" if t else "-" for t in latencies]
        rows.append(f"{variant.label:>45}: " + "  ".join(f"{c:>15}" for c in cells))
        spent = [
            f"{r.prompt_tokens - r.prefill_tokens_computed:.3g}"
            + (f"; {r.prefill_flops_saved:.2g}" if flops else "")
            for r in points
        ]
        savings.append(f"{variant.label:>45}: " + "  ".join(f"{c:>15}" for c in spent))
    return "\n".join(rows + savings)


def _plot(
    fmt: str,
    results: list[PointResult],
    variants: tuple[Variant, ...],
    evictions: list[str],
    title: str,
    sizes: dict[int, float],
    unit: str,
) -> bytes:
    """The curve as a file of format ``fmt`` (one :func:`_plot_format` accepted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    line = evictions[0]
    shade = "belady" in evictions and line != "belady"
    for variant in variants:
        points = _rates(results, variant, line)
        pools, rates = [sizes[p] for p, _ in points], [h for _, h in points]
        drawn = axes.plot(pools, rates, marker="o", label=variant.label)
        if shade:
            offline = [h for _, h in _rates(results, variant, "belady")]
            axes.fill_between(pools, rates, offline, color=drawn[0].get_color(), alpha=0.15)
    axes.set_xscale("log", base=2)
    axes.set_xlabel(f"pool ({unit})")
    axes.set_ylabel("token hit rate (a refused request a miss)")
    shaded = ", shaded to Belady's (offline, furthest next use; not a bound)" if shade else ""
    wrapped = "\n".join(textwrap.wrap(title, 100))
    axes.set_title(f"{wrapped}\n{line} eviction{shaded}", fontsize=9)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    rendered = io.BytesIO()
    figure.savefig(rendered, format=fmt)
    plt.close(figure)
    return rendered.getvalue()


def _plot_format(path: Path) -> str:
    """The format ``--plot`` names by its suffix (PNG without one); :class:`InputError`
    for one matplotlib cannot draw, or without matplotlib: before the run."""
    if importlib.util.find_spec("matplotlib") is None:
        raise inputs.InputError("--plot needs matplotlib (the demo extra)")
    from matplotlib.backend_bases import FigureCanvasBase

    fmt = path.suffix.removeprefix(".").lower() or "png"
    if fmt not in FigureCanvasBase.filetypes:
        known = ", ".join(sorted(FigureCanvasBase.filetypes))
        raise inputs.InputError(f"--plot {path}: {fmt!r} is not a format to draw ({known})")
    return fmt


@attrs.frozen
class Plan:
    """What the options ask for, checked: the geometry, its pools and how they are shown."""

    geometry: HybridGeometry
    source: str  # the preset's or the model's name
    description: str  # the title of the plot
    header: str  # printed before the run
    unit: str  # "blocks" or "GiB"
    sizes: dict[int, float]  # a pool in blocks -> its size in ``unit``
    labels: dict[int, str]  # a pool in blocks -> its column heading
    flops: FlopModel | None
    interval: int  # the interval row's R, a multiple of the geometry's L
    layout: str = "vllm"
    state_slots: dict[int, int] = attrs.Factory(dict)  # a pool in blocks -> its state pool's
    replay_slots: dict[int, int] = attrs.Factory(dict)  # ... less the running request's
    caching: bool = True


def _plan(args: argparse.Namespace) -> Plan | str:
    """The run's :class:`Plan`, or why the options cannot make one (one line)."""
    refusal = layout_refusal(args)
    if refusal is not None:
        return refusal
    try:
        layout = model_layout(args)
    except ModelConfigError as error:
        return str(error)
    model = None if layout is None else layout.model
    if model is None and args.hbm:
        return "--hbm needs --model or --model-config"
    if model is None and (args.kv_dtype, args.state_dtype) != ("auto", "auto"):
        return "--kv-dtype and --state-dtype need --model or --model-config"
    if model is None:
        preset = PRESETS[args.preset]
        geometry = preset.build(None, False)
        plan = Plan(
            geometry,
            args.preset,
            preset.description,
            preset.description,
            "blocks",
            {pool: float(pool) for pool in args.pools},
            {pool: str(pool) for pool in args.pools},
            preset.flops,
            4 * geometry.scheduler_block_size if args.interval is None else args.interval,
        )
    else:
        if "flop-aware" in args.evictions:
            return "flop-aware eviction needs a preset's FLOP model, not --model"
        assert layout is not None
        budgets = sorted({gib for each in args.hbm or [DEFAULT_GIB] for gib in each})
        pools = {gib: layout.pools(gib) for gib in budgets}
        sizes = {pool.blocks: gib for gib, pool in pools.items()}
        too_small = [f"{gib:g} GiB" for blocks, gib in sizes.items() if blocks < 2]
        if too_small:
            kept = "" if not layout.running_slots else f" beside {layout.running_slots} state slots"
            return f"--hbm {', '.join(too_small)}: not one block of this model{kept}"
        slots = {p.blocks: p.state_slots for p in pools.values() if p.state_slots is not None}
        least = SGLANG_SLOTS_PER_REQUEST
        too_few = [f"{sizes[blocks]:g} GiB" for blocks, count in slots.items() if count < least]
        if too_few:
            return (
                f"--hbm {', '.join(too_few)}: fewer than {least} state slots, SGLang serves "
                "none (KVCacheConfigurator._calculate_mamba_ratio)"
            )
        replay_slots = {p.blocks: layout.replay_slots(p) for p in pools.values()}
        geometry = HybridGeometry(layout.groups, layout.block_size)
        description = f"{model.name}: {layout.text}"
        plan = Plan(
            geometry,
            model.name,
            description,
            description + "\n" + "; ".join(layout.describe(gib) for gib in budgets),
            "GiB",
            sizes,
            {blocks: f"{gib:g}" for blocks, gib in sizes.items()},
            None,
            4 * geometry.scheduler_block_size if args.interval is None else args.interval,
            layout.name,
            slots,
            {blocks: count for blocks, count in replay_slots.items() if count is not None},
            layout.caching,
        )
    grid = plan.geometry.scheduler_block_size
    if plan.interval % grid:
        return f"--interval {plan.interval}: not a multiple of L = {grid}"
    return plan


@attrs.frozen
class Replayed:
    """The points replayed on the trace and what each found."""

    requests: int
    answered: int | None  # answers keyed as their continuation resends them (None: fresh)
    variants: tuple[Variant, ...]
    results: list[PointResult]
    seconds: float


def _points(plan: Plan, args: argparse.Namespace) -> list[Point]:
    """Every variant x pool x eviction, evictions outermost."""
    return [
        Point(
            v.policy,
            v.retention_interval,
            pool,
            eviction,
            plan.replay_slots.get(pool),
            plan.caching,
        )
        for eviction in args.evictions
        for v in table_variants(plan.interval)
        for pool in sorted(plan.sizes)
    ]


# The requests, their arrivals with answers (or None) and the replay's engine.
Trace = tuple[list[HashTraceRequest], list[HashArrival] | None, str]


def _requests(plan: Plan, args: argparse.Namespace) -> Trace:
    """The trace's requests (its first ``--requests`` lines), checked as every command's
    (``cli.inputs``), with ``--answers continuations`` their arrivals with the answers
    found (else ``None``), and the replay they ask for checked against memory before any
    key is built (an answer's units counted too); :class:`InputError` otherwise."""
    loaded = inputs.load_trace("--trace", args.trace, args.requests)
    requests = [r for r in loaded.requests if isinstance(r, HashTraceRequest)]
    if len(requests) != len(loaded.requests):
        raise inputs.InputError(
            f"--trace {args.trace}: a token-id trace; hbm replays hash-id (Mooncake) traces"
        )
    arrivals, unit = None, plan.geometry.hash_block_size
    answers = 0  # the units keyed past the prompts
    if args.answers == "continuations":
        workload = hash_trace_workload(args.trace, requests, answers_from_continuations=True)
        arrivals = [turn for turn in workload.turns if isinstance(turn, HashArrival)]
        answers = sum(
            a.continuation.end // unit - a.request.input_length // unit
            for a in arrivals
            if a.continuation is not None
        )
    points = _points(plan, args)
    shares = len({(p.policy, p.retention_interval) for p in points})

    def size(compiled: list[bool]) -> inputs.ReplaySize:
        """The replay's memory: the ``compiled`` points' books, the other points' pools."""
        python = [p.num_blocks for p, c in zip(points, compiled, strict=True) if not c]
        books = [p.num_blocks for p, c in zip(points, compiled, strict=True) if c]
        groups, workers = len(plan.geometry.groups), min(args.jobs, shares)
        belady = "belady" in args.evictions
        size = inputs.ReplaySize.of(requests, unit, groups, python, workers, belady, books)
        return attrs.evolve(size, units=size.units + answers)

    engine = inputs.choose_replay_engine("--trace", size, compiled_points("auto", points), unit)
    return requests, arrivals, engine


def _replay(plan: Plan, args: argparse.Namespace, trace: Trace) -> Replayed:
    """Every point (:func:`_points`) on the trace, in ``--jobs`` processes."""
    started = time.perf_counter()
    geometry = plan.geometry
    requests, answered = _keyed(trace, geometry.hash_block_size)
    uses = future_uses(geometry, requests) if "belady" in args.evictions else None
    points = _points(plan, args)
    with terminal.progress("replay", len(requests) * len(points)) as advance:
        results = replay_in_parallel(
            geometry,
            requests,
            points,
            args.jobs,
            progress=advance,  # request-points
            max_num_batched_tokens=args.budget,
            long_prefill_token_threshold=args.chunk,
            flops=plan.flops,
            uses=uses,
            step_time=StepTimeModel(),
            engine=trace[2],
        )
    variants = table_variants(plan.interval)
    return Replayed(len(requests), answered, variants, results, time.perf_counter() - started)


def _keyed(trace: Trace, unit: int) -> tuple[list[ReplayRequest], int | None]:
    """The trace as the replay's requests, in arrival order, and with ``--answers
    continuations`` how many answers are keyed as their continuation resends them."""
    requests, arrivals, _ = trace
    if arrivals is None:
        return replay_requests(requests, unit), None
    answered = sum(arrival.continuation is not None for arrival in arrivals)
    return answered_requests(arrivals, unit), answered


def _report(plan: Plan, replayed: Replayed, trace: str, evictions: list[str]) -> str:
    """What standard output shows after the run: the summary line and one table per eviction."""
    lines = [
        f"{Path(trace).name}: {replayed.requests:,} requests, sequential arrivals; "
        f"{len(replayed.results)} points in {replayed.seconds:.1f} s (fast replay: hit rate, "
        "prefill saved, evictions; each request alone in the engine, as `simulate "
        "--arrivals sequential`)",
        StepTimeModel().describe(),
    ]
    if replayed.answered is not None:
        lines.append(
            f"answers keyed as the next turn resends them: {replayed.answered:,} of "
            f"{replayed.requests:,} (at most: two users of one system prompt look alike)"
        )
    for eviction in evictions:
        lines.append(_table(replayed.results, replayed.variants, eviction, plan.labels, plan.unit))
        lines.append(_costs(replayed.results, replayed.variants, eviction, plan.labels, plan.unit))
    if any(r.refused for r in replayed.results):
        lines.append(
            "a refused request (longer than its pool holds) counts as a miss: its prompt's "
            "tokens are in every rate's denominator"
        )
    return "\n".join(lines)


def _document(plan: Plan, replayed: Replayed) -> dict[str, Any]:
    """``--json``: every point with what it found; ``token_hit_rate`` and
    ``prefill_saved_share`` count a refused request's prompt as missed."""
    rows = [
        {
            "policy": r.point.policy,
            "retention_interval": r.point.retention_interval,
            "pool_blocks": r.point.num_blocks,
            "pool": plan.sizes[r.point.num_blocks],
            "eviction": r.point.eviction,
            "requests": r.requests,
            "refused": r.refused,
            "refused_prompt_tokens": r.refused_tokens,
            "hit_tokens": r.hit_tokens,
            "served_prompt_tokens": r.lookup_tokens,
            "token_hit_rate": r.token_hit_rate,
            "prefill_saved_share": r.prefill_saved_share,
            "evictions": r.evictions,
            "retained_peak": list(r.retained_peak),
            "retained_final": list(r.retained_final),
            "prefill_flops_saved": r.prefill_flops_saved,
            "prefill_tokens_saved": r.prompt_tokens - r.prefill_tokens_computed,
            "ttft_ms": None if (ttft := _ttft(r)) is None else ttft.to_json(),
        }
        for r in replayed.results
    ]
    if plan.layout != "vllm":  # the default's document stays as it was
        for row, result in zip(rows, replayed.results, strict=True):
            row["state_slots"] = plan.state_slots.get(result.point.num_blocks)
    return {
        "model": plan.source,
        **({} if plan.layout == "vllm" else {"layout": plan.layout}),
        "unit": plan.unit,
        "answers": "fresh" if replayed.answered is None else "continuations",
        "answers_matched": replayed.answered,
        "points": rows,
    }


def _outputs(args: argparse.Namespace) -> str | None:
    """``--json`` and ``--plot`` checked and locked before the run (``cli.outputs``);
    the plot's format, or ``None`` without ``--plot``."""
    fmt = None if args.plot is None else _plot_format(args.plot)
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path is not None:
            outputs.check_file(option, path)
    return fmt


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Parse (:func:`_plan`, the inputs and outputs checked), compute (:func:`_replay`),
    render (the tables, then ``--json`` and ``--plot`` written as one set)."""
    started = time.perf_counter()
    plan = _plan(args)
    try:
        if isinstance(plan, str):
            raise inputs.InputError(plan)
        requests = _requests(plan, args)
        fmt = _outputs(args)
    except (inputs.InputError, outputs.OutputError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    print(plan.header)
    replayed = _replay(plan, args, requests)
    print(_report(plan, replayed, args.trace, args.evictions))
    files: dict[Path, bytes] = {}
    if args.json is not None:
        files[args.json] = json.dumps(_document(plan, replayed), indent=1).encode()
    if args.plot is not None and fmt is not None:
        files[args.plot] = _plot(
            fmt,
            replayed.results,
            replayed.variants,
            args.evictions,
            plan.description,
            plan.sizes,
            plan.unit,
        )
    if files:
        try:
            outputs.commit_files(files)
        except outputs.OutputError as error:
            print(f"{parser.prog}: error: {error}; nothing written", file=sys.stderr)
            return 1
    print(f"{parser.prog}: ran in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0
