"""Decode checkpoints in the external tier (``ExternalTier(decode_checkpoints=True)``).

Two engine instances share one tier; the first runs a turn to its finish,
the second, with nothing local, admits the next turn (the transcript and new
text). With the tier taking decode checkpoints the second resumes at the
first turn's decode checkpoint, exactly as deep as the first instance would;
without, at the prompt's state. The harness checks the same over random
scenarios (promise 8 with promise 9, the ``tier`` promise of a policy keeping
decode checkpoints; the zoo's ``DecodeCheckpointNotSavedEngine``).
"""

from __future__ import annotations

import pytest

from junction.core import GroupSpec, HybridGeometry, decode_checkpoint
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.finish import FinishReason
from junction.reference.engine.policy import Policy
from junction.reference.engine.request import Request
from junction.reference.engine.tier import ExternalTier
from junction.reference.policies.builtin import JunctionPolicy, junction_with_decode_checkpoints
from junction.reference.policies.registry import resolve_policy

PROMPT = tuple(range(30))  # P = 30: its replay state lies at 28
ANSWER = 9  # N = 39, c = 38: the decode checkpoint lies at 36
NEW_TEXT = (7, 8)
MAMBA = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4, retention_interval=0)
SWA = HybridGeometry([GroupSpec.full(4), GroupSpec.sliding_window(4, 6)], 4, retention_interval=0)
GEOMETRIES = [MAMBA, SWA]
IDS = ["mamba", "sliding window"]


def _engine(geometry: HybridGeometry, tier: ExternalTier, policy: Policy) -> Engine:
    config = EngineConfig(geometry, 500, policy=policy, max_num_batched_tokens=16, tier=tier)
    return Engine(config)


def _run(engine: Engine, prompt: tuple[int, ...], outputs: int, finish: FinishReason) -> Request:
    request_id = engine.submit(prompt, outputs, finish=finish)
    while not engine.idle:
        engine.step()
        engine.check()
    return engine.requests[request_id]


def _next_turn(
    geometry: HybridGeometry,
    decode_checkpoints: bool,
    policy: Policy | None = None,
    finish: FinishReason = FinishReason.STOPPED,
) -> tuple[int, int, Engine]:
    """The first turn on instance 1, then its next turn: (the hit instance 1 would
    get, the hit on instance 2, instance 2)."""
    policy = junction_with_decode_checkpoints() if policy is None else policy
    tier = ExternalTier(1000, decode_checkpoints=decode_checkpoints)
    first, second = _engine(geometry, tier, policy), _engine(geometry, tier, policy)
    turn = _run(first, PROMPT, ANSWER, finish)
    next_turn = (*turn.tokens, *NEW_TEXT)
    here = first.coordinator.lookup(Request(-1, next_turn, 1, geometry.hash_block_size))
    there = _run(second, next_turn, 2, FinishReason.STOPPED)
    return here.hit_length, there.hit_length, second


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=IDS)
def test_another_instance_resumes_at_the_decode_checkpoint(geometry: HybridGeometry) -> None:
    here, there, second = _next_turn(geometry, decode_checkpoints=True)
    assert decode_checkpoint(geometry, len(PROMPT) + ANSWER) == 36
    assert here == there == 36
    assert second.metrics.external_hit_tokens == 36  # all of it loaded


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=IDS)
def test_off_the_answer_stays_local(geometry: HybridGeometry) -> None:
    here, there, _ = _next_turn(geometry, decode_checkpoints=False)
    assert (here, there) == (36, 28)  # the prompt's replay state, from the tier


def test_a_policy_without_decode_checkpoints_publishes_none_to_save() -> None:
    # The answer's attention reaches the tier, but no state past the prompt's.
    here, there, _ = _next_turn(MAMBA, decode_checkpoints=True, policy=JunctionPolicy())
    assert (here, there) == (28, 28)


