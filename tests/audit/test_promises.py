"""The promises of docs/domain.md against vLLM 0.33.0's own code (``audit.vllm.subject``).

vLLM breaks some promises; each way it does is a finding in docs/findings.md
with a minimal counterexample. These properties draw the conformance
harness's scenarios (on configurations vLLM accepts) and require every
violation to be explained by a recorded finding (``audit.vllm.diagnosis``): a new
way of breaking a promise fails here with its scenario, to be diagnosed and
recorded. ``test_findings_still_reproduce`` keeps every recorded
counterexample live, and the docs section current.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from junction.audit.vllm.diagnosis import diagnose
from junction.audit.vllm.findings import (
    AUDIT_BEGIN,
    AUDIT_END,
    FINDINGS,
    Finding,
    findings_markdown,
)
from junction.audit.vllm.subject import VllmSubject
from junction.core import GroupSpec, HybridGeometry
from junction.reference.harness import Promise, Scenario, Violation, check
from junction.reference.harness.verdict import LookupMismatch, OffGrid, ResumeWithoutState
from junction.upstream.vllm_0_33.specs import vllm_geometry

from .strategies import violations_are_findings, vllm_scenarios

FINDINGS_MD = Path(__file__).resolve().parents[2] / "docs" / "findings.md"


VLLM = VllmSubject()


def _explained(scenario: Scenario) -> None:
    violation = check(scenario, VLLM)
    if violation is None:
        return
    assert diagnose(violation) is not None, (
        f"vLLM breaks promise {violation.promise.statement!r} in a way no finding explains: "
        f"{violation}\nscenario: {json.dumps(scenario.to_json())}"
    )


def _property(
    promise: Promise, share: float, pinned: tuple[Scenario, ...] = ()
) -> Callable[[], None]:
    return violations_are_findings(promise, share, vllm_scenarios(promise), _explained, pinned)


# A random draw found it (finding `lookup-swa_window_of_one_needs_a_block`, reached under
# EAGLE): the probe's first round lands on 4 with every group dropping its EAGLE block;
# the second round asks the verified one-token window again at 4 without the drop, and
# it finds no cached block ending there (needing none), so vLLM answers (0, 4, 4).
WINDOW_OF_ONE_UNDER_EAGLE = Scenario(
    "reconciliation",
    HybridGeometry(
        [GroupSpec.full(2), GroupSpec.full(4), GroupSpec.sliding_window(2, 1)], 2, use_eagle=True
    ),
    [(0,) * 7, (0,) * 8],
    (0,) * 8,
    4,
)

# A random draw found it (finding `eagle-landing`, without partial hits): full attention of
# 2 is the only EAGLE group, so the resend of 18 tokens drops 2 and lands at 16 (L = 8);
# vLLM's EAGLE replay boundary floor_L(P - 1) - L = 8 is where the target-model window
# (no peek block) keeps its tail, so the resend hits 8, dense retention 16.
SMALL_EAGLE_DROP = Scenario(
    "replay",
    vllm_geometry(
        [
            GroupSpec.full(2),
            attrs.evolve(GroupSpec.full(4), eagle_group=False),
            attrs.evolve(GroupSpec.full(8), eagle_group=False),
            attrs.evolve(GroupSpec.sliding_window(2, 2), eagle_group=False),
        ],
        2,
        use_eagle=True,
        retention_interval=0,
    ),
    [(0,) * 18],
    (0,) * 18,
    4,
    max_output_tokens=2,
)

test_replay = _property(Promise.REPLAY, 0.4, (SMALL_EAGLE_DROP,))
test_junction = _property(Promise.JUNCTION, 0.4)
test_segments = _property(Promise.SEGMENTS, 0.2)
test_economy = _property(Promise.ECONOMY, 0.3)
test_split = _property(Promise.SPLIT, 0.4)
test_reconciliation = _property(Promise.RECONCILIATION, 0.4, (WINDOW_OF_ONE_UNDER_EAGLE,))
test_safety = _property(Promise.SAFETY, 0.2)


@pytest.mark.parametrize("finding", FINDINGS, ids=lambda f: f.key)
def test_findings_still_reproduce(finding: Finding) -> None:
    geometry = finding.counterexample.geometry
    assert geometry == vllm_geometry(
        geometry.groups,
        geometry.hash_block_size,
        use_eagle=geometry.use_eagle,
        retention_interval=geometry.retention_interval,
    ), f"{finding.key}: vLLM decides partial hits otherwise"
    violation = check(finding.counterexample, VLLM)
    assert violation is not None, f"{finding.key}: vLLM now keeps the promise on its counterexample"
    assert violation.promise in finding.promises
    assert diagnose(violation) == finding.key


def test_docs_section_is_current() -> None:
    text = FINDINGS_MD.read_text(encoding="utf-8")
    start, end = text.index(AUDIT_BEGIN), text.index(AUDIT_END) + len(AUDIT_END)
    assert text[start:end] + "\n" == findings_markdown(), "run `make audit-findings`"


def test_a_violation_no_finding_explains_is_new() -> None:
    # A plain geometry where vLLM's lookup agrees with core: no rule applies.
    geometry = HybridGeometry([GroupSpec.full(2), GroupSpec.mamba(2)], 2)
    scenario = Scenario(Promise.SAFETY, geometry, [(0,) * 4], (0,) * 4)
    assert diagnose(Violation(scenario, "vLLM", ResumeWithoutState(4, 2))) is None


def test_a_chunk_on_the_mamba_block_under_partial_hits_is_the_mamba_grid_finding() -> None:
    # Two full-attention groups (2 and 4) and H = 1: vLLM turns partial hits
    # on, and its split still ends chunks on the Mamba block 2, off L = 4.
    groups = [GroupSpec.full(2), GroupSpec.full(4), GroupSpec.mamba(2)]
    geometry = vllm_geometry(groups, 1)
    assert geometry.partial_hits and geometry.scheduler_block_size == 4
    scenario = Scenario(Promise.SPLIT, geometry, [(0,) * 11, (0,) * 5 + (7, 0)], (), 6)
    violation = check(scenario, VLLM)
    assert violation is not None and isinstance(violation.problem, OffGrid)
    assert (violation.problem.end, violation.problem.grid) == (6, 4)
    assert diagnose(violation) == "mamba-grid"
    # An end off both grids is not that finding.
    off_both = attrs.evolve(violation.problem, end=5)
    assert diagnose(attrs.evolve(violation, problem=off_both)) is None


def test_the_window_of_one_under_eagle_is_the_one_token_window_finding() -> None:
    violation = check(WINDOW_OF_ONE_UNDER_EAGLE, VLLM)
    assert violation is not None and violation.problem == LookupMismatch((0, 4, 4), (4, 4, 0))
    assert diagnose(violation) == "lookup-swa_window_of_one_needs_a_block"


def test_a_resend_past_a_drop_below_the_grid_is_the_eagle_landing_finding() -> None:
    violation = check(SMALL_EAGLE_DROP, VLLM)
    assert violation is not None and violation.promise is Promise.REPLAY
    assert diagnose(violation) == "eagle-landing"
    # With every group an EAGLE group, full attention of 8 drops L: vLLM's boundary holds.
    groups = [attrs.evolve(g, eagle_group=True) for g in SMALL_EAGLE_DROP.geometry.groups]
    every = attrs.evolve(SMALL_EAGLE_DROP.geometry, groups=groups)
    assert check(attrs.evolve(SMALL_EAGLE_DROP, geometry=every), VLLM) is None
