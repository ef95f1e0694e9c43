"""``simulate``'s pool sizes (--blocks N|unbounded, --pool-tokens, --pool-fraction), hash-id traces.

Bad values and combinations exit with status 2 and one line; the sizes are
what ``simulator.pool`` documents; an unbounded pool never evicts.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from junction.command import dispatch as main
from junction.core import GroupSpec, HybridGeometry
from junction.reference.simulator.pool import PoolSize, working_set
from junction.reference.simulator.workload import Workload
from junction.reference.workloads.sessions import Arrival
from tests.cli.in_process import run_in_process

PREFIX = "junction simulate: error: "
SMALL = ["--sessions", "2", "--turns", "2", "--system-prompt", "64", "--geometry", "full+swa"]
SMALL += ["--interval", "64", "--intervals", "64", "--no-plot"]


def simulate(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    ended = run_in_process(main, ["simulate", *argv, "--jobs", "1"], capsys)  # no start-up
    return ended.code, ended.last_line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--pool-fraction", "0"],
            "argument --pool-fraction: 0: a fraction of the working set must be in (0, 1]",
        ),
        (
            ["--pool-fraction", "1.5"],
            "argument --pool-fraction: 1.5: a fraction of the working set must be in (0, 1]",
        ),
        (
            ["--pool-fraction", "nan"],
            "argument --pool-fraction: nan: a fraction of the working set must be in (0, 1]",
        ),
        (["--pool-fraction", "half"], "argument --pool-fraction: 'half' is not a number"),
        (["--pool-tokens", "0"], "argument --pool-tokens: 0 must be >= 1"),
        (["--blocks", "1"], "argument --blocks: 1 must be >= 2"),
        (["--blocks", "infinite"], "argument --blocks: 'infinite' is not an int"),
        (
            ["--blocks", "unbounded", "--pool-fraction", "0.5"],
            "argument --pool-fraction: not allowed with argument --blocks",
        ),
        (
            ["--pool-tokens", "100", "--blocks", "9"],
            "argument --blocks: not allowed with argument --pool-tokens",
        ),
    ],
)
def test_a_bad_pool_size_is_one_line_and_status_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert simulate([*SMALL, "--out", str(tmp_path), *argv], capsys) == (2, PREFIX + message)


def test_sizes_in_tokens_and_fractions_follow_the_documented_formulas() -> None:
    geometry = HybridGeometry((GroupSpec.full(4), GroupSpec.mamba(8)), 4)
    prompts = [tuple(range(16)), tuple(range(8)) + (99,) * 8, tuple(range(17))]
    workload = Workload("t", tuple((Arrival(p, 3),) for p in prompts))
    # full (4): 0-3, 0-7, 0-11, 0-15, then 8-11 and 12-15 of the second: 6; mamba (8): 3.
    assert working_set(geometry, workload) == 9
    assert PoolSize("tokens", 10).blocks(geometry, workload) == 1 + 3 + 2
    assert PoolSize("fraction", 0.5).blocks(geometry, workload) == 1 + 5
    assert PoolSize("fraction", 0.01).blocks(geometry, workload) == 2
    assert PoolSize("fraction", 0.5).blocks(geometry, None) is None
    # unbounded: (ceil(19/4)+1) + (ceil(19/8)+1) twice, (ceil(20/4)+1) + (ceil(20/8)+1) once.
    assert PoolSize("unbounded", None).blocks(geometry, workload) == 1 + 2 * (6 + 4) + (6 + 4)


def test_an_unbounded_pool_never_evicts_and_a_small_fraction_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evictions = {}
    for option in (["--blocks", "unbounded"], ["--pool-fraction", "0.5"]):
        out = tmp_path / option[1]
        assert simulate([*SMALL, "--out", str(out), "--concurrency", "1", *option], capsys)[0] == 0
        report = json.loads((out / "simulate.json").read_text())
        assert isinstance(report["settings"]["num_blocks"]["full+swa"], int)
        evictions[option[0]] = {run["evictions"] for run in report["runs"]}
    assert evictions["--blocks"] == {0}
    assert max(evictions["--pool-fraction"]) > 0


def test_a_gzipped_hash_id_trace_runs_each_request_its_own_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        {"timestamp": 5, "input_length": 600, "output_length": 2, "hash_ids": [1, 2]},
        {"timestamp": 1, "input_length": 700, "output_length": 2, "hash_ids": [1, 3]},
    ]
    trace = tmp_path / "t.jsonl.gz"
    trace.write_bytes(gzip.compress("".join(json.dumps(x) + "\n" for x in lines).encode()))
    argv = ["--trace", str(trace), "--geometry", "full+swa", "--interval", "16"]
    argv += ["--intervals", "16", "--no-plot", "--out", str(tmp_path / "o")]
    assert simulate(argv, capsys)[0] == 0
    report = json.loads((tmp_path / "o" / "simulate.json").read_text())
    assert report["workload"]["sessions"] == 2 and report["workload"]["prompt_tokens"] == 1300
    assert report["workload"]["system_prompt_tokens"] == 512  # id 1 is shared, id 2 and 3 not
