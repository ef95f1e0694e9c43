"""``python -m junction.reference findings``: the vLLM policies against the promises.

Runs the promise harness on ``vllm-0.33`` and ``vllm-pr47782`` in four
scopes (plain; EAGLE; partial hits; both) and writes ``docs/findings.md``:
every promise each violates, the minimal counterexample as a replayable
scenario, and the upstream report it matches (or "new"). Deterministic: the
same seed and example count give the same file. The section between the
``vllm-audit`` markers belongs to ``python -m junction.audit findings`` and
is kept as it is. A progress line on standard error shows the examples run
(a promise stops at its first violation, so the run ends below the total).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from junction.reference.cli import terminal
from junction.reference.cli.arguments import int_at_least
from junction.reference.harness.findings import total_examples, write_findings

__all__ = ["add_parser"]


def _run(args: argparse.Namespace) -> int:
    with terminal.progress("findings", total_examples(args.examples)) as advance:
        write_findings(
            Path(args.out),
            args.examples,
            args.seed,
            lambda done, status: advance(done, status=status),
        )
    terminal.stderr.print(f"wrote {args.out}")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``findings`` on ``python -m junction.reference``'s subcommands."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "findings",
        help="run the harness on the vLLM policies and write docs/findings.md",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--examples", type=int_at_least(1), default=150, help="per promise and scope (default 150)"
    )
    parser.add_argument("--seed", type=int_at_least(0), default=0, help="(default 0)")
    parser.add_argument("--out", default="docs/findings.md")
    parser.set_defaults(run=_run)
    return parser
