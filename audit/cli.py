"""``junction audit findings [--engine NAME] [--write PATH]`` and ``junction audit engines``.

``findings`` prints each audited engine's docs/findings.md section (``## vLLM
0.33.0 audit``, ``## SGLang 0.5.23 audit``: every counterexample re-run on
the installed engines), or with ``--write`` replaces each between its own
markers of that file (``<!-- NAME-audit:begin -->``), leaving the rest;
``--engine`` (repeatable) keeps to the engines named. ``engines`` lists the
audited engines, each pinned version and whether it is installed here. Both
read :data:`junction.audit.engines.ENGINES`, one row per engine.
``--write`` is checked before the audit runs (a folder, a read-only file or
an uncreatable folder exits with status 2) and the file is replaced in one
move (``junction.reference.cli.outputs``): a failure leaves it as it was.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from junction.reference.cli import outputs
from junction.reference.cli.arguments import output_path
from junction.upstream import EngineMissing

from . import engines as audited
from .record import AuditedEngine
from .sections import replace_section

__all__ = ["add_engines_options", "add_findings_options", "engines", "findings"]


def add_findings_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``audit findings``' options on its parser."""
    parser.description = __doc__
    parser.add_argument(
        "--engine",
        action="append",
        choices=audited.engine_names(),
        help="only this engine's section (repeatable; default every engine)",
    )
    parser.add_argument(
        "--write", type=output_path, metavar="PATH", help="replace the sections in this file"
    )


def add_engines_options(parser: argparse.ArgumentParser) -> None:
    """``audit engines`` has no options."""
    parser.description = __doc__


def _listing() -> str:
    rows = []
    for engine in audited.ENGINES:
        reason = engine.missing_reason()
        rows.append(
            f"{engine.name}: {engine.pin.name} {engine.pin.version} "
            f"(extra `{engine.pin.extra}`, tests {engine.tests}, {engine.require_option}): "
            + ("installed" if reason is None else reason)
        )
    return "\n".join(rows)


def _names(chosen: Sequence[AuditedEngine]) -> str:
    names = [engine.pin.name for engine in chosen]
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def engines(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``audit engines``: one line per audited engine."""
    print(_listing())
    return 0


def findings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``audit findings``: print each chosen engine's section, or write them (``--write``)."""
    chosen = [e for e in audited.ENGINES if args.engine is None or e.name in args.engine]
    if args.write:
        try:
            outputs.check_file("--write", args.write)
        except outputs.OutputError as error:
            parser.error(str(error))
    try:
        sections = [engine.findings() for engine in chosen]
    except EngineMissing as missing:
        print(f"{parser.prog}: error: {missing}", file=sys.stderr)
        return 2
    if args.write:

        def write(path: Path) -> None:
            for engine, section in zip(chosen, sections, strict=True):
                replace_section(path, section, engine.begin, engine.end)

        try:
            outputs.rewrite(args.write, write)
        except outputs.OutputError as error:
            print(f"{parser.prog}: error: {error}; {args.write} left as it was", file=sys.stderr)
            return 1
        plural = "s" if len(chosen) > 1 else ""
        print(f"wrote the {_names(chosen)} audit section{plural} of {args.write}")
    else:
        sys.stdout.write("\n".join(sections))
    return 0
