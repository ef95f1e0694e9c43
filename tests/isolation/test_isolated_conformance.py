"""``run_conformance(spec, isolated=True)`` as a library caller uses it: no command line.

The policy's code runs in a worker process and every check in this one, so
a policy that patches the harness's checks where it runs still fails, the
policy is never loaded here, a call past ``call_seconds`` is a ``timeout``,
and nothing the worker started outlives the run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from junction.core import InvalidArgument
from junction.reference.engine.policy import PolicyError
from junction.reference.harness import Promise, Verdict, promises, run_conformance, runner
from junction.reference.isolation import CALL_SECONDS
from junction.reference.policies import registry
from junction.reference.policies.builtin import JunctionPolicy
from tests.groups import WALL_CLOCK

# vLLM 0.33.0's policy breaks the replay promise within the first examples; this one
# also records where it runs and patches the harness's checks there to find nothing.
PATCHES_THE_CHECKS = """
import os
from junction.reference.policies.vllm import VllmPolicy


class Policy(VllmPolicy):
    def __init__(self):
        super().__init__()
        with open(os.environ["ISOLATED_PIDS"], "a") as pids:
            pids.write(f"{os.readlink('/proc/self')}\\n")  # its pid outside the namespace
        from junction.reference.harness import promises, runner

        def nothing_wrong(*args, **kwargs):
            return None

        runner.check = nothing_wrong
        promises.check = nothing_wrong
"""

SPLITS_SLOWLY = """
import time
from junction.reference.policies.builtin import JunctionPolicy


class Policy(JunctionPolicy):
    def split(self, geometry, request, num_new_tokens, budget):
        time.sleep(1000)
        return 0
"""


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> str:
    """``name:Policy`` from a module file in ``tmp_path``, importable by the worker."""
    (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))  # the worker imports what this process can
    return f"{name}:Policy"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_violating_policy_that_patches_the_checks_is_judged_in_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("ISOLATED_PIDS", str(pids))
    spec = _module(tmp_path, monkeypatch, "patches_the_checks", PATCHES_THE_CHECKS)
    check = promises.check
    report = run_conformance(spec, isolated=True, seconds=30, call_seconds=5, promises=["replay"])
    (verdict,) = report.verdicts
    assert verdict.status is Verdict.VIOLATED, report.table()
    assert verdict.counterexample is not None and verdict.counterexample.promise is Promise.REPLAY
    assert report.policy == "vllm-0.33" and report.call_seconds == 5
    assert promises.check is check  # the patch landed in the worker, not here
    started = [int(line) for line in pids.read_text().split()]
    assert started and os.getpid() not in started
    if Path("/proc/self/stat").exists():
        assert not [pid for pid in started if _alive(pid)], "the worker outlived the run"


def test_the_built_in_policy_is_loaded_in_the_worker_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(name: str) -> JunctionPolicy:
        raise AssertionError(f"{name!r} was loaded in the caller's process")

    monkeypatch.setattr(registry, "resolve_policy", refuse)
    monkeypatch.setattr(runner, "resolve_policy", refuse)
    report = run_conformance("junction", isolated=True, examples=10, promises=["replay", "split"])
    assert report.passed, report.table()
    assert [v.examples for v in report.verdicts] == [10, 10]
    assert report.policy == "junction" and report.call_seconds == CALL_SECONDS


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("raise SystemExit\n", "policy 'exits:Policy': load: raised SystemExit"),
        ("import os\nos._exit(3)\n", "load: the process loading it ended (exit status 3)"),
        ("Policy = 3\n", "policy 'exits:Policy': resolve: 3 does not implement the Policy"),
    ],
)
def test_a_policy_that_cannot_be_loaded_is_a_policy_error(
    body: str, problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _module(tmp_path, monkeypatch, "exits", body)
    with pytest.raises(PolicyError) as raised:
        run_conformance(spec, isolated=True, seconds=10)
    assert problem in str(raised.value)


@WALL_CLOCK
def test_a_call_past_call_seconds_is_a_timeout_within_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _module(tmp_path, monkeypatch, "splits_slowly", SPLITS_SLOWLY)
    started = time.monotonic()
    report = run_conformance(spec, isolated=True, seconds=3, call_seconds=0.5, promises=["split"])
    assert time.monotonic() - started < 3 + 3  # the deadline, a second of grace, start-up
    (verdict,) = report.verdicts
    assert verdict.status is Verdict.TIMEOUT
    assert "did not return within 0.5 s" in verdict.error


def test_what_isolation_cannot_take_is_refused_naming_the_argument() -> None:
    with pytest.raises(InvalidArgument, match=r"^policy=.*isolated=True needs a spec"):
        run_conformance(JunctionPolicy(), isolated=True, examples=1)
    with pytest.raises(InvalidArgument, match=r"^call_seconds=1: a limit per call needs"):
        run_conformance("junction", call_seconds=1, examples=1)
    for bad in (0, -1.0, float("inf"), float("nan")):
        with pytest.raises(InvalidArgument, match=r"^call_seconds=.*finite number of seconds"):
            run_conformance("junction", isolated=True, call_seconds=bad, examples=1)


def test_a_spec_runs_in_this_process_too() -> None:
    report = run_conformance("junction", examples=5, promises=["replay"])
    assert report.passed and report.policy == "junction" and report.call_seconds is None
