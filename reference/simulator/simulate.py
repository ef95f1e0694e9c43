"""``python -m junction.reference simulate``: retention policies on an agent workload, side by side.

The reference engine runs one workload (built in, or a trace) on each
built-in hybrid geometry under four retention policies:

* ``dense``: every materialised block is cached (``R = None``);
* ``interval R``: one checkpoint per ``R``-token segment plus the replay
  boundary, never the junction;
* ``R=0 unpinned``: the replay boundary only (vLLM before PR #47782);
* ``R=0 pinned``: the replay boundary and the junction (the default policy).

It prints one table per geometry (token hit rate, system-prompt hit rate,
prefill tokens computed, forward steps, sparse-group blocks retained at the
peak and at the end, evictions), writes a JSON file with every number and a
PNG plot of hit rate against retained blocks over a sweep of retention
intervals, pinned and unpinned.

The workload is closed-loop, like agents: ``concurrency`` sessions are open
at a time, each sends its next turn once the previous one has finished, and a
new session opens when one ends. A turn resends the whole session so far, so
turns reuse their predecessors' prompts and every session shares the system
prompt. The system-prompt hit rate counts, over every request, the tokens of
the longest prefix shared by all prompts (the system prompt) that the request
reused.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import attrs

from junction.core import GroupKind, GroupSpec, HybridGeometry
from junction.reference.cli.arguments import int_at_least
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.policy import Policy
from junction.reference.engine.request import RequestStatus
from junction.reference.policies.builtin import DensePolicy, IntervalPolicy, JunctionPolicy
from junction.reference.workloads.sessions import Arrival, agent_sessions
from junction.reference.workloads.trace import TraceError, TraceRequest, load_trace

__all__ = [
    "GEOMETRIES",
    "RunResult",
    "SimulationError",
    "Variant",
    "Workload",
    "add_parser",
    "builtin_workload",
    "format_table",
    "run_sessions",
    "simulate",
    "trace_workload",
]

# -- geometries -----------------------------------------------------------------


@attrs.frozen
class GeometryChoice:
    """A built-in geometry: its groups and one line describing it."""

    groups: tuple[GroupSpec, ...]
    description: str

    def build(self, retention_interval: int | None, use_eagle: bool) -> HybridGeometry:
        hash_unit = min(group.block_size for group in self.groups)
        return HybridGeometry(
            self.groups, hash_unit, use_eagle=use_eagle, retention_interval=retention_interval
        )

    @property
    def scheduler_block(self) -> int:
        return self.build(None, False).scheduler_block_size


GEOMETRIES: dict[str, GeometryChoice] = {
    "full+mamba": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.mamba(64)),
        "full attention (block 16) + Mamba in align mode (block 64): L = 64",
    ),
    "full+swa": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.sliding_window(16, 128)),
        "full attention (block 16) + sliding window 128 (block 16): L = 16",
    ),
    "full+swa+mamba": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.sliding_window(16, 128), GroupSpec.mamba(64)),
        "full attention + sliding window 128 (blocks 16) + Mamba (block 64): L = 64",
    ),
}
DEFAULT_GEOMETRIES = ("full+mamba", "full+swa")

# -- policies -------------------------------------------------------------------


@attrs.frozen
class Variant:
    """One retention setting: a policy and the interval ``R`` of the geometry."""

    policy: str  # "dense", "interval" or "junction"
    retention_interval: int | None

    @property
    def pinned(self) -> bool:
        return self.policy != "interval"

    @property
    def label(self) -> str:
        if self.policy == "dense":
            return "dense"
        if self.retention_interval == 0:
            return "R=0 pinned" if self.pinned else "R=0 unpinned"
        return f"{'pinned' if self.pinned else 'interval'} R={self.retention_interval}"

    def make_policy(self) -> Policy:
        factories: dict[str, Callable[[], Policy]] = {
            "dense": DensePolicy,
            "interval": IntervalPolicy,
            "junction": JunctionPolicy,
        }
        return factories[self.policy]()


def table_variants(interval: int) -> tuple[Variant, ...]:
    """The rows of the table: dense, interval R, R=0 unpinned, R=0 pinned."""
    return (
        Variant("dense", None),
        Variant("interval", interval),
        Variant("interval", 0),
        Variant("junction", 0),
    )


def sweep_variants(intervals: Sequence[int]) -> tuple[Variant, ...]:
    """The plot's points: pinned and unpinned at R = 0 and every interval, and dense."""
    points = [Variant(policy, r) for policy in ("junction", "interval") for r in (0, *intervals)]
    return (*points, Variant("dense", None))


