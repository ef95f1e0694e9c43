"""docs/findings.md's policy sections: the vLLM policies against the promises.

Runs the promise harness on ``vllm-0.33`` and ``vllm-pr47782`` in four
scopes (plain; EAGLE; partial hits; both), so one defect does not hide
another, and renders every promise each violates, the minimal counterexample
as a replayable scenario, and the upstream report it matches (or "new",
:mod:`.diagnosis`). Deterministic: the same seed and example count give the
same text. A last section runs promise 8 (the tier form) on the
``junction`` policy with vLLM 0.33.0's connector saving
(``TierSaving.VLLM_0_33``), so what it finds is the connector's choice, not
a vLLM policy's local defect. The section between the ``vllm-audit`` markers belongs to
``junction audit findings`` (vLLM's own functions) and is kept as
it is. The command line (``junction findings``) is
``junction.reference.cli.findings``; this layer only reports progress
through a callback, so it stays free of any terminal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import attrs

from junction.core import HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.tier import TierSaving
from junction.reference.policies.registry import Role, policy_names, resolve_policy

from .diagnosis import UNDIAGNOSED, diagnose, diagnose_connector
from .promise import Promise
from .report import PromiseVerdict
from .runner import run_conformance
from .verdict import Verdict

__all__ = ["POLICIES", "SCOPES", "findings_markdown", "total_examples", "write_findings"]

POLICIES = policy_names(Role.COMPATIBILITY)  # vllm-0.33, vllm-pr47782

# The harness stops a promise at its first violation, so each scope keeps one
# defect from hiding another. The EAGLE scope keeps to geometries whose Mamba
# block is L: there #54076 (chunks ending on the Mamba block, off L), which the
# plain scope already shows, cannot hide EAGLE's own findings.
SCOPES: dict[str, Callable[[HybridGeometry], bool]] = {
    "plain": lambda g: not g.use_eagle and not g.partial_hits,
    "EAGLE, one grid": lambda g: (
        g.use_eagle and not g.partial_hits and g.mamba_block_size == g.scheduler_block_size
    ),
    "partial hits": lambda g: not g.use_eagle and g.partial_hits,
    "EAGLE + partial hits": lambda g: g.use_eagle and g.partial_hits,
}

# The vLLM policies' sections judge the local promises; the tier form has its own.
# The next turn is promised only with decode checkpoints and the declared prefix
# only with declared checkpoints, which neither vLLM policy keeps (n/a for both):
# the next turn's vLLM finding is the audit's (docs/findings.md).
LOCAL_PROMISES = tuple(
    p for p in Promise if p not in (Promise.TIER, Promise.NEXT_TURN, Promise.DECLARED_PREFIX)
)

# Every engine's audit section (``junction.audit`` writes vLLM's and SGLang's
# between markers of this form); this module cannot import the audit's names.
_AUDIT_SECTION = re.compile(r"<!-- ([a-z0-9-]+)-audit:begin -->.*?<!-- \1-audit:end -->", re.DOTALL)

# ``progress(examples_done, status)``: examples since the last call, and what runs now.
Progress = Callable[[int, str], None]


def total_examples(examples: int) -> int:
    """Examples a full run checks at most (a promise stops at its first violation)."""
    return (len(POLICIES) * len(LOCAL_PROMISES) + 1) * len(SCOPES) * examples


def vllm_connector(config: EngineConfig) -> Engine:
    """An engine whose tier saving is vLLM 0.33.0's Mooncake store connector's."""
    return Engine(attrs.evolve(config, tier_saving=TierSaving.VLLM_0_33))


def _violated(
    name: str,
    scope: str,
    where: Callable[[HybridGeometry], bool],
    examples: int,
    seed: int,
    progress: Progress | None,
) -> tuple[PromiseVerdict, ...]:
    """One policy in one scope: the promises it breaks, with progress per batch."""
    done: dict[Promise, int] = {}

    def advance(promise: Promise, count: int, status: Verdict) -> None:
        if progress is not None:
            progress(count - done.get(promise, 0), f"{name}, {scope}: {promise.value}")
        done[promise] = count

    report = run_conformance(
        resolve_policy(name),
        examples=examples,
        seed=seed,
        promises=LOCAL_PROMISES,
        where=where,
        min_examples=1,  # a finding is a failure found; a narrow scope may hold few examples
        on_progress=advance,
    )
    if progress is not None:  # a promise that stopped early skips its remaining examples
        progress(len(LOCAL_PROMISES) * examples - sum(done.values()), f"{name}, {scope}")
    return report.violated


def _connector_section(examples: int, seed: int, progress: Progress | None) -> list[str]:
    """Promise 8 on the ``junction`` policy saving as vLLM 0.33.0's connector does."""
    rows: list[str] = []
    details: list[str] = []
    for scope, where in SCOPES.items():
        report = run_conformance(
            resolve_policy("junction"),
            examples=examples,
            seed=seed,
            promises=(Promise.TIER,),
            engine_factory=vllm_connector,
            where=where,
            min_examples=1,  # as above: only a failure found is a finding
        )
        if progress is not None:
            progress(examples, f"vLLM connector, {scope}: tier")
        for verdict in report.violated:
            violation = verdict.violation
            if violation is None or verdict.counterexample is None:
                raise ValueError(f"{scope}: violated promise {verdict.statement} has no scenario")
            rows.append(
                f"| {len(rows) + 1} | {scope} | {verdict.message} | "
                f"{diagnose_connector(violation)} |"
            )
            details += [
                f"**{len(rows)}.** {scope}: {verdict.message}",
                "",
                "```json",
                json.dumps(verdict.counterexample.to_json()),
                "```",
                "",
            ]
    lines = [
        "## The external tier: vLLM 0.33.0's connector saving",
        "",
        f"What is checked: promise {Promise.TIER.statement}. The `junction` policy runs "
        "locally (it keeps every promise, this one included with its own saving, "
        "`TierSaving.POLICY`); the "
        "tier saves what vLLM 0.33.0's Mooncake store connector saves "
        "(`TierSaving.VLLM_0_33`: the mask hears of the replay boundaries only; Mamba states "
        "go through the boundary-state hand-off, junction included). A second engine "
        "instance, with nothing local, looks the probe up over the tier and runs it. "
        "Replay with `replay(scenario, resolve_policy('junction'), vllm_connector)` "
        "(`junction.reference.harness.findings`).",
        "",
    ]
    if not rows:
        return [*lines, "No violation.", ""]
    return [
        *lines,
        "| # | scope | what went wrong | cause |",
        "| --- | --- | --- | --- |",
        *rows,
        "",
        "Minimal counterexamples:",
        "",
        *details,
    ]


