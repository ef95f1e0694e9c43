"""A trace's clock counts from its first arrival, and workers read the text the parent checked.

Timestamps are integers up to 2**63 - 1 milliseconds; nanoseconds since 1970
(about 1.7e18) are inside that range, and a float clock there has a spacing of
256 ms, so every step of a few milliseconds vanished and every TTFT was 0 ms.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from junction.command import dispatch as main
from junction.reference.cli import simulate as simulate_cli
from junction.reference.simulator.parallel import RunSpec, TraceSource
from junction.reference.workloads.trace import TraceError
from junction.reference.workloads.tracefile import read_trace_text, text_digest
from tests.cli.in_process import run_in_process


def _times(tmp_path: Path, base: int, capsys: pytest.CaptureFixture[str]) -> list[object]:
    trace = tmp_path / f"trace-{base}.jsonl"
    lines = [
        {
            "timestamp": base + 50 * i,
            "input_length": 1000 + i,
            "output_length": 4,
            "hash_ids": [1, 2 + i],
        }
        for i in range(6)
    ]
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / f"out-{base}"
    argv = ["simulate", "--trace", str(trace), "--no-plot", "--jobs", "1", "--out", str(out)]
    assert run_in_process(main, argv, capsys).code == 0
    runs = json.loads((out / "simulate.json").read_text())["runs"]
    return [(run["ttft_ms"], run["queue_ms"]) for run in runs]


def test_nanosecond_epoch_timestamps_give_the_same_times_as_small_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = _times(tmp_path, 0, capsys)
    epoch = _times(tmp_path, 1_700_000_000_000_000_000, capsys)
    assert epoch == small
    assert all(ttft["p50"] > 0 for ttft, _ in small)  # type: ignore[index]


def test_a_worker_refuses_a_trace_that_changed_since_the_parent_checked_it(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.jsonl"
    line = {"timestamp": 0, "input_length": 1000, "output_length": 4, "hash_ids": [1, 2]}
    trace.write_text(json.dumps(line) + "\n")
    checked = text_digest(read_trace_text(trace, 10**6))
    source = TraceSource(str(trace), None, checked)
    assert source.load().requests == 1  # the text the parent checked: loaded
    trace.write_text(json.dumps({**line, "input_length": 2000}) + "\n")  # then it changed
    with pytest.raises(TraceError, match="changed since it was checked"):
        source.load()


def test_simulate_hands_its_workers_the_digest_of_the_text_it_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[object] = []

    def run_all(specs: list[RunSpec], **kwargs: object) -> list[object]:
        seen.extend(spec.source for spec in specs)
        raise TraceError("x", 0, None, "stop here")

    monkeypatch.setattr(simulate_cli, "run_all", run_all)
    trace = tmp_path / "trace.jsonl"
    line = {"timestamp": 0, "input_length": 1000, "output_length": 4, "hash_ids": [1, 2]}
    trace.write_text(json.dumps(line) + "\n")
    argv = ["simulate", "--trace", str(trace), "--no-plot", "--jobs", "2"]
    ended = run_in_process(main, [*argv, "--out", str(tmp_path / "out")], capsys)
    assert ended.code == 1 and ended.last_line.endswith("stop here")
    digest = text_digest(trace.read_text())
    assert seen and all(getattr(source, "digest", None) == digest for source in seen)