def test_a_finish_the_policy_does_not_publish_on_saves_no_checkpoint() -> None:
    # vllm-pr50551 publishes on a stopped finish only: a length cap leaves it local too.
    pr50551 = resolve_policy("vllm-pr50551")
    stopped = _next_turn(MAMBA, True, pr50551, FinishReason.STOPPED)
    capped = _next_turn(MAMBA, True, pr50551, FinishReason.LENGTH_CAPPED)
    assert stopped[:2] == (36, 36)
    assert capped[:2] == (28, 28)


def test_the_saved_state_is_the_one_at_its_position() -> None:
    tier = ExternalTier(1000, decode_checkpoints=True)
    engine = _engine(MAMBA, tier, junction_with_decode_checkpoints())
    turn = _run(engine, PROMPT, ANSWER, FinishReason.STOPPED)
    key = (1, turn.chain.block_hash(36 // 4 - 1, 4))
    stored = tier.blocks[key]
    assert (stored.state_position, stored.end) == (36, 36)
    tier.check()


@pytest.mark.parametrize("value", [1, None, "yes"])
def test_the_option_is_a_bool(value: object) -> None:
    with pytest.raises(ValueError, match=r"decode_checkpoints=.*: must be True or False"):
        ExternalTier(10, decode_checkpoints=value)  # type: ignore[arg-type]


def test_a_window_reaching_into_the_prompt_is_saved_with_the_checkpoint() -> None:
    # P = 3, c = 4: the checkpoint 4 reads the window's block [0, 2), which no prompt
    # position keeps (the prefill saved none of it); its publication caches it.
    geometry = HybridGeometry(
        [GroupSpec.full(2), GroupSpec.full(4), GroupSpec.sliding_window(2, 4)],
        2,
        retention_interval=0,
    )
    policy = junction_with_decode_checkpoints()
    tier = ExternalTier(1000, decode_checkpoints=True)
    first, second = _engine(geometry, tier, policy), _engine(geometry, tier, policy)
    turn = _run(first, (0, 101, 0), 2, FinishReason.STOPPED)
    next_turn = (*turn.tokens, 5)
    here = first.coordinator.lookup(Request(-1, next_turn, 1, geometry.hash_block_size))
    assert here.hit_length == _run(second, next_turn, 1, FinishReason.STOPPED).hit_length == 4


def test_a_nearly_full_tier_keeps_the_checkpoint_over_the_answer() -> None:
    # The checkpoint at 36 reads 10 blocks (full attention's 9, the state); the answer
    # adds the state at 32 its retention interval keeps. With room for 10, the
    # checkpoint's blocks, saved last, are the ones left.
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4, retention_interval=4)
    policy = junction_with_decode_checkpoints()
    tier = ExternalTier(10, decode_checkpoints=True)
    first, second = _engine(geometry, tier, policy), _engine(geometry, tier, policy)
    turn = _run(first, PROMPT, ANSWER, FinishReason.STOPPED)
    assert _run(second, (*turn.tokens, *NEW_TEXT), 2, FinishReason.STOPPED).hit_length == 36


def test_a_checkpoint_block_cached_before_the_finish_is_saved_at_it() -> None:
    # The prompt hits instance 1's local cache, the tier having evicted its blocks
    # since: the save path stores nothing below the hit and the publication caches
    # only the state at 36, yet the checkpoint reads the prompt's attention too.
    policy = junction_with_decode_checkpoints()
    tier = ExternalTier(40, decode_checkpoints=True)
    first, second = _engine(MAMBA, tier, policy), _engine(MAMBA, tier, policy)
    _run(first, PROMPT, 1, FinishReason.LENGTH_CAPPED)
    _run(first, tuple(range(1000, 1200)), 1, FinishReason.LENGTH_CAPPED)  # fills the tier
    turn = _run(first, PROMPT, ANSWER, FinishReason.STOPPED)
    assert turn.hit_length == 28  # from the local cache
    assert _run(second, (*turn.tokens, *NEW_TEXT), 2, FinishReason.STOPPED).hit_length == 36
