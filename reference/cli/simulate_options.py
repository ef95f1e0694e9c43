"""``simulate``'s options: what a run can be asked for, and the help that says so.

The parser is built here and nothing is checked beyond what one option's
text says (argparse types: an int >= 1, a cost in ``[0, 1e9)``, a list of
intervals); what needs several options, the workload or memory is checked in
``cli.simulate_checks``, and running and writing are ``cli.simulate``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from junction.reference.engine.tier import TierSaving
from junction.reference.simulator.geometries import DEFAULT_GEOMETRIES, GEOMETRIES
from junction.reference.simulator.instances import ROUTES
from junction.reference.simulator.pool import PoolSize
from junction.reference.simulator.run import ARRIVALS, EVICTION_POLICIES
from junction.reference.workloads.step_time import StepTimeModel

from .arguments import (
    geometry_name,
    int_at_least,
    interval_list,
    output_path,
    pool_blocks,
    pool_fraction,
    pool_tokens,
)

__all__ = ["DEFAULT_INTERVALS", "DESCRIPTION", "ROWS", "add_options"]

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


def _intervals(text: str) -> tuple[int, ...]:
    """``--intervals``: the plot's sweep of ``R`` (each >= 1), or ``none``."""
    return () if text == "none" else interval_list(1)(text)


def _milliseconds(text: str) -> float:
    """A cost of the step-time model: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < 1e9:  # also rejects nan and inf
        raise argparse.ArgumentTypeError(f"{text}: a cost must be a number in [0, 1e9)")
    return value


def add_options(parser: argparse.ArgumentParser) -> None:
    """Add every option of ``simulate`` to ``parser``."""
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
        "--policy",
        action="append",
        metavar="NAME",
        help="also a row of the table, at R = 0: a registered policy or module:attribute "
        "(the module importable by the worker processes too), repeatable",
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
