"""End-to-end promises of docs/domain.md for the default policy, no eviction pressure.

Each property draws scenarios from the public conformance harness
(``junction.reference.harness.scenarios``) and replays them on the ``junction``
policy through the reference engine; the scope of each promise (literal
without EAGLE and partial hits, "sparse retention loses nothing" otherwise)
is documented in ``junction.reference.harness.promises``. The ``@example`` scenarios are
counterexamples ``make fuzz`` once found, kept so they stay fixed.
"""

from __future__ import annotations

from hypothesis import example, given, settings

from junction.core import GroupSpec, HybridGeometry
from junction.reference.harness import Scenario, replay, scenarios
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.options import JunctionOptions

POLICY = JunctionPolicy()
# At most 200 examples a promise in `make verify`: the bug zoo shows each promise
# finds its mutants within its first examples (tests/quality), and `make fuzz`
# runs 20,000 a promise; 500 would double this file's time for no new finding.
BUDGET = settings(max_examples=min(200, settings.default.max_examples))


def assert_holds(scenario: Scenario) -> None:
    violation = replay(scenario, POLICY)
    assert violation is None, f"{violation}\nscenario: {scenario.to_json()}"


def _resend(geometry: HybridGeometry, prompt: tuple[int, ...], budget: int) -> Scenario:
    return Scenario("replay", geometry, [prompt], prompt, budget)


@BUDGET
@given(scenarios("replay"))
@example(  # the EAGLE resend must land where the split kept a state
    _resend(
        HybridGeometry(
            [GroupSpec.full(2), GroupSpec.mamba(2)], 2, use_eagle=True, retention_interval=0
        ),
        (0,) * 10,
        4,
    )
)
@example(  # full attention caches whole blocks only
    _resend(
        HybridGeometry(
            [GroupSpec.full(8), GroupSpec.mamba(2)], 2, partial_hits=True, retention_interval=0
        ),
        (0,) * 11,
        4,
    )
)
@example(  # ... and under EAGLE lands a drop below the prompt's last whole block
    _resend(
        HybridGeometry(
            [GroupSpec.full(4), GroupSpec.mamba(2)],
            2,
            partial_hits=True,
            use_eagle=True,
            retention_interval=0,
        ),
        (0,) * 10,
        4,
    )
)
def test_promise_1_replay(scenario: Scenario) -> None:
    assert_holds(scenario)


@BUDGET
@given(scenarios("junction"))
def test_promise_2_junction(scenario: Scenario) -> None:
    assert_holds(scenario)


@BUDGET
@given(scenarios("segments"))
def test_promise_3_segments(scenario: Scenario) -> None:
    assert_holds(scenario)


@BUDGET
@given(scenarios("economy"))
def test_promise_4_economy(scenario: Scenario) -> None:
    assert_holds(scenario)


@BUDGET
@given(scenarios("split"))
def test_promise_5_split_soundness(scenario: Scenario) -> None:
    assert_holds(scenario)


@BUDGET
@given(scenarios("reconciliation"))
def test_promise_6_reconciliation(scenario: Scenario) -> None:
    assert_holds(scenario)


@BUDGET
@given(scenarios("safety"))
def test_promise_7_safety_under_pressure(scenario: Scenario) -> None:
    assert_holds(scenario)


# Each example runs two engine instances: at most 100, fewer where the profile says so.
@settings(max_examples=min(100, settings.default.max_examples))
@given(scenarios("tier"))
def test_promise_8_tier(scenario: Scenario) -> None:
    assert_holds(scenario)


NEXT_TURN_POLICY = JunctionPolicy(JunctionOptions(decode_checkpoints=True))


# Three instances an example: at most 50 (the zoo's mutant is caught within its first).
@settings(max_examples=min(50, settings.default.max_examples))
@given(scenarios("tier"))
@example(  # the decode checkpoint 4 reads a window block of the prompt no prompt position keeps
    Scenario(
        "tier",
        HybridGeometry(
            [GroupSpec.full(2), GroupSpec.full(4), GroupSpec.sliding_window(2, 4)],
            2,
            retention_interval=0,
        ),
        [(0, 101, 0), (0, 102, 0)],
        (0, 102, 0),
        4,
    )
)
def test_promise_8_with_9_the_next_turn_on_another_instance(scenario: Scenario) -> None:
    """With decode checkpoints on and the tier taking them: the next turn resumes on
    another instance at least as deep as on the first (and promise 8 holds)."""
    violation = replay(scenario, NEXT_TURN_POLICY)
    assert violation is None, f"{violation}\nscenario: {scenario.to_json()}"


@BUDGET
@given(scenarios("next_turn"))
@example(  # no position while c < 16, then 8: the window's block 0 must not be released
    Scenario(
        "next_turn",
        HybridGeometry(
            [GroupSpec.full(2), GroupSpec.sliding_window(8, 2)],
            2,
            use_eagle=True,
            retention_interval=0,
        ),
        [(0,) * 7],
        (),
        4,
        max_output_tokens=10,
    )
)
def test_promise_9_next_turn(scenario: Scenario) -> None:
    """With decode checkpoints on (promise 9 is the option's promise)."""
    violation = replay(scenario, NEXT_TURN_POLICY)
    assert violation is None, f"{violation}\nscenario: {scenario.to_json()}"


@BUDGET
@given(scenarios("declared_prefix"))
@example(  # a sibling diverging right after a declared 2, R = 0
    Scenario(
        "declared_prefix",
        HybridGeometry([GroupSpec.full(2), GroupSpec.mamba(2)], 2, retention_interval=0),
        [(0, 0, 0, 0)],
        (0, 0, 103),
        4,
        declared=(2,),
    )
)
def test_promise_10_declared_prefix(scenario: Scenario) -> None:
    """The default policy promises what its requests declare (no option needed)."""
    assert_holds(scenario)
