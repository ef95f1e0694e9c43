"""A regenerated section of a Markdown file, between its own pair of markers.

docs/findings.md is written by several commands: the policy sections by
``python -m junction.reference findings``, the vLLM and SGLang audit sections
by ``python -m junction.audit findings``. Each audit section sits between its
own ``<!-- ...:begin -->`` / ``<!-- ...:end -->`` markers and is replaced
whole, so a section is regenerated, never edited, and the rest of the file is
left as it was. Rejected: one writer per engine (two copies of the same
splice, differing only in their markers).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["replace_section"]


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
