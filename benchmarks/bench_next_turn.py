"""The next turn measured: dense, interval, pinned and pinned + decode on conversations.

Runs the simulator (``reference.simulator.run.simulate``) on the built-in agent
workload with its answers resent (``builtin_workload(resend_answers=True)``)
and as before (a drawn reply resent, never the answer)
and on the Mooncake conversation trace with answers reconstructed from
continuations (``hash_trace_workload(answers_from_continuations=True)``), for
one Mamba preset and one sliding-window preset, and prints one markdown table
per workload: token hit rate, prefill tokens saved, sparse blocks at peak (and
as a share of dense's), TTFT p50/p90, and the share of dense's reused tokens
each row recovers. ``--requests N`` replays the trace's first ``N`` requests
by timestamp (0: all of it). ``--finish-mixes`` measures instead what the
policies keeping decode checkpoints reuse under mixes of finish reasons
(``workloads.FinishMix``): the built-in workload under all stopped, 3:1
stopped to length-capped and all length-capped, the trace under all stopped
and its own output cap (``MOONCAKE_CONVERSATION``). ``--step-models``
measures what they reuse when the engine decodes in speculative steps
(``engine.SpeculativeDecoding``: 3 drafts a step, accepted counts drawn at
the default rate, a passed Mamba block end captured or left uncached)
against one token a step, without and with EAGLE. ``--acceptance`` prints
hit rate, TTFT p50 and sparse blocks at peak of pinned, ``+ decode``, ``+
decode`` retired (a budget of one turn per path) and two checkpoints under
the trace's finish mix (``MOONCAKE_CONVERSATION``) with exact resends and
with :data:`RESENDS`. ``--gaps`` prints the distribution of the gap between
a trace request and its continuation, in requests and in seconds (what
``junction+decode-retired``'s time to live is taken from). docs/next-turn.md
holds a run's output and its command.
"""

# size: one benchmark of the next turn, its six measurements sharing workloads and presets

from __future__ import annotations

import argparse
import functools
import sys
import time

import attrs

from junction.core import CrossedGridPoints, GroupKind
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.policy import Policy
from junction.reference.engine.speculative import SpeculativeDecoding
from junction.reference.policies.builtin import (
    JunctionPolicy,
    junction_with_retired_decode_checkpoints,
)
from junction.reference.policies.registry import resolve_policy
from junction.reference.simulator.geometries import GEOMETRIES
from junction.reference.simulator.result import Latency, RunResult
from junction.reference.simulator.run import Arrivals, Settings, simulate
from junction.reference.simulator.variants import Variant
from junction.reference.simulator.workload import Workload, builtin_workload, hash_trace_workload
from junction.reference.workloads import (
    ALL_STOPPED,
    EXACT,
    MOONCAKE_CONVERSATION,
    FinishMix,
    ResendMix,
    StepTimeModel,
    run_sessions,
    run_trace,
)
from junction.reference.workloads.answers import hash_continuations
from junction.reference.workloads.mooncake import HashTraceRequest
from junction.reference.workloads.tracefile import load_any_trace

PRESETS = ("nemotron-h", "gpt-oss")
TRACE = "examples/traces/mooncake-conversation.jsonl.gz"


def _rows(interval: int) -> tuple[Variant, ...]:
    return (
        Variant("dense", None),
        Variant("interval", interval),
        Variant("junction", 0),
        Variant("junction+decode", 0),
    )


