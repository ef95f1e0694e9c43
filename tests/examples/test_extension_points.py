"""docs/architecture.md's walk-throughs: a policy, a trace format and an audited engine.

Each test adds one row where the walk-through says (the policy registry's
``POLICIES``, the trace formats' ``FORMATS``, the audited engines'
``ENGINES``), touching nothing else, and checks that every command and test
rule reading that extension point now has it. The commands run in this
process (``--jobs 1``), where the added row is.
"""

from __future__ import annotations

import importlib.metadata
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path

import attrs
import pytest

from junction.audit import engines
from junction.audit.record import AuditedEngine
from junction.command import dispatch as main
from junction.core import InvalidArgument
from junction.reference.harness import findings
from junction.reference.policies import registry
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.registry import PolicyEntry, Role, policy_names, resolve_policy
from junction.reference.simulator.parallel import TraceSource
from junction.reference.workloads import tracefile
from junction.reference.workloads.trace import TraceError, TraceRequest, decode_line
from junction.reference.workloads.tracefile import TraceFormat, detect_format
from junction.upstream.pins import Pin, public_version
from tests import conftest
from tests.audit.installed import skip_missing_engines
from tests.cli.in_process import run_in_process


def audit(argv: list[str]) -> int:
    """``junction audit ARGV``."""
    return main(["audit", *argv])


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


def _toy_findings() -> str:
    """A walk-through engine's docs/findings.md section, markers included."""
    return f"{TOY.begin}\n## Toy 1.0 audit\n\nNo departures.\n{TOY.end}\n"


# A walk-through engine: in the repository, its subpackage's ``__init__`` (audit/toy/).
TOY = AuditedEngine(
    name="toy",
    pin=Pin("attrs", "Toy", public_version(importlib.metadata.version("attrs")), "audit-toy"),
    tests="tests/audit/toy/",
    findings=_toy_findings,
)


@pytest.fixture
def added_engine(monkeypatch: pytest.MonkeyPatch) -> AuditedEngine:
    monkeypatch.setattr(engines, "ENGINES", (*engines.ENGINES, TOY))
    return TOY


def test_adding_an_audited_engine_is_one_record_and_one_row(
    added_engine: AuditedEngine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = run_in_process(audit, ["engines"], capsys)
    assert listed.code == 0
    version = added_engine.pin.version
    toy_row = f"toy: Toy {version} (extra `audit-toy`, tests tests/audit/toy/, --require-toy): "
    assert listed.out.splitlines()[-1] == toy_row + "installed"
    helped = run_in_process(audit, ["findings", "--help"], capsys)
    assert "{vllm,sglang,toy}" in helped.out  # --engine's choices
    out = tmp_path / "findings.md"
    out.write_text("# policies\n")
    written = run_in_process(audit, ["findings", "--engine", "toy", "--write", str(out)], capsys)
    assert (written.code, written.out) == (0, f"wrote the Toy audit section of {out}\n")
    assert out.read_text() == "# policies\n\n" + _toy_findings()
    # The policy findings (junction findings) keep its section.
    kept = out.read_text().split("\n", 1)[1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(findings, "findings_markdown", lambda *a: "# new policies\n")
        findings.write_findings(out, 1, 0)
    assert out.read_text() == "# new policies\n" + kept


class _Options:
    """What the tests' collection rule reads of pytest: the options given, the items."""

    def __init__(self, given: set[str]) -> None:
        self.given = given
        self.added: list[str] = []

    def getoption(self, name: str) -> bool:
        return name in self.given

    def getgroup(self, name: str) -> _Options:
        return self

    def addoption(self, name: str, **kwargs: object) -> None:
        self.added.append(name)


@attrs.define
class _Item:
    nodeid: str
    markers: list[pytest.MarkDecorator] = attrs.Factory(list)

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.markers.append(marker)


def test_an_added_engine_gets_its_require_option_and_skip_rule(
    added_engine: AuditedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = _Options(set())
    conftest.pytest_addoption(options)  # type: ignore[arg-type]
    assert "--require-toy" in options.added
    # Where the toy is missing, its folder's tests skip with the reason, or fail under the option.
    missing = attrs.evolve(added_engine, pin=attrs.evolve(added_engine.pin, distribution="no-toy"))
    monkeypatch.setattr(engines, "ENGINES", (missing,))
    items = [_Item("tests/audit/toy/test_toy.py::test_it"), _Item("tests/core/test_x.py::test")]
    skip_missing_engines(options, items)  # type: ignore[arg-type]
    assert [len(item.markers) for item in items] == [1, 0]
    reason = items[0].markers[0].kwargs["reason"]
    assert reason.startswith("Toy audit: Toy ") and "run `make audit-toy-setup`" in reason
    with pytest.raises(pytest.UsageError, match="--require-toy is given but Toy"):
        skip_missing_engines(_Options({"--require-toy"}), items)  # type: ignore[arg-type]
    with pytest.raises(pytest.UsageError, match="--require-toy is given but Toy"):
        skip_missing_engines(_Options({"--require-all"}), items)  # type: ignore[arg-type]


def test_an_engines_name_must_make_its_markers() -> None:
    # reference.harness.findings keeps a section whose markers match [a-z0-9-]+.
    with pytest.raises(InvalidArgument, match="name='Toy': an engine's name is lowercase"):
        attrs.evolve(TOY, name="Toy")


def test_the_engines_compatibility_policies_are_the_registrys() -> None:
    named = [name for engine in engines.ENGINES for name in engine.policies]
    assert sorted(named) == sorted(policy_names(Role.COMPATIBILITY))


def test_every_engine_row_names_its_extra_pin_and_tests() -> None:
    root = Path(__file__).resolve().parents[2]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    for engine in engines.ENGINES:
        pin = engine.pin
        assert f"{pin.distribution}=={pin.version}" in extras[pin.extra], engine.name
        assert (root / engine.tests).is_dir(), engine.name
