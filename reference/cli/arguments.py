"""Argument types shared by the ``python -m junction.reference`` subcommands.

argparse calls a type with the option's text; a bad value becomes an exit with
status 2 and a message naming the option and the value.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

__all__ = ["int_at_least", "output_path"]


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An int option that must be ``>= minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an int") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be >= {minimum}")
        return value

    parse.__name__ = f"int >= {minimum}"
    return parse


def output_path(text: str) -> Path:
    """A path an option writes to: never the empty string.

    ``Path("")`` is ``Path(".")``, so ``--out ""`` would silently mean the
    current folder.
    """
    if not text:
        raise argparse.ArgumentTypeError("must name a path, got an empty string")
    return Path(text)
