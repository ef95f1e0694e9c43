"""Decode checkpoints in the reference engine (vLLM PR #50551's model).

With ``JunctionOptions(decode_checkpoints=True)`` a decoding request keeps a
private copy of the Mamba state at each hit-grid point its next turn may
still resume at (one without EAGLE), a sliding window holds the blocks it
reads there, and the finished request publishes them: the next turn, which
resends the prompt and the whole answer, resumes where full attention alone
would. Off (the default), the engine and the policy do exactly what they did.
An aborted or preempted request publishes nothing.
"""

from __future__ import annotations

import pytest

from junction.core import GroupKind, GroupSpec, HybridGeometry, decode_checkpoint
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.group_managers import MambaManager
from junction.reference.engine.request import Request
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.options import JunctionOptions

ON = JunctionOptions(decode_checkpoints=True)
MAMBA = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 2, retention_interval=0)
WINDOW = HybridGeometry(
    [GroupSpec.full(4), GroupSpec.sliding_window(4, 5)], 2, retention_interval=0
)


def _engine(geometry: HybridGeometry, options: JunctionOptions, blocks: int = 500) -> Engine:
    return Engine(
        EngineConfig(
            geometry, num_blocks=blocks, max_num_batched_tokens=16, policy=JunctionPolicy(options)
        )
    )


def _finish(engine: Engine, prompt: tuple[int, ...], output: int) -> tuple[int, ...]:
    """Run one request to the end; its prompt and whole answer."""
    request_id = engine.submit(prompt, output)
    transcript: tuple[int, ...] = ()
    while not engine.idle:
        engine.step()
        engine.check()
        request = engine.requests[request_id]
        transcript = tuple(request.tokens) or transcript
    return transcript


def _next_turn(engine: Engine, tokens: tuple[int, ...]) -> tuple[int, int]:
    """The hit and full attention's own hit for a follow-up of ``tokens``."""
    probe = Request(-1, tokens, 1, engine.geometry.hash_block_size)
    hits = engine.coordinator.lookup(probe)
    return hits.hit_length, hits.longest_hit_length


@pytest.mark.parametrize("geometry", [MAMBA, WINDOW], ids=["mamba", "sliding-window"])
def test_the_next_turn_resumes_where_full_attention_does(geometry: HybridGeometry) -> None:
    prompt = tuple(range(23))
    for options, resumed in ((JunctionOptions(), 20), (ON, 28)):
        engine = _engine(geometry, options)
        transcript = _finish(engine, prompt, 9)  # 32 tokens, 31 computed
        hit, longest = _next_turn(engine, (*transcript, 100, 101, 102))
        assert (hit, longest) == (resumed, 28)
        assert decode_checkpoint(geometry, len(transcript)) == 28


def test_off_the_engine_runs_as_before() -> None:
    prompts = [tuple(range(23)), (*range(11), 7, 7, 7), tuple(range(40))]
    metrics = []
    for policy in (JunctionPolicy(), JunctionPolicy(JunctionOptions(decode_checkpoints=False))):
        engine = Engine(EngineConfig(MAMBA, num_blocks=500, policy=policy))
        for prompt in prompts:
            _finish(engine, prompt, 6)
        metrics.append(engine.metrics)
        assert engine.decode_pins == 0
    assert metrics[0] == metrics[1]


def _mamba(engine: Engine) -> MambaManager:
    (manager,) = (m for m in engine.coordinator.managers if isinstance(m, MambaManager))
    return manager


def test_a_decoding_request_pins_one_state_counted_in_its_peak() -> None:
    off, on = _engine(MAMBA, JunctionOptions()), _engine(MAMBA, ON)
    assert on.decode_pins == 1  # without EAGLE: the latest grid point only
    assert on.blocks_at_peak(64) == off.blocks_at_peak(64) + 1
    request_id = on.submit(tuple(range(23)), 30)
    most = 0
    while not on.idle:
        on.step()
        on.check()
        most = max(most, len(_mamba(on).pins.get(request_id, {})))
    assert most == 1


def test_under_eagle_the_pins_reach_down_to_the_landing() -> None:
    geometry = HybridGeometry(
        [GroupSpec.full(4), GroupSpec.mamba(4)], 2, use_eagle=True, retention_interval=0
    )
    engine = _engine(geometry, ON)
    transcript = _finish(engine, tuple(range(23)), 9)
    hit, longest = _next_turn(engine, (*transcript, 100))
    assert hit == longest == decode_checkpoint(geometry, len(transcript)) == 24
    assert engine.decode_pins == 2  # the landing, a grid step down, and the latest


@pytest.mark.parametrize("geometry", [MAMBA, WINDOW], ids=["mamba", "sliding-window"])
def test_an_aborted_request_publishes_nothing(geometry: HybridGeometry) -> None:
    engine = _engine(geometry, ON)
    prompt = tuple(range(23))
    request_id = engine.submit(prompt, 30)
    while engine.requests[request_id].num_computed_tokens < 33:
        engine.step()
        engine.check()
    tokens = tuple(engine.requests[request_id].tokens)
    engine.abort(request_id)
    engine.check()
    hit, longest = _next_turn(engine, (*tokens, 100))
    assert longest == 32 and hit == 20  # the prompt's replay state, no decode state
    sparse = [i for i, g in enumerate(geometry.groups) if g.kind is not GroupKind.FULL]
    assert engine.pool.num_free == engine.pool.num_usable  # the pins were given back
    assert sparse


def test_a_preempted_request_publishes_only_what_it_finished() -> None:
    """A pool too small for two requests preempts one mid-decode; it gives its pins
    back, starts over and publishes on its own finish only."""
    engine = _engine(MAMBA, ON, blocks=engine_blocks())
    first = engine.submit(tuple(range(23)), 12)
    second = engine.submit(tuple(range(50, 73)), 12)
    for _ in range(400):
        if engine.idle:
            break
        engine.step()
        engine.check()
    assert engine.metrics.preemptions > 0
    assert engine.requests[first].status.value == engine.requests[second].status.value == "finished"


def engine_blocks() -> int:
    """Enough for one request of 23 + 12 tokens at its peak, not for two."""
    probe = _engine(MAMBA, ON)
    return probe.blocks_at_peak(23 + 12) + 4
