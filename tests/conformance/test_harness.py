"""The public harness as a third party uses it: reports, replays, bad policies.

Fast coverage of ``run_conformance`` itself; whether the default policy keeps
every promise is ``tests/engine/test_promises.py``, and whether the harness
catches real defects is ``tests/quality``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.policy import (
    CheckedPolicy,
    PolicyError,
    PolicyOutOfTime,
    RequestView,
)
from junction.reference.harness import Promise, Scenario, Verdict, replay, run_conformance
from junction.reference.policies.builtin import DensePolicy, IntervalPolicy, JunctionPolicy
from junction.reference.policies.options import JunctionOptions
from junction.reference.policies.registry import resolve_policy


def test_a_conforming_policy_gets_a_clean_report() -> None:
    report = run_conformance(JunctionPolicy(), examples=10, seed=3)
    assert report.passed and report.policy == "junction" and report.seed == 3
    # The next turn is promised only with decode checkpoints: not run by default
    # (the declared prefix is: the default policy keeps declared checkpoints).
    assert [v.promise for v in report.verdicts] == [
        p for p in Promise if p is not Promise.NEXT_TURN
    ]
    assert all(v.status is Verdict.KEPT and v.examples == 10 for v in report.verdicts)
    assert "junction" in report.table()


def test_the_next_turn_asked_of_a_policy_that_does_not_make_it_fails() -> None:
    report = run_conformance(JunctionPolicy(), examples=10, promises=["next_turn"])
    (verdict,) = report.verdicts
    assert verdict.status is Verdict.UNCHECKED and verdict.examples == 0
    assert not report.passed and "keeps_decode_checkpoints" in verdict.message


def test_with_decode_checkpoints_the_next_turn_is_kept() -> None:
    policy = JunctionPolicy(JunctionOptions(decode_checkpoints=True))
    report = run_conformance(policy, examples=30, seed=3, promises=["next_turn"])
    (verdict,) = report.verdicts
    assert verdict.status is Verdict.KEPT and verdict.examples == 30


@pytest.mark.slow
def test_a_violation_comes_back_shrunk_and_replayable() -> None:
    # No pinning: the junction promise cannot hold (the behaviour before #47782).
    report = run_conformance(IntervalPolicy(), examples=200, promises=["junction"])
    (verdict,) = report.violated
    assert verdict.promise is Promise.JUNCTION and verdict.status is Verdict.VIOLATED
    scenario = verdict.counterexample
    assert scenario is not None and verdict.violation is not None
    assert verdict.violation.scenario == scenario and verdict.violation.subject == "engine"
    assert replay(scenario, IntervalPolicy()) == verdict.violation
    assert replay(scenario, JunctionPolicy()) is None  # pinning fixes it
    # Through JSON and back, as a bug report would carry it.
    again = Scenario.from_json(json.loads(json.dumps(scenario.to_json())))
    assert again == scenario
    assert verdict.seconds_to_counterexample is not None


def test_the_same_seed_replays_the_same_run() -> None:
    first, second = (
        run_conformance(DensePolicy(), examples=100, seed=7, promises=["economy"]) for _ in range(2)
    )
    assert first.verdicts[0].status is Verdict.VIOLATED  # dense keeps every block under R = 0
    assert first.verdicts[0].counterexample == second.verdicts[0].counterexample
    assert first.verdicts[0].examples == second.verdicts[0].examples


class Raising(JunctionPolicy):
    name = "raising"

    def split(
        self,
        geometry: HybridGeometry,
        request: RequestView,
        num_new_tokens: int,
        max_prefill_tokens: int,
    ) -> int:
        raise ZeroDivisionError("boom")


class Malformed(JunctionPolicy):
    name = "malformed"

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> list[bool] | None:
        return [True]  # one bool, whatever the range


@pytest.mark.parametrize(
    ("policy", "call", "problem"),
    [
        (Raising(), "split(", "raised ZeroDivisionError: boom"),
        (Malformed(), "block_mask(", "must return None or"),
    ],
)
def test_a_broken_policy_is_an_error_naming_policy_and_call(
    policy: JunctionPolicy, call: str, problem: str
) -> None:
    report = run_conformance(policy, examples=20, promises=["split", "economy"], fail_fast=True)
    verdict = report.violated[0]
    assert verdict.status is Verdict.ERROR and verdict.violation is None
    assert f"policy {policy.name!r}" in verdict.message
    assert call in verdict.message and problem in verdict.message


class OutOfTimeAfter(JunctionPolicy):
    """A proxy whose run's time is spent after ``calls`` calls of ``question``:
    it refuses the rest of them (a policy that keeps decode checkpoints, so
    every question is asked)."""

    def __init__(self, question: str, calls: int) -> None:
        super().__init__(JunctionOptions(decode_checkpoints=True))
        self.question, self.calls = question, calls

    def _spend(self, question: str) -> None:
        if question == self.question:
            self.calls -= 1
            if self.calls < 0:
                raise PolicyOutOfTime(self.name, question, "not asked: the run's time was spent")

    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        self._spend("split")
        return super().split(geometry, request, num_new_tokens, budget)

    def decode_checkpoints(self, geometry: HybridGeometry, request: RequestView) -> tuple[int, ...]:
        self._spend("decode_checkpoints")
        return super().decode_checkpoints(geometry, request)


@pytest.mark.parametrize(
    ("question", "calls", "promises"),
    [
        ("split", 0, ["replay", "split"]),
        ("split", 40, ["replay", "split"]),
        ("decode_checkpoints", 0, ["next_turn"]),
    ],
)
def test_a_call_refused_for_time_ends_the_run_and_its_example_is_a_timeout(
    question: str, calls: int, promises: list[str]
) -> None:
    # No ``seconds``: the refusal (the proxy's hard limit) alone must end the run,
    # and the example it cut short is judged, a timeout, never dropped.
    policy = OutOfTimeAfter(question, calls)
    started: list[tuple[Promise, int]] = []
    report = run_conformance(
        policy,
        examples=10_000,
        promises=promises,
        min_examples=1,
        on_example=lambda promise, ordinal, _: started.append((promise, ordinal)),
    )
    assert policy.calls == -1, "the run went on after the refusal"
    cut_short, ordinal = started[-1]
    for verdict in report.verdicts:
        if verdict.promise is cut_short:
            assert verdict.status is Verdict.TIMEOUT and verdict.examples == ordinal, verdict
            assert verdict.counterexample is not None
            assert "not asked: the run's time was spent" in verdict.error
            continue
        assert verdict.examples < 10_000, verdict
        assert verdict.status is (Verdict.KEPT if verdict.examples else Verdict.UNCHECKED)


class FalselyFixed(JunctionPolicy):
    """Declares fixed boundaries (inherited), yet its answer changes as the
    request runs: the first boundary repeated on odd computed counts, which
    no mask notices, so no promise can."""

    name = "falsely fixed"

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        boundaries = super().reachable_boundaries(geometry, group, request)
        return boundaries + boundaries[:1] if request.num_computed_tokens % 2 else boundaries


def test_a_false_fixed_boundaries_declaration_is_an_error_naming_it() -> None:
    report = run_conformance(FalselyFixed(), examples=20, promises=["replay"], fail_fast=True)
    verdict = report.violated[0]
    assert verdict.status is Verdict.ERROR and verdict.violation is None
    assert "policy 'falsely fixed': fixed_boundaries: declared True" in verdict.message
    assert "reachable_boundaries(" in verdict.message
    # Undeclared, the same answers are asked for on every mask: nothing to find.
    honest = FalselyFixed()
    honest.fixed_boundaries = False
    assert run_conformance(honest, examples=20, promises=["replay"]).passed


@pytest.mark.parametrize(
    ("declared", "problem"), [(1, "must be a bool, got 1"), ("yes", "must be a bool")]
)
def test_a_fixed_boundaries_declaration_must_be_a_bool(declared: object, problem: str) -> None:
    policy = JunctionPolicy()
    policy.fixed_boundaries = declared  # type: ignore[assignment]
    with pytest.raises(PolicyError, match=f"fixed_boundaries: {problem}"):
        CheckedPolicy(policy)


def test_an_object_without_the_protocol_is_refused_up_front() -> None:
    with pytest.raises(PolicyError, match=r"missing methods \['block_mask', 'split'\]"):
        run_conformance(
            object.__new__(
                type(
                    "Half",
                    (),
                    {"name": "half", "checkpoint_positions": print, "reachable_boundaries": print},
                )
            )
        )  # type: ignore[arg-type]


def test_policies_resolve_by_name_or_module_attribute() -> None:
    assert resolve_policy("junction").name == "junction"
    assert resolve_policy("junction.reference.policies.builtin:IntervalPolicy").name == "interval"
    for name, problem in [
        ("nope", "not a built-in policy"),
        ("no.such.module:x", "cannot import"),
        ("junction.reference.policies.builtin:Nothing", "has no attribute"),
        ("junction.reference.policies.registry:PolicyError", "raised TypeError"),
        ("junction.core:__doc__", "does not implement"),
    ]:
        with pytest.raises(PolicyError, match=problem):
            resolve_policy(name)


def test_scenarios_reject_unknown_promises() -> None:
    with pytest.raises(ValueError, match="promise='eleven'"):
        run_conformance(JunctionPolicy(), promises=["eleven"])


@pytest.mark.slow
def test_where_narrows_the_geometries_and_marks_empty_scopes() -> None:
    seen: list[HybridGeometry] = []

    def no_eagle(geometry: HybridGeometry) -> bool:
        seen.append(geometry)
        return not geometry.use_eagle

    report = run_conformance(JunctionPolicy(), examples=5, promises=["replay"], where=no_eagle)
    assert report.passed and any(g.use_eagle for g in seen)
    # Segments are checked without EAGLE only: nothing is left when EAGLE is required.
    report = run_conformance(
        JunctionPolicy(), examples=5, promises=["segments"], where=lambda g: g.use_eagle
    )
    (verdict,) = report.verdicts
    # Nothing judged is no evidence: unchecked, and the run fails (it used to pass as n/a).
    assert verdict.status is Verdict.UNCHECKED and not report.passed
    assert verdict.examples == 0 and "no example was judged" in verdict.error
