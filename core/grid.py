"""Integer grid arithmetic in token units.

Every upstream boundary defect was a floor taken on the wrong grid or in the
wrong direction, so the grid operations the decisions need live here, once,
under their domain names: ``floor_to`` (``floor_x(v)``), ``next_grid_point``
(the first grid point strictly past a position), ``cdiv`` and ``lcm``.
Callers guarantee positive grid sizes; these stay branch-free because they sit
on the hot path of every decision.
"""

from __future__ import annotations

import math

__all__ = ["cdiv", "floor_to", "lcm", "next_grid_point"]


def floor_to(value: int, grid: int) -> int:
    """The largest multiple of ``grid`` that is ``<= value`` (``grid >= 1``)."""
    return value // grid * grid


def next_grid_point(value: int, grid: int) -> int:
    """The smallest multiple of ``grid`` that is ``> value`` (``grid >= 1``).

    Where a chunk starting mid-block must stop to end on the grid, and where
    the next retention segment begins.
    """
    return floor_to(value, grid) + grid


def cdiv(value: int, divisor: int) -> int:
    """``ceil(value / divisor)`` for ``divisor >= 1``, exact on integers."""
    return -(-value // divisor)


def lcm(*values: int) -> int:
    """Least common multiple of positive integers."""
    return math.lcm(*values)
