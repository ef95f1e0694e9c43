"""``junction sweep``: one grid, the same bytes whatever runs it.

The sweep's files and tables must not depend on where its runs ran: the
tests run one small grid with ``--jobs 1`` (in-process), ``--jobs 2``
(worker processes) and ``--ray auto`` (a local Ray, started and stopped by
the command: about 15 s on 2 cores) and compare the bytes. Bad usage is one
line naming the option, status 2, before any run starts. Where Ray is not
installed its tests are skipped with the reason, except where it is required
(``tests.simulator.ray_support``: under CI, `make setup` installs it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from junction.command import dispatch as reference
from junction.reference.simulator.memory import SimulationSize, builtin_prompt_tokens, memory_limit
from tests.groups import WALL_CLOCK
from tests.simulator.ray_support import require_ray

ROOT = Path(__file__).resolve().parents[2]
PROG = "junction sweep"
GRID = [
    "sweep",
    *("--sessions", "5", "--turns", "3", "--system-prompt", "200", "--concurrency", "3"),
    *("--geometry", "full+swa", "--geometry", "full+mamba"),
    *("--intervals", "0,128", "--blocks", "3000", "--pool-fraction", "0.5"),
]
RUNS = 2 * 2 * (1 + 2 * 2)  # pools x geometries x (dense + two policies at two R)


def sweep(
    tmp_path: Path, name: str, where: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[str, bytes, bytes]:
    out = tmp_path / name
    assert reference([*GRID, *where, "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    return stdout, (out / "sweep.json").read_bytes(), (out / "sweep.txt").read_bytes()


def test_processes_write_what_one_process_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = sweep(tmp_path, "one", ["--jobs", "1"], capsys)
    two = sweep(tmp_path, "two", ["--jobs", "2"], capsys)
    assert two == one
    document = json.loads(one[1])
    runs = document["runs"]
    assert len(runs) == RUNS
    cells = {(r["pool"], r["geometry"], r["label"]) for r in runs}
    assert len(cells) == RUNS  # every combination once
    assert {r["pool"] for r in runs} == {"--blocks 3000", "--pool-fraction 0.5"}
    assert {r["retention_interval"] for r in runs} == {None, 0, 128}
    fraction = [r for r in runs if r["pool"] == "--pool-fraction 0.5"]
    assert any(r["evictions"] for r in fraction)  # half the working set does evict
    assert one[2].decode().rstrip("\n") == one[0].rstrip("\n")  # the file is the tables


@WALL_CLOCK  # `--ray auto` joins a Ray running on this machine: one at a time
def test_ray_writes_what_one_process_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pytestconfig: pytest.Config
) -> None:
    require_ray(pytestconfig)
    one = sweep(tmp_path, "one", ["--jobs", "1"], capsys)
    assert sweep(tmp_path, "ray", ["--ray", "auto"], capsys) == one


BAD_USAGE = [
    (["--geometry", "nosuch"], "argument --geometry: unknown geometry 'nosuch' (choose from"),
    (["--policy", "lru"], "argument --policy: 'lru': not a registered policy (junction, dense,"),
    (["--jobs", "0"], "argument --jobs: 0 must be >= 1"),
    (["--jobs", "2", "--ray", "auto"], "argument --ray: not allowed with argument --jobs"),
    (
        ["--ray", "ray://[::1"],
        "argument --ray: 'ray://[::1' is not HOST:PORT, ray://HOST:PORT or auto",
    ),
    (["--intervals", "0,-16"], "argument --intervals: -16: intervals must be >= 0"),
    (
        ["--geometry", "full+mamba", "--intervals", "32"],
        "--intervals 32: must be a multiple of the scheduler block L=64 of geometry full+mamba",
    ),
    (["--requests", "5"], "--requests: only with --trace"),
    (["--arrivals", "trace"], "--arrivals trace: the built-in workload has no timestamps"),
    (
        ["--trace", "/nonexistent.jsonl"],
        "--trace: /nonexistent.jsonl:0: cannot read: [Errno 2] No such file",
    ),
    (["--pool-fraction", "1.5"], "argument --pool-fraction: 1.5: a fraction of the working set"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_USAGE)
def test_bad_usage_exits_2_with_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        reference(["sweep", *argv, "--out", str(tmp_path / "out")])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()  # nothing said before the refusal
    assert line.startswith(f"{PROG}: error: {message}")
    assert not (tmp_path / "out").exists()


def test_an_unreachable_ray_exits_2_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pytestconfig: pytest.Config
) -> None:
    require_ray(pytestconfig)
    with pytest.raises(SystemExit) as info:
        reference(["sweep", "--ray", "127.0.0.1:1", "--out", str(tmp_path)])
    assert info.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == (
        f"{PROG}: error: --ray 127.0.0.1:1: no Ray cluster answers at 127.0.0.1:1 "
        "(Connection refused)"
    )


def test_errors_found_by_the_runs_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": []}\n')
    with pytest.raises(SystemExit) as info:
        reference(["sweep", "--trace", str(broken), "--jobs", "2", "--out", str(tmp_path)])
    assert info.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"{PROG}: error: --trace: {broken}:1: field 'hash_ids': has 0 ids")
    (tmp_path / "examples").mkdir()  # the working folder (conftest.py): a relative --trace
    shutil.copy(ROOT / "examples" / "trace.jsonl", tmp_path / "examples")
    with pytest.raises(SystemExit) as info:
        reference(
            ["sweep", "--trace", "examples/trace.jsonl", "--arrivals", "trace", "--jobs", "1"]
        )
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"{PROG}: error: --arrivals trace: --trace examples/trace.jsonl: its requests have no "
        "timestamps; use sessions or sequential"
    )
    small = [*GRID[:9], "--geometry", "full+swa", "--blocks", "20", "--out", str(tmp_path)]
    assert reference(small) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"{PROG}: error: request ")
    assert last.endswith("; use a larger pool")
    assert not (tmp_path / "sweep.json").exists()


def test_memory_is_checked_for_every_worker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A workload that one worker could hold is refused for two: each holds a copy."""
    limit = memory_limit().bytes
    per_session = SimulationSize(builtin_prompt_tokens(1, 4, 1500), 0, workload_built=True)
    pool = SimulationSize(0, 40_000, workload_built=True).total_bytes
    sessions = int(0.7 * (limit - pool) / per_session.total_bytes)
    alone = SimulationSize(builtin_prompt_tokens(sessions, 4, 1500), 40_000, workload_built=True)
    assert alone.total_bytes < limit < 2 * alone.total_bytes
    argv = ["sweep", "--sessions", str(sessions), "--jobs", "2", "--out", str(tmp_path)]
    with pytest.raises(SystemExit) as info:
        reference(argv)
    assert info.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"{PROG}: error: --sessions {sessions} --turns 4 ")
    assert "2 workers would need about" in last
    assert last.endswith("use fewer --jobs or a smaller pool")


