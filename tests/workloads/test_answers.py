"""Answers the next turn resends: the built-in workload's option, the engine's scripted
answer, and the reconstruction from continuations for token-id and hash-id traces."""

from __future__ import annotations

import itertools

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.simulator.workload import hash_trace_workload, trace_workload
from junction.reference.workloads.answers import hash_continuations, session_answers
from junction.reference.workloads.hash_prompts import HashArrival
from junction.reference.workloads.mooncake import HashTraceRequest
from junction.reference.workloads.sessions import agent_sessions
from junction.reference.workloads.trace import TraceRequest


def test_the_builtin_sessions_resend_answers_only_when_asked() -> None:
    plain = agent_sessions(3, sessions=4, turns=3)
    resent = agent_sessions(3, sessions=4, turns=3, resend_answers=True)
    assert [a.prompt for a in plain] == [a.prompt for a in resent]  # the same draws
    assert all(a.answer == () for a in plain)
    for turn, following in itertools.pairwise(resent):
        assert turn.max_output_tokens == len(turn.answer) > 0
        if len(following.prompt) > len(turn.prompt):  # the same session
            assert following.prompt[: len(turn.prompt) + len(turn.answer)] == (
                *turn.prompt,
                *turn.answer,
            )


def test_the_engine_emits_a_scripted_answer_first() -> None:
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
    engine = Engine(EngineConfig(geometry, num_blocks=100, policy=JunctionPolicy()))
    request_id = engine.submit(tuple(range(10)), 5, answer=(7, 8, 9))
    tokens: tuple[int, ...] = ()
    while not engine.idle:
        engine.step()
        tokens = tuple(engine.requests[request_id].tokens) or tokens
    assert tokens[10:13] == (7, 8, 9) and len(tokens) == 15


def _turn(line: int, prompt: tuple[int, ...], output: int) -> TraceRequest:
    return TraceRequest(line=line, prompt=prompt, output_tokens=output, session="s")


def test_a_token_id_turn_answers_what_its_next_turn_carries() -> None:
    turns = [_turn(1, (1, 2), 2), _turn(2, (1, 2, 5, 6, 9), 3), _turn(3, (4,), 1)]
    assert session_answers(turns) == [(5, 6), (), ()]
    plain = trace_workload("t", turns)
    rebuilt = trace_workload("t", turns, answers_from_continuations=True)
    assert [getattr(t, "answer", ()) for t in plain.turns] == [(), (), ()]
    assert [getattr(t, "answer", ()) for t in rebuilt.turns] == [(5, 6), (), ()]
    assert "answers from continuations: 1" in rebuilt.source


def _hashed(
    line: int, time: int, length: int, output: int, ids: tuple[int, ...]
) -> HashTraceRequest:
    return HashTraceRequest(line, time, length, output, ids)


def test_a_hash_id_request_is_rebuilt_as_a_prefix_of_its_continuation() -> None:
    first = _hashed(1, 0, 700, 100, (1, 2))  # a partial second block
    sibling = _hashed(2, 1, 600, 50, (1, 9))  # shares the whole block, too short
    following = _hashed(3, 2, 1100, 10, (1, 3, 4))  # carries first's answer
    found = hash_continuations([first, sibling, following])
    assert found[0] is not None and found[0].request is following
    assert (found[0].start, found[0].end) == (700, 800)
    # The sibling's whole block is the following request's too: taken for its turn
    # (the trace cannot tell; the count is an upper bound, workloads.answers).
    assert found[1] is not None and found[1].request is following
    workload = hash_trace_workload("t", [first, sibling, following], True)
    (a,), _, (c,) = workload.sessions
    assert isinstance(a, HashArrival) and isinstance(c, HashArrival)
    assert c.prompt[:700] == a.prompt and c.prompt[700:800] == a.answer
    plain = hash_trace_workload("t", [first, sibling, following])
    assert plain.sessions[0][0].prompt != a.prompt  # its own partial block, without the option
    assert "answers from continuations: 2 of 3" in workload.source
