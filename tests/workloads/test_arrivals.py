"""The timed loops of ``workloads.drive``, the step-time model and the lazy hash-id prompts.

Every expected time is computed here from the model's documented formula on
a schedule simple enough to know step by step (one request, or two whose
arrivals are far apart), never read back from the code under test.
"""

from __future__ import annotations

import pytest

from junction.core import GroupSpec, HybridGeometry, InvalidArgument
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.policies.registry import resolve_policy
from junction.reference.simulator.result import Latency
from junction.reference.simulator.workload import hash_trace_workload
from junction.reference.workloads import hash_prompts
from junction.reference.workloads.drive import (
    PoolTooSmall,
    run_sequential,
    run_sessions,
    run_trace,
)
from junction.reference.workloads.hash_prompts import HashArrival, PromptBuilder
from junction.reference.workloads.mooncake import HashTraceRequest
from junction.reference.workloads.sessions import Arrival
from junction.reference.workloads.step_time import StepTimeModel

MODEL = StepTimeModel(step_ms=1.0, prefill_token_us=10.0, attention_us_per_ktoken=2.0)


def engine(budget: int = 2048, blocks: int = 1000) -> Engine:
    geometry = HybridGeometry((GroupSpec.full(16), GroupSpec.sliding_window(16, 128)), 16)
    return Engine(
        EngineConfig(
            geometry, blocks, policy=resolve_policy("dense"), max_num_batched_tokens=budget
        )
    )