# -- workloads ------------------------------------------------------------------

# The built-in agent turns: a tool result or user message, then the reply.
MESSAGE_TOKENS = (64, 1024)
OUTPUT_TOKENS = (8, 64)


@attrs.frozen
class Workload:
    """Sessions of turns (each an :class:`Arrival`; its gap is not used here)."""

    source: str
    sessions: tuple[tuple[Arrival, ...], ...]

    @property
    def requests(self) -> int:
        return sum(len(session) for session in self.sessions)

    @property
    def prompt_tokens(self) -> int:
        return sum(len(turn.prompt) for session in self.sessions for turn in session)

    @property
    def shared_prefix_tokens(self) -> int:
        """The longest prefix every prompt starts with (the system prompt)."""
        prompts = [turn.prompt for session in self.sessions for turn in session]
        first, shortest = prompts[0], min(len(p) for p in prompts)
        length = 0
        while length < shortest and all(p[length] == first[length] for p in prompts):
            length += 1
        return length


def builtin_workload(seed: int, sessions: int, turns: int, system_prompt_tokens: int) -> Workload:
    """``agent_sessions``, regrouped into its sessions (it emits them turn after turn)."""
    arrivals = agent_sessions(
        seed,
        sessions=sessions,
        turns=turns,
        system_prompt_tokens=system_prompt_tokens,
        message_tokens=MESSAGE_TOKENS,
        output_tokens=OUTPUT_TOKENS,
    )
    grouped = tuple(tuple(arrivals[i : i + turns]) for i in range(0, len(arrivals), turns))
    return Workload(
        f"agent sessions: {sessions} sessions x {turns} turns, "
        f"{system_prompt_tokens}-token system prompt, seed {seed}",
        grouped,
    )


def trace_workload(path: str, requests: Sequence[TraceRequest]) -> Workload:
    """A trace's lines grouped by session, sessions in order of first appearance."""
    sessions: dict[object, list[Arrival]] = {}
    for request in requests:
        key = ("line", request.line) if request.session is None else ("session", request.session)
        sessions.setdefault(key, []).append(Arrival(request.prompt, request.output_tokens))
    return Workload(f"trace {path}", tuple(tuple(turns) for turns in sessions.values()))


# -- running --------------------------------------------------------------------


class SimulationError(Exception):
    """The engine cannot finish the workload (a pool too small for a request)."""


def run_sessions(engine: Engine, sessions: Sequence[Sequence[Arrival]], concurrency: int) -> None:
    """Closed loop: ``concurrency`` sessions open; a turn is sent when the previous finished."""
    pending = deque(range(len(sessions)))
    active: dict[int, tuple[int, int]] = {}  # request id -> (session, turn)

    def send(session: int, turn: int) -> None:
        arrival = sessions[session][turn]
        try:
            request_id = engine.submit(arrival.prompt, arrival.max_output_tokens)
        except ValueError as error:  # it could never fit the pool, even alone
            raise SimulationError(f"{error}; use more --blocks") from None
        active[request_id] = (session, turn)

    while pending and len(active) < concurrency:
        send(pending.popleft(), 0)
    idle_steps = 0
    alone_preemptions: dict[int, int] = {}
    while active:
        preemptions = engine.metrics.preemptions
        scheduled = engine.step()
        idle_steps = 0 if scheduled else idle_steps + 1
        stuck = None
        if idle_steps > 2:  # nothing runs and the next request cannot be admitted
            stuck = engine.waiting[0] if engine.waiting else engine.running[0]
        elif engine.metrics.preemptions > preemptions and not engine.running:
            # Preempted with nothing else running: it does not fit even alone.
            head = engine.waiting[0]
            alone_preemptions[head.request_id] = alone_preemptions.get(head.request_id, 0) + 1
            if alone_preemptions[head.request_id] >= 3:
                stuck = head
        if stuck is not None:
            raise SimulationError(
                f"no progress: a pool of {engine.config.num_blocks} blocks cannot hold request "
                f"{stuck.request_id} ({stuck.num_tokens} tokens); use more --blocks"
            )
        for request_id in [
            r for r in active if engine.requests[r].status is RequestStatus.FINISHED
        ]:
            session, turn = active.pop(request_id)
            if turn + 1 < len(sessions[session]):
                send(session, turn + 1)
            elif pending:
                send(pending.popleft(), 0)


