"""The package's parts, read from the one list of them (``[tool.junction] parts``).

Each part is a top-level folder installed as ``junction.<part>`` and linked in
a checkout as ``junction/<part>``; ``setup.py`` reads the same list, and
``tests/install/test_parts.py`` checks the links and the import contracts
against it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parts(root: Path = ROOT) -> tuple[str, ...]:
    """The parts listed in ``root``'s ``pyproject.toml``, in its order."""
    with (root / "pyproject.toml").open("rb") as file:
        return tuple(tomllib.load(file)["tool"]["junction"]["parts"])


PARTS = parts()


def sources(root: Path = ROOT) -> list[tuple[Path, bool]]:
    """Every module the rules of style hold for, each with whether it is a benchmark.

    The modules of every part, ``junction/``'s own, and ``benchmarks/``; a
    folder missing under ``root`` (a part mutmut does not link) has none.
    """
    package = [path for part in parts(root) for path in sorted((root / part).rglob("*.py"))]
    package += sorted((root / "junction").glob("*.py"))
    benchmarks = sorted((root / "benchmarks").rglob("*.py"))
    return [(path, False) for path in package] + [(path, True) for path in benchmarks]
