"""An output set is one unit: a lock per output, a journal against a kill, no leftovers.

Each failure here was issue 24's: a SIGKILL during the commit left one run's
JSON beside another's text and stray temporary files; two runs into one
``--out`` interleaved; an ``--out`` on a ``/sys``-like file system passed the
check (its mode bits say writable) and failed at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from junction.command import dispatch as main
from junction.reference.cli import outputs
from tests.cli.in_process import run_in_process

ROOT = Path(__file__).resolve().parents[2]


def _python(script: str, **popen: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,  # type: ignore[call-overload]
    )


def test_a_second_run_into_a_locked_output_is_refused_before_it_starts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    holder = _python(
        f"""
        import sys, time
        from pathlib import Path
        from junction.reference.cli import outputs
        outputs.check_folder("--out", Path({str(out)!r}), ["a.json"])
        print("locked", flush=True)
        time.sleep(60)
        """
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(
            outputs.OutputError, match=rf"another run is writing into it \(pid {holder.pid}\)"
        ):
            outputs.check_folder("--out", out, ["a.json"])
    finally:
        holder.kill()
        holder.communicate()
    outputs.check_folder("--out", out, ["a.json"])  # the lock died with its holder
    outputs.commit(out, {"a.json": b"{}"})  # and a commit releases this process's


def test_simulate_into_an_output_another_run_holds_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    holder = _python(
        f"""
        import time
        from pathlib import Path
        from junction.reference.cli import outputs
        outputs.check_folder("--out", Path({str(out)!r}), [])
        print("locked", flush=True)
        time.sleep(60)
        """
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        ended = run_in_process(main, ["simulate", "--sessions", "2", "--out", str(out)], capsys)
    finally:
        holder.kill()
        holder.communicate()
    assert ended.code == 2 and "another run is writing into it" in ended.last_line
    assert not out.exists() or not any(out.iterdir())


def _killed_after(replaces: int, commit: str) -> None:
    """Run ``commit`` (a call of ``outputs``) in a child that dies, as SIGKILL would,
    right after its ``replaces``-th ``os.replace``."""
    killed = _python(
        f"""
        import os
        from pathlib import Path
        from junction.reference.cli import outputs
        done = []
        real = os.replace
        def replace(source, target):
            real(source, target)
            done.append(target)
            if len(done) == {replaces}:
                os._exit(9)  # nothing after this runs
        os.replace = replace
        {commit}
        """
    )
    killed.communicate(timeout=60)
    assert killed.returncode == 9


def test_a_commit_killed_between_its_moves_is_finished_by_the_next_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_bytes(b"old json")
    (out / "run.txt").write_bytes(b"old text")
    (out / "notes.md").write_bytes(b"the user's own file")
    # The journal, then one file (run.txt is moved first).
    files = {"run.txt": b"new text", "run.json": b"new json"}
    _killed_after(2, f"outputs.commit(Path({str(out)!r}), {files!r})")
    assert any(p.name.startswith(outputs.JOURNAL_PREFIX) for p in out.iterdir())  # mid-commit
    mixed = {p.name: p.read_bytes() for p in out.iterdir() if p.name.startswith("run.")}
    assert mixed == {"run.txt": b"new text", "run.json": b"old json"}  # what a reader saw
    outputs.check_folder("--out", out, ["run.json", "run.txt"])  # the next run
    outputs.commit(out, {"other.json": b"{}"})
    assert sorted(p.name for p in out.iterdir()) == [
        "notes.md",
        "other.json",
        "run.json",
        "run.txt",
    ]
    assert (out / "run.json").read_bytes() == b"new json"
    assert (out / "run.txt").read_bytes() == b"new text"


@pytest.mark.parametrize(
    ("replaces", "after"),
    [(2, "old"), (4, "new")],
    ids=["killed-before-the-decision", "killed-between-the-folders-moves"],
)
def test_a_set_over_two_folders_killed_mid_commit_ends_old_or_new_in_both(
    replaces: int, after: str, tmp_path: Path
) -> None:
    # os.replace's order: the journal in each folder, the decision, then each folder's move.
    json_file, plot = tmp_path / "a" / "curve.json", tmp_path / "b" / "curve.png"
    for path in (json_file, plot):
        path.parent.mkdir()
        path.write_bytes(b"old")
    files = {str(json_file): b"new", str(plot): b"new"}
    _killed_after(replaces, f"outputs.commit_files({{Path(k): v for k, v in {files!r}.items()}})")
    outputs.check_file("--plot", plot)  # the next runs, the second folder first
    outputs.check_file("--json", json_file)
    assert (json_file.read_bytes(), plot.read_bytes()) == (after.encode(), after.encode())
    assert sorted(p.name for p in tmp_path.glob("*/*")) == ["curve.json", "curve.png"]
    assert sorted(p.name for p in tmp_path.glob("*/.*")) == []  # no journal, decision, temp


@pytest.mark.parametrize("failing", ["curve.json", "curve.png"])
def test_a_set_over_two_folders_whose_journal_fails_in_either_moves_nothing(
    failing: str, tmp_path: Path
) -> None:
    json_file, plot = tmp_path / "a" / "curve.json", tmp_path / "b" / "curve.png"
    target = json_file if failing == json_file.name else plot
    for path in (json_file, plot):
        path.parent.mkdir()
        path.write_bytes(b"old")
    real = outputs._journal

    def journal(folder: Path, names: list[str]) -> Path:
        if folder == target.parent:  # this folder's journal cannot be written
            raise OSError(28, "No space left on device")
        return real(folder, names)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(outputs, "_journal", journal)
        with pytest.raises(outputs.OutputError, match=f"cannot write {target}: No space"):
            outputs.commit_files({json_file: b"new", plot: b"new"})
    assert (json_file.read_bytes(), plot.read_bytes()) == (b"old", b"old")
    assert sorted(p.name for p in tmp_path.glob("*/*")) == ["curve.json", "curve.png"]
    assert sorted(p.name for p in tmp_path.glob("*/.*")) == []


def test_leftover_temporary_files_of_a_killed_run_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    leftovers = [
        ".run.json.0123abcd.tmp",
        ".run.txt.deadbeef.tmp",
        "..junction-commit-0123456789ab.json.0badf00d.tmp",
    ]
    for name in leftovers:
        (out / name).write_bytes(b"half")
    (out / ".run.json.mine.tmp").write_bytes(b"not ours: another pattern")
    outputs.commit(out, {"run.json": b"{}", "run.txt": b""})
    assert sorted(p.name for p in out.iterdir()) == [".run.json.mine.tmp", "run.json", "run.txt"]


@pytest.mark.skipif(
    not (Path("/sys/kernel").is_dir() and os.access("/sys/kernel", os.W_OK)),
    reason="needs a /sys whose mode bits say writable (root on Linux)",
)
@pytest.mark.parametrize("where", ["/sys/kernel/junction-out", "/sys/kernel"])
def test_an_output_on_a_sys_like_file_system_is_refused_before_the_run(where: str) -> None:
    with pytest.raises(outputs.OutputError, match="not writable"):
        outputs.check_folder("--out", Path(where), ["simulate.json"])


def test_end_to_end_simulate_into_sys_exits_2_at_once(tmp_path: Path) -> None:
    if not os.access("/sys/kernel", os.W_OK):
        pytest.skip("needs a /sys whose mode bits say writable (root on Linux)")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "junction", "simulate", "--out", "/sys/kernel/x"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "not writable" in done.stderr.strip().splitlines()[-1]
    assert time.monotonic() - started < 10
