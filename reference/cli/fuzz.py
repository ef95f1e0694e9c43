"""``python -m junction.reference fuzz``: time-boxed conformance fuzzing of one policy.

``--policy`` is a built-in name (``junction``, ``dense``, ``interval``,
``vllm-0.33``, ``vllm-pr47782``) or ``module:attribute`` naming a user's
policy (an object, or a class / factory called with no arguments). The
promises take turns until ``--seconds`` are spent; a progress line on
standard error shows the time spent and the examples run per promise. The
final table gives each promise's verdict; a violation prints its shrunk
counterexample as a replayable scenario. Exit status: 0 when every promise
held, 1 on any violation or policy error, 2 for bad arguments or a policy
that cannot be loaded. ``--seed`` replays a run: the same seed runs the same
examples in order.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from junction.reference.cli import terminal
from junction.reference.cli.arguments import int_at_least
from junction.reference.engine.policy import PolicyError
from junction.reference.harness import ConformanceReport, Promise, Verdict, run_conformance
from junction.reference.policies.builtin import resolve_policy

__all__ = ["add_parser"]

_MARKS = {
    Verdict.KEPT: "",
    Verdict.VIOLATED: " VIOLATED",
    Verdict.ERROR: " ERROR",
    Verdict.NOT_APPLICABLE: " n/a",
}


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def _fuzz(args: argparse.Namespace, policy: Any) -> ConformanceReport:
    """The run, with a progress line in seconds (the budget) and the examples per promise."""
    counts: dict[Promise, str] = {}
    with terminal.progress("fuzz", args.seconds) as advance:
        started, shown = time.perf_counter(), 0

        def on_progress(promise: Promise, examples: int, status: Verdict) -> None:
            nonlocal shown
            counts[promise] = f"{promise.value} {examples}{_MARKS[status]}"
            elapsed = int(min(time.perf_counter() - started, args.seconds))
            advance(elapsed - shown, status="  ".join(counts.values()))
            shown = elapsed

        return run_conformance(
            policy,
            seconds=args.seconds,
            seed=args.seed,
            promises=args.promise or list(Promise),
            on_progress=on_progress,
        )


def _json(report: ConformanceReport) -> dict[str, Any]:
    return {
        "policy": report.policy,
        "seed": report.seed,
        "passed": report.passed,
        "verdicts": [
            {
                "promise": v.promise.value,
                "statement": v.statement,
                "status": v.status.value,
                "examples": v.examples,
                "seconds": round(v.seconds, 3),
                "message": v.message,
                "counterexample": v.counterexample.to_json() if v.counterexample else None,
            }
            for v in report.verdicts
        ],
    }


def _run(args: argparse.Namespace) -> int:
    try:
        policy = resolve_policy(args.policy)
        report = _fuzz(args, policy)
    except PolicyError as error:  # cannot load, or the protocol itself is not implemented
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report.table())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(_json(report), handle, indent=2)
    return 0 if report.passed else 1


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``fuzz`` on ``python -m junction.reference``'s subcommands."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "fuzz",
        help="check a retention policy's promises for a while; non-zero exit on a violation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--policy",
        default="junction",
        metavar="NAME",
        help="built-in policy name or module:attribute (default junction)",
    )
    parser.add_argument(
        "--seconds", type=_positive_seconds, default=60.0, help="time budget (default 60)"
    )
    parser.add_argument("--seed", type=int_at_least(0), default=0, help="replay seed (default 0)")
    parser.add_argument(
        "--promise",
        action="append",
        choices=[p.value for p in Promise],
        help="check only this promise (repeatable; default: all)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    parser.set_defaults(run=_run)
    return parser
