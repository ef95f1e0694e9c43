"""``simulate --arrivals``, the step-time options and ``--requests``: choices, defaults, errors.

The times themselves are checked in ``tests/workloads/test_arrivals.py``;
here, what the command line makes of them: a hash-id trace defaults to its
timestamps, a workload without timestamps refuses them, the model's
parameters reach the report and the output says that times are modelled.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from junction.command import dispatch as main
from junction.reference.cli import simulate_checks
from junction.reference.simulator.memory import MemoryLimit
from tests.cli.in_process import run_in_process

PREFIX = "junction simulate: error: "
SMALL = ["--sessions", "2", "--turns", "2", "--system-prompt", "64", "--geometry", "full+swa"]
SMALL += ["--interval", "64", "--intervals", "64", "--no-plot"]
LINES = [
    {"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [1, 2]},
    {"timestamp": 3, "input_length": 700, "output_length": 2, "hash_ids": [1, 3]},
    {"timestamp": 9000, "input_length": 1100, "output_length": 2, "hash_ids": [1, 3, 4]},
]


def simulate(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    ended = run_in_process(main, ["simulate", *argv], capsys)
    return ended.code, ended.last_line, ended.out


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(x) + "\n" for x in LINES).encode()))
    return path


def run_trace(
    trace: Path, out: Path, capsys: pytest.CaptureFixture[str], *argv: str
) -> dict[str, Any]:
    args = ["--trace", str(trace), "--geometry", "gpt-oss", "--interval", "16", "--no-plot"]
    code, line, _ = simulate([*args, "--out", str(out), *argv], capsys)
    assert code == 0, line
    report: dict[str, Any] = json.loads((out / "simulate.json").read_text())
    return report


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--arrivals", "trace"],
            "--arrivals trace: the workload has no timestamps (the built-in workload and "
            "token-id traces have none); use sessions or sequential",
        ),
        (["--arrivals", "poisson"], "argument --arrivals: invalid choice: 'poisson'"),
        (["--requests", "5"], "--requests: only with --trace (the first N requests of the trace)"),
        (["--step-ms", "-1"], "argument --step-ms: -1: a cost must be a number in [0, 1e9)"),
        (["--decode-row-us", "nan"], "argument --decode-row-us: nan: a cost must be a number"),
        (["--prefill-token-us", "fast"], "argument --prefill-token-us: 'fast' is not a number"),
    ],
)
def test_bad_arrivals_and_costs_are_one_line_and_status_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, line, _ = simulate([*SMALL, "--out", str(tmp_path), *argv], capsys)
    assert code == 2 and line.startswith(PREFIX + message)


def test_a_hash_id_trace_arrives_at_its_timestamps_by_default(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = run_trace(trace, tmp_path / "o", capsys)
    assert report["settings"]["arrivals"] == "trace"
    assert report["settings"]["intervals"] == []  # no sweep on a trace unless asked
    assert {run["label"] for run in report["runs"]} == {
        "dense",
        "interval R=16",
        "R=0 unpinned",
        "R=0 pinned",
    }
    for run in report["runs"]:
        # The last request arrives 9 s in, alone: the clock jumped there.
        assert 9000 < run["makespan_ms"] < 9100
        assert len(run["ttft_ms"]["percentiles"]) == 100
        assert run["ttft_ms"]["p50"] <= run["ttft_ms"]["p90"] <= run["ttft_ms"]["max"]
    text = (tmp_path / "o" / "simulate.txt").read_text()
    model_line = "arrivals: trace; eviction: lru; times are modelled, not measured"
    assert f"{model_line}: a step costs 2 ms" in text
    assert "gpt-oss: modelled times, ms" in text


def test_the_model_and_the_head_of_the_trace_are_the_options(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    default = run_trace(trace, tmp_path / "a", capsys, "--arrivals", "sequential")
    slower = run_trace(
        trace,
        tmp_path / "b",
        capsys,
        "--arrivals",
        "sequential",
        "--step-ms",
        "20",
        "--requests",
        "2",
    )
    assert slower["workload"]["requests"] == 2 and default["workload"]["requests"] == 3
    assert slower["settings"]["step_time"]["step_ms"] == 20.0
    assert default["settings"]["step_time"] == {
        "step_ms": 2.0,
        "prefill_token_us": 10.0,
        "attention_us_per_ktoken": 0.6,
        "decode_row_us": 50.0,
    }
    fast, slow = default["runs"][0]["ttft_ms"], slower["runs"][0]["ttft_ms"]
    assert slow["percentiles"][0] > fast["percentiles"][0] + 17  # a step is 18 ms dearer
    assert all(run["queue_ms"]["max"] == 0.0 for run in default["runs"])  # one at a time


def test_runs_in_worker_processes_give_the_same_report(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = run_trace(trace, tmp_path / "one", capsys, "--jobs", "1")
    two = run_trace(trace, tmp_path / "two", capsys, "--jobs", "2")
    assert one == two
    assert (tmp_path / "one" / "simulate.txt").read_text() == (
        tmp_path / "two" / "simulate.txt"
    ).read_text()


def test_workers_that_would_not_fit_memory_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(simulate_checks, "memory_limit", lambda: MemoryLimit(10**9, "a test's"))
    argv = [*SMALL, "--blocks", "3000000", "--out", str(tmp_path), "--jobs", "2"]
    code, line, _ = simulate(argv, capsys)
    assert code == 2
    assert line.startswith(PREFIX + "--jobs 2: 2 workers would need about 1.3 GiB (686.8 MiB each)")
    assert line.endswith(
        "over the limit of 953.7 MiB (a test's); use fewer --jobs or a smaller pool"
    )
