"""The sweep's points over several processes, the requests read once.

Points are dealt out by their (policy, R) setting, so the points that share
plans stay in one process, each setting's points in turn to the process with
the fewest so far. The requests are read and keyed once, in this process;
the workers are forked from it and inherit them (nothing is pickled but the
points and the results). Where the platform cannot fork, one process runs
everything.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from typing import Any

from junction.core import HybridGeometry

from .sweep import Point, PointResult, ReplayRequest, replay

__all__ = ["replay_in_parallel"]

# What the forked workers read: set before the pool forks, cleared after.
_SHARED: tuple[HybridGeometry, Sequence[ReplayRequest], dict[str, Any]] | None = None


def _work(points: list[Point]) -> list[PointResult]:
    if _SHARED is None:
        raise RuntimeError("a replay worker started without its requests")
    geometry, requests, options = _SHARED
    return replay(geometry, requests, points, **options)


def _deal(points: Sequence[Point], jobs: int) -> list[list[Point]]:
    """The points in ``jobs`` shares, each (policy, R) setting whole in one share."""
    settings: dict[tuple[str, int | None], list[Point]] = {}
    for point in points:
        settings.setdefault((point.policy, point.retention_interval), []).append(point)
    shares: list[list[Point]] = [[] for _ in range(jobs)]
    for group in sorted(settings.values(), key=len, reverse=True):
        min(shares, key=len).extend(group)
    return [share for share in shares if share]


def replay_in_parallel(
    geometry: HybridGeometry,
    requests: Sequence[ReplayRequest],
    points: Sequence[Point],
    jobs: int,
    **options: Any,
) -> list[PointResult]:
    """:func:`sweep.replay` of ``points`` in up to ``jobs`` processes, results in the
    order of ``points``. ``options`` are ``replay``'s keyword arguments but
    ``observe`` and ``on_request``, which cannot cross processes."""
    global _SHARED
    shares = _deal(points, jobs)
    if len(shares) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return replay(geometry, requests, points, **options)
    _SHARED = (geometry, requests, options)
    try:
        with multiprocessing.get_context("fork").Pool(len(shares)) as pool:
            done = pool.map(_work, shares)
    finally:
        _SHARED = None
    by_point = {
        id(point): result
        for share, results in zip(shares, done, strict=True)
        for point, result in zip(share, results, strict=True)
    }
    return [by_point[id(point)] for point in points]
