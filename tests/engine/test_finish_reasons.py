"""Finish reasons: how a request ends, and on which ends a policy publishes.

A request ends after its scripted outputs stopped (the default), length-capped
or aborted (``engine.finish``). The decode checkpoints are published only on
a reason the policy declares (``decode_checkpoint_finishes``): the default
policy's option on every finish but an abort, ``vllm-pr50551`` on a stopped
finish only (PR #50551's ``FINISHED_STOPPED``). The next-turn promise holds
a policy to its declaration and to nothing more: a checkpoint missing after a
finish it does not publish on is no violation, one lost on a finish it does
publish on is.
"""

from __future__ import annotations

import pytest

from junction.core import GroupSpec, HybridGeometry, InvalidArgument
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.finish import FinishReason
from junction.reference.engine.policy import CheckedPolicy, Policy, PolicyError
from junction.reference.engine.request import Request, RequestStatus
from junction.reference.harness import EngineSubject, Promise, Scenario
from junction.reference.harness.promises import check
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.options import JunctionOptions
from junction.reference.policies.vllm import VllmPolicy, VllmPR50551Policy
from tests.quality.mutants import StoppedCheckpointLostEngine

MAMBA = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 2, retention_interval=0)
PROMPT = tuple(range(23))
STOPPED, CAPPED, ABORTED = FinishReason.STOPPED, FinishReason.LENGTH_CAPPED, FinishReason.ABORTED


def _next_turn_hit(policy: Policy, finish: FinishReason) -> tuple[int, int, RequestStatus]:
    """A 23-token prompt and 9-token answer ending ``finish``; the next turn's hit,
    full attention's own hit and the request's status."""
    engine = Engine(EngineConfig(MAMBA, num_blocks=500, max_num_batched_tokens=16, policy=policy))
    request_id = engine.submit(PROMPT, 9, finish=finish)
    transcript: tuple[int, ...] = ()
    while not engine.idle:
        engine.step()
        engine.check()
        transcript = tuple(engine.requests[request_id].tokens) or transcript
    assert engine.pool.num_free == engine.pool.num_usable  # nothing held, pins included
    probe = Request(-1, (*transcript, 100), 1, MAMBA.hash_block_size)
    hits = engine.coordinator.lookup(probe)
    return hits.hit_length, hits.longest_hit_length, engine.requests[request_id].status


@pytest.mark.parametrize(
    ("policy", "published"),
    [
        (JunctionPolicy(JunctionOptions(decode_checkpoints=True)), {STOPPED, CAPPED}),
        (VllmPR50551Policy(), {STOPPED}),
        (
            JunctionPolicy(
                JunctionOptions(decode_checkpoints=True, decode_checkpoint_finishes={ABORTED})
            ),
            {ABORTED},
        ),
    ],
    ids=["junction+decode", "vllm-pr50551", "aborts-only"],
)
def test_the_checkpoint_is_published_on_the_declared_finishes_only(
    policy: Policy, published: set[FinishReason]
) -> None:
    for finish in FinishReason:
        hit, longest, status = _next_turn_hit(policy, finish)
        assert longest == 28
        # Published: the answer's end; else the prompt's replay state.
        assert hit == (28 if finish in published else 20), finish
        assert status is (RequestStatus.ABORTED if finish is ABORTED else RequestStatus.FINISHED)


def test_by_default_every_request_stops() -> None:
    runs = []
    for finish in ((), (STOPPED,), (CAPPED,)):
        engine = Engine(EngineConfig(MAMBA, num_blocks=500, policy=VllmPR50551Policy()))
        for prompt in (PROMPT, tuple(range(40))):
            engine.submit(prompt, 6, (), (), *finish)
            engine.run()
        runs.append(engine.metrics)
    assert runs[0] == runs[1] != runs[2]  # capped: nothing published, less retained
    assert runs[0].finished == runs[2].finished == 2


def _scenario(finish: FinishReason) -> Scenario:
    """docs/findings.md's next-turn case 1 (a 1-token prompt, a 2-token answer, R = 0)."""
    geometry = HybridGeometry([GroupSpec.full(2), GroupSpec.mamba(2)], 2, retention_interval=0)
    return Scenario(Promise.NEXT_TURN, geometry, [(0,)], budget=4, finish=finish)


