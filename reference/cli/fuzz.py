"""``python -m junction.reference fuzz``: time-boxed conformance fuzzing of one policy.

``--policy`` is a built-in name (``junction``, ``dense``, ``interval``,
``vllm-0.33``, ``vllm-pr47782``) or ``module:attribute`` naming a user's
policy (an object, or a class / factory called with no arguments). The
promises take turns until ``--seconds`` are spent; a live line shows the time
bar and the examples run per promise. The final table gives each promise's
verdict; a violation prints its shrunk counterexample as a replayable
scenario. Exit status: 0 when every promise held, 1 on any violation or
policy error, 2 for bad arguments or a policy that cannot be loaded.
``--seed`` replays a run: the same seed runs the same examples in order.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, TextIO

from junction.reference.cli.arguments import int_at_least
from junction.reference.engine.policy import PolicyError
from junction.reference.harness.conformance import PROMISES, run_conformance
from junction.reference.policies.builtin import resolve_policy

__all__ = ["add_parser"]


class _LiveLine:
    """The time bar and per-promise example counts, redrawn in place on a terminal."""

    def __init__(self, seconds: float, stream: TextIO, width: int = 24) -> None:
        self.seconds = seconds
        self.stream = stream
        self.width = width
        self.started = time.perf_counter()
        self.counts: dict[str, str] = {}
        self.tty = stream.isatty()

    def update(self, promise: str, examples: int, status: str) -> None:
        mark = {"kept": "", "violated": " VIOLATED", "error": " ERROR", "n/a": " n/a"}[status]
        self.counts[promise] = f"{promise} {examples}{mark}"
        elapsed = time.perf_counter() - self.started
        filled = min(self.width, int(self.width * elapsed / self.seconds))
        bar = "#" * filled + "." * (self.width - filled)
        line = f"[{bar}] {elapsed:5.1f}/{self.seconds:g} s  " + "  ".join(self.counts.values())
        self.stream.write(f"\r\033[K{line}" if self.tty else line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def _run(args: argparse.Namespace) -> int:
    try:
        policy = resolve_policy(args.policy)
    except PolicyError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    live = _LiveLine(args.seconds, sys.stderr)
    try:
        report = run_conformance(
            policy,
            seconds=args.seconds,
            seed=args.seed,
            promises=args.promise or list(PROMISES),
            on_progress=live.update,
        )
    except PolicyError as error:  # the protocol itself is not implemented
        live.close()
        print(f"error: {error}", file=sys.stderr)
        return 2
    live.close()
    print(report.table())
    if args.json:
        document: dict[str, Any] = {
            "policy": report.policy,
            "seed": report.seed,
            "passed": report.passed,
            "verdicts": [
                {
                    "promise": v.promise,
                    "statement": v.statement,
                    "status": v.status,
                    "examples": v.examples,
                    "seconds": round(v.seconds, 3),
                    "message": v.message,
                    "counterexample": v.counterexample.to_json() if v.counterexample else None,
                }
                for v in report.verdicts
            ],
        }
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)
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
        choices=list(PROMISES),
        help="check only this promise (repeatable; default: all)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    parser.set_defaults(run=_run)
    return parser
