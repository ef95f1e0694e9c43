"""The installed packages: ``junction`` and, under it, each of the package's parts.

A part is a top-level folder named in ``pyproject.toml``'s ``[tool.junction]
parts``; it installs as ``junction.<part>`` with every subpackage found under
it, so a new subpackage needs no entry anywhere and a new part is one name in
that list. Everything else is declared in ``pyproject.toml``
(docs/design/layout.md says why the folders stay at the top level).
"""

import tomllib
from pathlib import Path

from setuptools import find_packages, setup

with (Path(__file__).parent / "pyproject.toml").open("rb") as file:
    PARTS: list[str] = tomllib.load(file)["tool"]["junction"]["parts"]

setup(
    package_dir={"junction": "junction", **{f"junction.{part}": part for part in PARTS}},
    packages=[
        "junction",
        *(
            f"junction.{part}{sub}"
            for part in PARTS
            for sub in ["", *(f".{name}" for name in sorted(find_packages(part)))]
        ),
    ],
)
