"""A workload's mix of finish reasons (``workloads.finishes``).

The default ends every request stopped, as every run did before, and a mix
draws each request's reason from its submission index alone: the same mix
gives the same reasons, the shares come out as asked, and the loops run
every reason to the end. Where answers come back, the mix decides what a
policy publishing on stopped finishes only (``vllm-pr50551``) reuses.
"""

from __future__ import annotations

import collections

import pytest

from junction.core import GroupSpec, HybridGeometry, InvalidArgument
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.finish import FinishReason
from junction.reference.engine.policy import Policy
from junction.reference.engine.request import RequestStatus
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.options import JunctionOptions
from junction.reference.policies.vllm import VllmPR50551Policy
from junction.reference.workloads import (
    ALL_STOPPED,
    MOONCAKE_CONVERSATION,
    FinishMix,
    StepTimeModel,
    run_sequential,
    run_sessions,
    run_workload,
)
from junction.reference.workloads.sessions import agent_sessions

GEOMETRY = HybridGeometry([GroupSpec.full(16), GroupSpec.mamba(16)], 16, retention_interval=0)
MIX = FinishMix(stopped=2, length_capped=1, aborted=1, seed=5)


def _engine(policy: Policy) -> Engine:
    return Engine(EngineConfig(GEOMETRY, num_blocks=4000, policy=policy))


def test_by_default_every_request_stops() -> None:
    assert {ALL_STOPPED.reason(i) for i in range(1000)} == {FinishReason.STOPPED}
    assert FinishMix(0, 3, 0).reason(7) is FinishReason.LENGTH_CAPPED
    assert ALL_STOPPED.describe() == "stopped 1"


def test_a_mix_draws_each_reason_from_the_index_alone() -> None:
    reasons = [MIX.reason(i) for i in range(4000)]
    assert reasons == [MIX.reason(i) for i in range(4000)]
    assert reasons != [FinishMix(2, 1, 1, seed=6).reason(i) for i in range(4000)]
    counts = collections.Counter(reasons)
    # Shares 1/2, 1/4, 1/4 of 4,000 draws: far inside these bounds.
    assert 1800 < counts[FinishReason.STOPPED] < 2200
    assert 850 < counts[FinishReason.LENGTH_CAPPED] < 1150
    assert 850 < counts[FinishReason.ABORTED] < 1150
    assert MIX.describe() == "stopped 0.5, length_capped 0.25, aborted 0.25"


@pytest.mark.parametrize(
    ("field", "value"),
    [("stopped", -1), ("aborted", float("nan")), ("length_capped", "1"), ("stopped", True)],
)
def test_bad_shares_are_named(field: str, value: object) -> None:
    with pytest.raises(InvalidArgument, match=field):
        FinishMix(**{field: value})  # type: ignore[arg-type]


def test_all_zero_shares_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="not all be 0"):
        FinishMix(0, 0, 0)


def test_the_loops_end_each_request_as_the_mix_says() -> None:
    arrivals = agent_sessions(1, sessions=6, turns=3, system_prompt_tokens=64, resend_answers=True)
    engine = _engine(JunctionPolicy())
    run_sessions(engine, [arrivals[i : i + 3] for i in range(0, 18, 3)], 2, finishes=MIX)
    for request_id, request in engine.requests.items():
        aborted = MIX.reason(request_id) is FinishReason.ABORTED
        assert request.status is (RequestStatus.ABORTED if aborted else RequestStatus.FINISHED)
        assert request.num_output_tokens == request.max_output_tokens
    assert engine.metrics.finished == 18
    engine = _engine(JunctionPolicy())
    run_workload(engine, arrivals, finishes=MIX, check=True)
    assert [r.status for r in engine.requests.values()].count(RequestStatus.ABORTED) == sum(
        MIX.reason(i) is FinishReason.ABORTED for i in range(18)
    )


def _hit_rate(policy: Policy, finishes: FinishMix) -> float:
    arrivals = agent_sessions(2, sessions=6, turns=4, system_prompt_tokens=64, resend_answers=True)
    engine = _engine(policy)
    run_sequential(engine, arrivals, StepTimeModel(), finishes=finishes)
    return engine.metrics.token_hit_rate


def test_what_a_stopped_only_policy_reuses_follows_the_mix() -> None:
    capped = FinishMix(stopped=0, length_capped=1)
    decode = JunctionPolicy(JunctionOptions(decode_checkpoints=True))
    # PR #50551 publishes on a stop only; the default option on a length cap too.
    assert _hit_rate(VllmPR50551Policy(), capped) < _hit_rate(VllmPR50551Policy(), ALL_STOPPED)
    assert _hit_rate(decode, capped) == _hit_rate(decode, ALL_STOPPED)


def test_a_request_at_the_length_cap_is_length_capped() -> None:
    assert MOONCAKE_CONVERSATION.reason(3, 2000) is FinishReason.LENGTH_CAPPED
    assert {MOONCAKE_CONVERSATION.reason(i, 1999) for i in range(100)} == {FinishReason.STOPPED}
    assert MOONCAKE_CONVERSATION.describe() == "stopped 1; length-capped at 2000"
    with pytest.raises(InvalidArgument, match="length_cap"):
        FinishMix(length_cap=0)
    arrivals = agent_sessions(4, sessions=3, turns=2, system_prompt_tokens=32, output_tokens=(4, 6))
    assert 0 < sum(a.max_output_tokens == 5 for a in arrivals) < len(arrivals)
    engine = _engine(JunctionPolicy())
    run_workload(engine, arrivals, finishes=FinishMix(length_cap=5, seed=1))
    assert [r.finish_reason is FinishReason.LENGTH_CAPPED for r in engine.requests.values()] == [
        a.max_output_tokens == 5 for a in arrivals
    ]
