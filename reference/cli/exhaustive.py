"""``junction exhaustive``: core against the oracle on every input up to a bound.

Walks every input up to ``--bound`` and compares ``core`` with the
first-principles oracle, printing how many inputs each decision covered;
exit 1 on a disagreement. A walk estimated past the limit (:data:`MAX_SECONDS`)
is refused up front naming the largest bound within it; one past a minute
says how long it will take.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from junction import core
from junction.reference.cli import options
from junction.reference.cli.coverage import report_coverage
from junction.reference.cli.terminal import progress
from junction.reference.oracle.exhaustive import check_exhaustively, count_inputs

__all__ = ["COUNTED_BOUND", "MAX_SECONDS", "WALK_RATES", "add_options", "run"]

# Inputs per second of the walk (core and oracle on one input), per decision: measured
# at bounds 1 and 2 on the 2-core development machine (CPython 3.11: mask 77-136k/s,
# split 208-236k/s, reconcile 52-53k/s), rounded down so the estimate errs long.
WALK_RATES = {
    "reachable_block_mask": 75_000,
    "mamba_block_aligned_split": 200_000,
    "reconcile_hits": 50_000,
    "promised_positions": 30_000,  # two oracle reconciliations an input
}
# Above WARN_SECONDS the walk says up front how long it will take; above MAX_SECONDS
# (bound 8: about 10 hours) it is refused. Bounds above COUNTED_BOUND are not counted
# (the reconcile count alone has 2 * bound bits): they are refused with the count at
# COUNTED_BOUND as a lower bound.
WARN_SECONDS = 60
MAX_SECONDS = 4 * 3600
COUNTED_BOUND = 1000


def _amount(number: int) -> str:
    """An exact count below 10**12, above it the power of ten it reaches."""
    return f"{number:,}" if number < 10**12 else f"10^{math.floor(math.log10(number))}"


def _duration(seconds: int) -> str:
    for unit, size in (("years", 365 * 86400), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{_amount(seconds // size)} {unit}"
    return f"{seconds} s"


def _walk_size(bound: int) -> tuple[int, int, bool]:
    """The inputs at ``bound``, the estimated seconds, and whether both are lower bounds."""
    clamped = bound > COUNTED_BOUND
    counts = count_inputs(min(bound, COUNTED_BOUND))
    milliseconds = sum(1000 * count // WALK_RATES[name] for name, count in counts.items())
    seconds = milliseconds // 1000
    return sum(counts.values()), seconds, clamped


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    inputs, seconds, clamped = _walk_size(args.bound)
    amount = ("more than " if clamped else "") + _amount(inputs)
    size = f"{amount} inputs, {'more than' if clamped else 'about'} {_duration(seconds)}"
    if seconds > MAX_SECONDS:
        print(
            f"{parser.prog}: error: --bound {args.bound}: the walk "
            f"would check {size} at {WALK_RATES['reconcile_hits']:,}-"
            f"{WALK_RATES['mamba_block_aligned_split']:,} inputs/s; the limit is "
            f"{MAX_SECONDS // 3600} hours (bound {_largest_bound()} at most)",
            file=sys.stderr,
        )
        return 2
    if seconds > WARN_SECONDS:
        print(f"exhaustive, bound {args.bound}: {size} (estimated)", file=sys.stderr)
    started = time.perf_counter()
    with progress(f"exhaustive, bound {args.bound}", inputs) as advance:

        def checked(decision: str, inputs: int) -> None:
            advance(inputs, status=decision)

        coverage = check_exhaustively(core, args.bound, on_progress=checked)
    elapsed = time.perf_counter() - started
    return report_coverage(coverage, "core", args.bound, elapsed)


def _largest_bound() -> int:
    """The largest bound whose walk is estimated within :data:`MAX_SECONDS`."""
    bound = 1
    while _walk_size(bound + 1)[1] <= MAX_SECONDS:
        bound += 1
    return bound


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``exhaustive``'s options on its parser."""
    parser.description = __doc__
    options.add_bound(parser)
