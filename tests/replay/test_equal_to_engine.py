"""The fast replay equals the reference engine on sequential arrivals, request by request.

For every built-in policy, LRU and FLOP-aware eviction and a drawn geometry
(no partial hits: the replay does not model them) and workload: the same hit
and junction per request, and after each request the same evictions so far,
the same cached blocks per group and the same peaks, and the same cached
blocks themselves (``engine_side``).
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from junction.core import GroupKind, GroupSpec, HybridGeometry, InvalidArgument, cdiv
from junction.reference.policies.registry import Role, policy_names, resolve_policy
from junction.reference.replay.plan import Planner

from .engine_side import assert_equal, engine_records, replay_records, token_requests


@st.composite
def geometries(draw: st.DrawFn) -> HybridGeometry:
    """One or two full-attention groups and one or two sparse ones; unit 1, 2 or 4."""
    unit = draw(st.sampled_from([2, 1, 4]))
    block = st.sampled_from([size for size in (2, 4, 8) if size % unit == 0])
    groups = [GroupSpec.full(s) for s in draw(st.lists(block, min_size=1, max_size=2, unique=True))]
    for kind in draw(st.lists(st.sampled_from(["window", "mamba"]), min_size=1, max_size=2)):
        size = draw(block)
        window = draw(st.integers(1, 20))
        groups.append(
            GroupSpec.sliding_window(size, window) if kind == "window" else GroupSpec.mamba(size)
        )
    eagle = draw(st.booleans())
    if eagle and draw(st.booleans()):
        marks = draw(st.lists(st.booleans(), min_size=len(groups), max_size=len(groups)))
        marks[draw(st.integers(0, len(groups) - 1))] = True
        groups = [attrs.evolve(g, eagle_group=m) for g, m in zip(groups, marks, strict=True)]
    grid = HybridGeometry(groups, unit).scheduler_block_size
    interval = draw(st.sampled_from([None, 0, grid, 2 * grid]))
    return HybridGeometry(groups, unit, use_eagle=eagle, retention_interval=interval)


REPLAYED = [n for n in policy_names() if n not in policy_names(Role.NEXT_TURN)]


@st.composite
def scenarios(
    draw: st.DrawFn,
) -> tuple[HybridGeometry, str, str, int, int, list[tuple[list[int], int]]]:
    geometry = draw(geometries())
    # Every registered policy the replay models: decode checkpoints (the next turn) it refuses.
    policy = draw(st.sampled_from(sorted(REPLAYED)))
    eviction = draw(st.sampled_from(["lru", "flop-aware"]))
    base = draw(st.lists(st.integers(0, 5), min_size=4, max_size=48))
    requests: list[tuple[list[int], int]] = []
    for _ in range(draw(st.integers(2, 10))):
        outputs = draw(st.integers(1, 6))
        if requests and draw(st.booleans()):  # a resend, or a turn that extends one
            prompt = draw(st.sampled_from(requests))[0]
            more = draw(st.lists(st.integers(0, 5), max_size=16))
            requests.append(([*prompt, *more], outputs))
            continue
        shared = draw(st.integers(0, len(base)))
        tail = draw(st.lists(st.integers(0, 5), min_size=0 if shared else 1, max_size=24))
        requests.append(([*base[:shared], *tail], outputs))
    longest = max(len(p) + n for p, n in requests)
    per_request = sum(
        2 if g.kind is GroupKind.MAMBA else cdiv(longest, g.block_size) for g in geometry.groups
    )
    num_blocks = per_request + 1 + draw(st.integers(0, 2 * per_request))
    budget = draw(st.integers(4, 48))
    return geometry, policy, eviction, num_blocks, budget, requests


@given(scenarios())
def test_the_replay_equals_the_engine_request_by_request(scenario) -> None:  # type: ignore[no-untyped-def]
    geometry, policy, eviction, num_blocks, budget, requests = scenario
    expected = engine_records(geometry, policy, num_blocks, eviction, budget, requests)
    stream = token_requests(geometry, requests)
    assert_equal(expected, replay_records(geometry, policy, num_blocks, eviction, budget, stream))


@pytest.mark.parametrize("name", policy_names(Role.NEXT_TURN))
def test_a_policy_keeping_decode_checkpoints_is_refused_by_name(name: str) -> None:
    geometry = HybridGeometry([GroupSpec.full(16), GroupSpec.mamba(16)], hash_block_size=16)
    with pytest.raises(InvalidArgument, match="the replay models no decode checkpoints"):
        Planner(geometry, resolve_policy(name))