def _table(title: str, results: list[RunResult], dense_by_preset: dict[str, RunResult]) -> str:
    lines = [
        f"#### {title}",
        "",
        "| preset | row | hit rate | prefill saved | share of dense's reuse "
        "| sparse blocks at peak (of dense's) | TTFT p50 / p90 (ms) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for result in results:
        dense = dense_by_preset[result.geometry]
        share = result.hit_tokens / dense.hit_tokens if dense.hit_tokens else 0.0
        memory = result.sparse_retained_peak / dense.sparse_retained_peak
        lines.append(
            f"| {result.geometry} | {result.variant.label} | {result.token_hit_rate:.3f} | "
            f"{result.prefill_saved_share:.3f} | {share:.3f} | "
            f"{result.sparse_retained_peak:,} ({memory:.3f}) | "
            f"{result.ttft_ms.p50:,.0f} / {result.ttft_ms.p90:,.0f} |"
        )
    return "\n".join(lines)


# The built-in workload: the pinned baseline too; the trace (minutes a run): the two
# policies keeping decode checkpoints.
BUILTIN_MIXES = (
    ("junction", "junction+decode", "vllm-pr50551"),
    (ALL_STOPPED, FinishMix(stopped=3, length_capped=1), FinishMix(stopped=0, length_capped=1)),
)
TRACE_MIXES = (("junction+decode", "vllm-pr50551"), (ALL_STOPPED, MOONCAKE_CONVERSATION))


def _replay(
    engine: Engine, workload: Workload, finishes: FinishMix = ALL_STOPPED
) -> tuple[float, int]:
    """The engine after the workload: its token hit rate and hit tokens."""
    if workload.timestamped:
        run_trace(engine, workload.turns, StepTimeModel(), finishes=finishes)
    else:
        run_sessions(engine, workload.sessions, 8, StepTimeModel(), finishes=finishes)
    return engine.metrics.token_hit_rate, engine.metrics.hit_tokens


def _config(preset: str, policy: str, blocks: int, eagle: bool = False) -> EngineConfig:
    return EngineConfig(
        GEOMETRIES[preset].build(0, eagle),
        num_blocks=blocks,
        max_num_batched_tokens=2048,
        long_prefill_token_threshold=256,
        policy=resolve_policy(policy),
    )


STEP_MODELS: tuple[tuple[str, SpeculativeDecoding | None], ...] = (
    ("one token a step", None),
    ("3 drafts, passed ends captured", SpeculativeDecoding(3, CrossedGridPoints.CAPTURED)),
    ("3 drafts, passed ends uncached", SpeculativeDecoding(3, CrossedGridPoints.UNCACHED)),
)


def _step_table(title: str, workload: Workload, presets: list[str], blocks: int) -> str:
    """Hit rate and hit tokens of the policies keeping decode checkpoints (and pinned)
    per step model, without and with EAGLE."""
    lines = [
        f"#### {title}",
        "",
        "| preset | EAGLE | steps | policy | hit rate | hit tokens |",
        "| --- | --- | --- | --- | ---: | ---: |",
    ]
    for preset in presets:
        for eagle in (False, True):
            for label, steps in STEP_MODELS:
                for name in ("junction", "junction+decode", "vllm-pr50551"):
                    config = attrs.evolve(_config(preset, name, blocks, eagle), speculative=steps)
                    rate, hits = _replay(Engine(config), workload)
                    on = "on" if eagle else "off"
                    lines.append(f"| {preset} | {on} | {label} | {name} | {rate:.4f} | {hits:,} |")
    return "\n".join(lines)


def _mix_table(
    title: str,
    workload: Workload,
    rows: tuple[tuple[str, ...], tuple[FinishMix, ...]],
    presets: list[str],
    blocks: int,
) -> str:
    """Hit rate and hit tokens of each policy keeping (or not) decode checkpoints, per mix."""
    lines = [
        f"#### {title}",
        "",
        "| preset | policy | finishes | hit rate | hit tokens |",
        "| --- | --- | --- | ---: | ---: |",
    ]
    for preset in presets:
        for name in rows[0]:
            for mix in rows[1]:
                rate, hits = _replay(Engine(_config(preset, name, blocks)), workload, mix)
                lines.append(f"| {preset} | {name} | {mix.describe()} | {rate:.4f} | {hits:,} |")
    return "\n".join(lines)


# A stated mix of inexact resends (the trace records none): most answers resent as
# emitted, a stop string cut from a tenth, reasoning stripped or a token changed in
# a twentieth each.
RESENDS = ResendMix(exact=0.8, stop_cut=0.1, reasoning_stripped=0.05, token_changed=0.05)
ACCEPTANCE_ROWS = ("junction", "junction+decode", "junction+decode-retired", "junction+decode2")


def _retired(ttl: int) -> Policy:
    """``junction+decode-retired`` with another time to live (0: none, the budget alone)."""
    options = junction_with_retired_decode_checkpoints().options
    return JunctionPolicy(attrs.evolve(options, decode_checkpoint_ttl=ttl or None))


def _acceptance_table(
    title: str,
    workload: Workload,
    presets: list[str],
    blocks: int,
    ttls: tuple[int, ...] = (),
) -> str:
    """Hit rate, TTFT p50 and sparse blocks at peak per policy keeping decode
    checkpoints (and pinned), under the trace's finish mix, per resend mix; with
    ``ttls``, pinned, ``+ decode`` and ``+ decode`` retired under each time to live,
    under :data:`RESENDS` only."""
    rows = [(name, functools.partial(resolve_policy, name)) for name in ACCEPTANCE_ROWS]
    if ttls:
        retired = [
            (f"junction+decode-retired, ttl {n}", functools.partial(_retired, n)) for n in ttls
        ]
        rows = rows[:2] + retired
    lines = [
        f"#### {title}; finishes {MOONCAKE_CONVERSATION.describe()}",
        "",
        "| preset | resends | policy | hit rate | TTFT p50 (ms) | sparse blocks at peak "
        "| over pinned |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for preset in presets:
        for resends in (RESENDS,) if ttls else (EXACT, RESENDS):
            pinned = 0
            for name, policy in rows:
                config = _config(preset, "junction", blocks)
                engine = Engine(attrs.evolve(config, policy=policy()))
                replay = run_trace(
                    engine, workload.turns, StepTimeModel(), None, MOONCAKE_CONVERSATION, resends
                )
                metrics, groups = engine.metrics, engine.geometry.groups
                sparse = sum(
                    metrics.retained_peak.get(i, 0)
                    for i, g in enumerate(groups)
                    if g.kind is not GroupKind.FULL
                )
                pinned = pinned or sparse
                ttft = Latency.of([t.ttft_ms for t in replay.timings]).p50
                lines.append(
                    f"| {preset} | {resends.describe()} | {name} | "
                    f"{metrics.token_hit_rate:.4f} | {ttft:,.0f} | {sparse:,} | "
                    f"{sparse / pinned - 1:+.1%} |"
                )
    return "\n".join(lines)


GAP_QUANTILES = (0.5, 0.75, 0.9, 0.95, 0.99, 1.0)


def _gap_table(ordered: list[HashTraceRequest]) -> str:
    """Per quantile, the gap between a request and its continuation: the requests
    submitted in between (ids are submission order) and the seconds."""
    position = {id(request): index for index, request in enumerate(ordered)}
    gaps = sorted(
        (position[id(found.request)] - index, found.request.timestamp - request.timestamp)
        for index, (request, found) in enumerate(
            zip(ordered, hash_continuations(ordered), strict=True)
        )
        if found is not None
    )
    seconds = sorted(gap for _, gap in gaps)
    lines = [
        f"#### gap to the continuation: {len(gaps):,} of {len(ordered):,} requests continued",
        "",
        "| quantile | requests | seconds |",
        "| ---: | ---: | ---: |",
    ]
    for quantile in GAP_QUANTILES:
        at = min(int(quantile * len(gaps)), len(gaps) - 1)
        lines.append(f"| {quantile:g} | {gaps[at][0]:,} | {seconds[at] / 1000:,.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=0, help="trace requests (0: all)")
    parser.add_argument("--interval", type=int, default=1056, help="the interval row's R")
    parser.add_argument("--blocks", type=int, default=40_000, help="the pool, in blocks")
    parser.add_argument("--skip-trace", action="store_true", help="the built-in workload only")
    parser.add_argument("--skip-builtin", action="store_true", help="the trace only")
    parser.add_argument(
        "--presets", default=",".join(PRESETS), help=f"comma-separated (default {PRESETS})"
    )
    parser.add_argument(
        "--finish-mixes", action="store_true", help="hit rates under mixes of finish reasons"
    )
    parser.add_argument(
        "--step-models", action="store_true", help="hit rates under speculative decode steps"
    )
    parser.add_argument(
        "--acceptance",
        action="store_true",
        help="the trace: pinned, + decode, + decode retired (and two checkpoints)",
    )
    parser.add_argument(
        "--gaps", action="store_true", help="the gap between a request and its continuation"
    )
    parser.add_argument(
        "--ttls", default="", help="with --acceptance: retired under these times to live (0: none)"
    )
    args = parser.parse_args(argv)
    settings = Settings(
        num_blocks=args.blocks,
        max_num_batched_tokens=2048,
        chunk_tokens=256,
        use_eagle=False,
        concurrency=8,
        seed=0,
    )
    workloads: list[tuple[str, Workload, Arrivals]] = []
    if not args.skip_builtin:
        workloads += [
            ("built-in", builtin_workload(0, 48, 4, 1500, resend_answers=True), "sessions"),
            ("built-in as before", builtin_workload(0, 48, 4, 1500), "sessions"),
        ]
    if not args.skip_trace:
        requests = [r for r in load_any_trace(TRACE, 10**9) if isinstance(r, HashTraceRequest)]
        ordered = sorted(requests, key=lambda r: r.timestamp)
        if args.requests:
            ordered = ordered[: args.requests]
        if args.gaps:
            print(_gap_table(ordered))
            return 0
        workloads.append(("trace", hash_trace_workload(TRACE, ordered, True), "trace"))
    presets, blocks = args.presets.split(","), args.blocks
    for name, workload, arrivals in workloads:
        started = time.perf_counter()
        title = f"{name}: {workload.source}, {workload.requests:,} requests"
        # The measurements of decode checkpoints skip the workload no answer comes back in.
        checkpoints = args.acceptance or args.step_models or args.finish_mixes
        if checkpoints and (
            name == "built-in as before" or (args.acceptance and arrivals != "trace")
        ):
            continue
        if args.acceptance:
            ttls = tuple(int(n) for n in args.ttls.split(",") if n)
            print(_acceptance_table(title, workload, presets, blocks, ttls))
        elif args.step_models:
            print(_step_table(title, workload, presets, blocks))
        elif args.finish_mixes:
            mixes = TRACE_MIXES if arrivals == "trace" else BUILTIN_MIXES
            print(_mix_table(title, workload, mixes, presets, blocks))
        else:
            results = simulate(
                workload, presets, _rows(args.interval), attrs.evolve(settings, arrivals=arrivals)
            )
            dense = {r.geometry: r for r in results if r.variant.policy == "dense"}
            print(_table(title, results, dense))
        print(f"\n({time.perf_counter() - started:,.0f} s)\n", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
