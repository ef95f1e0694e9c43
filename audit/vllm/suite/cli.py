"""``junction audit vllm-suite``: vLLM 0.33.0's own tests with the core swapped in.

Prints the passed and failed counts of the tests exercising the three
decisions, then every test that did not pass with its reason, grouped.
Exits 0 only when the suite's rule holds (:mod:`.suite`); 1 otherwise, or
with one line when a run could not be made; 2 for a usage error. ``--cache``
holds the sdist, the unpacked tests, the offline model configuration and
the reports (reused). Without vLLM installed it prints why and exits 0, as
the audit's tests skip, unless ``--require-vllm`` (CI) makes that 1. It is
part of ``make verify``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from junction.reference.cli import options
from junction.upstream.vllm_0_33.env import vllm_missing_reason

__all__ = ["add_options", "run"]


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``audit vllm-suite``'s options (no vLLM needed: help works without it)."""
    parser.description = __doc__
    parser.add_argument("--cache", type=Path, default=Path(".vllm-suite"), metavar="DIR")
    options.add_jobs(parser, default=2, note=": test processes side by side")
    parser.add_argument(
        "--require-vllm", action="store_true", help="a missing vLLM exits 1 instead of skipping"
    )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if (missing := vllm_missing_reason()) is not None:
        required = args.require_vllm
        print(
            f"{parser.prog}: {'error: --require-vllm is given but ' if required else 'skipped: '}"
            f"{missing}",
            file=sys.stderr,
        )
        return 1 if required else 0
    # The suite's modules read vLLM as they are imported: only once it is known to be here.
    from .report import render
    from .suite import run_suite
    from .workspace import prepare

    try:
        workspace = prepare(args.cache)
        result = run_suite(workspace, args.cache / "reports", args.jobs)
    except (RuntimeError, OSError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    print(render(result))
    return 0 if result.ok else 1
