"""``junction fuzz``: verdict table, exit status, clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from junction.command import dispatch as reference


def test_a_conforming_policy_exits_0_with_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    # A conforming policy on a loaded machine may judge few examples in 2 s.
    assert reference(["fuzz", "--seconds", "2", "--promise", "replay", "--min-examples", "1"]) == 0
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
        "--min-examples",
        "1",
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
