"""A pytest plugin for ``make mutmut`` only (``-p`` in ``[tool.mutmut]``).

mutmut runs, per mutant, the tests that call the mutated function, with
``-x``. Cheap tests go first so a mutant they kill never pays for the
bounded-exhaustive walk, which runs last (it is ~6x slower under mutmut's
trampolines): examples, then the oracle properties, then the other
properties (bad input, ...), then the exhaustive check.

It also makes ``mutants/`` read as the checkout, before any test imports
``junction``. mutmut writes ``junction/core`` mutated (``source_paths``: the
name tests import it by, so its trampoline keys match) and copies ``tests/``,
``pyproject.toml`` and ``docs/`` (``also_copy``: the document checks walk it,
and a walk does not follow links); every other top-level entry of the
checkout is linked in, unmutated, and ``junction/`` gets its own modules and
a link to each other part of the one list (``tests/parts.py``), as the
checkout's ``junction/<part> -> ../<part>``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.parts import parts


def _link_namespace(mutants: Path) -> None:
    checkout = mutants.parent
    for entry in checkout.iterdir():
        there = mutants / entry.name
        if entry.name.startswith(".") or entry == mutants or there.exists() or there.is_symlink():
            continue
        there.symlink_to(entry, target_is_directory=entry.is_dir())
    namespace = mutants / "junction"
    if namespace.is_symlink():  # linked above: mutmut wrote no folder of its own
        return
    for entry in (checkout / "junction").iterdir():
        if entry.is_file() and not entry.is_symlink() and not (namespace / entry.name).exists():
            shutil.copy2(entry, namespace / entry.name)
    for part in parts(mutants):
        link = namespace / part
        if not link.exists() and not link.is_symlink():  # else the mutated part
            link.symlink_to(Path("..") / part, target_is_directory=True)


if Path.cwd().name == "mutants":
    _link_namespace(Path.cwd())

_LAST = "test_exhaustive.py"
_FIRST = ("tests/examples/", "test_core_vs_oracle.py")


def _rank(item: pytest.Item) -> int:
    if _LAST in item.nodeid:
        return 3
    for rank, marker in enumerate(_FIRST):
        if marker in item.nodeid:
            return rank
    return 2  # the bad-input properties and the rest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)
