"""``simulate`` against hostile input: sizes, outputs, traces.

Every case asserts the exit status (2: bad usage, refused before anything
runs; 1: a run that failed), the one-line message (the last line of standard
error: argparse puts its usage line before it), that no traceback was
printed, and the files left behind: none on a refusal or a failure (the
previous set untouched), exactly the new set on success. In-process through
``main`` for speed; a few subprocesses check the same end to end.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from junction.command import dispatch as main
from junction.reference.cli import inputs, simulate_checks
from junction.reference.cli import simulate as simulate_cli
from junction.reference.simulator import memory
from junction.reference.simulator.memory import (
    FALLBACK_LIMIT,
    MemoryLimit,
    SimulationSize,
    builtin_prompt_tokens,
)
from junction.reference.simulator.workload import builtin_workload
from tests.cli.folders import files
from tests.cli.in_process import run_in_process

ROOT = Path(__file__).resolve().parents[2]
SET = {"simulate.json", "simulate.txt", "simulate.png", "simulate-ttft.png"}
# Two sessions of one turn on one geometry: five runs, well under a second.
SMALL = ["--sessions", "2", "--turns", "1", "--system-prompt", "64", "--geometry", "full+swa"]
SMALL += ["--interval", "64", "--intervals", "64"]


def simulate(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Exit status, the last line of standard error, and the whole of it."""
    ended = run_in_process(main, ["simulate", *argv], capsys)
    return ended.code, ended.last_line, ended.err


def old_set(folder: Path) -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    for name in SET:
        (folder / name).write_bytes(f"old {name}".encode())
    return files(folder)


