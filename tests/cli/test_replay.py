"""``replay``: a saved counterexample re-run on a policy says whether its promise holds now.

The counterexample is a real one: the harness's shrunk scenario for a zoo
mutant (the replay state one token past every lookup, vLLM #50409), saved
as ``fuzz`` prints it and as its ``--json`` report holds it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from junction.command import dispatch as main
from junction.reference.harness import run_conformance
from tests.quality.mutants import StateOnePastLookup

from .in_process import run_in_process

MUTANT = "tests.quality.mutants:StateOnePastLookup"
# One worker runs the module (xdist): the counterexample fixture (a shrink) is found once.
pytestmark = pytest.mark.xdist_group("cli_replay")


@pytest.fixture(scope="module")
def counterexample() -> dict[str, object]:
    report = run_conformance(StateOnePastLookup(), examples=200, promises=["replay"])
    (verdict,) = report.violated
    assert verdict.counterexample is not None
    return verdict.counterexample.to_json()


def test_a_scenario_violated_by_the_mutant_holds_on_the_default_policy(
    counterexample: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "counterexample.json"
    saved.write_text(json.dumps(counterexample))
    broken = run_in_process(main, ["replay", str(saved), "--policy", MUTANT], capsys)
    assert broken.code == 1 and broken.out.startswith("replay: VIOLATED: ")
    fixed = run_in_process(main, ["replay", str(saved)], capsys)
    assert (fixed.code, fixed.out) == (0, "replay: holds\n")


def test_a_fuzz_report_replays_each_counterexample(
    counterexample: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    verdicts = [{"promise": "replay", "counterexample": counterexample}, {"counterexample": None}]
    report.write_text(json.dumps({"policy": "x", "verdicts": verdicts}))
    ended = run_in_process(main, ["replay", str(report), "--policy", MUTANT], capsys)
    assert ended.code == 1 and ended.out.count("VIOLATED") == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "cannot read a JSON document"),
        ('{"verdicts": []}', "a fuzz report without a counterexample"),
        ("[1]", "neither a scenario nor a fuzz --json report"),
        ('{"promise": "replay", "geometry": {}}', "not a valid scenario: KeyError"),
    ],
)
def test_a_file_that_is_not_a_counterexample_exits_2_with_one_line(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "bad.json"
    saved.write_text(text)
    ended = run_in_process(main, ["replay", str(saved)], capsys)
    assert ended.code == 2 and ended.out == ""
    assert ended.last_line.startswith(f"junction replay: error: {saved}: {message}")


def test_an_unknown_policy_exits_2(
    counterexample: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "c.json"
    saved.write_text(json.dumps(counterexample))
    ended = run_in_process(main, ["replay", str(saved), "--policy", "nosuch"], capsys)
    assert ended.code == 2 and "not a built-in policy" in ended.last_line
