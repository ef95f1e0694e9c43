"""A trace's clock counts from its first arrival: epoch-scale timestamps time like small ones.

Timestamps are integers up to 2**63 - 1 milliseconds; nanoseconds since 1970
(about 1.7e18) are inside that range, and a float clock there has a spacing of
256 ms, so every step of a few milliseconds vanished and every TTFT was 0 ms.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from junction.reference.cli.main import main
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
