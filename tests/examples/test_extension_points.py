"""docs/architecture.md's walk-throughs: a policy and a trace format, each added in one module.

Each test adds one row where the walk-through says (the policy registry's
``POLICIES``, the trace formats' ``FORMATS``), touching nothing else, and
checks that every command reading that extension point now has it. The
commands run in this process (``--jobs 1``), where the added row is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from junction.reference.cli.main import main
from junction.reference.harness import findings
from junction.reference.policies import registry
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.registry import PolicyEntry, Role, policy_names, resolve_policy
from junction.reference.simulator.parallel import TraceSource
from junction.reference.workloads import tracefile
from junction.reference.workloads.trace import TraceError, TraceRequest, decode_line
from junction.reference.workloads.tracefile import TraceFormat, detect_format
from tests.cli.in_process import run_in_process

SMALL = ["--sessions", "3", "--turns", "2", "--system-prompt", "200", "--jobs", "1"]


class ReplayOnlyPolicy(JunctionPolicy):
    """A walk-through policy: the default's, with the junction never pinned."""

    name = "replay-only"

    def junction(self, request: object) -> int:
        return 0


@pytest.fixture
def added_policy(monkeypatch: pytest.MonkeyPatch) -> str:
    entry = PolicyEntry(
        "replay-only", ReplayOnlyPolicy, Role.RETENTION, "the junction never pinned"
    )
    monkeypatch.setattr(registry, "POLICIES", (*registry.POLICIES, entry))
    return entry.name


def test_adding_a_policy_is_one_row_of_the_registry(
    added_policy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert resolve_policy(added_policy).name == "replay-only"  # fuzz, replay, the harness
    assert added_policy in policy_names(Role.RETENTION)
    simulated = run_in_process(
        main,
        ["simulate", *SMALL, "--policy", added_policy, "--out", str(tmp_path / "s"), "--no-plot"],
        capsys,
    )
    assert simulated.code == 0, simulated.err
    assert "replay-only R=0" in simulated.out  # a row of simulate's table
    swept = run_in_process(
        main,
        [
            "sweep",
            *SMALL,
            "--policy",
            added_policy,
            "--intervals",
            "0",
            "--out",
            str(tmp_path / "w"),
        ],
        capsys,
    )
    assert swept.code == 0, swept.err
    runs = json.loads((tmp_path / "w" / "sweep.json").read_text())["runs"]
    assert {run["policy"] for run in runs} == {"replay-only"}


def test_findings_judges_the_registrys_compatibility_policies() -> None:
    assert findings.POLICIES == policy_names(Role.COMPATIBILITY) == ("vllm-0.33", "vllm-pr47782")


def test_a_users_module_attribute_policy_is_a_row_of_simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"{__name__}:ReplayOnlyPolicy"
    ended = run_in_process(
        main, ["simulate", *SMALL, "--policy", name, "--out", str(tmp_path), "--no-plot"], capsys
    )
    assert ended.code == 0, ended.err
    assert f"{name} R=0" in ended.out
    argv = ["simulate", *SMALL, "--policy", "nosuch:Nothing", "--out", str(tmp_path / "no")]
    refused = run_in_process(main, argv, capsys)
    assert (
        refused.code == 2
        and "--policy nosuch:Nothing: policy 'nosuch:Nothing'" in refused.last_line
    )


def _vllm_bench_lines(text: str, source: str) -> list[TraceRequest]:
    """A walk-through format: ``{"prompt_token_ids": [...], "max_tokens": n}`` per line."""
    requests = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            record = decode_line(source, number, line)
            ids = record.get("prompt_token_ids")
            if not isinstance(ids, list) or not ids:
                raise TraceError(source, number, "prompt_token_ids", "expected a non-empty list")
            requests.append(
                TraceRequest(number, tuple(ids), int(record.get("max_tokens", 16)), None)
            )
    return requests


def _has_prompt_token_ids(record: Mapping[str, object]) -> bool:
    return "prompt_token_ids" in record


@pytest.fixture
def added_format(monkeypatch: pytest.MonkeyPatch) -> TraceFormat:
    new = TraceFormat(
        "vllm-bench", _has_prompt_token_ids, _vllm_bench_lines, "token ids as prompt_token_ids"
    )
    monkeypatch.setattr(tracefile, "FORMATS", (new, *tracefile.FORMATS))
    return new


def test_adding_a_trace_format_is_one_record(
    added_format: TraceFormat, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "bench.jsonl"
    lines = [{"prompt_token_ids": list(range(1, 40 + i)), "max_tokens": 4} for i in range(6)]
    trace.write_text("\n".join(json.dumps(line) for line in lines))
    assert detect_format(trace.read_text(), str(trace)) is added_format
    assert TraceSource(str(trace)).load().requests == 6  # the sweep's workers
    ended = run_in_process(
        main,
        [
            "simulate",
            "--trace",
            str(trace),
            "--jobs",
            "1",
            "--out",
            str(tmp_path / "o"),
            "--no-plot",
        ],
        capsys,
    )
    assert ended.code == 0, ended.err  # simulate's size check and run
    report = json.loads((tmp_path / "o" / "simulate.json").read_text())
    assert report["workload"]["requests"] == 6
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt_token_ids": []}\n')
    argv = ["simulate", "--trace", str(bad), "--jobs", "1", "--out", str(tmp_path / "no")]
    refused = run_in_process(main, argv, capsys)
    assert (
        refused.code == 2
        and "field 'prompt_token_ids': expected a non-empty list" in refused.last_line
    )
