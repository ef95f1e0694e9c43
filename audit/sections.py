"""A regenerated section of a Markdown file, between its own pair of markers.

docs/findings.md is written by several commands: the policy sections by
``junction findings``, the vLLM and SGLang audit sections
by ``junction audit findings``. Each audit section sits between its
own ``<!-- ...:begin -->`` / ``<!-- ...:end -->`` markers and is replaced
whole, so a section is regenerated, never edited, and the rest of the file is
left as it was. The two audit sections also write their findings alike: a
table cell escapes ``|``, and each finding ends in a paragraph of its cause
and impact followed by its counterexample as JSON. Rejected: one writer per
engine (two copies of the same splice and paragraphs, differing only in their
markers and notes).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from junction.reference.harness import Scenario

__all__ = ["counterexample_paragraph", "replace_section", "table_cell"]


def replace_section(path: Path, section: str, begin: str, end: str) -> None:
    """Put ``section`` (which starts with ``begin`` and ends with ``end``) in ``path``.

    Replaces the text from ``begin`` to ``end`` when both are there; otherwise
    appends the section after a blank line (or writes it to a new file).
    """
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if begin in text and end in text:
        start = text.index(begin)
        stop = text.index(end) + len(end)
        text = text[:start] + section.rstrip("\n") + text[stop:]
    else:
        text = (text.rstrip("\n") + "\n\n" if text else "") + section
    path.write_text(text, encoding="utf-8")


def table_cell(text: str) -> str:
    """``text`` for a Markdown table cell (a bare ``|`` would end the cell)."""
    return text.replace("|", "\\|")


def counterexample_paragraph(
    number: int,
    title: str,
    notes: Sequence[str],
    cause: str,
    impact: str,
    counterexample: Scenario,
) -> list[str]:
    """A numbered finding's lines: its title and ``notes``, its cause and impact,
    then its counterexample as one line of JSON (replayable with ``Scenario.from_json``)."""
    return [
        f"**{number}. {title}** ({'; '.join(notes)}). Cause: {cause}. Impact: {impact}.",
        "",
        "```json",
        json.dumps(counterexample.to_json()),
        "```",
        "",
    ]
