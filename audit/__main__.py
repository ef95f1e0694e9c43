"""``python -m junction.audit findings [--write PATH]``: the vLLM 0.33.0 audit's docs section.

Prints the ``## vLLM 0.33.0 audit`` section (re-running every counterexample
on the installed vLLM), or with ``--write`` replaces it between the
``vllm-audit`` markers of that file (docs/findings.md), leaving the rest.
``--write`` is checked before the audit runs (a folder, a read-only file or
an uncreatable folder exits with status 2) and the file is replaced in one
move (``junction.reference.cli.outputs``): a failure leaves it as it was.
"""

from __future__ import annotations

import argparse
import sys

from junction.reference.cli import outputs, terminal
from junction.reference.cli.arguments import output_path

from .findings import findings_markdown, write_section
from .vllm_env import VllmMissing


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
    except VllmMissing as missing:
        print(f"python -m junction.audit: {missing}", file=sys.stderr)
        return 2
    if args.write:
        try:
            outputs.rewrite(args.write, lambda path: write_section(path, section))
        except outputs.OutputError as error:
            print(f"{findings.prog}: error: {error}; {args.write} left as it was", file=sys.stderr)
            return 1
        print(f"wrote the vLLM audit section of {args.write}")
    else:
        sys.stdout.write(section)
    return 0


if __name__ == "__main__":
    sys.exit(terminal.interruptible(main))
