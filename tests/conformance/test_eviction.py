"""The safety promise under each eviction policy, and what eviction may not do.

Only the safety promise's scenarios fill the pool (the others run without
pressure), so it is the one an eviction policy can break: with LRU and with
FLOP-aware eviction (a window of 2 and of 8 candidates, so it departs from
LRU often), no hit resumes a Mamba group without its exact state and the
engine's ``check()`` holds after every step, for the pinning policy and for
dense retention.
"""

from __future__ import annotations

import pytest

from junction.reference.engine.eviction import (
    EvictionPolicy,
    FlopAware,
    FlopModel,
    LayerCost,
    LeastRecentlyUsed,
)
from junction.reference.harness import Verdict, run_conformance
from junction.reference.policies.builtin import DensePolicy, JunctionPolicy

FLOPS = FlopModel(full=LayerCost(100, 10), sliding_window=LayerCost(100, 10), mamba=LayerCost(400))
EVICTIONS: tuple[EvictionPolicy, ...] = (
    LeastRecentlyUsed(),
    FlopAware(FLOPS, window=2),
    FlopAware(FLOPS, window=8),
)


@pytest.mark.parametrize("eviction", EVICTIONS, ids=["lru", "flop-aware-2", "flop-aware-8"])
@pytest.mark.parametrize("policy", [JunctionPolicy, DensePolicy], ids=["junction", "dense"])
def test_safety_holds_under_each_eviction_policy(
    eviction: EvictionPolicy, policy: type[JunctionPolicy | DensePolicy]
) -> None:
    report = run_conformance(policy(), examples=100, seed=5, promises=["safety"], eviction=eviction)
    (verdict,) = report.verdicts
    assert verdict.status is Verdict.KEPT, verdict.message
    assert verdict.examples == 100
