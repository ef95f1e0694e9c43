"""A request that could never make progress alone is refused at submission.

Otherwise it would be admitted, fill the pool, preempt itself and start over
forever (no step would ever finish it). The count covers every group: full
attention's blocks, a sliding window's window plus a chunk's blocks (held
until the step releases what left the window), Mamba's running and latest
state. And a request that is admitted finishes: alone, or sharing a tight
pool with others (the engine preempts the newest request, so the oldest
always progresses: no two requests preempt each other forever).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.options import JunctionOptions


def test_a_request_larger_than_the_pool_is_refused_with_the_numbers() -> None:
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
    engine = Engine(
        EngineConfig(geometry, num_blocks=5, policy=JunctionPolicy())
    )  # 4 usable beside the null block
    with pytest.raises(ValueError, match=r"needs at least 7 blocks \(5 \+ 2, one term per group\)"):
        engine.submit((1,) * 16, 2)  # 17 tokens: 5 full-attention blocks and two states
    assert engine.idle and not engine.requests
    request_id = engine.submit((1,) * 4, 1)  # 1 block and the states: fits
    engine.run()
    assert engine.requests[request_id].num_output_tokens == 1
    engine.check()


def test_the_sliding_window_counts_its_window_and_a_chunk() -> None:
    # 16 tokens: 4 full-attention blocks; the window (W - 1 = 7 tokens) and a
    # chunk of 8 touch cdiv(7 + 8 + 3, 4) = 5 blocks, capped at cdiv(16, 4) = 4.
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.sliding_window(4, 8)], 4)
    config = EngineConfig(geometry, num_blocks=8, max_num_batched_tokens=8, policy=JunctionPolicy())
    engine = Engine(config)  # 7 usable: full attention alone (4) would fit
    with pytest.raises(
        ValueError,
        match=r"request 0 \(15 prompt \+ 2 output tokens\) needs at least 8 blocks "
        r"\(4 \+ 4, one term per group\); the pool has 7",
    ):
        engine.submit((1,) * 15, 2)
    # A narrow window with a small chunk limit holds fewer than cdiv(N, B).
    narrow = HybridGeometry([GroupSpec.full(4), GroupSpec.sliding_window(4, 2)], 4)
    engine = Engine(
        EngineConfig(
            narrow,
            num_blocks=8,
            max_num_batched_tokens=8,
            long_prefill_token_threshold=4,
            policy=JunctionPolicy(),
        )
    )
    assert engine.blocks_at_peak(16) == 4 + 2  # cdiv(1 + 4 + 3, 4)
    request_id = engine.submit((1,) * 15, 2)
    engine.run(1_000)
    assert engine.requests[request_id].num_output_tokens == 2


@st.composite
def _tight_engines(draw: st.DrawFn) -> tuple[Engine, list[tuple[tuple[int, ...], int]]]:
    groups = [GroupSpec.full(draw(st.sampled_from([1, 2, 4, 8])))]
    for kind in draw(st.lists(st.sampled_from(["sliding_window", "mamba"]), max_size=2)):
        size = draw(st.sampled_from([1, 2, 4, 8]))
        groups.append(
            GroupSpec.sliding_window(size, draw(st.integers(1, 20)))
            if kind == "sliding_window"
            else GroupSpec.mamba(size)
        )
    probe = HybridGeometry(groups, 1)
    geometry = HybridGeometry(
        groups,
        1,
        partial_hits=draw(st.booleans()),
        use_eagle=draw(st.booleans()),
        retention_interval=draw(st.sampled_from([None, 0, probe.scheduler_block_size])),
    )
    requests = [
        (tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=40))), draw(st.integers(1, 4)))
        for _ in range(draw(st.integers(1, 4)))
    ]
    config = EngineConfig(
        geometry,
        num_blocks=draw(st.integers(2, 40)),
        max_num_batched_tokens=draw(st.integers(1, 24)),
        long_prefill_token_threshold=draw(st.sampled_from([0, 1, 4, 16])),
        policy=JunctionPolicy(),
    )
    return Engine(config), requests


def _submit_what_fits(
    engine: Engine, requests: list[tuple[tuple[int, ...], int]]
) -> dict[int, int]:
    """Submit each request; the admitted ones' ids and output lengths."""
    admitted = {}
    for prompt, max_output in requests:
        needed = engine.blocks_at_peak(len(prompt) + max_output - 1)
        try:
            admitted[engine.submit(prompt, max_output)] = max_output
        except ValueError:
            assert needed > engine.pool.num_usable
        else:
            assert needed <= engine.pool.num_usable
    return admitted


@given(_tight_engines())
def test_an_admitted_request_alone_in_the_pool_finishes(
    case: tuple[Engine, list[tuple[tuple[int, ...], int]]],
) -> None:
    engine, requests = case
    for request in requests:  # one at a time; earlier ones leave cached blocks
        for request_id, max_output in _submit_what_fits(engine, [request]).items():
            engine.run(2_000)
            assert engine.requests[request_id].num_output_tokens == max_output, engine.dump()
            assert engine.metrics.preemptions == 0
            engine.check()


@given(_tight_engines())
def test_admitted_requests_sharing_a_tight_pool_all_finish(
    case: tuple[Engine, list[tuple[tuple[int, ...], int]]],
) -> None:
    engine, requests = case
    admitted = _submit_what_fits(engine, requests)
    engine.run(5_000)
    assert engine.idle, (engine.metrics, engine.dump())
    for request_id, max_output in admitted.items():
        assert engine.requests[request_id].num_output_tokens == max_output
    engine.check()


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["full", "sliding_window", "mamba"]),
            st.sampled_from([1, 2, 4]),
            st.integers(1, 12),
        ),
        min_size=1,
        max_size=3,
    ),
    st.integers(2, 12),
    st.integers(1, 16),
    st.booleans(),
)
def test_submit_refuses_exactly_the_lengths_whose_peak_exceeds_the_pool(
    kinds: list[tuple[str, int, int]], num_blocks: int, chunk: int, checkpoints: bool
) -> None:
    """Every length from 1 to past ``usable * B_max`` (where the peak stops
    growing unless full attention is there): refused iff ``blocks_at_peak``
    exceeds the pool, with or without full attention."""
    groups = [
        GroupSpec.full(size)
        if kind == "full"
        else GroupSpec.sliding_window(size, window)
        if kind == "sliding_window"
        else GroupSpec.mamba(size)
        for kind, size, window in kinds
    ]
    options = JunctionOptions(prefill_checkpoint_alignment=1 if checkpoints else None)
    engine = Engine(
        EngineConfig(
            HybridGeometry(groups, 1),
            num_blocks=num_blocks,
            max_num_batched_tokens=chunk,
            policy=JunctionPolicy(options),
        )
    )
    usable = engine.pool.num_usable
    for length in range(1, usable * max(g.block_size for g in groups) + 6):
        fits = engine.blocks_at_peak(length) <= usable
        try:
            engine.submit((1,) * length, 1)
        except ValueError:
            assert not fits, length
        else:
            assert fits, length
