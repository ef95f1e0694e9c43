"""A pytest plugin for ``make mutmut`` only (``-p`` in ``[tool.mutmut]``).

mutmut runs, per mutant, the tests that call the mutated function, with
``-x``. Cheap tests go first so a mutant they kill never pays for the
bounded-exhaustive walk, which runs last (it is ~6x slower under mutmut's
trampolines): examples, then the oracle properties, then the other
properties (bad input, ...), then the exhaustive check.

It also completes the ``junction`` namespace inside ``mutants/``. mutmut
mutates ``junction/core`` (``source_paths``: the name tests import it by, so
its trampoline keys match) and writes that folder for real; the other parts
are copied as plain folders (``also_copy``), and this links them in beside
it, as the checkout's symlinks do, before any test imports ``junction``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

_PARTS = ("core", "reference", "kernels", "audit")


def _link_namespace(root: Path) -> None:
    namespace = root / "junction"
    namespace.mkdir(exist_ok=True)
    for name in ("__init__.py", "py.typed"):
        if not (namespace / name).exists():
            shutil.copy2(root.parent / "junction" / name, namespace / name)
    for part in _PARTS:
        link = namespace / part
        if not link.exists() and not link.is_symlink():  # core is mutmut's own folder
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
