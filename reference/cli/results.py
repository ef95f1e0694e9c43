"""``junction results [FILE]``: refresh a document's generated tables.

A fenced block that follows a line ``<!-- output: PATH -->`` is the text of
PATH (relative to the current folder, the checkout's root) verbatim. This
command rewrites every such block from its file (docs/results.md by
default; ``make results`` runs ``make demo`` first), so the document can
only show what a command wrote; ``tests/examples/test_results.py`` fails
while a block differs from its file. Exit status 0; 2 when the document or
a named output is missing (one line).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from junction.reference.cli import outputs

__all__ = ["add_options", "generated_blocks", "refresh", "run"]

BLOCK = re.compile(
    r"(?P<head><!-- output: (?P<path>\S+) -->\n```[a-z]*\n)(?P<body>.*?)(?=```)", re.S
)


def generated_blocks(text: str) -> list[tuple[str, str]]:
    """``(path, shown text)`` for every generated block of ``text``, in order."""
    return [(m["path"], m["body"]) for m in BLOCK.finditer(text)]


def refresh(text: str, root: Path) -> str:
    """``text`` with every generated block replaced by its file's text (``FileNotFoundError``)."""

    def body(match: re.Match[str]) -> str:
        return match["head"] + (root / match["path"]).read_text(encoding="utf-8")

    return BLOCK.sub(body, text)


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``results``' options on its parser."""
    parser.description = __doc__
    parser.add_argument("file", nargs="?", type=Path, default=Path("docs/results.md"))


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    document: Path = args.file
    try:
        text = document.read_text(encoding="utf-8")
        fresh = refresh(text, Path.cwd())
    except OSError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    if fresh != text:

        def write(path: Path) -> None:
            path.write_text(fresh, encoding="utf-8")

        outputs.rewrite(document, write)
    blocks = len(generated_blocks(fresh))
    print(f"{document}: {blocks} generated blocks, {'rewritten' if fresh != text else 'current'}")
    return 0
