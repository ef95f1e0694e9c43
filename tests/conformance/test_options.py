"""The promises with the ``junction`` policy's engine options on (docs/domain.md).

The property draws a promise, one of its scenarios (which already draw EAGLE
per group and every retention interval a geometry takes) and the policy's
options (:class:`JunctionOptions`: the backend's tile for an internal prefill
checkpoint), and checks the promise on the reference engine, which writes
the checkpoint state inside the chunk. The worked cases show the option
doing something (one chunk fewer, the resend still landing on a written
state), and the exact junction stop's counterexample shows why the policy
does not take that option.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from junction.core import ChunkSplitter, GroupKind, GroupSpec, HybridGeometry, InvalidArgument
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.policy import CheckedPolicy, PolicyError, RequestView
from junction.reference.harness import Promise, Scenario, replay, scenarios
from junction.reference.harness.engine_subject import EngineSubject
from junction.reference.harness.verdict import OffGrid
from junction.reference.policies.bound import chunk_splitter
from junction.reference.policies.builtin import DensePolicy, JunctionPolicy
from junction.reference.policies.options import JunctionOptions

# The backend's tiles: powers of two, as kernel tiles are (on these power-of-two grids
# a checkpoint is then often a whole number of them; 1 first, the shrink target).
options = st.builds(JunctionOptions, st.sampled_from([1, 2, 4, 8, 16]))


def _with_mamba(scenario: Scenario) -> bool:
    return any(group.kind is GroupKind.MAMBA for group in scenario.geometry.groups)


def _room(scenario: Scenario) -> Scenario:
    """A safety scenario's pool sized for the option: the strategy counts two blocks a
    Mamba group, and a chunk writing a checkpoint holds a third (``Engine.blocks_at_peak``)."""
    if scenario.promise is not Promise.SAFETY:
        return scenario
    mamba = sum(group.kind is GroupKind.MAMBA for group in scenario.geometry.groups)
    return attrs.evolve(scenario, num_blocks=scenario.num_blocks + mamba)


# Only a Mamba group has a checkpoint to write: the other geometries run as without it.
# The next turn is the decode checkpoints' promise, not made here (test_promises).
made = [p for p in Promise if p is not Promise.NEXT_TURN]
promised = st.sampled_from(made).flatmap(scenarios).filter(_with_mamba).map(_room)


TIER_FOUND = Scenario(  # the tier's save path once offered chunk ends' states only
    "tier",
    HybridGeometry([GroupSpec.full(2), GroupSpec.mamba(2)], 2),
    [(0, 101, 0), (0, 102, 0)],
    (0, 102, 0),
    4,
)


@settings(max_examples=min(120, settings.default.max_examples))
@given(promised, options)
@example(TIER_FOUND, JunctionOptions(1))
def test_every_promise_holds_with_an_internal_prefill_checkpoint(
    scenario: Scenario, chosen: JunctionOptions
) -> None:
    violation = replay(scenario, JunctionPolicy(chosen))
    assert violation is None, f"{violation}\noptions: {chosen}\nscenario: {scenario.to_json()}"


GEOMETRY = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4, retention_interval=0)
PROMPT = tuple(range(21))


def test_the_backend_writes_the_replay_state_inside_one_chunk() -> None:
    # P = 21 on L = 4: the replay state is floor_4(20) = 20. Without the option a
    # chunk ends there; with tiles of 4 the one chunk [0, 21) writes it inside.
    resend = Scenario("replay", GEOMETRY, [PROMPT], PROMPT, 32)
    plain = EngineSubject(JunctionPolicy()).run(resend)
    (before,) = plain.prefills
    assert (before.chunks[:2], before.written) == (((0, 20), (20, 21)), ())
    policy = JunctionPolicy(JunctionOptions(4))
    run = EngineSubject(policy).run(resend)
    (prefill,) = run.prefills
    assert (prefill.chunks[0], prefill.written) == ((0, 21), (20,))
    assert run.lookup(PROMPT).hit == 20  # the written state serves the resend
    # Tiles of 8 do not reach 20 from 0: no write, the chunk stops at 20 as before.
    untiled = EngineSubject(JunctionPolicy(JunctionOptions(8))).run(resend)
    assert untiled.prefills[0].chunks == before.chunks and not untiled.prefills[0].written
    assert replay(resend, policy) is None


def test_a_written_state_the_mask_drops_is_not_cached() -> None:
    # Dense retention keeps it; the junction policy under R = 0 keeps it too (promised).
    resend = Scenario("replay", GEOMETRY, [PROMPT], PROMPT, 32)
    for policy in (JunctionPolicy(JunctionOptions(4)), DensePolicy(JunctionOptions(4))):
        assert EngineSubject(policy).run(resend).lookup(PROMPT).hit == 20


def test_the_dense_bound_runs_the_same_engine_options() -> None:
    subject = EngineSubject(JunctionPolicy(JunctionOptions(4)))
    dense = subject.dense().policy
    assert isinstance(dense, DensePolicy) and dense.options == JunctionOptions(4)


class ExactJunctionStop(JunctionPolicy):
    """The junction policy with the split's exact junction stop on (not an option of it)."""

    name = "junction-exact-stop"

    def splitter(self, geometry: HybridGeometry, max_prefill_tokens: int) -> ChunkSplitter:
        return chunk_splitter(
            self.chunk_grid(geometry),
            geometry.hash_block_size,
            geometry.use_eagle,
            geometry.partial_hits,
            max_prefill_tokens,
            0,
            True,
        )


