"""Retiring decode checkpoints (``JunctionOptions(decode_checkpoint_budget=k)``).

A conversation's turn publishes its decode checkpoint; once the next turn on
its path (its prompt runs through that position) publishes a deeper one, a
budget of one turn retires the first: its blocks are freed at once, ahead of
every cached block. Another conversation's checkpoint is not on the path and
stays. Without a budget every checkpoint stays cached (``junction+decode``).
"""

from __future__ import annotations

import attrs
import pytest

from junction.core import HybridGeometry, InvalidArgument
from junction.reference.engine.engine import Engine
from junction.reference.engine.invariants import InvariantViolation
from junction.reference.engine.policy import CheckedPolicy, PolicyError
from junction.reference.harness import Promise, run_conformance
from junction.reference.policies.builtin import (
    JunctionPolicy,
    junction_with_retired_decode_checkpoints,
)
from junction.reference.policies.options import JunctionOptions
from tests.quality.mutants import LastStateLeftToTheBudgetEngine

from .test_decode_checkpoints import MAMBA, WINDOW, _engine, _finish, _next_turn

RETIRED = JunctionOptions(decode_checkpoints=True, decode_checkpoint_budget=1)
TWO = JunctionOptions(decode_checkpoints=True, decode_checkpoint_budget=2)
KEPT = JunctionOptions(decode_checkpoints=True)
TTL = JunctionOptions(decode_checkpoints=True, decode_checkpoint_ttl=2)
KEEP_PATH = JunctionOptions(
    decode_checkpoints=True,
    decode_checkpoint_budget=1,
    decode_checkpoint_ttl=2,
    decode_checkpoint_keep_path=True,
)


def _conversation(engine: Engine, turns: int) -> list[tuple[int, ...]]:
    """``turns`` turns, each resending the last transcript and 3 new tokens."""
    transcripts, prompt = [], tuple(range(23))
    for turn in range(turns):
        transcript = _finish(engine, prompt, 9)
        transcripts.append(transcript)
        prompt = (*transcript, 200 + turn, 201 + turn, 202 + turn)
    return transcripts


@pytest.mark.parametrize("geometry", [MAMBA, WINDOW], ids=["mamba", "sliding-window"])
def test_the_next_turn_retires_the_turn_it_passed(geometry: HybridGeometry) -> None:
    for options, branches, retired in (
        (KEPT, [28, 40, 52], 0),
        (RETIRED, [20, 32, 52], 2),
        (TWO, [20, 40, 52], 1),
    ):
        engine = _engine(geometry, options)
        other = _finish(engine, tuple(range(50, 73)), 9)  # another conversation
        turns = _conversation(engine, 3)
        # The conversation goes on as before: each turn's prompt-side state covers
        # the checkpoint it passed, and the other conversation keeps its own.
        assert [_next_turn(engine, (*t, 300, 301, 302))[0] for t in (*turns, other)] == [
            32,
            44,
            52,
            28,
        ]
        # A branch off a turn's answer (its last 2 tokens resent otherwise) resumes at
        # that turn's checkpoint while it is kept, at the prompt's once retired.
        assert [_next_turn(engine, (*t[:-2], 999, 998, 997))[0] for t in turns] == branches
        ledger = engine.coordinator.ledger
        assert (ledger.retired if ledger else 0) == retired


def test_retired_blocks_are_recycled_first() -> None:
    engine = _engine(MAMBA, RETIRED)
    _conversation(engine, 2)
    free = engine.pool.free_unhashed
    ledger = engine.coordinator.ledger
    assert ledger is not None and ledger.retired == 1
    # The retired state (no hash now) is at the front of the free queue.
    assert next(iter(free.values())).state_position is None
    assert engine.pool.evictions == 0


def test_the_budget_is_validated() -> None:
    with pytest.raises(InvalidArgument, match="decode_checkpoint_budget"):
        JunctionOptions(decode_checkpoint_budget=0)

    bad = JunctionPolicy(KEPT)
    bad.decode_checkpoint_budget = 0
    with pytest.raises(PolicyError, match="decode_checkpoint_budget"):
        CheckedPolicy(bad)
    assert CheckedPolicy(JunctionPolicy(RETIRED)).decode_checkpoint_budget == 1
    assert CheckedPolicy(JunctionPolicy()).decode_checkpoint_budget is None


def test_promise_9_holds_with_a_budget_of_one() -> None:
    """The turn that publishes keeps its own checkpoint (the zoo's
    ``RetiresItsOwnTurnEngine`` is the defect this rules out)."""
    report = run_conformance(
        junction_with_retired_decode_checkpoints(), examples=100, promises=[Promise.NEXT_TURN]
    )
    assert not report.violated, report.violated[0].message


