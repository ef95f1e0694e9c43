"""Promise 8, the tier form: the `junction` policy keeps it; vLLM's connector saving does not.

The pinned scenario is the harness's shrunk counterexample for the ``junction``
policy run with vLLM 0.33.0's Mooncake store saving (``TierSaving.VLLM_0_33``,
docs/findings.md): full attention and a sliding window of 2 under ``R = 0``;
after ``[0, 0, 0, 101, 0]`` and ``[0, 0, 0, 102, 0]`` the junction is 2, and a
third request on a second instance finds full attention's blocks in the tier
but not the window's tail at 2, which the replay-only mask never saved.
"""

from __future__ import annotations

import attrs

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.tier import TierSaving
from junction.reference.harness import Promise, Scenario, replay
from junction.reference.harness.verdict import ShortOfFullAttention
from junction.reference.policies.builtin import JunctionPolicy

CONNECTOR_CASE = Scenario(
    Promise.TIER,
    HybridGeometry([GroupSpec.full(2), GroupSpec.sliding_window(2, 2)], 2, retention_interval=0),
    [(0, 0, 0, 101, 0), (0, 0, 0, 102, 0)],
    (0, 0, 0, 103, 0),
    budget=4,
)


def _vllm_connector(config: EngineConfig) -> Engine:
    return Engine(attrs.evolve(config, tier_saving=TierSaving.VLLM_0_33))


def test_the_junction_policy_resumes_another_instance_at_the_junction() -> None:
    assert replay(CONNECTOR_CASE, JunctionPolicy()) is None


def test_replay_only_saving_loses_the_junction_on_another_instance() -> None:
    violation = replay(CONNECTOR_CASE, JunctionPolicy(), _vllm_connector)
    assert violation is not None
    assert violation.problem == ShortOfFullAttention(hit=0, full_attention=2)


def test_the_counterexample_travels_as_json() -> None:
    again = Scenario.from_json(CONNECTOR_CASE.to_json())
    assert again == CONNECTOR_CASE
    assert replay(again, JunctionPolicy(), _vllm_connector) is not None