@WALL_CLOCK
def test_ctrl_c_ends_the_workers_and_exits_130(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole process group: one line, no worker left, nothing written.

    The two runs replay the whole conversation trace (minutes each): the sweep
    must end the workers in their runs, not wait for them (``communicate``
    would time out).
    """
    root = Path(__file__).resolve().parents[2]
    trace = root / "examples" / "traces" / "mooncake-conversation.jsonl.gz"
    argv = [
        *("sweep", "--trace", str(trace), "--geometry", "gpt-oss", "--policy", "dense"),
        *("--blocks", "unbounded", "--pool-tokens", "100000", "--jobs", "2"),
        *("--out", str(tmp_path)),
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "junction", *argv],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + 60
        # main, the resource tracker, the fork server and two workers
        while len(_group(process.pid)) < 5 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)  # the workers are in their runs
        assert process.poll() is None, "the sweep ended before it was interrupted"
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if _group(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, err
    assert err.decode().strip().splitlines()[-1] == "interrupted"
    assert "Traceback" not in err.decode() and out == b""
    deadline = time.monotonic() + 10
    while _group(process.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _group(process.pid) == []
    assert not (tmp_path / "sweep.json").exists()


def _group(group: int) -> list[int]:
    """The live processes of a process group (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # ended meanwhile
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                found.append(int(entry.name))
    return found