def test_the_exact_junction_stop_makes_a_chunk_end_no_lookup_reads() -> None:
    # Partial hits on H = 2, Mamba block 4 (G = 4): Y shares X's first 6 tokens, so
    # full attention finds 6 and Mamba nothing: J = 6, off the Mamba grid. The core's
    # lookup resumes Mamba only at a block's end, so a sibling lands at floor_4(6) = 4,
    # where the policy already stops; the exact stop adds a chunk end at 6 that is
    # neither on the grid nor promised.
    geometry = HybridGeometry(
        [GroupSpec.full(4), GroupSpec.mamba(4)], 2, partial_hits=True, retention_interval=0
    )
    x = tuple(range(10))
    scenario = Scenario("split", geometry, [x, x[:6] + (99,) * 6], (), 16)
    assert replay(scenario, JunctionPolicy()) is None
    violation = replay(scenario, ExactJunctionStop())
    assert violation is not None and isinstance(violation.problem, OffGrid)
    assert (violation.problem.start, violation.problem.end) == (4, 6)


def test_options_reject_bad_values() -> None:
    with pytest.raises(InvalidArgument, match=r"prefill_checkpoint_alignment=0: must be None"):
        JunctionOptions(0)
    with pytest.raises(InvalidArgument, match=r"prefill_checkpoint_alignment=True: must be"):
        JunctionOptions(True)
    with pytest.raises(InvalidArgument, match=r"options=4: must be a JunctionOptions"):
        JunctionPolicy(4)  # type: ignore[arg-type]


class Misplaced(JunctionPolicy):
    """Claims a checkpoint far past every chunk."""

    name = "misplaced"

    def __init__(self) -> None:
        super().__init__(JunctionOptions(1))

    def prefill_checkpoint(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int
    ) -> int:
        return 10**6


def test_a_checkpoint_outside_the_chunk_is_a_policy_error() -> None:
    with pytest.raises(PolicyError, match=r"prefill_checkpoint\(.*must return 0 or an int in"):
        replay(Scenario("replay", GEOMETRY, [PROMPT], PROMPT, 32), Misplaced())
    flagged = JunctionPolicy()
    flagged.writes_prefill_checkpoints = 1  # type: ignore[assignment]
    with pytest.raises(PolicyError, match="writes_prefill_checkpoints: must be a bool"):
        CheckedPolicy(flagged)


def test_a_request_may_hold_a_third_mamba_block_for_the_checkpoint() -> None:
    # The running state, the latest (cached, so copied) and the checkpoint's slot.
    def peak(policy: JunctionPolicy) -> int:
        return Engine(EngineConfig(GEOMETRY, 100, policy=policy)).blocks_at_peak(16)

    assert (peak(JunctionPolicy()), peak(JunctionPolicy(JunctionOptions(4)))) == (4 + 2, 4 + 3)