def test_no_checkpoint_after_a_finish_the_policy_does_not_publish_on_is_no_violation() -> None:
    subject = EngineSubject(VllmPR50551Policy())
    for finish in FinishReason:
        assert check(_scenario(finish), subject) is None, finish
    # The length-capped run really has no decode state: the lookup stops short.
    run = subject.run(_scenario(CAPPED))
    hits = run.lookup(run.prefills[0].transcript)
    assert (hits.hit, hits.longest) == (0, 2)


def _publishes_anyway(config: EngineConfig) -> Engine:
    """An engine that publishes on every finish whatever the policy declares."""
    engine = Engine(config)
    engine.policy.decode_checkpoint_finishes = frozenset(FinishReason)
    return engine


def test_a_checkpoint_published_beyond_the_declaration_is_no_violation() -> None:
    subject = EngineSubject(VllmPR50551Policy(), _publishes_anyway)
    run = subject.run(_scenario(CAPPED))
    hits = run.lookup(run.prefills[0].transcript)
    assert (hits.hit, hits.longest) == (2, 2)  # published although length-capped
    assert check(_scenario(CAPPED), subject) is None


def test_a_checkpoint_lost_on_a_stopped_finish_is_a_violation() -> None:
    subject = EngineSubject(VllmPR50551Policy(), StoppedCheckpointLostEngine)
    violation = check(_scenario(STOPPED), subject)
    assert violation is not None and "hit 0" in str(violation)


def test_the_promises_are_declared_apart() -> None:
    pr50551, vllm = CheckedPolicy(VllmPR50551Policy()), CheckedPolicy(VllmPolicy())
    plain, decode = JunctionPolicy(), JunctionPolicy(JunctionOptions(decode_checkpoints=True))
    assert [Promise.NEXT_TURN.applies_to(p) for p in (pr50551, vllm, plain, decode)] == [
        True,
        False,
        False,
        True,
    ]
    assert [Promise.DECLARED_PREFIX.applies_to(p) for p in (pr50551, vllm, plain, decode)] == [
        False,
        False,
        True,
        True,
    ]
    assert pr50551.decode_checkpoint_finishes == {STOPPED}
    assert CheckedPolicy(plain).decode_checkpoint_finishes == frozenset()


def test_a_scenario_carries_its_finish_in_json_only_when_not_stopped() -> None:
    assert "finish" not in _scenario(STOPPED).to_json()
    data = _scenario(CAPPED).to_json()
    assert data["finish"] == "length_capped"
    assert Scenario.from_json(data) == _scenario(CAPPED)
    with pytest.raises(InvalidArgument, match="finish"):
        Scenario.from_json({**data, "finish": "eos"})


class _BadFinishes(VllmPR50551Policy):
    decode_checkpoint_finishes = "stopped"  # type: ignore[assignment]


def test_bad_declarations_are_named() -> None:
    with pytest.raises(PolicyError, match="decode_checkpoint_finishes"):
        CheckedPolicy(_BadFinishes())
    with pytest.raises(InvalidArgument, match="decode_checkpoint_finishes"):
        JunctionOptions(decode_checkpoints=True, decode_checkpoint_finishes=("stopped",))
    with pytest.raises(InvalidArgument, match="finish_reason"):
        Request(0, (1, 2), 1, 1, finish_reason="stopped")  # type: ignore[arg-type]


@pytest.mark.parametrize(("finishes", "resumed"), [({ABORTED}, 32), ({STOPPED, CAPPED}, 20)])
def test_an_abort_mid_decode_publishes_only_where_declared(
    finishes: set[FinishReason], resumed: int
) -> None:
    options = JunctionOptions(decode_checkpoints=True, decode_checkpoint_finishes=finishes)
    engine = Engine(
        EngineConfig(
            MAMBA, num_blocks=500, max_num_batched_tokens=16, policy=JunctionPolicy(options)
        )
    )
    request_id = engine.submit(PROMPT, 30)
    while engine.requests[request_id].num_computed_tokens < 33:
        engine.step()
        engine.check()
    tokens = tuple(engine.requests[request_id].tokens)
    engine.abort(request_id)
    engine.check()
    assert engine.pool.num_free == engine.pool.num_usable
    hits = engine.coordinator.lookup(Request(-1, (*tokens, 100), 1, MAMBA.hash_block_size))
    assert (hits.hit_length, hits.longest_hit_length) == (resumed, 32)


def test_a_declared_prefix_scenario_needs_a_declared_checkpoint() -> None:
    with pytest.raises(InvalidArgument, match="declared"):
        Scenario(Promise.DECLARED_PREFIX, MAMBA, [PROMPT], PROMPT[:4])