def timed(prompt: int, output: int, at: int) -> HashArrival:
    ids = tuple(range(at * 1000, at * 1000 + -(-prompt // 512)))
    return HashArrival(HashTraceRequest(1, at, prompt, output, ids), PromptBuilder())


def test_a_step_costs_its_fixed_part_its_prefill_tokens_their_context_and_its_rows() -> None:
    # 100 tokens from 0: context 0+1+...+99 = 4,950; 20 tokens from 1,000: 20,000 + 190.
    cost = MODEL.step_time_ms([(0, 100), (1000, 20)], decode_rows=3)
    micros = 120 * 10.0 + (4950 + 20190) / 1000 * 2.0 + 3 * 50.0
    assert cost == pytest.approx(1.0 + micros / 1000)
    assert MODEL.step_time_ms([], 0) == 1.0
    assert "times are modelled, not measured: a step costs 1 ms" in MODEL.describe()


@pytest.mark.parametrize("field", ["step_ms", "prefill_token_us", "decode_row_us"])
def test_a_negative_or_non_float_cost_is_refused_naming_the_field(field: str) -> None:
    # A type is a rule like any other: core's InvalidArgument names both.
    with pytest.raises(InvalidArgument, match=rf"^{field}=-1.0: must be a float in \[0, 1e\+09\)$"):
        StepTimeModel(**{field: -1.0})
    with pytest.raises(InvalidArgument, match=rf"^{field}=1: must be a float"):
        StepTimeModel(**{field: 1})


def test_sequential_one_prompt_in_one_step_has_its_ttft_and_no_queue() -> None:
    replay = run_sequential(engine(), [timed(100, 3, 0), timed(200, 1, 5)], MODEL)
    first, second = replay.timings
    assert (first.queue_ms, second.queue_ms) == (0.0, 0.0)
    assert first.ttft_ms == pytest.approx(MODEL.step_time_ms([(0, 100)], 0))
    # The second is sent when the first finished: its prefill, then 2 decode steps of one row.
    assert second.arrival_ms == pytest.approx(first.ttft_ms + 2 * MODEL.step_time_ms([], 1))
    assert second.ttft_ms == pytest.approx(MODEL.step_time_ms([(0, 200)], 0))
    assert replay.clock_ms == pytest.approx(second.arrival_ms + second.ttft_ms)


def test_trace_arrivals_wait_for_their_time_and_queue_behind_a_full_step() -> None:
    # Budget 64: the first request's 200 tokens take 4 steps (64, 64, 64, 8).
    small = engine(budget=64)
    steps = [MODEL.step_time_ms([(s, t)], 0) for s, t in ((0, 64), (64, 64), (128, 64))]
    late = 10_000  # far after the first has finished: the idle clock jumps there
    turns = [timed(200, 1, 0), timed(50, 1, 1), timed(30, 1, late)]
    replay = run_trace(small, turns, MODEL)
    first, second, third = replay.timings
    assert first.queue_ms == 0.0 and first.arrival_ms == 0.0
    # The second arrives at 1 ms, during the first step; it is scheduled once the first's
    # chunks leave room: after three full steps, with the first's last 8 tokens.
    assert second.arrival_ms == 1.0
    assert second.queue_ms == pytest.approx(sum(steps) - 1.0)
    assert third.arrival_ms == late and third.queue_ms == 0.0
    assert third.ttft_ms == pytest.approx(MODEL.step_time_ms([(0, 30)], 0))


def test_trace_arrivals_must_be_timed_and_in_order() -> None:
    untimed = Arrival((1, 2, 3), 1)
    with pytest.raises(ValueError, match=r"turns\[0\]\.arrival_ms=None: must be an int >= 0"):
        run_trace(engine(), [untimed], MODEL)
    with pytest.raises(ValueError, match=r"turns\[1\]\.arrival_ms=2: must be an int >= 5"):
        run_trace(engine(), [timed(10, 1, 5), timed(10, 1, 2)], MODEL)


def test_sessions_time_every_turn_from_when_it_is_sent() -> None:
    sessions = [[Arrival(tuple(range(40)), 2), Arrival(tuple(range(80)), 2)]]
    replay = run_sessions(engine(), sessions, 1, MODEL)
    first, second = replay.timings
    assert first.arrival_ms == 0.0 and second.arrival_ms > first.ttft_ms
    assert (first.queue_ms, second.queue_ms) == (0.0, 0.0)


def test_a_request_the_pool_cannot_hold_is_pool_too_small() -> None:
    with pytest.raises(PoolTooSmall, match="needs at least"):
        run_sequential(engine(blocks=4), [timed(2000, 1, 0)], MODEL)


def test_a_hash_id_workload_builds_each_prompt_only_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[int] = []
    original = PromptBuilder.prompt

    def counting(self: PromptBuilder, request: HashTraceRequest) -> tuple[int, ...]:
        built.append(request.line)
        return original(self, request)

    monkeypatch.setattr(PromptBuilder, "prompt", counting)
    requests = [HashTraceRequest(n, n, 600, 1, (1, 2 + n)) for n in range(1, 4)]
    workload = hash_trace_workload("t", requests)
    assert built == [] and workload.prompt_tokens == 1800
    assert workload.shared_prefix_tokens == 512  # from the ids: id 1 in common
    run_sequential(engine(), workload.turns, MODEL)
    assert built == [1, 2, 3]  # once each, at submission


def test_drawn_tokens_are_shared_small_ints_and_the_id_cache_is_bounded() -> None:
    tokens = hash_prompts.block_tokens(123_456)
    assert tokens[0] == 123_456 and all(0 <= t < 256 for t in tokens[1:])
    builder = PromptBuilder()
    for hash_id in range(hash_prompts.CACHED_BLOCKS + 10):
        builder.block(hash_id)
    assert builder.block.cache_info().currsize == hash_prompts.CACHED_BLOCKS


def test_latency_percentiles_are_nearest_rank() -> None:
    latency = Latency.of([float(v) for v in range(200, 0, -1)])
    assert (latency.p50, latency.p90, latency.p99) == (100.0, 180.0, 198.0)
    assert latency.percentiles[99] == 200.0 and latency.mean == 100.5
    assert Latency.of([7.0]).percentiles == (7.0,) * 100
    with pytest.raises(ValueError, match="samples"):
        Latency.of([])
