"""SIGTERM and SIGHUP end a command as Ctrl-C does: one line, 128 + the signal, nothing left.

``timeout``, a CI cancel and ``docker stop`` send SIGTERM to the command
alone, not to its process group as a terminal's Ctrl-C does; before, the
command died at once and its ``--jobs`` workers ran on at full CPU. Each
case marks the command's environment with a token (inherited by every
process it starts), signals it mid-run, and then looks for the token.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.groups import WALL_CLOCK

ROOT = Path(__file__).resolve().parents[2]
MARK = "JUNCTION_TERMINATION_TEST"

pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc"),
    WALL_CLOCK,
]


def _marked(token: str) -> list[int]:
    needle = f"{MARK}={token}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if needle not in Path(f"/proc/{name}/environ").read_bytes():
                continue
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(name))
    return found


def _signal_mid_run(
    argv: list[str], signum: int, workers: int, cwd: Path, settle: float = 0.5
) -> tuple[int, str, str, list[int]]:
    """Start the command, wait for ``workers`` processes of its own and ``settle``
    seconds, signal it, wait for it."""
    token = secrets.token_hex(8)
    env = {**os.environ, "PYTHONPATH": str(ROOT), MARK: token}
    command = [sys.executable, "-m", "junction", *argv]
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while len(_marked(token)) < 1 + workers and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    time.sleep(settle)
    process.send_signal(signum)
    try:
        out, err = process.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # the command, or a process holding its pipes, lives on
        left = _marked(token)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"5 s after the signal, processes of the run were alive: {left}")
    ended = time.monotonic()
    while _marked(token) and time.monotonic() < ended + 5:
        time.sleep(0.1)
    left = _marked(token)
    for pid in left:  # the test's own processes: none may outlive it
        os.kill(pid, signal.SIGKILL)
    return process.returncode, out.decode(), err.decode(), left


@pytest.mark.parametrize(
    ("signum", "name", "processes", "settle"),
    [
        (signal.SIGTERM, "SIGTERM", 2, 0.5),
        (signal.SIGHUP, "SIGHUP", 2, 0.5),
        # As soon as the first process of its own (the forkserver) is up: the workers start.
        (signal.SIGTERM, "SIGTERM", 1, 0.0),
    ],
)
def test_a_signal_to_simulate_jobs_2_ends_every_worker_and_keeps_the_previous_set(
    signum: int, name: str, processes: int, settle: float, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    previous = {"simulate.json": b'{"previous": true}\n', "simulate.txt": b"previous\n"}
    for file, data in previous.items():
        (out / file).write_bytes(data)
    argv = ["simulate", "--sessions", "500", "--no-plot", "--jobs", "2", "--out", str(out)]
    code, stdout, stderr, left = _signal_mid_run(argv, signum, processes, tmp_path, settle)
    assert not left, f"processes of the run still alive 5 s after it ended: {left}"
    assert code == 128 + signum and stdout == ""
    assert stderr.strip().splitlines()[-1] == f"terminated ({name})"
    assert "Traceback" not in stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == previous


def test_sigterm_ends_fuzz_and_its_policy_worker(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    argv = ["fuzz", "--seconds", "60", "--json", str(report)]
    code, stdout, stderr, left = _signal_mid_run(argv, signal.SIGTERM, 1, tmp_path)
    assert not left and code == 143 and stdout == ""
    assert stderr.strip().splitlines()[-1] == "terminated (SIGTERM)"
    assert not report.exists()


def _in_a_child(body: str) -> subprocess.CompletedProcess[str]:
    script = f"import os, signal, sys\nfrom junction.reference.cli import terminal\n{body}"
    return subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_every_entry_point_ends_on_a_termination_signal_with_one_line(
    signum: int, code: int
) -> None:
    body = f"""
def main():
    os.kill(os.getpid(), {int(signum)})
    return 0
sys.exit(terminal.interruptible(main))
"""
    done = _in_a_child(body)
    assert done.returncode == code and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [f"terminated ({signal.Signals(signum).name})"]


def test_a_signal_a_layer_swallowed_still_ends_the_command_as_terminated() -> None:
    body = """
def main():
    try:  # what a policy call does with anything it catches
        os.kill(os.getpid(), signal.SIGTERM)
    except BaseException:
        pass
    return 1
sys.exit(terminal.interruptible(main))
"""
    done = _in_a_child(body)
    assert done.returncode == 143 and done.stderr.strip() == "terminated (SIGTERM)"
