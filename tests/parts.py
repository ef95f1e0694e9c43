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
