"""What a caller imports: each package's ``__all__``, and the documents import only those.

A package a caller imports from names its public names in its ``__init__``'s
``__all__``; the modules behind it are internal (docs/design/error-root.md).
Read from the source, so the kernels' package (torch) is checked without
importing it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import junction

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(junction.__path__[0])

# The packages a caller imports from.
PUBLIC = (
    "junction.core",
    "junction.kernels",
    "junction.dropin",
    "junction.upstream",
    "junction.upstream.vllm_0_33",
    "junction.reference.engine",
    "junction.reference.policies",
    "junction.reference.oracle",
    "junction.reference.harness",
    "junction.reference.simulator",
    "junction.reference.workloads",
    "junction.reference.replay",
)
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
IMPORT = re.compile(r"^\s*from (junction[\w.]*) import \(?([\w, ]+)\)?|^\s*import (junction[\w.]*)")


def folder(package: str) -> Path:
    return PACKAGE.joinpath(*package.split(".")[1:])


def exported(package: str) -> tuple[list[str], set[str]]:
    """(the ``__all__`` of ``package``'s ``__init__``, every name its top level binds)."""
    tree = ast.parse((folder(package) / "__init__.py").read_text(encoding="utf-8"))
    listed: list[str] = []
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            listed = list(ast.literal_eval(node.value))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            bound |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {t.id for t in targets if isinstance(t, ast.Name)}
    return listed, bound


@pytest.mark.parametrize("package", PUBLIC)
def test_a_public_package_names_what_it_exports(package: str) -> None:
    listed, bound = exported(package)
    assert listed, f"{package}: no __all__ in its __init__"
    assert sorted(set(listed)) == sorted(listed), f"{package}: a name listed twice"
    assert [name for name in listed if name not in bound] == []


def test_the_lists_hold_the_objects_they_name() -> None:
    import importlib

    for package in PUBLIC:
        if package == "junction.kernels":  # torch: checked from its source above
            continue
        module = importlib.import_module(package)
        assert [name for name in module.__all__ if not hasattr(module, name)] == [], package


def code_of(document: Path) -> list[str]:
    """The lines of ``document``'s Python blocks and of its inline code."""
    text = document.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return [line for block in blocks for line in block.splitlines()] + inline


def stray_imports(lines: list[str]) -> list[str]:
    """The imports in ``lines`` of a module that is no public package, or of a name
    outside a package's ``__all__``."""
    strays = []
    for line in lines:
        match = IMPORT.match(line)
        if match is None:
            continue
        source, names, plain = match.groups()
        if plain is not None:
            if plain != "junction" and plain not in PUBLIC:
                strays.append(line.strip())
            continue
        if source != "junction" and source not in PUBLIC:
            strays.append(line.strip())
            continue
        subpackages = {p.name for p in folder(source).iterdir() if (p / "__init__.py").is_file()}
        listed = exported(source)[0] if source != "junction" else []
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        if any(n not in listed and n not in subpackages for n in wanted):
            strays.append(line.strip())
    return strays


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_documents_import_from_packages_only(document: Path) -> None:
    assert stray_imports(code_of(document)) == []


def test_a_stray_import_is_seen() -> None:
    lines = [
        "from junction.reference.policies.builtin import JunctionPolicy",
        "from junction.reference.policies import JunctionPolicy, bound",
        "from junction.reference.policies import JunctionPolicy",
        "from junction import dropin",
        "import junction.reference.engine.block_pool",
    ]
    assert stray_imports(lines) == [lines[0], lines[1], lines[4]]
