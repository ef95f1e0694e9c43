"""Every command guarded alike (issue 38): ``hbm``, ``replay``, ``sweep`` and ``simulate``
against the inputs an attacker would hand them, read the way ``cli.inputs`` reads them.

Each case asserts exit status 2 and one line naming the option, the value and
the rule, no traceback, and nothing run or written; the cases that hung,
exhausted memory or printed a traceback before run in a subprocess with a
timeout and an address-space limit, so the earlier code fails them instead of
taking the machine down.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from junction.command import dispatch as main
from junction.core import HybridGeometry
from junction.reference.cli import fuzz, hbm, inputs, outputs
from junction.reference.cli import simulate as simulate_cli
from junction.reference.cli import sweep as sweep_cli
from junction.reference.replay import Point, future_uses
from junction.reference.replay.models import catalog_model
from junction.reference.replay.parallel import replay_in_parallel
from junction.reference.replay.stream import replay_requests
from junction.reference.simulator.memory import MemoryLimit
from junction.reference.workloads.mooncake import parse_hash_trace
from junction.reference.workloads.tracefile import read_trace_text
from tests.cli.in_process import Ended, run_in_process

ROOT = Path(__file__).resolve().parents[2]
LINE = {"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}
SMALL_HBM = ["hbm", "--pools", "600", "--evictions", "lru"]


def hash_trace(path: Path, *lines: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines or (LINE,)))
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Ended:
    return run_in_process(main, argv, capsys)


def refused(ended: Ended, message: str) -> None:
    assert ended.code == 2, ended.err
    assert ended.out == "" and message in ended.last_line, ended.last_line


def limited(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command in its own process, with 2 GiB of address space and a minute."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))

    return subprocess.run(
        [sys.executable, "-m", "junction", *argv],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
        check=False,
    )


@pytest.fixture
def eight_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine whose memory limit is 8 GiB, whatever this one has."""
    monkeypatch.setattr(inputs, "memory_limit", lambda: MemoryLimit(8 * 2**30, "a test"))