def test_a_checkpoint_at_the_publishers_replay_state_is_kept() -> None:
    """A next turn cutting the answer's last tokens (a stop string) and adding none
    resumes at the turn's checkpoint, its own replay state: its publication keeps
    it, so a request branching inside its answer still lands there."""
    for options in (RETIRED, KEPT):
        engine = _engine(MAMBA, options)
        (turn,) = _conversation(engine, 1)  # 32 tokens, its checkpoint at 28
        resent = _finish(engine, (*turn[:30], 999), 9)  # P = 31: its replay state at 28
        assert _next_turn(engine, (*resent[:29], 555, 556))[0] == 28
        ledger = engine.coordinator.ledger
        assert ledger is None or ledger.retired == 0


def _unrelated(engine: Engine, count: int) -> None:
    for index in range(count):
        _finish(engine, tuple(range(500 + 30 * index, 523 + 30 * index)), 1)


def test_a_checkpoint_no_request_resumes_from_lives_its_time_to_live() -> None:
    for options, later, resumed in (
        (TTL, 2, 28),  # within the time to live
        (TTL, 3, 20),  # past it: retired, the prompt's replay state remains
        (KEPT, 3, 28),
    ):
        engine = _engine(MAMBA, options)
        (turn,) = _conversation(engine, 1)
        _unrelated(engine, later)
        assert _next_turn(engine, (*turn, 300))[0] == resumed
        ledger = engine.coordinator.ledger
        assert (ledger.expired if ledger else 0) == (resumed == 20)


def test_a_checkpoint_resumed_from_outlives_its_time_to_live() -> None:
    """The request resuming from it computed no state there of its own: only the
    budget retires it."""
    engine = _engine(MAMBA, TTL)
    (turn,) = _conversation(engine, 1)
    _finish(engine, (*turn[:29], 555), 1)  # resumes at 28, publishes nothing deeper
    _unrelated(engine, 5)
    assert _next_turn(engine, (*turn, 300))[0] == 28


def test_the_time_to_live_is_validated_and_checked() -> None:
    with pytest.raises(InvalidArgument, match="decode_checkpoint_ttl"):
        JunctionOptions(decode_checkpoint_ttl=0)
    bad = JunctionPolicy(KEPT)
    bad.decode_checkpoint_ttl = 1.5  # type: ignore[assignment]
    with pytest.raises(PolicyError, match="decode_checkpoint_ttl"):
        CheckedPolicy(bad)
    assert CheckedPolicy(JunctionPolicy(KEPT)).decode_checkpoint_ttl is None
    engine = _engine(MAMBA, TTL)
    _conversation(engine, 1)
    ledger = engine.coordinator.ledger
    assert ledger is not None and len(ledger.unreached) == 1
    ledger.clock += TTL.decode_checkpoint_ttl or 0
    engine.check()
    ledger.clock += 1  # an expiry the ledger missed
    with pytest.raises(InvariantViolation, match="time to live"):
        engine.check()


@pytest.mark.parametrize("geometry", [MAMBA, WINDOW], ids=["mamba", "sliding-window"])
@pytest.mark.parametrize(
    ("options", "engine_class", "resumed"),
    [
        (KEEP_PATH, Engine, 28),
        (attrs.evolve(KEEP_PATH, decode_checkpoint_keep_path=False), Engine, 20),
        (KEEP_PATH, LastStateLeftToTheBudgetEngine, 20),
    ],
    ids=["kept", "off", "mutant"],
)
def test_an_expired_turn_keeps_its_paths_last_state(
    geometry: HybridGeometry, options: JunctionOptions, engine_class: type[Engine], resumed: int
) -> None:
    """Turn B resumed from turn A's checkpoint (28, B's replay state) and published
    its own; B's expires. A sibling of B passing 28 below its own replay state then
    publishes: with the kept path A's checkpoint is B's path's last state and stays,
    so B's next turn resumes there; without, the sibling's budget retires it."""
    engine = engine_class(_engine(geometry, options).config)
    (turn,) = _conversation(engine, 1)  # A: 32 tokens, its checkpoint at 28
    resent = _finish(engine, (*turn[:30], 999), 9)  # B: P = 31, resumes at 28
    _unrelated(engine, 3)  # B's checkpoint (36) expires
    _finish(engine, (*turn, 300, 301, 302, 303, 304), 1)  # the sibling: replay state 36
    assert _next_turn(engine, (*resent, 400))[0] == resumed
    ledger = engine.coordinator.ledger
    assert ledger is not None and ledger.left == (resumed == 28)


def test_the_kept_path_is_validated() -> None:
    with pytest.raises(InvalidArgument, match="decode_checkpoint_keep_path"):
        JunctionOptions(decode_checkpoint_keep_path=1)  # type: ignore[arg-type]
    bad = JunctionPolicy(KEEP_PATH)
    bad.decode_checkpoint_keep_path = 1  # type: ignore[assignment]
    with pytest.raises(PolicyError, match="decode_checkpoint_keep_path"):
        CheckedPolicy(bad)
    assert CheckedPolicy(JunctionPolicy(KEEP_PATH)).decode_checkpoint_keep_path is True
    assert CheckedPolicy(JunctionPolicy(KEPT)).decode_checkpoint_keep_path is False
