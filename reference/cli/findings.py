"""``junction findings``: the vLLM policies against the promises.

Runs the promise harness on ``vllm-0.33`` and ``vllm-pr47782`` in four
scopes (plain; EAGLE; partial hits; both) and writes ``docs/findings.md``:
every promise each violates, the minimal counterexample as a replayable
scenario, and the upstream report it matches (or "new"). Deterministic: the
same seed and example count give the same file. The sections between the
``vllm-audit`` and ``sglang-audit`` markers belong to ``junction audit
findings`` and are kept as they are. A progress line on
standard error shows the examples run (a promise stops at its first
violation, so the run ends below the total).
``--out`` is checked before the run (a folder, a read-only file or an
uncreatable folder exits with status 2) and replaced at the end in one move
(``cli.outputs``): an interrupted or failed run leaves the old file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from junction.reference.cli import options, outputs, terminal
from junction.reference.cli.arguments import int_at_least
from junction.reference.harness.findings import total_examples, write_findings

__all__ = ["add_options", "run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        outputs.check_file("--out", args.out)
    except outputs.OutputError as error:
        parser.error(str(error))
    try:
        with terminal.progress("findings", total_examples(args.examples)) as advance:

            def write(path: Path) -> None:
                write_findings(
                    path,
                    args.examples,
                    args.seed,
                    lambda done, status: advance(done, status=status),
                )

            outputs.rewrite(args.out, write)
    except outputs.OutputError as error:
        print(f"{parser.prog}: error: {error}; {args.out} left as it was", file=sys.stderr)
        return 1
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``findings``' options on its parser."""
    parser.description = __doc__
    parser.add_argument(
        "--examples", type=int_at_least(1), default=150, help="per promise and scope (default 150)"
    )
    options.add_seed(parser)
    options.add_out(parser, default=Path("docs/findings.md"), writes="the findings", folder=False)
