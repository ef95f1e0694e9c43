"""A pytest plugin for ``make mutmut`` only (``-p`` in ``[tool.mutmut]``).

mutmut runs, per mutant, the tests that call the mutated function, with
``-x``. Cheap tests go first so a mutant they kill never pays for the
bounded-exhaustive walk, which runs last (it is ~6x slower under mutmut's
trampolines): examples, then the oracle properties, then the other
properties (bad input, ...), then the exhaustive check.
"""

from __future__ import annotations

import pytest

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
