"""The replay's progress: every request-point told once, in one process or several."""

from __future__ import annotations

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.replay import Point, PrefixKeys, ReplayRequest
from junction.reference.replay.parallel import replay_in_parallel


def _requests(count: int) -> list[ReplayRequest]:
    keys = PrefixKeys(4)
    return [
        ReplayRequest(9 + i % 5, 2, keys.tokens([i % 3] * 4 + list(range(100 * i, 100 * i + 5))))
        for i in range(count)
    ]


@pytest.mark.parametrize("jobs", [1, 2])
def test_progress_tells_every_request_point_once(jobs: int) -> None:
    geometry = HybridGeometry([GroupSpec.full(4)], 4)
    requests = _requests(40)
    points = [Point(policy, None, pool) for policy in ("junction", "dense") for pool in (8, 64)]
    told: list[int] = []
    with_progress = replay_in_parallel(geometry, requests, points, jobs, progress=told.append)
    assert sum(told) == len(requests) * len(points)
    assert all(step > 0 for step in told)
    assert with_progress == replay_in_parallel(geometry, requests, points, jobs)
