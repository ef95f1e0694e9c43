"""The promises of docs/domain.md against SGLang 0.5.23's unified radix cache.

The conformance harness's own scenarios (``harness.scenarios``), projected
onto the nearest configuration SGLang expresses (``sglang_projection``), run
through the one promise check (``harness.check``) on both of SGLang's tree
cores, which must give the same verdict. Every violation must be explained by
a recorded finding (``audit.sglang.findings.diagnose``); a new way of breaking
a promise fails here with its scenario. ``test_findings_still_reproduce``
keeps every recorded counterexample live, and the docs section current.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
from hypothesis import assume
from hypothesis import strategies as st

from junction.audit.sglang.cache import TreeCore
from junction.audit.sglang.findings import (
    SGLANG_BEGIN,
    SGLANG_END,
    SGLANG_FINDINGS,
    SglangFinding,
    diagnose,
    findings_markdown,
)
from junction.audit.sglang.subject import SglangSubject, sglang_projection
from junction.core import GroupKind, GroupSpec, HybridGeometry
from junction.reference.harness import Promise, Scenario, check, scenarios

from ..strategies import violations_are_findings

FINDINGS_MD = Path(__file__).resolve().parents[3] / "docs" / "findings.md"

# Economy and reconciliation read per-block presence: full + Mamba only.
_MAMBA_ONLY = {Promise.ECONOMY, Promise.RECONCILIATION}


@st.composite
def sglang_scenarios(draw: st.DrawFn, promise: Promise) -> tuple[Scenario, int]:
    """A harness scenario for ``promise`` on SGLang's projection, and its Mamba chunk."""
    scenario = draw(scenarios(promise))
    projection = sglang_projection(scenario.geometry)
    if projection.geometry.groups[1].kind is GroupKind.MAMBA:
        return attrs.evolve(scenario, geometry=projection.geometry), projection.mamba_chunk
    assume(promise not in _MAMBA_ONLY)
    # A sliding-window prompt runs in one chunk (audit/sglang/cache.py says why).
    budget = max(len(p) for p in (*scenario.prompts, scenario.probe))
    return attrs.evolve(scenario, geometry=projection.geometry, budget=budget), 1


def _explained(drawn: tuple[Scenario, int]) -> None:
    scenario, chunk = drawn
    python, rust = (check(scenario, SglangSubject(core, chunk)) for core in TreeCore)
    assert str(python) == str(rust), f"the tree cores disagree: {python} / {rust}"
    if rust is None:
        return
    assert diagnose(rust, chunk) is not None, (
        f"SGLang breaks promise {rust.promise.statement!r} in a way no finding explains: "
        f"{rust}\nMamba chunk {chunk}, scenario: {json.dumps(scenario.to_json())}"
    )


def _property(
    promise: Promise, share: float, pinned: tuple[tuple[Scenario, int], ...] = ()
) -> Callable[[], None]:
    return violations_are_findings(promise, share, sglang_scenarios(promise), _explained, pinned)


# A random draw found it (finding `off-grid-cut`): budget 26 cuts the first prompt at 26,
# off the 8-token grid, so its second chunk tracks 50; the second prompt resumes there
# and its branching point 56 is not a multiple of 8 past it, so nothing tracks it.
OFF_GRID_CUT = (
    Scenario(
        "junction",
        HybridGeometry([GroupSpec.full(2), GroupSpec.mamba(2)], 2),
        [(*[0] * 63, 101, *[0] * 4), (*[0] * 63, 102, *[0] * 4)],
        (*[0] * 63, 103, 0),
        26,
    ),
    8,
)

test_replay = _property(Promise.REPLAY, 0.4)
test_junction = _property(Promise.JUNCTION, 0.4, (OFF_GRID_CUT,))
test_economy = _property(Promise.ECONOMY, 0.3)
test_reconciliation = _property(Promise.RECONCILIATION, 0.4)
test_safety = _property(Promise.SAFETY, 0.3)


@pytest.mark.parametrize("finding", SGLANG_FINDINGS, ids=lambda f: f.key)
def test_findings_still_reproduce(finding: SglangFinding) -> None:
    for core in TreeCore:
        violation = check(finding.counterexample, SglangSubject(core, finding.mamba_chunk))
        assert violation is not None, f"{finding.key}: SGLang now keeps the promise ({core})"
        assert violation.promise in finding.promises
        assert diagnose(violation, finding.mamba_chunk) == finding.key


def test_a_path_cap_of_one_spares_the_previous_chunks_state() -> None:
    (finding,) = (f for f in SGLANG_FINDINGS if f.key == "state-per-chunk")
    scenario = finding.counterexample
    (prompt,) = scenario.prompts
    for core in TreeCore:
        subject = SglangSubject(core, finding.mamba_chunk, max_states_per_path=1)
        kept = subject.run(scenario).kept(1)
        assert sorted(map(len, kept)) == [8, 12], core  # the tail and the chunk before it
        violation = check(scenario, subject)
        assert violation is not None and diagnose(violation, finding.mamba_chunk) == finding.key
    uncapped = SglangSubject(TreeCore.RUST, finding.mamba_chunk).run(scenario).kept(1)
    assert sorted(map(len, uncapped)) == [4, 8, 12]
    assert all(prompt[: len(key)] == key for key in kept)


def test_a_cut_off_the_grid_is_what_loses_the_junction() -> None:
    (finding,) = (f for f in SGLANG_FINDINGS if f.key == "off-grid-cut")
    scenario, subject = finding.counterexample, SglangSubject(TreeCore.RUST, finding.mamba_chunk)
    for budget in (4, 8):  # the same prompts cut on the grid keep the promise
        assert check(attrs.evolve(scenario, budget=budget), subject) is None
    violation = check(scenario, subject)
    assert violation is not None
    # The diagnosis needs both the off-grid cut and the junction promise's probe.
    on_grid = attrs.evolve(violation, scenario=attrs.evolve(scenario, budget=8))
    resend = attrs.evolve(violation, scenario=attrs.evolve(scenario, promise=Promise.REPLAY))
    assert diagnose(on_grid, finding.mamba_chunk) is None
    assert diagnose(resend, finding.mamba_chunk) is None


def test_the_docs_section_is_current() -> None:
    text = FINDINGS_MD.read_text(encoding="utf-8")
    start, end = text.index(SGLANG_BEGIN), text.index(SGLANG_END) + len(SGLANG_END)
    assert text[start:end] + "\n" == findings_markdown(), "run `make audit-findings`"
