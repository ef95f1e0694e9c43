"""Every document a file of the repository points to is in the repository.

Two kinds of reference: a section mark (``SPEC §9b``, ``domain.md §3``),
which must name a document the repository holds, and a Markdown link to a
relative path, which must exist relative to the linking file. A reference to
a document that only ever lived outside the repository reads as a source a
newcomer cannot open.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = {".git", ".venv", "build", "dist", "mutants", "out", ".vllm-suite", "node_modules"}
SECTION = re.compile(r"([A-Za-z0-9_./-]+)`*\s*§\s*\d")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def files(suffixes: tuple[str, ...]) -> list[Path]:
    found = []
    # Pruned while walking: a checkout's .venv alone holds hundreds of thousands of files.
    for folder, folders, names in os.walk(ROOT):
        folders[:] = [f for f in folders if f not in SKIPPED and not f.startswith(".")]
        for name in names:
            path = Path(folder, name)
            hidden = name.startswith(".")
            if path.suffix in suffixes and not hidden and path != Path(__file__).resolve():
                found.append(path)
    return sorted(found)


DOCUMENTS = {p.name for p in files((".md",))} | {p.stem for p in files((".md",))}


def section_references(text: str) -> list[str]:
    """The documents named before a ``§``, as written."""
    return [m[1].rstrip(".,;:") for m in SECTION.finditer(text)]


def test_the_check_finds_a_spec_reference() -> None:
    text = "all six options of SPEC §9b; see ``../shared/SPEC.md`` §9b and domain.md § 3"
    assert section_references(text) == ["SPEC", "../shared/SPEC.md", "domain.md"]
    assert [name for name in section_references(text) if Path(name).name not in DOCUMENTS] == [
        "SPEC",
        "../shared/SPEC.md",
    ]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", files((".md", ".py", ".toml", ".sh")), ids=_name)
def test_every_section_reference_names_a_document_in_the_repository(path: Path) -> None:
    missing = [
        name
        for name in section_references(path.read_text(encoding="utf-8", errors="replace"))
        if Path(name).name not in DOCUMENTS
    ]
    assert not missing, f"{path.relative_to(ROOT)} cites sections of documents not here: {missing}"


@pytest.mark.parametrize("path", files((".md",)), ids=_name)
def test_every_relative_markdown_link_resolves(path: Path) -> None:
    broken = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        relative = target.split("#")[0]
        if not (path.parent / relative).exists():
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)} links to missing files: {broken}"
