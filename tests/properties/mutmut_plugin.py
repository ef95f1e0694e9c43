"""A pytest plugin for ``make mutmut`` only (``-p`` in ``[tool.mutmut]``).

mutmut runs, per mutant, the tests that call the mutated function, with
``-x``. Cheap tests go first so a mutant they kill never pays for the
bounded-exhaustive walk, which runs last (it is ~6x slower under mutmut's
trampolines): examples, then the oracle properties, then the other
properties (bad input, ...), then the exhaustive check.

It also completes the ``junction`` namespace inside ``mutants/``, before any
test imports ``junction``. mutmut mutates ``junction/core`` (``source_paths``:
the name tests import it by, so its trampoline keys match) and writes that
folder for real; every other part of the one list (``tests/parts.py``) is
linked in as the checkout links it, ``junction/<part> -> ../<part>``, with
``mutants/<part>`` a link to the checkout's unmutated folder; ``junction/``'s
own modules are copied.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.parts import parts


def _link_namespace(mutants: Path) -> None:
    checkout = mutants.parent
    namespace = mutants / "junction"
    namespace.mkdir(exist_ok=True)
    for entry in (checkout / "junction").iterdir():
        if entry.is_file() and not entry.is_symlink() and not (namespace / entry.name).exists():
            shutil.copy2(entry, namespace / entry.name)
    for part in parts(mutants):
        link = namespace / part
        if link.exists() or link.is_symlink():  # the mutated part: mutmut's own folder
            continue
        if not (mutants / part).exists():
            (mutants / part).symlink_to(checkout / part, target_is_directory=True)
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
