"""``python -m junction.audit findings [--write PATH]``: the audits' docs sections.

Prints the ``## vLLM 0.33.0 audit`` and ``## SGLang 0.5.23 audit`` sections
(re-running every counterexample on the installed engines), or with
``--write`` replaces each between its markers of that file (``vllm-audit``,
``sglang-audit``; docs/findings.md), leaving the rest.
``--write`` is checked before the audit runs (a folder, a read-only file or
an uncreatable folder exits with status 2) and the file is replaced in one
move (``junction.reference.cli.outputs``): a failure leaves it as it was.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from junction.reference.cli import outputs, terminal
from junction.reference.cli.arguments import output_path

from .sglang.env import SglangMissing
from .sglang.findings import findings_markdown as sglang_markdown
from .sglang.findings import write_section as sglang_write_section
from .vllm.env import VllmMissing
from .vllm.findings import findings_markdown, write_section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m junction.audit", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    findings = commands.add_parser("findings", help="the docs/findings.md section")
    findings.add_argument(
        "--write", type=output_path, metavar="PATH", help="replace the section in this file"
    )
    args = parser.parse_args(argv)
    if args.write:
        try:
            outputs.check_file("--write", args.write)
        except outputs.OutputError as error:
            findings.error(str(error))
    try:
        section = findings_markdown()
        sglang_section = sglang_markdown()
    except (VllmMissing, SglangMissing) as missing:
        print(f"python -m junction.audit: {missing}", file=sys.stderr)
        return 2
    if args.write:

        def write(path: Path) -> None:
            write_section(path, section)
            sglang_write_section(path, sglang_section)

        try:
            outputs.rewrite(args.write, write)
        except outputs.OutputError as error:
            print(f"{findings.prog}: error: {error}; {args.write} left as it was", file=sys.stderr)
            return 1
        print(f"wrote the vLLM and SGLang audit sections of {args.write}")
    else:
        sys.stdout.write(section + "\n" + sglang_section)
    return 0


if __name__ == "__main__":
    sys.exit(terminal.interruptible(main))
