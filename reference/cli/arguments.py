"""Argument types shared by the ``junction`` subcommands.

argparse calls a type with the option's text; a bad value becomes an exit with
status 2 and a message naming the option and the value.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

from junction.reference.simulator.geometries import GEOMETRIES
from junction.reference.simulator.pool import PoolSize

__all__ = [
    "finite_seconds",
    "geometry_name",
    "int_at_least",
    "int_between",
    "interval_list",
    "output_path",
    "pool_blocks",
    "pool_fraction",
    "pool_tokens",
]


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an int") from None


def finite_seconds(text: str) -> float:
    """A finite number of seconds > 0 (``inf`` and ``nan`` are no deadline)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An int option that must be ``>= minimum``."""

    def parse(text: str) -> int:
        value = _int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be >= {minimum}")
        return value

    parse.__name__ = f"int >= {minimum}"
    return parse


def int_between(minimum: int, maximum: int) -> Callable[[str], int]:
    """An int option that must be in ``[minimum, maximum]``."""

    def parse(text: str) -> int:
        value = _int(text)
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{value} must be between {minimum} and {maximum}")
        return value

    parse.__name__ = f"int in [{minimum}, {maximum}]"
    return parse


def interval_list(minimum: int) -> Callable[[str], tuple[int, ...]]:
    """``R,R,...``: retention intervals, each an int ``>= minimum``; sorted, each once."""

    def parse(text: str) -> tuple[int, ...]:
        values = []
        for item in text.split(","):
            value = _int(item)
            if value < minimum:
                raise argparse.ArgumentTypeError(f"{value}: intervals must be >= {minimum}")
            values.append(value)
        return tuple(sorted(set(values)))

    parse.__name__ = f"intervals >= {minimum}"
    return parse


def output_path(text: str) -> Path:
    """A path an option writes to: never the empty string.

    ``Path("")`` is ``Path(".")``, so ``--out ""`` would silently mean the
    current folder.
    """
    if not text:
        raise argparse.ArgumentTypeError("must name a path, got an empty string")
    return Path(text)


def geometry_name(text: str) -> str:
    """A built-in geometry's name (``simulator.geometries``)."""
    if text not in GEOMETRIES:
        raise argparse.ArgumentTypeError(
            f"unknown geometry {text!r} (choose from {', '.join(GEOMETRIES)})"
        )
    return text


def pool_blocks(text: str) -> PoolSize:
    """``--blocks``: a pool of N >= 2 blocks, or ``unbounded``."""
    if text == "unbounded":
        return PoolSize("unbounded", None)
    return PoolSize("blocks", int_at_least(2)(text))


def pool_tokens(text: str) -> PoolSize:
    """``--pool-tokens``: a pool holding N tokens in every group at once."""
    return PoolSize("tokens", int_at_least(1)(text))


def pool_fraction(text: str) -> PoolSize:
    """``--pool-fraction``: a share in (0, 1] of the working set."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:  # also rejects nan
        raise argparse.ArgumentTypeError(f"{text}: a fraction of the working set must be in (0, 1]")
    return PoolSize("fraction", value)
