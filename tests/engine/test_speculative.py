"""Speculative decode steps: ``k`` drafts verified a step, a drawn number accepted.

Off by default (``EngineConfig.speculative is None``: one token a step, every
digest unchanged). On, a decode step computes its sampled token and the drafts
it accepted, and a Mamba block end it passes without ending there holds a
state only if the engine captures it (``CrossedGridPoints``). The next turn
then resumes at the deepest state the steps left at or below where full
attention lands (``core.deepest_decode_state``), which the engine keeps for a
policy's decode checkpoint, pinning it (and a window's blocks there) even
below the lag.
"""

from __future__ import annotations

import random
import re

import attrs
import pytest
from hypothesis import given, settings

from junction.core import CrossedGridPoints, GroupSpec, HybridGeometry, InvalidArgument
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.group_managers import MambaManager
from junction.reference.engine.speculative import SpeculativeDecoding
from junction.reference.harness import Scenario, check, scenarios
from junction.reference.harness.engine_subject import EngineSubject
from junction.reference.harness.promises import next_turn_probe
from junction.reference.policies.builtin import DensePolicy, JunctionPolicy
from junction.reference.policies.options import JunctionOptions
from junction.reference.policies.registry import resolve_policy

CAPTURED, UNCACHED = CrossedGridPoints.CAPTURED, CrossedGridPoints.UNCACHED
DECODE = JunctionOptions(decode_checkpoints=True)


def _transcript(
    speculative: SpeculativeDecoding | None,
) -> tuple[list[tuple[int, int]], tuple[int, ...]]:
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
    engine = Engine(
        EngineConfig(geometry, 100, policy=JunctionPolicy(), speculative=speculative, seed=5)
    )
    request_id = engine.submit(tuple(range(6)), 9)
    spans, tokens = [], ()
    while not engine.idle:
        spans += [(start, computed) for _, start, computed in engine.step()]
        engine.check()
        tokens = tuple(engine.requests[request_id].tokens) or tokens
    return spans, tokens


def test_off_by_default_and_the_same_tokens_either_way() -> None:
    geometry = HybridGeometry([GroupSpec.full(4)], 4)
    assert EngineConfig(geometry, 10, policy=JunctionPolicy()).speculative is None
    one, plain = _transcript(None)
    assert one == [(0, 4), (4, 2)] + [(c, 1) for c in range(6, 14)]
    # Two drafts a step, accepted 2, 0, 1, 2: each step computes 1 + the accepted; the
    # last one's drafts are cut to the one output left but the sampled one.
    steps, tokens = _transcript(SpeculativeDecoding(2, accepted=(2, 0, 1)))
    assert steps == [(0, 4), (4, 2), (6, 3), (9, 1), (10, 2), (12, 2)]
    assert tokens == plain  # a token is a function of its position, not of the steps


@pytest.mark.parametrize(("crossed", "hit"), [(CAPTURED, 4), (UNCACHED, 0)])
def test_a_passed_block_end_holds_a_state_only_if_captured(
    crossed: CrossedGridPoints, hit: int
) -> None:
    # P = 1, five outputs in steps of two tokens: 1 -> 3 -> 5 passes 2 and 4 without
    # ending on either. Dense keeps every state there is: the next turn resumes at 4
    # when the steps captured them, at 0 when they left them uncached.
    geometry = HybridGeometry([GroupSpec.full(2), GroupSpec.mamba(2)], 2)
    steps = SpeculativeDecoding(1, crossed, (1,))
    scenario = Scenario(
        "next_turn", geometry, [(0,)], (), 4, max_output_tokens=5, speculative=steps
    )
    run = EngineSubject(DensePolicy()).run(scenario)
    assert run.prefills[0].chunks == ((0, 1), (1, 3), (3, 5))
    assert run.lookup(next_turn_probe(scenario, run)).as_tuple()[:2] == (hit, 4)
    assert check(scenario, EngineSubject(DensePolicy())) is None


# Full attention, a window of 3 and Mamba on blocks of 2, R = 0; P = 3 and nine
# outputs, accepted 0, 0, 1, 1, 1 of one draft: steps end at 4, 5, 7, 9, 11. Full
# attention lands at 10; crossed ends captured keep 6, 8, 10; left uncached, only 4.
WINDOWED = HybridGeometry(
    [GroupSpec.full(2), GroupSpec.sliding_window(2, 3), GroupSpec.mamba(2)],
    2,
    retention_interval=0,
)


