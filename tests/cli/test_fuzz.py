"""``python -m junction.reference fuzz``: verdict table, exit status, clear errors."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.cli.fuzz_supervisor import Limits, RemotePolicy, remote_policy
from junction.reference.cli.main import main as reference
from junction.reference.engine.policy import CheckedPolicy
from junction.reference.engine.request import Request
from junction.reference.harness import Verdict, run_conformance
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.options import JunctionOptions


def test_a_conforming_policy_exits_0_with_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert reference(["fuzz", "--seconds", "2", "--promise", "replay"]) == 0
    captured = capsys.readouterr()
    assert "policy 'junction', seed 0" in captured.out and "replay" in captured.out
    assert "kept" in captured.out
    live = re.search(r"replay (\d+)", captured.err)  # the live count, as in the table
    assert live and re.search(rf"replay +kept +{live[1]} ", captured.out)


def test_a_violation_exits_1_with_a_replayable_scenario(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    argv = ["fuzz", "--policy", "vllm-pr47782", "--seconds", "3", "--promise", "replay"]
    assert reference([*argv, "--json", str(report)]) == 1
    out = capsys.readouterr().out
    assert "violated" in out and "scenario: {" in out
    (verdict,) = json.loads(report.read_text())["verdicts"]
    assert verdict["status"] == "violated" and verdict["counterexample"]["promise"] == "replay"


def test_a_user_policy_by_module_attribute() -> None:
    argv = [
        "fuzz",
        "--policy",
        "junction.reference.policies.builtin:DensePolicy",
        "--seconds",
        "2",
    ]
    assert reference([*argv, "--promise", "replay"]) == 0


def test_a_policy_that_cannot_load_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert reference(["fuzz", "--policy", "missing.module:Policy", "--seconds", "1"]) == 2
    assert "policy 'missing.module:Policy': import: cannot import" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seconds", "0"], "must be a finite number > 0"),
        (["--seconds", "soon"], "must be a number of seconds"),
        (["--seed", "-1"], "must be >= 0"),
        (["--promise", "speed"], "invalid choice: 'speed'"),
    ],
)
def test_bad_options_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        reference(["fuzz", *argv])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_the_worker_asks_the_optional_prefill_checkpoint_question() -> None:
    # fuzz asks the policy's worker for every answer: a policy whose split relies on
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
