"""The sweep's points over several processes, the requests read once.

Points are dealt out by their (policy, R) setting, so the points that share
plans stay in one process, each setting's points in turn to the process with
the fewest so far. The requests are read and keyed once, in this process;
the workers are forked from it and inherit them (nothing is pickled but the
points and the results). Where the platform cannot fork, one process runs
everything. Progress is counted in request-points (a request replayed in one
point): the workers add theirs to one shared counter, which this process
reads a few times a second and hands to the caller's ``progress``.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any

from junction.core import HybridGeometry

from .sweep import Point, PointResult, ReplayRequest, replay

__all__ = ["Progress", "replay_in_parallel"]

# Called with the request-points replayed since its last call (a rich
# progress line's ``advance`` is one).
Progress = Callable[[int], object]
_POLL_SECONDS = 0.25  # how often the parent reads the workers' counter

# What the forked workers read: set before the pool forks, cleared after.
_SHARED: tuple[HybridGeometry, Sequence[ReplayRequest], dict[str, Any], Any] | None = None


def _work(points: list[Point]) -> list[PointResult]:
    if _SHARED is None:
        raise RuntimeError("a replay worker started without its requests")
    geometry, requests, options, counter = _SHARED

    def add(count: int) -> None:
        with counter.get_lock():
            counter.value += count

    return replay(geometry, requests, points, on_request=_each(add, points), **options)


def _each(progress: Progress | None, points: Sequence[Point]) -> Callable[[int], None] | None:
    """``replay``'s ``on_request`` telling ``progress`` of each request's points."""
    if progress is None:
        return None
    width = len(points)

    def one_more(done: int) -> None:
        progress(width)

    return one_more


def _tell(progress: Progress | None, done: int, told: int) -> int:
    """Tell ``progress`` what is done since ``told``; the new count told."""
    if progress is not None and done > told:
        progress(done - told)
    return done


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
    *,
    progress: Progress | None = None,
    **options: Any,
) -> list[PointResult]:
    """:func:`sweep.replay` of ``points`` in up to ``jobs`` processes, results in the
    order of ``points``. ``progress(n)``: ``n`` more request-points replayed, in
    all ``len(requests) * len(points)``, from this process. ``options`` are
    ``replay``'s keyword arguments but ``observe`` and ``on_request``."""
    global _SHARED
    shares = _deal(points, jobs)
    if len(shares) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return replay(geometry, requests, points, on_request=_each(progress, points), **options)
    context = multiprocessing.get_context("fork")
    counter = context.Value("q", 0)  # request-points replayed, all workers
    _SHARED = (geometry, requests, options, counter)
    try:
        with context.Pool(len(shares)) as pool:
            pending = pool.map_async(_work, shares)
            told, finished = 0, False
            while not finished:
                pending.wait(_POLL_SECONDS)
                finished = pending.ready()  # before the count: the last read has it all
                told = _tell(progress, counter.value, told)
            done = pending.get()
    finally:
        _SHARED = None
    by_point = {
        id(point): result
        for share, results in zip(shares, done, strict=True)
        for point, result in zip(share, results, strict=True)
    }
    return [by_point[id(point)] for point in points]
