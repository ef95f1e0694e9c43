"""The external tier (``reference/engine/tier.py``): save through the mask, load at admission.

Two engine instances share one store; the second has nothing local. The
promise's tier form over random scenarios is the harness's (``tier``); these
pin the mechanics: what each saving hands the mask, the store's LRU order and
capacity, and that a load is counted as external and never breaks ``check()``.
"""

from __future__ import annotations

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.tier import ExternalTier, TierSaving
from junction.reference.policies.builtin import JunctionPolicy

SHARED = tuple(range(40))
# Full attention and a sliding window under R = 0: the junction's tail is kept
# only because the junction is a reachable boundary.
SWA = HybridGeometry([GroupSpec.full(4), GroupSpec.sliding_window(4, 6)], 4, retention_interval=0)
MAMBA = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4, retention_interval=0)


def _engine(geometry: HybridGeometry, tier: ExternalTier, saving: TierSaving) -> Engine:
    config = EngineConfig(
        geometry,
        500,
        policy=JunctionPolicy(),
        max_num_batched_tokens=16,
        tier=tier,
        tier_saving=saving,
    )
    return Engine(config)


def _run(engine: Engine, prompt: tuple[int, ...]) -> int:
    request_id = engine.submit(prompt, 2)
    while not engine.idle:
        engine.step()
        engine.check()
    return engine.requests[request_id].hit_length


def _second_instance_hit(
    geometry: HybridGeometry, saving: TierSaving, capacity: int = 1000
) -> tuple[int, Engine, ExternalTier]:
    """X and Y share 40 tokens on instance 1 (Y finds the junction); Z on instance 2."""
    tier = ExternalTier(capacity)
    first, second = _engine(geometry, tier, saving), _engine(geometry, tier, saving)
    _run(first, (*SHARED, 101, *range(7)))
    _run(first, (*SHARED, 102, *range(7)))
    hit = _run(second, (*SHARED, 103, *range(5)))
    return hit, second, tier


@pytest.mark.parametrize("geometry", [SWA, MAMBA], ids=["sliding window", "mamba"])
def test_policy_saving_resumes_another_instance_at_the_junction(geometry: HybridGeometry) -> None:
    hit, second, tier = _second_instance_hit(geometry, TierSaving.POLICY)
    assert hit == 40
    assert second.metrics.external_hit_tokens == 40
    assert tier.loads > 0


def test_vllm_saving_leaves_the_sliding_window_junction_tail_out() -> None:
    # Mooncake's store mask hears of the replay boundary only: the window's tail
    # at the junction never reaches the store, so instance 2 resumes at 0.
    hit, second, _ = _second_instance_hit(SWA, TierSaving.VLLM_0_33)
    assert hit == 0 and second.metrics.external_hit_tokens == 0


def test_vllm_saving_keeps_the_mamba_junction_state() -> None:
    # Its boundary-state hand-off offers every state the local cache kept.
    hit, _, _ = _second_instance_hit(MAMBA, TierSaving.VLLM_0_33)
    assert hit == 40


def test_the_store_evicts_least_recently_used_within_its_capacity() -> None:
    hit, _, tier = _second_instance_hit(SWA, TierSaving.POLICY, capacity=6)
    assert len(tier.blocks) == 6 and tier.evictions > 0
    assert hit < 40  # the shared prefix's first blocks were evicted
    tier.check()


def test_a_local_hit_loads_nothing() -> None:
    tier = ExternalTier(1000)
    engine = _engine(MAMBA, tier, TierSaving.POLICY)
    prompt = (*SHARED, 1, 2, 3)
    _run(engine, prompt)
    assert _run(engine, prompt) == 40
    assert engine.metrics.external_hit_tokens == 0 and tier.loads == 0


@pytest.mark.parametrize("capacity", [0, -1, 1.5, True])
def test_a_tier_needs_a_positive_capacity(capacity: object) -> None:
    with pytest.raises(ValueError, match=r"capacity=.*: a tier holds at least one block"):
        ExternalTier(capacity)  # type: ignore[arg-type]
