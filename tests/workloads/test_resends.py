"""A workload's mix of inexact resends (``workloads.resends``).

The default resends every answer as it was emitted, as every run did before;
a mix draws each request's divergence point from its submission index alone,
the engine then emits the scripted answer changed from that point on, and a
decode checkpoint past it is no use to the next turn: with every reasoning
stripped, keeping decode checkpoints reuses what the prompt's states alone do.
"""

from __future__ import annotations

import collections

import pytest

from junction.core import GroupSpec, HybridGeometry, InvalidArgument
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.policy import Policy
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.options import JunctionOptions
from junction.reference.workloads import (
    EXACT,
    Resend,
    ResendMix,
    StepTimeModel,
    run_sequential,
    run_workload,
)
from junction.reference.workloads.sessions import agent_sessions

GEOMETRY = HybridGeometry([GroupSpec.full(16), GroupSpec.mamba(16)], 16, retention_interval=0)
MIX = ResendMix(exact=1, stop_cut=1, reasoning_stripped=1, token_changed=1, seed=3)
ANSWER = tuple(range(100, 140))


def test_by_default_every_answer_is_resent_as_emitted() -> None:
    assert {EXACT.resend(i) for i in range(1000)} == {Resend.EXACT}
    assert EXACT.emitted(7, ANSWER) == ANSWER
    assert EXACT.divergence(7, 40) == 40
    assert EXACT.describe() == "exact 1"


def test_a_mix_draws_each_resend_from_the_index_alone() -> None:
    kinds = [MIX.resend(i) for i in range(4000)]
    assert kinds == [MIX.resend(i) for i in range(4000)]
    assert kinds != [ResendMix(1, 1, 1, 1, seed=4).resend(i) for i in range(4000)]
    counts = collections.Counter(kinds)
    assert all(850 < counts[kind] < 1150 for kind in Resend), counts  # 1,000 each expected
    assert MIX.describe() == (
        "exact 0.25, stop_cut 0.25, reasoning_stripped 0.25, token_changed 0.25; "
        "stop strings of 4 tokens"
    )


def test_the_divergence_point_is_where_each_resend_puts_it() -> None:
    for index in range(400):
        d = MIX.divergence(index, len(ANSWER))
        expected = {
            Resend.EXACT: [40],
            Resend.STOP_CUT: [36],
            Resend.REASONING_STRIPPED: [0],
            Resend.TOKEN_CHANGED: list(range(40)),
        }[MIX.resend(index)]
        assert d in expected, (index, MIX.resend(index), d)
        emitted = MIX.emitted(index, ANSWER)
        assert len(emitted) == len(ANSWER) and emitted[:d] == ANSWER[:d]
        assert all(e != a for e, a in zip(emitted[d:], ANSWER[d:], strict=True))
    assert ResendMix(exact=0, stop_cut=1, stop_tokens=9).divergence(0, 5) == 0
    assert MIX.emitted(0, ()) == ()


@pytest.mark.parametrize(
    ("field", "value"),
    [("exact", -1), ("stop_cut", float("inf")), ("token_changed", "1"), ("exact", True),
     ("stop_tokens", 0), ("seed", 1.5)],
)  # fmt: skip
def test_bad_fields_are_named(field: str, value: object) -> None:
    with pytest.raises(InvalidArgument, match=field):
        ResendMix(**{field: value})  # type: ignore[arg-type]


def test_all_zero_shares_and_a_bad_length_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="not all be 0"):
        ResendMix(0, 0, 0, 0)
    with pytest.raises(InvalidArgument, match="length"):
        EXACT.divergence(0, -1)


def _hit_rate(policy: Policy, resends: ResendMix) -> float:
    arrivals = agent_sessions(2, sessions=6, turns=4, system_prompt_tokens=64, resend_answers=True)
    engine = Engine(EngineConfig(GEOMETRY, num_blocks=4000, policy=policy))
    run_sequential(engine, arrivals, StepTimeModel(), resends=resends)
    return engine.metrics.token_hit_rate


def test_a_checkpoint_past_the_divergence_is_no_use_to_the_next_turn() -> None:
    decode = JunctionPolicy(JunctionOptions(decode_checkpoints=True))
    stripped = ResendMix(exact=0, reasoning_stripped=1)
    assert _hit_rate(decode, stripped) < _hit_rate(decode, EXACT)
    assert _hit_rate(decode, stripped) == _hit_rate(JunctionPolicy(), stripped)
    assert _hit_rate(decode, EXACT) > _hit_rate(JunctionPolicy(), EXACT)


def test_the_open_loop_emits_what_the_mix_says(monkeypatch: pytest.MonkeyPatch) -> None:
    arrivals = agent_sessions(1, sessions=3, turns=2, system_prompt_tokens=32, resend_answers=True)
    engine = Engine(EngineConfig(GEOMETRY, num_blocks=4000, policy=JunctionPolicy()))
    emitted: list[tuple[int, ...]] = []
    submit = engine.submit

    def recorded(*args: object, answer: tuple[int, ...] = (), **kwargs: object) -> int:
        emitted.append(answer)
        return submit(*args, answer=answer, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "submit", recorded)
    run_workload(engine, arrivals, resends=MIX, check=True)
    assert emitted == [MIX.emitted(i, arrival.answer) for i, arrival in enumerate(arrivals)]
    assert emitted != [arrival.answer for arrival in arrivals]
