"""``remote_policy``: the worker's policy as the engine calls it, question by question."""

from __future__ import annotations

import time

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.finish import FinishReason
from junction.reference.engine.policy import CheckedPolicy
from junction.reference.engine.request import Request
from junction.reference.harness import Verdict, run_conformance
from junction.reference.isolation import Limits, RemotePolicy, remote_policy
from junction.reference.isolation._connection import read_loaded
from junction.reference.isolation._frames import _MalformedMessage
from junction.reference.policies import resolve_policy
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


@pytest.mark.parametrize(
    "spec",
    [
        "junction",
        "junction+decode",
        "junction+decode-retired",
        "junction+decode2",
        "vllm-pr50551",
        "vllm-0.33",
    ],
)
def test_the_next_turn_declarations_cross_the_wire(spec: str) -> None:
    # The promises 9 and 10 a policy makes, and the finishes it publishes on, are
    # what an isolated run judges: each as the policy declares it in this process.
    direct = CheckedPolicy(resolve_policy(spec))
    with remote_policy(spec, Limits(30.0, 10.0), time.monotonic() + 30) as remote:
        watched = CheckedPolicy(remote)
        for declaration in (
            "keeps_decode_checkpoints",
            "keeps_declared_checkpoints",
            "decode_checkpoint_finishes",
            "decode_checkpoint_budget",
            "decode_checkpoint_margin",
            "decode_checkpoint_ttl",
            "decode_checkpoint_keep_path",
        ):
            assert getattr(watched, declaration) == getattr(direct, declaration), declaration


_LOADED = {
    "name": "p",
    "fixed_boundaries": False,
    "writes_prefill_checkpoints": False,
    "keeps_decode_checkpoints": True,
    "keeps_declared_checkpoints": False,
    "decode_checkpoint_finishes": ["stopped"],
    "decode_checkpoint_budget": 1,
    "decode_checkpoint_margin": 4,
    "decode_checkpoint_ttl": 2000,
    "decode_checkpoint_keep_path": True,
}


@pytest.mark.parametrize(
    "change",
    [
        {"decode_checkpoint_finishes": ["stopped", "stopped"]},
        {"decode_checkpoint_finishes": ["finished"]},
        {"decode_checkpoint_finishes": "stopped"},
        {"decode_checkpoint_finishes": [1]},
        {"keeps_decode_checkpoints": False},  # finishes named without the checkpoints
        {"keeps_declared_checkpoints": 1},
        {"decode_checkpoint_budget": 0},
        {"decode_checkpoint_budget": True},
        {"decode_checkpoint_margin": -1},
        {"decode_checkpoint_margin": 1.5},
        {"decode_checkpoint_ttl": 0},
        {"decode_checkpoint_ttl": 2.0},
        {"decode_checkpoint_keep_path": 1},
        {"keeps_decode_checkpoints": False, "decode_checkpoint_finishes": []},  # a budget alone
    ],
)
def test_a_malformed_declaration_from_the_worker_is_refused(change: dict[str, object]) -> None:
    assert read_loaded({"loaded": _LOADED}).decode_checkpoint_finishes == {FinishReason.STOPPED}
    with pytest.raises(_MalformedMessage):
        read_loaded({"loaded": {**_LOADED, **change}})


@pytest.mark.parametrize(
    ("late", "status", "gone"),
    [(5, Verdict.KEPT, False), (15, Verdict.TIMEOUT, True)],
)
def test_a_call_due_after_the_deadline_is_asked_until_the_hard_limit_then_a_timeout(
    monkeypatch: pytest.MonkeyPatch, late: float, status: Verdict, gone: bool
) -> None:
    # An example the deadline finds running is judged: its calls are asked up to the
    # hard limit (here 30 + 10 + 1 s); one due after it is the timeout of its example,
    # counted, and the worker is stopped.
    real = time.monotonic
    limits = Limits(30.0, 10.0)
    with remote_policy("junction", limits, real() + 30) as remote:
        assert isinstance(remote, RemotePolicy)
        monkeypatch.setattr(time, "monotonic", lambda: real() + 30 + late)
        report = run_conformance(remote, examples=5, promises=["replay"], min_examples=1)
        (verdict,) = report.verdicts
        assert verdict.status is status and verdict.examples == (5 if not gone else 1), verdict
        assert (remote.gone is not None) is gone
        if gone:
            assert "not asked: its example was running at the hard limit" in verdict.error
            assert "(--seconds 30 + --call-seconds 10 + 1 s)" in verdict.error


def CheckpointsInside() -> JunctionPolicy:
    return JunctionPolicy(JunctionOptions(prefill_checkpoint_alignment=4))