@attrs.frozen
class RunResult:
    """Every number of one run (one geometry, one variant)."""

    geometry: str
    variant: Variant
    token_hit_rate: float
    system_prompt_hit_rate: float | None
    prefill_tokens_computed: int
    steps: int
    sparse_retained_peak: int
    sparse_retained_final: int
    evictions: int
    preemptions: int
    lookup_tokens: int
    hit_tokens: int
    groups: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "geometry": self.geometry,
            "label": self.variant.label,
            "policy": self.variant.policy,
            "retention_interval": self.variant.retention_interval,
            "pinned": self.variant.pinned,
            "token_hit_rate": self.token_hit_rate,
            "system_prompt_hit_rate": self.system_prompt_hit_rate,
            "prefill_tokens_computed": self.prefill_tokens_computed,
            "steps": self.steps,
            "sparse_retained_peak": self.sparse_retained_peak,
            "sparse_retained_final": self.sparse_retained_final,
            "evictions": self.evictions,
            "preemptions": self.preemptions,
            "lookup_tokens": self.lookup_tokens,
            "hit_tokens": self.hit_tokens,
            "groups": list(self.groups),
        }


@attrs.frozen
class Settings:
    """The engine side of a simulation."""

    num_blocks: int
    max_num_batched_tokens: int
    chunk_tokens: int
    use_eagle: bool
    concurrency: int
    seed: int


def run_one(
    geometry_name: str, variant: Variant, workload: Workload, settings: Settings
) -> RunResult:
    geometry = GEOMETRIES[geometry_name].build(variant.retention_interval, settings.use_eagle)
    engine = Engine(
        EngineConfig(
            geometry,
            num_blocks=settings.num_blocks,
            max_num_batched_tokens=settings.max_num_batched_tokens,
            long_prefill_token_threshold=settings.chunk_tokens,
            seed=settings.seed,
            policy=variant.make_policy(),
        )
    )
    run_sessions(engine, workload.sessions, settings.concurrency)
    metrics = engine.metrics
    shared = workload.shared_prefix_tokens
    reused = sum(min(r.hit_length, shared) for r in engine.requests.values())
    sparse = [i for i, g in enumerate(geometry.groups) if g.kind is not GroupKind.FULL]
    groups = tuple(
        {
            "kind": group.kind.value,
            "block_size": group.block_size,
            "window": group.window,
            "retained_peak": metrics.retained_peak.get(i, 0),
            "retained_final": metrics.retained_final.get(i, 0),
        }
        for i, group in enumerate(geometry.groups)
    )
    return RunResult(
        geometry=geometry_name,
        variant=variant,
        token_hit_rate=metrics.token_hit_rate,
        system_prompt_hit_rate=reused / (shared * len(engine.requests)) if shared else None,
        prefill_tokens_computed=metrics.prefill_tokens_computed,
        steps=metrics.steps,
        sparse_retained_peak=sum(metrics.retained_peak.get(i, 0) for i in sparse),
        sparse_retained_final=sum(metrics.retained_final.get(i, 0) for i in sparse),
        evictions=metrics.evictions,
        preemptions=metrics.preemptions,
        lookup_tokens=metrics.lookup_tokens,
        hit_tokens=metrics.hit_tokens,
        groups=groups,
    )


