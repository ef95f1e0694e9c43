"""The same seed and submissions give the same run, step for step."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from junction.reference.engine.engine import Engine, EngineConfig

from .test_engine_state_machine import MAX_OUTPUT, MAX_PROMPT, engine_configs

prompts = st.lists(
    st.tuples(
        st.lists(st.integers(0, 3), min_size=1, max_size=MAX_PROMPT), st.integers(1, MAX_OUTPUT)
    ),
    min_size=1,
    max_size=12,
)


def trace(config: EngineConfig, submissions: list[tuple[list[int], int]]) -> list[object]:
    engine = Engine(config)
    for prompt, max_output in submissions:
        engine.submit(tuple(prompt), max_output)
    steps: list[object] = []
    while not engine.idle and len(steps) < 5_000:
        steps.append(engine.step())
    outputs = [tuple(r.tokens) for r in engine.requests.values()]
    return [steps, outputs, engine.metrics, engine.pool.evictions]


@given(engine_configs(), prompts)
def test_same_seed_same_run(config: EngineConfig, submissions: list[tuple[list[int], int]]) -> None:
    assert trace(config, submissions) == trace(config, submissions)
