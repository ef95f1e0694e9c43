"""``simulate``'s options: what a run can be asked for, and the help that says so.

The parser is built here and nothing is checked beyond what one option's
text says (argparse types: an int >= 1, a cost in ``[0, 1e9)``, a list of
intervals); what needs several options, the workload or memory is checked in
``cli.simulate_checks``, and running and writing are ``cli.simulate``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from junction.reference.engine.tier import TierSaving
from junction.reference.simulator.instances import ROUTES
from junction.reference.simulator.run import EVICTION_POLICIES
from junction.reference.workloads.step_time import StepTimeModel

from . import options
from .arguments import int_at_least

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
    """Add every option of ``simulate`` to ``parser``: the shared groups (``cli.options``)
    and the options only ``simulate`` has."""
    parser.description = DESCRIPTION
    options.add_geometry(parser)
    options.add_builtin_workload(parser)
    options.add_scheduling(parser)
    options.add_pools(parser, repeatable=False)
    options.add_step(parser, chunk=256)
    options.add_interval(parser, default=256, default_text="256")
    options.add_intervals(
        parser,
        minimum=1,
        default=None,
        default_text=",".join(map(str, DEFAULT_INTERVALS))
        + ", the plot's sweep; none for a trace: the table's rows alone, four runs per geometry",
    )
    parser.add_argument(
        "--eviction",
        choices=EVICTION_POLICIES,
        default="lru",
        help="which free cached block a full pool recycles: lru (least recently freed, "
        "the default) or flop-aware (after Marconi: recency and prefill FLOPs saved per "
        "byte under the geometry's FLOP model; docs/eviction.md)",
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
    options.add_seed(parser)
    options.add_trace(parser, note="; instead of the built-in workload")
    options.add_out(parser, default=Path("out"), writes="simulate.json and the plots")
    parser.add_argument(
        "--row",
        choices=ROWS,
        action="append",
        help="run only these rows of the table, repeatable, and no sweep (default all four "
        "and the --intervals sweep; a tier's comparison needs only pinned)",
    )
    options.add_policy(
        parser,
        repeatable=True,
        note="; each also a row of the table, at R = 0 (a module importable by the worker "
        "processes too)",
    )
    parser.add_argument(
        "--instances",
        type=int_at_least(1),
        default=1,
        metavar="N",
        help="engine instances sharing the tier (default 1)",
    )
    parser.add_argument(
        "--tier",
        type=int_at_least(1),
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
    options.add_jobs(
        parser,
        default=None,
        note="; several: a run's requests are counted when it ends, 1: as each finishes",
    )