class Progress:
    """A progress bar on ``stream``: redrawn in place on a terminal, one line per run otherwise."""

    def __init__(self, total: int, stream: TextIO, width: int = 30) -> None:
        self.total = total
        self.done = 0
        self.stream = stream
        self.width = width
        self.started = time.perf_counter()
        self.tty = stream.isatty()
        if self.tty:
            self.stream.write(f"[{'.' * width}] 0/{total}")
            self.stream.flush()

    def advance(self, what: str) -> None:
        self.done += 1
        filled = self.width * self.done // self.total
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = time.perf_counter() - self.started
        line = f"[{bar}] {self.done}/{self.total} {elapsed:5.1f} s  {what}"
        if self.tty:
            end = "\n" if self.done == self.total else ""
            self.stream.write(f"\r\033[K{line}{end}")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def simulate(
    workload: Workload,
    geometries: Sequence[str],
    variants: Sequence[Variant],
    settings: Settings,
    progress: Progress | None = None,
) -> list[RunResult]:
    """Every (geometry, variant) run, in that order."""
    results = []
    for name in geometries:
        for variant in variants:
            results.append(run_one(name, variant, workload, settings))
            if progress:
                progress.advance(f"{name} {variant.label}")
    return results


# -- reporting ------------------------------------------------------------------

_COLUMNS = (
    ("policy", 15),
    ("hit rate", 9),
    ("sys-prompt", 10),
    ("prefill tok", 12),
    ("steps", 7),
    ("sparse peak", 12),
    ("sparse final", 12),
    ("evictions", 10),
)


def format_table(geometry: str, rows: Sequence[RunResult]) -> str:
    """One geometry's table: a header line, the column names, one line per run."""
    header = f"{geometry}: {GEOMETRIES[geometry].description}"
    names = "  ".join(
        f"{name:<{width}}" if i == 0 else f"{name:>{width}}"
        for i, (name, width) in enumerate(_COLUMNS)
    )
    lines = [header, names]
    for row in rows:
        sys_rate = (
            f"{row.system_prompt_hit_rate:.3f}" if row.system_prompt_hit_rate is not None else "-"
        )
        cells = (
            row.variant.label,
            f"{row.token_hit_rate:.3f}",
            sys_rate,
            f"{row.prefill_tokens_computed:,}",
            f"{row.steps:,}",
            f"{row.sparse_retained_peak:,}",
            f"{row.sparse_retained_final:,}",
            f"{row.evictions:,}",
        )
        lines.append(
            "  ".join(
                f"{cell:<{width}}" if i == 0 else f"{cell:>{width}}"
                for i, (cell, (_, width)) in enumerate(zip(cells, _COLUMNS, strict=True))
            )
        )
    return "\n".join(lines)


