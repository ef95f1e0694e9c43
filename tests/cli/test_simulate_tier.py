"""``simulate --instances N --tier BLOCKS``: several engines sharing one external tier.

Bad input exits 2 with one line naming the option (the hostile-input style of
``test_simulate_hostile``); a small run reports each instance's hit rate and
the tier's occupancy in the table and the JSON, one row per saving; the
tier table of docs/results.md is what ``docs/demo-tier/`` recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from junction.command import dispatch as main
from junction.reference.simulator.instances import route
from junction.reference.workloads.sessions import Arrival
from tests.cli.in_process import run_in_process

SMALL = ["--sessions", "4", "--turns", "2", "--system-prompt", "64", "--geometry", "full+swa"]
SMALL += ["--interval", "64", "--intervals", "none", "--no-plot", "--jobs", "1"]
PREFIX = "junction simulate: error: "


def simulate(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    ended = run_in_process(main, ["simulate", *argv], capsys)
    return ended.code, ended.last_line, ended.out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--instances", "0"], "argument --instances: 0 must be >= 1"),
        (["--tier", "0"], "argument --tier: 0 must be >= 1"),
        (["--tier", "1x"], "argument --tier: '1x' is not an int"),
        (["--route", "random"], "argument --route: invalid choice: 'random'"),
        (["--tier-saving", "all"], "argument --tier-saving: invalid choice: 'all'"),
        (["--row", "lru"], "argument --row: invalid choice: 'lru'"),
        (
            ["--arrivals", "sequential", "--tier", "3"],
            "--tier 3: smaller than one request's need (request ",
        ),
        (
            ["--instances", "2", "--arrivals", "sessions"],
            "--instances 2: several instances need --arrivals trace or sequential",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_option(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, line, _ = simulate([*SMALL, *argv, "--out", str(tmp_path)], capsys)
    assert code == 2 and line.startswith(PREFIX + message), line
    assert not any(tmp_path.iterdir())


def test_two_instances_report_each_hit_rate_and_the_tier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*SMALL, "--arrivals", "sequential", "--instances", "2", "--tier", "5000"]
    argv += ["--tier-saving", "policy", "--tier-saving", "vllm-0.33", "--out", str(tmp_path)]
    code, _, out = simulate(argv, capsys)
    assert code == 0
    assert "full+swa: instances and external tier" in out
    assert "R=0 pinned, vllm-0.33 saving" in out
    runs = json.loads((tmp_path / "simulate.json").read_text())["runs"]
    assert len(runs) == 8  # four table rows, two savings each
    # dense, interval and unpinned pin no junction: the two savings store the same.
    by_label = {(run["label"], run["tier"]["saving"]): run for run in runs}
    for label in ("dense", "interval R=64", "R=0 unpinned"):
        assert by_label[label, "policy"]["tier"] == {
            **by_label[label, "vllm-0.33"]["tier"],
            "saving": "policy",
        }
    for run in runs:
        tier = run["tier"]
        assert tier["instances"] == 2 and len(tier["instance_hit_rates"]) == 2
        assert tier["capacity"] == 5000 and 0 < tier["occupancy_peak"] <= 1
        assert run["hit_tokens"] >= tier["external_hit_tokens"]
    # Every instance after the first one loads from what the others saved.
    assert any(run["tier"]["external_hit_tokens"] for run in runs)


def test_one_instance_with_a_tier_runs_any_arrivals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One engine offloading to its own tier: the closed loop needs no shared clock.
    argv = [*SMALL, "--arrivals", "sessions", "--tier", "5000", "--out", str(tmp_path)]
    code, _, out = simulate(argv, capsys)
    assert code == 0 and "full+swa: instances and external tier" in out
    runs = json.loads((tmp_path / "simulate.json").read_text())["runs"]
    assert all(run["tier"]["instances"] == 1 for run in runs)


def test_row_runs_only_the_rows_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*SMALL, "--row", "pinned", "--out", str(tmp_path)]
    code, _, out = simulate(argv, capsys)
    assert code == 0
    runs = json.loads((tmp_path / "simulate.json").read_text())["runs"]
    assert [run["label"] for run in runs] == ["R=0 pinned"]
    assert "dense" not in out


def test_routing_round_robin_and_by_session() -> None:
    turn = Arrival((1,), 1)
    sessions = [(turn, turn, turn), (turn,), (turn, turn)]
    assert route(sessions, 2, "round-robin") == [0, 1, 0, 1, 0, 1]
    assert route(sessions, 2, "session") == [0, 0, 0, 1, 0, 0]


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("preset", ["gpt-oss", "nemotron-h"])
def test_the_results_show_the_tier_runs_of_docs_demo_tier(preset: str) -> None:
    readme = (ROOT / "docs" / "results.md").read_text()
    folder = ROOT / "docs" / "demo-tier" / preset
    assert f"--out docs/demo-tier/{preset}" in readme  # the command that wrote the folder
    for run in json.loads((folder / "simulate.json").read_text())["runs"]:
        tier = run["tier"]
        first, second = tier["instance_hit_rates"]
        hit, loaded = run["token_hit_rate"], tier["external_hit_tokens"]
        if preset == "gpt-oss":  # a table row
            shown = f"{hit:.3f} | {first:.3f} | {second:.3f} | {loaded:,} |"
        else:  # a sentence (both savings give the same)
            shown = f"rate {hit:.3f}, per instance {first:.3f} and {second:.3f}, {loaded:,} tokens"
        assert shown in " ".join(readme.split()), (preset, tier["saving"], shown)
