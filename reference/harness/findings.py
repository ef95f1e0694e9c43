"""``python -m junction.reference findings``: the vLLM policies against SPEC section 7.

Runs the conformance harness on ``vllm-0.33`` and ``vllm-pr47782`` in four
scopes (plain; EAGLE; partial hits; both), so one defect does not hide
another, and writes ``docs/findings.md``: every promise each violates, the
minimal counterexample as a replayable scenario, and the upstream report it
matches (or "new"). Deterministic: the same seed and example count give the
same file. The section between the ``vllm-audit`` markers belongs to
``python -m junction.audit findings`` (vLLM's own functions) and is kept as it is.

The diagnosis of a counterexample is a rule on its shape (geometry, promise,
what went wrong), written from reading each shrunk case; a counterexample no
rule explains is reported as "new, not yet diagnosed" rather than guessed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from junction.core import GroupKind, HybridGeometry
from junction.reference.cli.arguments import int_at_least
from junction.reference.harness.conformance import PromiseVerdict, Scenario, run_conformance
from junction.reference.policies.builtin import resolve_policy

__all__ = ["SCOPES", "add_parser", "diagnose", "findings_markdown"]

POLICIES = ("vllm-0.33", "vllm-pr47782")

SCOPES: dict[str, Callable[[HybridGeometry], bool]] = {
    "plain": lambda g: not g.use_eagle and not g.partial_hits,
    "EAGLE": lambda g: g.use_eagle and not g.partial_hits,
    "partial hits": lambda g: not g.use_eagle and g.partial_hits,
    "EAGLE + partial hits": lambda g: g.use_eagle and g.partial_hits,
}

AUDIT_BEGIN = "<!-- vllm-audit:begin -->"
AUDIT_END = "<!-- vllm-audit:end -->"


def _sparse_wider_than_hash(geometry: HybridGeometry) -> bool:
    return any(
        g.kind is GroupKind.SLIDING_WINDOW and g.block_size > geometry.alignment_tokens
        for g in geometry.groups
    )


def _promised_position(message: str) -> int | None:
    match = re.search(r"promised position (\d+) is no chunk end", message)
    return int(match.group(1)) if match else None


def diagnose(policy: str, verdict: PromiseVerdict) -> str:
    """The upstream report a counterexample matches, or why it is new."""
    scenario = verdict.counterexample
    if scenario is None:
        return "new, not yet diagnosed"
    geometry, promise, message = scenario.geometry, verdict.promise, verdict.message
    eagle, partial, interval = (
        geometry.use_eagle,
        geometry.partial_hits,
        geometry.retention_interval,
    )
    grid = geometry.scheduler_block_size
    prompt = len(scenario.prompts[0])
    if (
        policy == "vllm-pr47782"
        and promise in ("replay", "split")
        and not eagle
        and any(len(p) % grid == 0 for p in scenario.prompts)
    ):
        return (
            "vLLM #50409: the last cacheable position `N - N mod b` keeps the only state at "
            "a block-aligned prompt's end, one token past every lookup"
        )
    if promise == "split" and "ends off the grid" in message:
        return (
            "vLLM #54076 (still there when an attention block is wider than the Mamba "
            "block): the split works on `cache_config.block_size`, the Mamba block, so chunks "
            "end, and Mamba states land, on Mamba-block multiples that are not hit-aligned"
        )
    mamba_blocks = [g.block_size for g in geometry.groups if g.kind is GroupKind.MAMBA]
    if (
        promise in ("replay", "junction")
        and policy.startswith("vllm")
        and not partial
        and any(b < grid for b in mamba_blocks)
    ):
        return (
            "vLLM #54076 (still there when an attention block is wider than the Mamba "
            "block): chunks end on Mamba-block multiples, so the hit-aligned position a "
            "lookup lands on has no Mamba state"
        )
    position = _promised_position(message)
    if promise == "split" and interval and position is not None and position % interval == 0:
        return (
            "vLLM #53479 (what remains of it): the Mamba mask marks one state per segment, but "
            "the split never stops at segment boundaries, so only segments a chunk happens to "
            "end at are kept (SPEC promise 3 counts only those)"
        )
    junction = re.search(r"J=(\d+)", message)
    if promise == "split" and position is not None and junction and int(junction[1]) == position:
        return (
            "sub-block junction floored the wrong way (SPEC section 8): with partial hits a "
            "junction inside a scheduler block is floored relative to the chunk start "
            "(`s + floor_L(J - s)`), which lands on the start, so no chunk ends at the junction"
        )
    if promise == "split" and eagle and position is not None:
        return (
            "new, harmless: under EAGLE `replay_boundaries` names `floor_L(P - 1) - L`, where "
            "the split (last cacheable `floor_L(N) - L`) never ends a chunk; the resend lands "
            "at the split's position, so nothing is lost, but the two disagree"
        )
    if promise == "economy" and partial and _sparse_wider_than_hash(geometry):
        return (
            "new: with partial hits (`A = H`) a sliding-window group whose block is wider "
            "than `H` falls back to dense retention (`A` is not a whole number of its blocks), "
            "so `R = 0` keeps every one of its blocks"
        )
    if promise == "economy" and eagle and prompt <= grid:
        return (
            "new, minor: a replay boundary that floors to 0 (a prompt within one alignment "
            "unit) still keeps the sliding window's EAGLE peek block, which no lookup reads"
        )
    if promise in ("replay", "junction") and partial:
        return (
            "engine-model difference, not claimed against vLLM: the reference engine serves "
            "a Mamba hit only at a block end, while vLLM 0.33 also keys the prompt's partial-"
            "tail Mamba state at a hash boundary; `make audit-vllm` checks vLLM's own code"
        )
    if promise in ("replay", "junction") and eagle:
        return (
            "new (the mirror of #53945/#54713): under EAGLE vLLM keeps the replay state at "
            "`floor_L(N) - L` and the junction's at `J - B`, assuming the drop is a whole "
            "block, but a lookup drops `min(A, B_f)` tokens and re-floors to `A`, so it "
            "lands above the kept state when the prompt is not `L`-aligned"
        )
    return "new, not yet diagnosed"


def _scenario_block(scenario: Scenario) -> list[str]:
    return ["```json", json.dumps(scenario.to_json()), "```"]


def findings_markdown(examples: int = 150, seed: int = 0) -> str:
    """The generated part of ``docs/findings.md`` (everything but the audit section)."""
    lines = [
        "# Findings: vLLM's retention formulas against the promises",
        "",
        "Generated by `make findings` (`python -m junction.reference findings "
        f"--examples {examples} --seed {seed}`): the conformance harness "
        "(`reference.conformance`) on the `vllm-0.33` and `vllm-pr47782` policies in "
        "the reference engine, in four scopes so one defect does not hide another, "
        f"{examples} examples per promise and scope. Each violation comes with its "
        "shrunk counterexample; replay one with "
        "`replay(Scenario.from_json(json.loads(text)), resolve_policy(name))` "
        "(`reference.conformance`, `reference.policies`). The default `junction` "
        "policy keeps every promise on the same runs (`make zoo`, `tests/engine`).",
        "",
        "These are findings about vLLM's *formulas* as our policies reproduce them, "
        "run in our engine; the section after them drives vLLM's own code.",
        "",
    ]
    for name in POLICIES:
        policy = resolve_policy(name)
        lines += [f"## `{name}`", ""]
        rows: list[str] = []
        details: list[str] = []
        index = 0
        for scope, where in SCOPES.items():
            report = run_conformance(policy, examples=examples, seed=seed, where=where)
            for verdict in report.violated:
                diagnosis = diagnose(name, verdict)
                index += 1
                rows.append(
                    f"| {index} | {scope} | {verdict.statement} | {verdict.message} | {diagnosis} |"
                )
                assert verdict.counterexample is not None
                details += [
                    f"**{index}.** {scope}, promise {verdict.statement}: {verdict.message}",
                    "",
                    *_scenario_block(verdict.counterexample),
                    "",
                ]
        if not rows:
            lines += ["No promise violated.", ""]
            continue
        lines += [
            "| # | scope | promise | what went wrong | upstream |",
            "| --- | --- | --- | --- | --- |",
            *rows,
            "",
            "Minimal counterexamples:",
            "",
            *details,
        ]
    return "\n".join(lines).rstrip() + "\n"


def write_findings(path: Path, examples: int, seed: int) -> None:
    """Regenerate ``path``, keeping the vLLM audit section (markers included) if present."""
    audit = ""
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if AUDIT_BEGIN in text and AUDIT_END in text:
            start, end = text.index(AUDIT_BEGIN), text.index(AUDIT_END) + len(AUDIT_END)
            audit = "\n" + text[start:end] + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(findings_markdown(examples, seed) + audit, encoding="utf-8")


def _run(args: argparse.Namespace) -> int:
    write_findings(Path(args.out), args.examples, args.seed)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``findings`` on ``python -m junction.reference``'s subcommands."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "findings",
        help="run the harness on the vLLM policies and write docs/findings.md",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--examples", type=int_at_least(1), default=150, help="per promise and scope (default 150)"
    )
    parser.add_argument("--seed", type=int_at_least(0), default=0, help="(default 0)")
    parser.add_argument("--out", default="docs/findings.md")
    parser.set_defaults(run=_run)
    return parser