PREFIX = "junction simulate: error: "


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--sessions", "1000000000", "a workload of 11,656,000,000,000 prompt tokens from "),
        ("--turns", "1000000000", "--sessions 48 --turns 1000000000 --system-prompt 1500"),
        ("--system-prompt", "1000000000", "a workload of 192,000,271,488 prompt tokens"),
        ("--blocks", "100000000000000000000", "--blocks 100000000000000000000: the pool would"),
        ("--blocks", str(10**400), "the pool would need about 10^402 bytes, over the limit of"),
    ],
)
def test_a_simulation_too_large_for_memory_is_refused_up_front(
    option: str, value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.perf_counter()
    code, line, _ = simulate([option, value, "--out", str(tmp_path / "out")], capsys)
    assert time.perf_counter() - started < 2  # an estimate, nothing built
    assert code == 2 and line.startswith(PREFIX) and message in line
    assert "over the limit of" in line and "of this machine's" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option", ["--sessions", "--turns", "--system-prompt", "--blocks"])
@pytest.mark.parametrize("value", ["1e9", "1e20", "1.0", "10_000x"])
def test_a_float_string_is_an_argparse_error_naming_the_option(
    option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, line, _ = simulate([option, value, "--out", str(tmp_path)], capsys)
    assert code == 2 and line == f"{PREFIX}argument {option}: {value!r} is not an int"
    assert files(tmp_path) == {}


def test_the_demo_fits_under_the_fixed_limit_and_the_estimate_is_close() -> None:
    demo = SimulationSize(builtin_prompt_tokens(48, 4, 1500), 40_000, workload_built=True)
    assert demo.total_bytes < FALLBACK_LIMIT / 100
    for sessions, turns, system in ((48, 4, 1500), (30, 7, 100), (5, 1, 3000)):
        actual = builtin_workload(0, sessions, turns, system).prompt_tokens
        assert abs(builtin_prompt_tokens(sessions, turns, system) - actual) < actual * 0.1


def test_the_limit_falls_back_where_the_machine_memory_is_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert memory.memory_limit().source.startswith("half of this machine's")

    def unknown(name: str) -> int:
        raise ValueError(name)

    monkeypatch.setattr(os, "sysconf", unknown)
    assert memory.memory_limit() == MemoryLimit(
        FALLBACK_LIMIT, "a fixed limit: this machine's memory is unknown"
    )


def test_a_trace_too_large_to_load_or_run_is_refused_before_reading_or_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"prompt": [' + "1," * 999 + "1]}\n")  # 2,015 bytes, 1,000 tokens
    out = ["--out", str(tmp_path / "out"), "--blocks", "2", "--trace", str(trace)]

    def limited(limit: int) -> tuple[int, str, str]:
        for checks in (simulate_checks, inputs):
            monkeypatch.setattr(checks, "memory_limit", lambda: MemoryLimit(limit, "a test"))
        monkeypatch.setattr(inputs, "read_trace_text", lambda *a: pytest.fail("read"))
        return simulate(out, capsys)

    code, line, _ = limited(20_000)  # the file needs 20,150 bytes to load
    assert code == 2 and line == (
        f"{PREFIX}--trace {trace}: a file of 2.0 KiB would need about 19.7 KiB to load, "
        "over the limit of 19.5 KiB (a test)"
    )
    monkeypatch.undo()
    monkeypatch.setattr(simulate_checks, "memory_limit", lambda: MemoryLimit(22_000, "a test"))
    monkeypatch.setattr(simulate_cli, "simulate", lambda *a: pytest.fail("the run started"))
    code, line, _ = simulate(out, capsys)  # loads, but a run needs 24,480 bytes
    assert code == 2 and line == (
        f"{PREFIX}the simulation would need about 23.9 KiB (a workload of 1,000 prompt tokens "
        f"from --trace {trace}: 23.4 KiB; a pool of --blocks 2: 480 bytes), over the limit "
        "of 21.5 KiB (a test)"
    )
    code, line, _ = simulate([*out, "--blocks", "100"], capsys)
    assert code == 2 and line == (
        f"{PREFIX}--blocks 100: the pool would need about 23.4 KiB, over the limit of "
        "21.5 KiB (a test)"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        ("/dev/zero", "--trace /dev/zero: must be a regular file (its size is checked first)"),
        ("{t}", "--trace {t}: must be a regular file (its size is checked first)"),
        ("{t}/missing.jsonl", "--trace: {t}/missing.jsonl:0: cannot read: [Errno 2] No such"),
    ],
)
def test_a_trace_that_is_not_a_regular_file_is_refused_before_reading(
    trace: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if trace == "/dev/zero" and not Path(trace).exists():
        pytest.skip("no /dev/zero here")
    out = ["--out", str(tmp_path / "out")]
    code, line, _ = simulate(["--trace", trace.format(t=tmp_path), *out], capsys)
    assert code == 2 and line.startswith(PREFIX + message.format(t=tmp_path))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"prompt": [1, ' + "9" * 5000 + "]}", ":2: field 'prompt': element 1 is an int of 5,000"),
        ('{"prompt": ' + "[" * 100_000 + "]" * 100_000 + "}", ":2: field 'prompt': nested deeper"),
        ('{"prompt": [1], "prompt": [2]}', ":2: field 'prompt': given twice"),
        ('{"prompt": [1], "session": "1"}', ":2: field 'session': '1' here and 1 on line 1"),
    ],
)
def test_a_hostile_trace_line_exits_2_naming_file_line_and_field(
    line: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"prompt": [5, 6], "session": 1}\n' + line + "\n")
    code, last, _ = simulate(["--trace", str(trace), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and last.startswith(f"{PREFIX}--trace: {trace}{message}")
    assert not (tmp_path / "out").exists()


def test_out_empty_is_an_error_not_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, line, _ = simulate([*SMALL, "--out", ""], capsys)
    assert code == 2 and line == f"{PREFIX}argument --out: must name a path, got an empty string"
    assert files(tmp_path) == {}


@pytest.mark.parametrize(
    ("setup", "out", "message"),
    [
        (lambda t: (t / "f").write_text("x"), "f", "--out {t}/f: is a file, not a folder"),
        (
            lambda t: (t / "f").write_text("x"),
            "f/sub/out",
            "--out {t}/f/sub/out: cannot create the folder: {t}/f is a file",
        ),
        (
            lambda t: (t / "out" / "simulate.png").mkdir(parents=True),
            "out",
            "--out {t}/out/simulate.png: is a folder, not a file",
        ),
    ],
    ids=["existing-file", "under-a-file", "png-is-a-folder"],
)
def test_an_out_that_cannot_be_written_is_refused_before_the_run(
    setup: object,
    out: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    setup(tmp_path)  # type: ignore[operator]
    before = files(tmp_path)
    monkeypatch.setattr(simulate_cli, "simulate", lambda *a: pytest.fail("the run started"))
    for extra in ([], ["--no-plot"]):
        code, line, _ = simulate([*SMALL, *extra, "--out", str(tmp_path / out)], capsys)
        assert code == 2 and line == PREFIX + message.format(t=tmp_path)
        assert files(tmp_path) == before


@pytest.mark.usefixtures("permissions")
def test_a_read_only_folder_or_file_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    before = old_set(out)
    (out / "simulate.json").chmod(0o444)
    code, line, _ = simulate([*SMALL, "--out", str(out)], capsys)
    assert code == 2 and line == f"{PREFIX}--out {out}/simulate.json: the file is read-only"
    (out / "simulate.json").chmod(0o644)
    out.chmod(0o555)
    try:
        code, line, _ = simulate([*SMALL, "--out", str(out)], capsys)
        assert code == 2 and line == f"{PREFIX}--out {out}: the folder is not writable"
        code, line, _ = simulate([*SMALL, "--out", str(out / "new")], capsys)
        assert code == 2 and line.endswith(f"cannot create the folder: {out} is not writable")
    finally:
        out.chmod(0o755)
    assert files(out) == before


@pytest.mark.parametrize("failing", ["simulate.png", "simulate.txt", "simulate.json"])
def test_a_file_that_cannot_be_written_at_the_end_leaves_the_previous_set(
    failing: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    before = old_set(out)
    write_bytes = Path.write_bytes

    def full_disk(path: Path, data: bytes) -> int:
        if path.name.startswith(f".{failing}."):
            write_bytes(path, data[:10])  # a partial temporary file, then the disk is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write_bytes(path, data)

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    code, line, _ = simulate([*SMALL, "--out", str(out)], capsys)
    assert code == 1
    assert line == f"{PREFIX}cannot write {out / failing}: No space left on device; nothing written"
    assert files(out) == before  # no temporary file either


def test_a_failure_into_a_new_folder_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def full_disk(path: Path, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    code, _, _ = simulate([*SMALL, "--no-plot", "--out", str(tmp_path / "a" / "b")], capsys)
    assert code == 1 and list(tmp_path.iterdir()) == []


def test_a_new_nested_folder_gets_exactly_the_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "a" / "b"
    code, line, _ = simulate([*SMALL, "--out", str(out)], capsys)
    assert code == 0 and line.startswith("wrote ")
    assert set(files(tmp_path)) == {f"a/b/{name}" for name in SET}
    assert oct(out.joinpath("simulate.json").stat().st_mode & 0o777) != oct(0o600)  # umask's


def test_a_folder_used_before_holds_exactly_the_new_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = old_set(tmp_path)
    (tmp_path / "notes.md").write_text("mine")  # not the command's: left alone
    code, _, _ = simulate([*SMALL, "--out", str(tmp_path)], capsys)
    after = files(tmp_path)
    assert code == 0 and set(after) == SET | {"notes.md"}
    assert all(after[name] != before[name] for name in SET)
    code, _, _ = simulate([*SMALL, "--no-plot", "--out", str(tmp_path)], capsys)
    assert code == 0 and set(files(tmp_path)) == {"simulate.json", "simulate.txt", "notes.md"}


def run_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "junction", "simulate", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_end_to_end_a_huge_workload_exits_2_at_once_and_a_stale_png_goes(tmp_path: Path) -> None:
    started = time.perf_counter()
    done = run_cli("--sessions", "1000000000", "--out", "out", cwd=tmp_path)
    assert time.perf_counter() - started < 20  # the interpreter's start, not a workload
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(PREFIX + "the simulation would need about")
    assert not (tmp_path / "out").exists()
    old_set(tmp_path / "out")
    done = run_cli(*SMALL, "--no-plot", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert set(files(tmp_path / "out")) == {"simulate.json", "simulate.txt"}
    assert done.stdout == (tmp_path / "out" / "simulate.txt").read_text()


def test_end_to_end_out_naming_a_file_exits_2(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("x")
    done = run_cli(*SMALL, "--out", "taken", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == f"{PREFIX}--out taken: is a file, not a folder"
    assert done.stdout == "" and (tmp_path / "taken").read_text() == "x"
