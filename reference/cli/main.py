"""``python -m junction.reference``: the command line of the reference side.

``exhaustive`` walks every input up to a bound and compares core with the
first-principles oracle, printing how many inputs each decision covered.
``simulate`` runs retention policies on an agent workload; ``fuzz`` checks one
policy's promises for a while (``cli.fuzz``); ``findings`` writes
docs/findings.md (``cli.findings``).
"""

from __future__ import annotations

import argparse
import time

from junction import core
from junction.reference.cli import findings, fuzz, simulate
from junction.reference.cli.terminal import progress
from junction.reference.oracle.exhaustive import check_exhaustively


def _exhaustive(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    with progress(f"exhaustive, bound {args.bound}", None) as advance:  # size not known

        def checked(decision: str, inputs: int) -> None:
            advance(inputs, status=decision)

        coverage = check_exhaustively(core, args.bound, on_progress=checked)
    elapsed = time.perf_counter() - started
    print(f"bounded-exhaustive check, bound {args.bound}: core against the oracle")
    for name, count in coverage.checked.items():
        print(f"  {name:<28} {count:>12,} inputs")
    print(f"  {'total':<28} {coverage.total:>12,} inputs in {elapsed:.1f} s")
    if coverage.mismatch_count:
        print(f"{coverage.mismatch_count:,} disagreements; first ones:")
        for line in coverage.mismatches:
            print(f"  {line}")
        return 1
    print("every input agrees")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m junction.reference", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    exhaustive = commands.add_parser(
        "exhaustive", help="core vs oracle on every input up to a bound"
    )
    exhaustive.add_argument(
        "--bound", type=int, default=3, help="size of every dimension (default 3)"
    )
    exhaustive.set_defaults(run=_exhaustive)
    simulate.add_parser(commands)
    fuzz.add_parser(commands)
    findings.add_parser(commands)
    args = parser.parse_args(argv)
    if args.command == "exhaustive" and args.bound < 1:
        parser.error(f"--bound must be >= 1, got {args.bound}")
    return int(args.run(args))