# -- input files: regular only -------------------------------------------------------------


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "folder"])
@pytest.mark.parametrize(
    "argv",
    [
        ["hbm", "--trace", "{path}"],
        ["hbm", "--model-config", "{path}"],
        ["replay", "{path}"],
        ["sweep", "--trace", "{path}"],
        ["simulate", "--trace", "{path}"],
    ],
    ids=["hbm-trace", "hbm-model-config", "replay", "sweep", "simulate"],
)
def test_an_input_that_is_not_a_regular_file_is_one_line_at_once(
    kind: str, argv: list[str], tmp_path: Path
) -> None:
    if kind == "/dev/zero":
        if not Path(kind).exists():
            pytest.skip("no /dev/zero here")
        path = kind
    elif kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
        path = str(tmp_path / "fifo")
    else:
        path = str(tmp_path)
    done = limited([part.format(path=path) for part in argv], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stdout == ""
    last = done.stderr.strip().splitlines()[-1]
    assert path in last and ("regular file" in last or "a folder" in last), last


# -- hbm: the trace, the budgets, the memory -------------------------------------------------


def test_a_small_gzip_of_a_huge_request_is_refused_before_any_key_is_built(
    eight_gib: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocks = -(-(2**31 - 1) // 512)
    line = {**LINE, "input_length": 2**31 - 1, "hash_ids": [0] * blocks}
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress((json.dumps(line) + "\n").encode(), 9))
    assert bomb.stat().st_size < 64 * 1024
    monkeypatch.setattr(hbm, "replay_requests", lambda *a: pytest.fail("keys built"))
    ended = run(["hbm", "--trace", str(bomb), "--model", "llama-3.1-8b"], capsys)
    refused(ended, "--trace: the replay (134,217,727 hash units of 16 tokens: ")
    assert "over the limit of 8.0 GiB (a test)" in ended.last_line


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{bad", ":2: not valid JSON (Expecting property name"),
        (json.dumps(LINE).replace("600", "9" * 5001), ":2: field 'input_length': must be an int"),
        (json.dumps({**LINE, "output_length": 10**9}), ":2: field 'output_length': must be an"),
    ],
    ids=["malformed", "5001-digits", "huge-output"],
)
def test_hbm_refuses_a_bad_trace_line_in_one_line(
    line: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(LINE) + "\n" + line + "\n")
    refused(run([*SMALL_HBM, "--trace", str(trace)], capsys), f"--trace: {trace}{message}")


def test_hbm_refuses_a_token_id_trace_by_its_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"prompt": [1, 2, 3]}\n')
    refused(run([*SMALL_HBM, "--trace", str(trace)], capsys), "a token-id trace; hbm replays")


@pytest.mark.parametrize("budget", ["nan", "inf", "-inf", "0", "1e300", "8,nan"])
def test_an_hbm_budget_that_is_no_number_of_gib_is_refused(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ended = run(["hbm", "--model", "llama-3.1-8b", f"--hbm={budget}"], capsys)
    refused(ended, f"argument --hbm: {budget!r}: every budget must be a number of GiB above 0")


def test_requests_n_are_the_first_n_lines_in_file_order_as_the_help_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [{**LINE, "timestamp": stamp, "hash_ids": [stamp, 2]} for stamp in (300, 200, 100)]
    trace = hash_trace(tmp_path / "t.jsonl", *lines)
    seen: list[list[int]] = []
    replay_requests = hbm.replay_requests

    def recorded(requests: list[object], unit: int) -> object:
        seen.append([r.line for r in requests])  # type: ignore[attr-defined]
        return replay_requests(requests, unit)  # type: ignore[arg-type]

    monkeypatch.setattr(hbm, "replay_requests", recorded)
    ended = run([*SMALL_HBM, "--trace", str(trace), "--requests", "2"], capsys)
    assert ended.code == 0 and seen == [[1, 2]]  # not lines 2 and 3, the earliest stamps
    help_text = run(["hbm", "--help"], capsys).out
    assert "only the first N requests of each trace\n                        (file order)" in (
        help_text
    )


# -- hbm: the output set ------------------------------------------------------------------


def test_hbm_checks_its_outputs_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = hash_trace(tmp_path / "t.jsonl")
    monkeypatch.setattr(hbm, "_replay", lambda *a: pytest.fail("the run started"))
    base = [*SMALL_HBM, "--trace", str(trace)]
    (tmp_path / "folder").mkdir()
    refused(run([*base, "--json", str(tmp_path / "folder")], capsys), "is a folder, not a file")
    saved = tmp_path / "set.json"
    saved.write_text("old")
    ended = run([*base, "--json", str(saved), "--plot", str(tmp_path / "x.bad")], capsys)
    refused(ended, f"--plot {tmp_path / 'x.bad'}: 'bad' is not a format to draw (")
    assert saved.read_text() == "old"
    (tmp_path / "file").write_text("x")
    ended = run([*base, "--plot", str(tmp_path / "file" / "p.png")], capsys)
    refused(ended, f"{tmp_path / 'file'} is a file, not a folder")


def test_hbm_writes_json_and_plot_as_one_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = hash_trace(tmp_path / "t.jsonl")
    saved, plot = tmp_path / "set.json", tmp_path / "plots" / "p.svg"
    saved.write_text("old")
    argv = [*SMALL_HBM, "--trace", str(trace), "--json", str(saved), "--plot", str(plot)]
    write_bytes = Path.write_bytes

    def full_disk(path: Path, data: bytes) -> int:
        if path.name.startswith(".p.svg."):
            raise OSError(28, "No space left on device")
        return write_bytes(path, data)

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    ended = run(argv, capsys)
    assert ended.code == 1 and "No space left on device; nothing written" in ended.last_line
    assert saved.read_text() == "old" and not plot.parent.exists()
    monkeypatch.undo()
    assert run(argv, capsys).code == 0
    assert json.loads(saved.read_text())["points"] and plot.read_text().startswith("<?xml")
    assert not outputs.lock_file(saved).exists() and not outputs.lock_file(plot).exists()
    assert sorted(p.name for p in tmp_path.rglob(".*")) == []  # no temporary file left


# -- replay: the saved scenario ---------------------------------------------------------------


@pytest.fixture
def scenario() -> dict[str, object]:
    """A scenario as ``fuzz`` saves one (the replay promise, a small hybrid geometry)."""
    groups = [
        {"kind": "full", "block_size": 2, "window": None},
        {"kind": "sliding_window", "block_size": 2, "window": 1},
    ]
    geometry = {"groups": groups, "hash_block_size": 2, "partial_hits": False}
    return {
        "promise": "replay",
        "geometry": {**geometry, "use_eagle": False, "retention_interval": 0},
        "prompts": [[0, 0, 0]],
        "probe": [0, 0, 0],
        "budget": 4,
        "num_blocks": 5000,
        "gaps": [],
        "max_output_tokens": 2,
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_blocks": 10**9}, "num_blocks 1,000,000,000: two engines' pools (447.0 GiB)"),
        ({"max_output_tokens": 10**9}, "max_output_tokens 1,000,000,000: at most 1,048,576"),
        ({"promise": "segments"}, "the segments promise needs R > 0, got retention_interval 0"),
        ({"budget": "B"}, "cannot read a JSON document: holds an int of 5,001 digits"),
    ],
    ids=["num-blocks", "max-output-tokens", "segments-without-R", "5001-digits"],
)
def test_replay_refuses_a_scenario_it_cannot_run_in_one_line(
    change: dict[str, object],
    message: str,
    scenario: dict[str, object],
    eight_gib: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    saved = tmp_path / "s.json"
    saved.write_text(json.dumps({**scenario, **change}).replace('"B"', "9" * 5001))
    ended = run(["replay", str(saved)], capsys)
    refused(ended, f"junction replay: error: {saved}: ")
    assert message in ended.last_line
    saved.write_text(json.dumps(scenario))  # the same scenario, unchanged: it runs
    assert run(["replay", str(saved)], capsys).out == "replay: holds\n"


# -- a trace's clock --------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["simulate", "sweep"])
def test_a_clock_with_an_outlier_at_zero_is_refused_naming_it(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    epoch = 1_700_000_000_000_000_000
    lines = [{**LINE, "timestamp": 0}]
    lines += [{**LINE, "timestamp": epoch + 50 * i, "hash_ids": [1, 3 + i]} for i in range(4)]
    trace = hash_trace(tmp_path / "t.jsonl", *lines)
    argv = [command, "--trace", str(trace), "--out", str(tmp_path / "out")]
    if command == "simulate":
        argv.append("--no-plot")
    ended = run(argv, capsys)
    refused(ended, "--trace: timestamps span 1,700,000,000,000,000,150 ms, over the ")
    assert "line 1 (0) and line 2 (1,700,000,000,000,000,000) are" in ended.last_line
    assert not (tmp_path / "out").exists()
    # Sequential arrivals use no clock: the same trace runs.
    assert run([*argv, "--arrivals", "sequential"], capsys).code == 0


# -- output locks -----------------------------------------------------------------------------


def test_a_lock_planted_as_a_link_is_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    report = tmp_path / "report.json"
    lock = outputs.lock_file(report)
    lock.unlink(missing_ok=True)
    lock.symlink_to(victim)
    try:
        trace = hash_trace(tmp_path / "t.jsonl")
        ended = run([*SMALL_HBM, "--trace", str(trace), "--json", str(report)], capsys)
        refused(ended, f"--json {report}: cannot take its lock {lock} (")
    finally:
        lock.unlink()
    assert victim.read_text() == "keep me" and not report.exists()


def test_a_lock_is_created_new_and_removed_when_released(tmp_path: Path) -> None:
    out = tmp_path / "out"
    lock = outputs.lock_file(out)
    outputs.check_folder("--out", out, ["a.json"])
    assert lock.is_file() and not lock.is_symlink()
    assert oct(lock.stat().st_mode & 0o777) == oct(0o600)
    outputs.commit(out, {"a.json": b"{}"})
    assert not lock.exists() and (out / "a.json").read_bytes() == b"{}"


def test_an_output_file_turned_into_a_folder_mid_run_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = hash_trace(tmp_path / "t.jsonl")
    report = tmp_path / "report.json"
    replay = hbm._replay

    def meanwhile(*args: object) -> object:
        report.mkdir()  # someone else's doing, while the run goes on
        return replay(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(hbm, "_replay", meanwhile)
    ended = run([*SMALL_HBM, "--trace", str(trace), "--json", str(report)], capsys)
    assert ended.code == 1
    assert ended.last_line.endswith(
        f"cannot write {report}: it is a folder now, not a file; nothing written"
    )
    assert report.is_dir() and list(report.iterdir()) == []


@pytest.mark.usefixtures("permissions")
@pytest.mark.parametrize(
    "argv",
    [
        ["fuzz", "--seconds", "1", "--json", "{path}"],
        ["hbm", "--pools", "600", "--trace", "{trace}", "--json", "{path}"],
        ["hbm", "--pools", "600", "--trace", "{trace}", "--plot", "{path}"],
    ],
    ids=["fuzz-json", "hbm-json", "hbm-plot"],
)
def test_an_output_file_that_cannot_be_written_is_refused_before_the_run(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(fuzz, "_fuzz", lambda *a: pytest.fail("the run started"))
    monkeypatch.setattr(hbm, "_replay", lambda *a: pytest.fail("the run started"))
    trace = hash_trace(tmp_path / "t.jsonl")
    (tmp_path / "taken").mkdir()
    (tmp_path / "locked").mkdir(mode=0o555)
    for path, message in (
        (tmp_path / "taken", "is a folder, not a file"),
        (tmp_path / "locked" / "r.png", f"the folder {tmp_path / 'locked'} is not writable"),
    ):
        ended = run([part.format(path=path, trace=trace) for part in argv], capsys)
        refused(ended, f"{argv[-2]} {path}: {message}")


def test_simulate_out_file_turned_into_a_folder_mid_run_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    simulate = simulate_cli._simulate

    def meanwhile(*args: object) -> object:
        (out / "simulate.txt").mkdir(parents=True)
        return simulate(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(simulate_cli, "_simulate", meanwhile)
    argv = ["simulate", "--sessions", "2", "--turns", "1", "--system-prompt", "64"]
    argv += ["--geometry", "full+swa", "--intervals", "none", "--no-plot", "--out", str(out)]
    ended = run(argv, capsys)
    assert ended.code == 1 and ended.last_line.endswith(
        f"cannot write {out / 'simulate.txt'}: it is a folder now, not a file; nothing written"
    )
    assert sorted(p.name for p in out.iterdir()) == ["simulate.txt"]  # nothing else written


def test_sweep_sizes_a_trace_by_its_tokens_not_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [{**LINE, "timestamp": i, "hash_ids": [i, 2]} for i in range(3)]
    trace = hash_trace(tmp_path / "t.jsonl", *lines)  # 1,800 prompt tokens in 237 bytes
    for module in (sweep_cli, inputs):
        monkeypatch.setattr(module, "memory_limit", lambda: MemoryLimit(20_000, "a test"))
    monkeypatch.setattr(sweep_cli, "run_all", lambda *a, **k: pytest.fail("the sweep started"))
    argv = ["sweep", "--trace", str(trace), "--blocks", "2", "--jobs", "1"]
    ended = run([*argv, "--out", str(tmp_path / "out")], capsys)
    refused(ended, f"--trace {trace}: 1 workers would need about ")
    assert "over the limit of 19.5 KiB (a test)" in ended.last_line


def test_a_stale_lock_a_killed_run_left_is_taken_and_removed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    lock = outputs.lock_file(out)
    lock.write_text("12345")  # a killed run's: no process holds it
    outputs.commit(out, {"a.json": b"{}"})
    assert not lock.exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_lock_file_of_another_users_is_refused_not_used(tmp_path: Path) -> None:
    out = tmp_path / "out"
    lock = outputs.lock_file(out)
    lock.write_text("")
    os.chown(lock, 65534, 65534)
    try:
        with pytest.raises(outputs.OutputError, match=r"is not a file of this user's; remove it"):
            outputs.check_folder("--out", out, ["a.json"])
    finally:
        lock.unlink()


@pytest.mark.parametrize("model", ["llama-3.1-8b", "gemma-3-27b"])
def test_the_replay_estimate_bounds_what_a_replay_allocates(model: str) -> None:
    """The constants are upper bounds: a replay of the Mooncake trace's first requests
    (every pool large enough to cache every key, belady's uses kept) stays under them."""
    memory = catalog_model(model)
    geometry = HybridGeometry(memory.groups(), memory.block_size)
    text = read_trace_text(hbm.TRACE, 2**30)
    trace = parse_hash_trace(text, "mooncake")[:60]
    points = [Point("junction", 0, 10**6, eviction) for eviction in ("lru", "belady")]
    pools = [point.num_blocks for point in points]
    unit = geometry.hash_block_size
    size = inputs.ReplaySize.of(trace, unit, len(geometry.groups), pools, 1, True)
    tracemalloc.start()
    try:
        requests = replay_requests(trace, unit)
        uses = future_uses(geometry, requests)
        replay_in_parallel(geometry, requests, points, 1, uses=uses, flops=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < size.keys_bytes + size.pools_bytes
    assert peak > (size.keys_bytes + size.pools_bytes) / 8  # a bound, not a guess


def test_a_lock_removed_by_its_releaser_as_it_was_opened_is_taken_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    lock = outputs.lock_file(out)
    flock = outputs.fcntl.flock
    calls: list[int] = []

    def released_meanwhile(fd: int, operation: int) -> None:
        calls.append(fd)
        if len(calls) == 1:  # between our open and our lock: the holder's release, and
            lock.unlink()  # another run's new lock file at the same path
            lock.write_text("")
        flock(fd, operation)

    monkeypatch.setattr(outputs.fcntl, "flock", released_meanwhile)
    outputs.check_folder("--out", out, ["a.json"])
    assert len(calls) == 2  # the unlinked file let go, the one the path names taken
    assert lock.read_text() == str(os.getpid())
    outputs.commit(out, {"a.json": b"{}"})
    assert not lock.exists()
