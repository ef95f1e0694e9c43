"""``remote_policy``: the worker's policy as the engine calls it, question by question."""

from __future__ import annotations

import time

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.policy import CheckedPolicy
from junction.reference.engine.request import Request
from junction.reference.harness import Verdict, run_conformance
from junction.reference.isolation import Limits, RemotePolicy, remote_policy
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.options import JunctionOptions


def test_the_worker_asks_the_optional_prefill_checkpoint_question() -> None:
    # An isolated run asks the worker for every answer: a policy whose split relies on
    # the backend writing its prefill checkpoint inside a chunk must be judged on an
    # engine that writes it, so the declaration and the question cross the wire.
    policy = CheckpointsInside()
    direct = CheckedPolicy(policy)
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
    request = Request(0, (0,) * 30, 1, 4)
    limits = Limits(30.0, 10.0)
    with remote_policy(f"{__name__}:CheckpointsInside", limits, time.monotonic() + 30) as remote:
        assert isinstance(remote, RemotePolicy)
        watched = CheckedPolicy(remote)
        assert watched.writes_prefill_checkpoints
        answers = [watched.prefill_checkpoint(geometry, request, n) for n in range(1, 31)]
    assert answers == [direct.prefill_checkpoint(geometry, request, n) for n in range(1, 31)]
    assert any(answers)
    with remote_policy("junction", limits, time.monotonic() + 30) as plain:
        assert isinstance(plain, RemotePolicy)
        assert not CheckedPolicy(plain).writes_prefill_checkpoints


def test_a_call_due_after_the_deadline_is_not_asked_nor_held_against_the_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Under load an example can run past the deadline and its grace: the policy
    # had no time to answer the next call, so it must not be a timeout of its.
    real = time.monotonic
    limits = Limits(30.0, 10.0)
    with remote_policy("junction", limits, real() + 30) as remote:
        assert isinstance(remote, RemotePolicy)
        monkeypatch.setattr(time, "monotonic", lambda: real() + 60)  # the run's time is spent
        report = run_conformance(remote, examples=5, promises=["replay"])
        (verdict,) = report.verdicts
        assert verdict.status is Verdict.UNCHECKED and verdict.examples == 0, verdict
        assert remote.gone is None  # nothing was sent, so the worker was not stopped


def CheckpointsInside() -> JunctionPolicy:
    return JunctionPolicy(JunctionOptions(prefill_checkpoint_alignment=4))