def _section(name: str, examples: int, seed: int, progress: Progress | None) -> list[str]:
    rows: list[str] = []
    details: list[str] = []
    for scope, where in SCOPES.items():
        for verdict in _violated(name, scope, where, examples, seed, progress):
            message = verdict.message
            violation = verdict.violation
            diagnosis = UNDIAGNOSED if violation is None else diagnose(name, violation)
            rows.append(
                f"| {len(rows) + 1} | {scope} | {verdict.statement} | {message} | {diagnosis} |"
            )
            if verdict.counterexample is None:  # a violated verdict always carries one
                raise ValueError(f"{scope}: violated promise {verdict.statement} has no scenario")
            details += [
                f"**{len(rows)}.** {scope}, promise {verdict.statement}: {message}",
                "",
                "```json",
                json.dumps(verdict.counterexample.to_json()),
                "```",
                "",
            ]
    lines = [f"## `{name}`", ""]
    if not rows:
        return [*lines, "No promise violated.", ""]
    return [
        *lines,
        "| # | scope | promise | what went wrong | upstream |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
        "Minimal counterexamples:",
        "",
        *details,
    ]


def findings_markdown(examples: int = 150, seed: int = 0, progress: Progress | None = None) -> str:
    """The generated part of ``docs/findings.md`` (everything but the audit section)."""
    lines = [
        "# Findings: vLLM's retention formulas against the promises",
        "",
        "Generated by `make findings` (`junction findings "
        f"--examples {examples} --seed {seed}`): the promise harness "
        "(`junction.reference.harness`) on the `vllm-0.33` and `vllm-pr47782` policies in "
        "the reference engine, in four scopes so one defect does not hide another, "
        f"{examples} examples per promise and scope. Each violation comes with its "
        "shrunk counterexample; replay one with "
        "`replay(Scenario.from_json(json.loads(text)), resolve_policy(name))` "
        "(`junction.reference.harness`, `junction.reference.policies`). The default "
        "`junction` policy keeps every promise on the same runs (`make zoo`, `tests/engine`).",
        "",
        "These are findings about vLLM's *formulas* as our policies reproduce them, "
        "run in our engine; the section after them drives vLLM's own code.",
        "",
    ]
    for name in POLICIES:
        lines += _section(name, examples, seed, progress)
    lines += _connector_section(examples, seed, progress)
    return "\n".join(lines).rstrip() + "\n"


def write_findings(path: Path, examples: int, seed: int, progress: Progress | None = None) -> None:
    """Regenerate ``path``, keeping every audit section (vLLM's, SGLang's; markers included)."""
    audit = ""
    if path.exists():
        text = path.read_text(encoding="utf-8")
        audit = "".join(f"\n{section.group(0)}\n" for section in _AUDIT_SECTION.finditer(text))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(findings_markdown(examples, seed, progress) + audit, encoding="utf-8")