def write_plot(path: Path, geometries: Sequence[str], results: Sequence[RunResult]) -> None:
    """Hit rate against sparse blocks retained (peak), one panel per geometry."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    figure, axes = plt.subplots(
        1, len(geometries), figsize=(6 * len(geometries), 4.6), squeeze=False
    )
    for axis, name in zip(axes[0], geometries, strict=True):
        runs = [r for r in results if r.geometry == name]
        for policy, label, style in (
            ("junction", "junction pinned (default)", "o-"),
            ("interval", "unpinned (before #47782)", "s--"),
        ):
            points = sorted(
                (r for r in runs if r.variant.policy == policy),
                key=lambda r: r.sparse_retained_peak,
            )
            xs = [r.sparse_retained_peak for r in points]
            ys = [r.token_hit_rate for r in points]
            (line,) = axis.plot(xs, ys, style, label=label)
            labels: dict[tuple[int, float], list[str]] = {}
            for r in points:  # points that coincide share one label
                key = (r.sparse_retained_peak, round(r.token_hit_rate, 4))
                labels.setdefault(key, []).append(str(r.variant.retention_interval))
            for (x, y), intervals in labels.items():
                axis.annotate(
                    "R=" + ",".join(intervals),
                    (x, y),
                    textcoords="offset points",
                    xytext=(3, -6) if policy == "interval" else (2, 5),
                    rotation=-40 if policy == "interval" else 40,
                    rotation_mode="anchor",
                    va="top" if policy == "interval" else "bottom",
                    fontsize=7,
                    color=line.get_color(),
                )
        for r in runs:
            if r.variant.policy == "dense":
                axis.plot(
                    [r.sparse_retained_peak], [r.token_hit_rate], "k*", markersize=11, label="dense"
                )
        axis.set_title(f"{name}\n{GEOMETRIES[name].description}", fontsize=9)
        axis.set_xlabel("sparse-group blocks retained (peak)")
        axis.set_ylabel("token hit rate")
        axis.set_xlim(left=0)
        axis.margins(x=0.1, y=0.15)
        axis.xaxis.set_major_formatter(ticker.StrMethodFormatter("{x:,.0f}"))
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8, loc="lower right")
    figure.suptitle("Retention interval sweep: hit rate vs memory", fontsize=11)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(figure)


# -- command line ---------------------------------------------------------------

DEFAULT_INTERVALS = (64, 128, 256, 512, 1024)


def _intervals(text: str) -> tuple[int, ...]:
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


def _geometry(text: str) -> str:
    if text not in GEOMETRIES:
        raise argparse.ArgumentTypeError(
            f"unknown geometry {text!r} (choose from {', '.join(GEOMETRIES)})"
        )
    return text


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``simulate`` on ``python -m junction.reference``'s subcommands."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "simulate",
        help="retention policies on an agent workload: hit rate vs retained blocks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    at_least_1 = int_at_least(1)
    parser.add_argument(
        "--geometry",
        type=_geometry,
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
    parser.add_argument(
        "--blocks",
        type=int_at_least(2),
        default=40_000,
        help="KV-cache pool size in blocks; lower it for eviction pressure (default 40000)",
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
        default=DEFAULT_INTERVALS,
        metavar="R,R,...",
        help="the plot's sweep of R (default " + ",".join(map(str, DEFAULT_INTERVALS)) + ")",
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
        help="replay a JSONL trace of token-id prompts instead (docs/trace-format.md)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("out"),
        metavar="DIR",
        help="where simulate.json and simulate.png go (default out/)",
    )
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")
    parser.set_defaults(run=lambda args: run(args, parser))
    return parser


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
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
    if not args.no_plot and importlib.util.find_spec("matplotlib") is None:
        parser.error(
            "the plot needs matplotlib: run `make setup` (or pip install -e '.[demo]'), "
            "or pass --no-plot"
        )
    if args.trace is not None:
        try:
            workload = trace_workload(args.trace, load_trace(args.trace))
        except TraceError as error:
            parser.error(f"--trace: {error}")
    else:
        workload = builtin_workload(args.seed, args.sessions, args.turns, args.system_prompt)
    settings = Settings(
        num_blocks=args.blocks,
        max_num_batched_tokens=args.budget,
        chunk_tokens=args.chunk,
        use_eagle=args.eagle,
        concurrency=args.concurrency,
        seed=args.seed,
    )
    table = table_variants(args.interval)
    variants = list(dict.fromkeys((*table, *sweep_variants(args.intervals))))
    print(
        f"workload: {workload.source}; {workload.requests} requests, "
        f"{workload.prompt_tokens:,} prompt tokens, system prompt (shared prefix) "
        f"{workload.shared_prefix_tokens} tokens",
        file=sys.stderr,
    )
    progress = Progress(len(geometries) * len(variants), sys.stderr)
    try:
        results = simulate(workload, geometries, variants, settings, progress)
    except SimulationError as error:
        print(f"python -m junction.reference simulate: error: {error}", file=sys.stderr)
        return 1
    tables = [
        format_table(
            name, [r for v in table for r in results if r.geometry == name and r.variant == v]
        )
        for name in geometries
    ]
    text = "\n\n".join(tables)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    report = {
        "workload": {
            "source": workload.source,
            "sessions": len(workload.sessions),
            "requests": workload.requests,
            "prompt_tokens": workload.prompt_tokens,
            "system_prompt_tokens": workload.shared_prefix_tokens,
        },
        "settings": {
            "geometries": {name: GEOMETRIES[name].description for name in geometries},
            **attrs.asdict(settings),
            "interval": args.interval,
            "intervals": list(args.intervals),
        },
        "table": [v.label for v in table],
        "runs": [r.to_json() for r in results],
    }
    json_path = args.out / "simulate.json"
    json_path.write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "simulate.txt").write_text(text + "\n")
    written = [json_path, args.out / "simulate.txt"]
    if not args.no_plot:
        write_plot(args.out / "simulate.png", geometries, results)
        written.append(args.out / "simulate.png")
    print(f"wrote {', '.join(map(str, written))}", file=sys.stderr)
    return 0
