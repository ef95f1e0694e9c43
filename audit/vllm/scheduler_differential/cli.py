"""``junction audit vllm-engine``: vLLM's real scheduler as shipped against the
drop-in, every layout, seeds and modes (``make vllm-engine``).

Prints one line per layout (summed over the seeds) and the totals: requests,
steps, steps compared while the two schedulers' states were equal, the shadow's
lookups, splits and masks, vLLM's preemptions and evictions, the classified
lookup differences per finding (docs/findings.md), the hit tokens the
drop-in's answers find beyond vLLM's on vLLM's state (``saved``), and the hit
tokens each scheduler's lookups found over the whole run, each on its own
state (what the differences cost or save end to end), and the external
tokens vLLM's KV connector answered (``ext``, connector layouts) and the runs
a documented failure of vLLM's own ended (``vfail``; docs/dropin.md). Exit
status 0 when every run ended with only classified differences (none in
``identical`` mode), 1 when one raised (the layout, seed and error are
printed), 2 when vLLM is not installed (one line naming the extra).
"""

from __future__ import annotations

import argparse
import sys
import time

from junction.dropin import Mode
from junction.reference.cli import options
from junction.upstream import VllmMissing

from . import Finding, Report, layouts, run_layout

__all__ = ["add_options", "run"]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``audit vllm-engine``'s options (no vLLM needed: help works without it)."""
    parser.description = __doc__
    parser.add_argument("--seeds", type=_positive, default=4, metavar="N")
    options.add_requests(
        parser, meaning="seeded multi-turn requests per layout and seed (default 300)", default=300
    )
    parser.add_argument("--mode", choices=[*(mode.value for mode in Mode), "both"], default="both")
    parser.add_argument("--only", default="", metavar="TEXT", help="only layouts naming TEXT")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    modes = list(Mode) if args.mode == "both" else [Mode(args.mode)]
    try:
        chosen = [layout for layout in layouts() if args.only in layout.name]
    except VllmMissing as missing:
        print(f"{parser.prog}: error: {missing}", file=sys.stderr)
        return 2
    failed = 0
    for mode in modes:
        print(
            f"\nmode {mode.value}: {len(chosen)} layouts x {args.seeds} seeds x "
            f"{args.requests} requests"
        )
        print(_HEADER)
        total = Report("total", -1)
        started = time.perf_counter()
        for layout in chosen:
            summed = Report(layout.name, -1)
            for seed in range(args.seeds):
                try:
                    report = run_layout(layout, seed, args.requests, mode)
                except Exception as error:
                    failed += 1
                    print(f"FAILED {layout.name} seed {seed}: {type(error).__name__}: {error}")
                    continue
                _add(summed, report)
                _add(total, report)
            print(_row(summed))
        print(_row(total))
        print(f"{time.perf_counter() - started:.1f} s")
    if failed:
        print(f"{failed} run(s) failed")
        return 1
    print("every difference classified" + (" (identical: none)" if Mode.IDENTICAL in modes else ""))
    return 0


_FINDINGS = list(Finding)
_HEADER = (
    f"{'layout':52} {'req':>5} {'steps':>6} {'equal':>6} {'lookups':>7} {'splits':>7} "
    f"{'masks':>6} {'preempt':>7} {'evict':>6} "
    + " ".join(f"{'f' + str(f.value):>5}" for f in _FINDINGS)
    + f" {'saved':>6} {'hits vLLM':>10} {'drop-in':>10} {'ext':>7} {'vfail':>5}"
)


def _add(into: Report, report: Report) -> None:
    into.requests += report.requests
    into.steps += report.steps
    into.compared_steps += report.compared_steps
    into.lookups += report.lookups
    into.splits += report.splits
    into.masks += report.masks
    into.preemptions += report.preemptions
    into.evictions += report.evictions
    into.tokens_saved += report.tokens_saved
    into.hits_vllm += report.hits_vllm
    into.hits_dropin += report.hits_dropin
    into.external_vllm += report.external_vllm
    for failure, count in report.vllm_failures.items():
        into.vllm_failures[failure] = into.vllm_failures.get(failure, 0) + count
    for finding, count in report.findings.items():
        into.findings[finding] = into.findings.get(finding, 0) + count


def _row(report: Report) -> str:
    return (
        f"{report.layout[:52]:52} {report.requests:>5} {report.steps:>6} "
        f"{report.compared_steps:>6} {report.lookups:>7} {report.splits:>7} {report.masks:>6} "
        f"{report.preemptions:>7} {report.evictions:>6} "
        + " ".join(f"{report.findings.get(f, 0):>5}" for f in _FINDINGS)
        + f" {report.tokens_saved:>6} {report.hits_vllm:>10} {report.hits_dropin:>10}"
        + f" {report.external_vllm:>7} {sum(report.vllm_failures.values()):>5}"
    )