@pytest.mark.parametrize(("crossed", "hit"), [(CAPTURED, 10), (UNCACHED, 4)])
def test_the_next_turn_resumes_at_the_deepest_state_the_steps_left(
    crossed: CrossedGridPoints, hit: int
) -> None:
    steps = SpeculativeDecoding(1, crossed, (0, 0, 1, 1, 1))
    scenario = Scenario(
        "next_turn", WINDOWED, [(0, 1, 2)], (), 4, max_output_tokens=9, speculative=steps
    )
    for name in ("junction+decode", "vllm-pr50551", "dense"):
        run = EngineSubject(resolve_policy(name)).run(scenario)
        assert run.prefills[0].chunk_ends == (2, 3, 4, 5, 7, 9, 11)
        # Uncached, 4 lies below the lag (c = 11): the engine kept its Mamba state and
        # the window's block [2, 4) for it, where the window had moved on.
        assert run.lookup(next_turn_probe(scenario, run)).hit == hit, name
        assert check(scenario, EngineSubject(resolve_policy(name))) is None, name
    # Without decode checkpoints the next turn resumes at the prompt's replay state.
    violation = check(scenario, EngineSubject(JunctionPolicy()))
    assert violation is not None and violation.problem.describe("") == (
        f"hit 2 under R=0, {hit} with every block"
    )


@settings(max_examples=min(100, settings.default.max_examples))
@given(
    scenarios("next_turn").filter(
        lambda s: (
            not s.geometry.use_eagle and not s.geometry.partial_hits and s.max_output_tokens > 1
        )  # a one-token answer: below
    )
)
def test_pr50551_keeps_the_next_turn_without_eagle_or_partial_hits(scenario: Scenario) -> None:
    """Where its latest scheduler-aligned state is where the next turn lands (the hit
    grid is ``L``, nothing drops) and the answer has a decode step, under every step
    model: kept as the deepest state the steps left at or below it, as the default's
    landing is."""
    violation = check(scenario, EngineSubject(resolve_policy("vllm-pr50551")))
    assert violation is None, f"{violation}\nscenario: {scenario.to_json()}"


@pytest.mark.parametrize(("prompt", "full_attention"), [(7, 4), (11, 8)])
def test_pr50551_misses_the_next_turn_of_a_one_token_answer(
    prompt: int, full_attention: int
) -> None:
    # No decode step, so no decode state: the PR publishes nothing the next turn lands
    # on, even without EAGLE and partial hits (found by the property above).
    geometry = HybridGeometry([GroupSpec.full(2), GroupSpec.full(4), GroupSpec.mamba(2)], 2)
    scenario = Scenario("next_turn", geometry, [(0,) * prompt], (), 6, max_output_tokens=1)
    violation = check(scenario, EngineSubject(resolve_policy("vllm-pr50551")))
    assert violation is not None
    assert violation.problem.describe("") == f"hit 0, full attention alone {full_attention}"
    assert check(scenario, EngineSubject(resolve_policy("junction+decode"))) is None


# docs/findings.md, "The next turn on vLLM 0.33.0", case 2: EAGLE, full attention
# and Mamba blocks of 2, R = 0, a 3-token prompt and a 4-token answer (c = 6): the
# next turn lands at 4. Under each step model: dense retention's chunk ends (the
# prompt's stops, then the steps'), and what dense retention resumes at.
EAGLE_CASE = Scenario(
    "next_turn",
    HybridGeometry(
        [GroupSpec.full(2), GroupSpec.mamba(2)], 2, use_eagle=True, retention_interval=0
    ),
    [(0, 0, 0)],
    (),
    4,
    max_output_tokens=4,
)


@pytest.mark.parametrize(
    ("steps", "ends", "dense"),
    [
        (None, (2, 3, 4, 5, 6), 4),  # one token a step: a state at 4
        (SpeculativeDecoding(2, UNCACHED, (0,)), (2, 3, 4, 5, 6), 4),  # every draft rejected
        (SpeculativeDecoding(1, CAPTURED, (1,)), (2, 3, 5, 6), 4),  # 4 passed, captured
        (SpeculativeDecoding(1, UNCACHED, (1,)), (2, 3, 5, 6), 2),  # 4 passed, uncached
        (SpeculativeDecoding(2, CAPTURED, (2,)), (2, 3, 6), 2),  # 4 passed, 6 captured
    ],
)
def test_the_pr50551_eagle_miss_under_each_step_model(
    steps: SpeculativeDecoding | None, ends: tuple[int, ...], dense: int
) -> None:
    """Where a state sits at the landing (4), the PR publishes 6 and misses it; where
    none does, dense resumes on the prompt's side (2), where vLLM 0.33.0's EAGLE replay
    boundaries keep nothing either (audit finding 2): hit 0 both ways."""
    scenario = attrs.evolve(EAGLE_CASE, speculative=steps)
    assert EngineSubject(DensePolicy()).run(scenario).prefills[0].chunk_ends == ends
    violation = check(scenario, EngineSubject(resolve_policy("vllm-pr50551")))
    assert violation is not None
    assert violation.problem.describe("") == f"hit 0 under R=0, {dense} with every block"
    assert check(scenario, EngineSubject(JunctionPolicy(DECODE))) is None


