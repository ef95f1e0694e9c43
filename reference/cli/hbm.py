"""``python -m junction.reference hbm``: hit rate against pool size (or HBM), fast.

Replays a hash-id trace (the Mooncake conversation trace by default) with
sequential arrivals on one preset, for the compared retention variants x
``--pools`` x ``--evictions``, in one pass (``reference.replay``, proven
equal to the reference engine request by request). Prints one table per
eviction, writes every point to ``--json`` and draws hit rate against pool
size to ``--plot`` (the band up to Belady's bound shaded when ``belady`` is
among the evictions). With a model (``--model``, ``--model-config``) pools
are GiB (``--hbm``), laid out as vLLM 0.33.0 does
(``reference.replay.models``). TTFT and queueing need the engine's steps:
``simulate`` gives them.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from junction.core import HybridGeometry
from junction.reference.cli import options
from junction.reference.engine.eviction import FlopModel
from junction.reference.replay import EVICTIONS, Point, PointResult, future_uses
from junction.reference.replay.models import (
    CATALOG,
    MemoryModel,
    ModelConfigError,
    catalog_model,
    load_model_config,
)
from junction.reference.replay.parallel import replay_in_parallel
from junction.reference.replay.stream import hash_trace_requests
from junction.reference.simulator.geometries import PRESETS
from junction.reference.simulator.variants import Variant, table_variants

__all__ = ["add_parser", "run"]

TRACE = Path(__file__).resolve().parents[2] / "examples/traces/mooncake-conversation.jsonl.gz"


def _sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected integers, comma-separated") from None
    if not sizes or sizes[0] < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: every pool needs at least 2 blocks")
    return sizes


def _gib(text: str) -> list[float]:
    try:
        sizes = [float(part) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected GiB, comma-separated") from None
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: every budget must be above 0 GiB")
    return sizes


def _evictions(text: str) -> list[str]:
    names = [part for part in text.split(",") if part]
    unknown = [name for name in names if name not in EVICTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected some of {', '.join(EVICTIONS)}, comma-separated"
        )
    return names


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``hbm`` on ``python -m junction.reference``'s subcommands."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "hbm",
        help="hit rate against pool size for every compared policy, fast (sequential arrivals)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    options.add_trace(
        parser,
        hash_only=True,
        default=str(TRACE),
        note=" (default: the Mooncake conversation trace, "
        "examples/traces/mooncake-conversation.jsonl.gz)",
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="qwen3-next")
    parser.add_argument(
        "--pools",
        type=_sizes,
        default=[2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000],
        help="pool sizes in blocks, comma-separated",
    )
    model = parser.add_mutually_exclusive_group()
    model.add_argument("--model", choices=CATALOG, help="a model of the catalog (pools in GiB)")
    model.add_argument(
        "--model-config", type=Path, metavar="FILE", help="a model's config.json (pools in GiB)"
    )
    parser.add_argument(
        "--hbm",
        type=_gib,
        action="append",
        metavar="GIB",
        help="with a model: KV-cache budgets in GiB, repeatable or comma-separated "
        "(default 8,16,32,64,128,256,512,1024)",
    )
    parser.add_argument(
        "--evictions", type=_evictions, default=["lru"], help=f"some of {', '.join(EVICTIONS)}"
    )
    options.add_interval(parser, default=None, default_text="4 L")
    options.add_step(parser, chunk=0)
    options.add_jobs(
        parser, default=1, note="; the points are shared among them, the trace read once"
    )
    options.add_json(parser, what="every point")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="draw the curve (PNG, SVG)")
    parser.set_defaults(run=run)
    return parser


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
    return "\n".join(rows)


def _plot(
    path: Path,
    results: list[PointResult],
    variants: tuple[Variant, ...],
    evictions: list[str],
    title: str,
    sizes: dict[int, float],
    unit: str,
) -> None:
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
            bound = [h for _, h in _rates(results, variant, "belady")]
            axes.fill_between(pools, rates, bound, color=drawn[0].get_color(), alpha=0.15)
    axes.set_xscale("log", base=2)
    axes.set_xlabel(f"pool ({unit})")
    axes.set_ylabel("token hit rate")
    shaded = ", shaded up to Belady's bound" if shade else ""
    wrapped = "\n".join(textwrap.wrap(title, 100))
    axes.set_title(f"{wrapped}\n{line} eviction{shaded}", fontsize=9)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def _model(args: argparse.Namespace) -> MemoryModel | None:
    if args.model is not None:
        return catalog_model(args.model)
    if args.model_config is not None:
        return load_model_config(args.model_config)
    return None


def run(args: argparse.Namespace) -> int:
    try:
        model = _model(args)
    except ModelConfigError as error:
        print(f"python -m junction.reference hbm: error: {error}", file=sys.stderr)
        return 2
    if model is None and args.hbm:
        print(
            "python -m junction.reference hbm: error: --hbm needs --model or --model-config",
            file=sys.stderr,
        )
        return 2
    choice = PRESETS[args.preset]
    flops: FlopModel | None = choice.flops
    if model is None:
        geometry = choice.build(None, False)
        description, unit = choice.description, "blocks"
        print(description)
        sizes = {pool: float(pool) for pool in args.pools}
        labels = {pool: str(pool) for pool in args.pools}
    else:
        if "flop-aware" in args.evictions:
            print(
                "python -m junction.reference hbm: error: flop-aware eviction needs a "
                "preset's FLOP model, not --model",
                file=sys.stderr,
            )
            return 2
        geometry = HybridGeometry(model.groups(), model.block_size)
        budgets = sorted(
            {gib for each in args.hbm or [[8, 16, 32, 64, 128, 256, 512, 1024]] for gib in each}
        )
        description = f"{model.name}: {model.layout}"
        print(description + "\n" + "; ".join(model.describe(gib) for gib in budgets))
        unit, flops = "GiB", None
        sizes = {model.blocks(gib): gib for gib in budgets}
        labels = {blocks: f"{gib:g}" for blocks, gib in sizes.items()}
        too_small = [f"{gib:g} GiB" for blocks, gib in sizes.items() if blocks < 2]
        if too_small:
            print(
                f"python -m junction.reference hbm: error: --hbm {', '.join(too_small)}: "
                "not one block of this model",
                file=sys.stderr,
            )
            return 2
    started = time.perf_counter()
    requests = hash_trace_requests(Path(args.trace), geometry.hash_block_size, args.requests or 0)
    uses = future_uses(geometry, requests) if "belady" in args.evictions else None
    grid = geometry.scheduler_block_size
    interval = 4 * grid if args.interval is None else args.interval
    if interval % grid:
        print(
            f"python -m junction.reference hbm: error: --interval {interval}: not a "
            f"multiple of L = {grid}",
            file=sys.stderr,
        )
        return 2
    variants = table_variants(interval)
    points = [
        Point(v.policy, v.retention_interval, pool, eviction)
        for eviction in args.evictions
        for v in variants
        for pool in sorted(sizes)
    ]
    results = replay_in_parallel(
        geometry,
        requests,
        points,
        args.jobs,
        max_num_batched_tokens=args.budget,
        long_prefill_token_threshold=args.chunk,
        flops=flops,
        uses=uses,
    )
    elapsed = time.perf_counter() - started
    print(
        f"{Path(args.trace).name}: {len(requests):,} requests, sequential "
        f"arrivals; {len(points)} points in {elapsed:.1f} s (fast replay: hit rate, prefill "
        f"saved, evictions; TTFT is the reference engine's, `simulate`)"
    )
    for eviction in args.evictions:
        print(_table(results, variants, eviction, labels, unit))
    refused = sum(r.refused for r in results)
    if refused:
        print(f"{refused:,} request-points refused: a request longer than its pool holds")
    if args.json is not None:
        rows = [
            {
                "policy": r.point.policy,
                "retention_interval": r.point.retention_interval,
                "pool_blocks": r.point.num_blocks,
                "pool": sizes[r.point.num_blocks],
                "eviction": r.point.eviction,
                "requests": r.requests,
                "refused": r.refused,
                "token_hit_rate": r.token_hit_rate,
                "prefill_saved_share": r.prefill_saved_share,
                "evictions": r.evictions,
                "retained_peak": list(r.retained_peak),
                "retained_final": list(r.retained_final),
                "prefill_flops_saved": r.prefill_flops_saved,
            }
            for r in results
        ]
        source = args.preset if model is None else model.name
        args.json.write_text(json.dumps({"model": source, "unit": unit, "points": rows}, indent=1))
    if args.plot is not None:
        try:
            _plot(args.plot, results, variants, args.evictions, description, sizes, unit)
        except ImportError:
            print("--plot needs matplotlib (the demo extra)", file=sys.stderr)
            return 2
    return 0
