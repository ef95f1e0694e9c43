"""The worker shares nothing with ``fuzz``'s parent that turns a violation into a pass.

Each attack of ``attacks.py`` runs in a policy's import, on the real command:
a ``sitecustomize.py`` and a ``rich.py`` beside the policy, tracing the
parent, opening its standard output and memory, stopping it, and a child
that leaves the session with a clean environment, forks on and rewrites the
report after the run. The run must fail (exit 1), within ``--seconds`` + 5 s
(these policies answer at once), leave no process behind and its report intact.
Linux only: what other platforms contain is stated in docs/fuzzing.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from junction.reference.isolation import Limits, remote_policy
from tests.groups import WALL_CLOCK
from tests.isolation import attacks

ROOT = Path(__file__).resolve().parents[2]
SECONDS, CALL_SECONDS, SLACK = 4.0, 2.0, 5.0
pytestmark = [
    WALL_CLOCK,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux containment"),
]


# A caller whose kernel gives it no user namespace (docs/fuzzing.md's third column):
# as uid 1000 without capabilities, in a namespace allowed no namespace below it.
NO_NAMESPACES = (
    "unshare", "--user", "--map-root-user", "--",
    "sh", "-c", 'echo 1 > /proc/sys/user/max_user_namespaces && exec "$@"', "sh",
    "unshare", "--user", "--map-user=1000", "--map-group=1000", "--",
)  # fmt: skip


def _without_namespaces() -> tuple[str, ...]:
    """:data:`NO_NAMESPACES`, once seen to refuse a namespace; skip where it cannot be set up."""
    if shutil.which("unshare") is None:
        pytest.skip("no util-linux unshare to take user namespaces away")
    probe = [*NO_NAMESPACES, "sh", "-c", "id -u; unshare --user true"]
    done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    if done.stdout.split() != ["1000"] or "unshare failed" not in done.stderr:
        pytest.skip(f"cannot take user namespaces away here: {done.stderr.strip()[-200:]}")
    if _landlock_abi() < 6:  # docs/fuzzing.md: SIGSTOP is contained there by Landlock alone
        pytest.skip("Landlock below ABI 6: a stopped parent is not contained without namespaces")
    return NO_NAMESPACES


def _fuzz(*argv: str, wrapper: tuple[str, ...] = ()) -> tuple[int, str, str]:
    limit = SECONDS + SLACK
    started = time.monotonic()
    limits = ["--seconds", str(SECONDS), "--call-seconds", str(CALL_SECONDS)]
    done = subprocess.run(
        [*wrapper, sys.executable, "-m", "junction", "fuzz", *limits, "--promise", "replay", *argv],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # the caller's own path only
        capture_output=True,  # a child holding the output open blocks this
        text=True,
        timeout=limit + 30,
    )
    elapsed = time.monotonic() - started
    assert elapsed < limit, f"took {elapsed:.1f} s, more than {limit} s"
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def _escapees() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and b"junction-escapee" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


def _landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))


@pytest.mark.parametrize("namespaces", ["allowed", "unavailable"])
def test_a_policy_that_attacks_its_parent_still_fails_and_leaves_nothing(
    namespaces: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapper = _without_namespaces() if namespaces == "unavailable" else ()
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "attacker.py").write_text(attacks.ATTACKER, encoding="utf-8")
    log, report = tmp_path / "attacks.jsonl", tmp_path / "report.json"
    monkeypatch.setenv("ATTACK_LOG", str(log))
    monkeypatch.setenv("ATTACK_REPORT", str(report))
    outside = Path("/var/tmp") / f"junction-attack-{os.getpid()}"  # not beneath /tmp
    monkeypatch.setenv("ATTACK_OUTSIDE", str(outside))
    try:
        code, out, _ = _fuzz(
            "--policy", "attacker:Policy", "--policy-path", str(policies), "--json", str(report),
            wrapper=wrapper,
        )  # fmt: skip
        assert code == 1, out
        time.sleep(2)  # an escapee that survived rewrites the report by now
        assert json.loads(report.read_text())["passed"] is False
        assert not _escapees(), "a process the policy started outlived the run"
    finally:
        outside.unlink(missing_ok=True)
        for pid in _escapees():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    outcomes = {line["attack"]: line for line in map(json.loads, log.read_text().splitlines())}
    assert isinstance(outcomes["found"]["outcome"], int)  # the attacker found the parent
    landlock = Path("/sys/kernel/security/landlock").exists() or _landlock_abi() > 0
    attempts = ("ptrace", "stdout", "memory", "environ", "stop") + (("write",) if landlock else ())
    for attack in attempts:
        assert outcomes[attack]["outcome"] != "done", outcomes[attack]
    limits = outcomes["limits"]
    assert limits["no_new_privs"] == "1" and int(limits["capabilities"], 16) == 0, limits
    assert 0 < limits["open_files"] <= 256 and limits["address_space"] > 0, limits
    assert limits["cpu"] > 0, limits
    if wrapper:  # contained above without a namespace of its own
        assert limits["pid"] != 1, limits


def test_modules_planted_beside_the_policy_run_in_the_worker_only(tmp_path: Path) -> None:
    # sitecustomize runs at any interpreter's start-up, rich where fuzz draws its
    # progress: on the parent's path either would exit 0 before any verdict.
    (tmp_path / "sitecustomize.py").write_text(attacks.PLANTED, encoding="utf-8")
    (tmp_path / "rich.py").write_text(attacks.PLANTED, encoding="utf-8")
    (tmp_path / "violates.py").write_text(
        "from junction.reference.policies.vllm import VllmPolicy as Policy\n", encoding="utf-8"
    )
    code, out, err = _fuzz("--policy", "violates:Policy", "--policy-path", str(tmp_path))
    assert code == 1, out
    assert err.strip().splitlines()[-1].startswith("fuzz: replay violated: ")


def test_a_policy_path_that_is_no_folder_is_refused(tmp_path: Path) -> None:
    code, out, err = _fuzz("--policy", "x:Policy", "--policy-path", str(tmp_path / "missing"))
    assert code == 2 and out == ""
    assert "argument --policy-path: not a folder: " in err


def test_the_caller_is_hidden_while_a_worker_runs_and_only_then() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    before = libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
    limits = Limits(30.0, 10.0)
    with remote_policy("junction", limits, time.monotonic() + 30) as remote:
        assert remote is not None
        assert libc.prctl(3, 0, 0, 0, 0) == 0  # no same-user process may trace it now
    assert libc.prctl(3, 0, 0, 0, 0) == before