@pytest.mark.parametrize("crossed", list(CrossedGridPoints))
def test_speculative_workloads_keep_every_invariant(crossed: CrossedGridPoints) -> None:
    """Shared prefixes into a pool that forces eviction and preemption, decode
    checkpoints on: every step checked, spare blocks used (captured) and given back."""
    rng = random.Random(11)
    geometry = HybridGeometry(
        [GroupSpec.full(2), GroupSpec.sliding_window(2, 5), GroupSpec.mamba(2)],
        2,
        use_eagle=True,
        retention_interval=0,
    )
    config = EngineConfig(
        geometry,
        num_blocks=60,
        max_num_batched_tokens=16,
        policy=JunctionPolicy(DECODE),
        speculative=SpeculativeDecoding(3, crossed, acceptance_rate=0.8),
    )
    engine = Engine(config)
    captured = multi = 0
    prefix = [rng.randrange(9) for _ in range(20)]
    for _ in range(12):
        shared = rng.randrange(len(prefix) + 1)
        prompt = prefix[:shared] + [rng.randrange(9) for _ in range(rng.randrange(1, 8))]
        engine.submit(tuple(prompt), rng.randrange(4, 16))
    for _ in range(2_000):
        if engine.idle:
            break
        spans = engine.step()
        engine.check()
        mamba = [m for m in engine.coordinator.managers if isinstance(m, MambaManager)]
        for manager in mamba:
            captured += len(manager.written)
            manager.written.clear()
        prompts = engine.requests
        multi += sum(s >= prompts[r].num_prompt_tokens and n > 1 for r, s, n in spans)
    assert multi  # decode steps that computed accepted drafts
    metrics = engine.metrics
    assert engine.idle and metrics.evictions and metrics.preemptions, metrics
    assert (captured > 0) == (crossed is CAPTURED)


def test_the_option_and_its_json_name_their_rules() -> None:
    cases: list[tuple[object, str]] = [
        (lambda: SpeculativeDecoding(0), "num_tokens=0: must be an int >= 1"),
        (lambda: SpeculativeDecoding(2, "sometimes"), "crossed='sometimes': must be one of"),
        (
            lambda: SpeculativeDecoding(2, accepted=(1, 3)),
            "accepted[1]=3: must be an int in [0, num_tokens (2)]",
        ),
        (lambda: SpeculativeDecoding(2, accepted=5), "accepted=5: must be a sequence"),
        (
            lambda: SpeculativeDecoding(2, acceptance_rate=1.5),
            "acceptance_rate=1.5: must be a number in [0, 1]",
        ),
        (
            lambda: EngineConfig(WINDOWED, 9, policy=JunctionPolicy(), speculative=2),
            "speculative=2: must be None or a SpeculativeDecoding",
        ),
        (
            lambda: Scenario("next_turn", WINDOWED, [(0,)], speculative={"crossed": "captured"}),
            "speculative={'crossed': 'captured'}: must be None, a SpeculativeDecoding",
        ),
    ]
    for call, message in cases:
        with pytest.raises(InvalidArgument, match="^" + re.escape(message)):
            call()  # type: ignore[operator]
    steps = SpeculativeDecoding(2, "uncached", [1, 0])
    scenario = Scenario("next_turn", WINDOWED, [(0,)], speculative=steps)
    text = scenario.to_json()
    assert text["speculative"] == {"num_tokens": 2, "crossed": "uncached", "accepted": [1, 0]}
    assert Scenario.from_json(text) == scenario
    assert "speculative" not in Scenario("next_turn", WINDOWED, [(0,)]).to_json()


def test_a_checkpoint_on_the_prompts_side_keeps_no_window_block_the_prefill_released() -> None:
    """P = 7 in chunks ending at 4 and 6 (a window of 1 then reads nothing below 6:
    its block [4, 6) is released), decode from 7 in steps of two tokens, left
    uncached: no step ends on the grid of 4, so the next turn's state stays at
    ``floor_G(7) = 4``, the prompt's side, below the lag from c = 13 on. The window
    keeps none of it (as with one token a step); the prefill's cached block serves."""
    geometry = HybridGeometry(
        [GroupSpec.full(2), GroupSpec.mamba(4), GroupSpec.sliding_window(2, 1)],
        1,
        partial_hits=True,
        use_eagle=True,
    )
    steps = SpeculativeDecoding(1, UNCACHED, (1,))
    engine = Engine(EngineConfig(geometry, 100, policy=JunctionPolicy(DECODE), speculative=steps))
    request_id = engine.submit(tuple(range(7)), 8)
    ends = []
    while not engine.idle:
        ends += [start + computed for _, start, computed in engine.step()]
        engine.check()
    assert ends == [4, 6, 7, 9, 11, 13, 14]
    tokens = tuple(engine.requests[request_id].tokens)
    follow_up = engine.submit((*tokens, 3), 1)
    engine.step()
    assert engine.requests[follow_up].hit_length == 4
