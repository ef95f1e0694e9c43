"""The policy findings' diagnosis: each rule on a constructed violation, and a new one.

``diagnose`` reads a violation's typed fields (promise, geometry, problem and
its numbers); each case below is the smallest violation one rule should
explain, so a rule that stops firing, or fires first where another should,
fails here rather than silently relabelling docs/findings.md.
"""

from __future__ import annotations

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.harness import Promise, RequestState, Scenario, Violation, check
from junction.reference.harness.diagnosis import UNDIAGNOSED, diagnose
from junction.reference.harness.engine_subject import EngineSubject
from junction.reference.harness.verdict import (
    KeptUnneeded,
    MissedPosition,
    OffGrid,
    Problem,
    ShortOfDense,
    ShortOfFullAttention,
)
from junction.reference.policies.vllm import VllmPolicy

FULL4, MAMBA2, MAMBA4, SWA4 = (
    GroupSpec.full(4),
    GroupSpec.mamba(2),
    GroupSpec.mamba(4),
    GroupSpec.sliding_window(4, 1),
)
REQUEST = RequestState(6, 8, 7, 0)


def _violation(
    promise: Promise,
    problem: Problem,
    groups: tuple[GroupSpec, ...] = (FULL4, MAMBA4),
    prompt: int = 6,
    *,
    eagle: bool = False,
    partial: bool = False,
    interval: int | None = 0,
) -> Violation:
    geometry = HybridGeometry(
        list(groups), 2, partial_hits=partial, use_eagle=eagle, retention_interval=interval
    )
    scenario = Scenario(promise, geometry, [(0,) * prompt], (0,) * prompt)
    return Violation(scenario, "engine", problem)


CASES = [
    (
        "vllm-pr47782",
        _violation(Promise.REPLAY, ShortOfFullAttention(0, 4), prompt=8, interval=None),
        "vLLM #50409",
    ),
    (
        "vllm-0.33",
        _violation(Promise.SPLIT, OffGrid(REQUEST, 0, 2, 4), (FULL4, MAMBA2)),
        "the split works on `cache_config.block_size`",
    ),
    (
        "vllm-0.33",
        _violation(Promise.JUNCTION, ShortOfFullAttention(0, 4), (FULL4, MAMBA2)),
        "the hit-aligned position a lookup lands on has no Mamba state",
    ),
    (
        "vllm-0.33",
        _violation(Promise.SPLIT, MissedPosition(REQUEST, 4, (2, 6)), interval=4),
        "vLLM #53479",
    ),
    (
        "vllm-0.33",
        _violation(Promise.SPLIT, MissedPosition(RequestState(6, 8, 7, 2), 2, (4, 6))),
        "sub-block junction floored the wrong way",
    ),
    (
        "vllm-0.33",
        _violation(Promise.SPLIT, MissedPosition(REQUEST, 2, (4, 6)), eagle=True),
        "new, harmless: under EAGLE",
    ),
    (
        "vllm-0.33",
        _violation(Promise.ECONOMY, KeptUnneeded(1, SWA4, 1, 1), (FULL4, SWA4), partial=True),
        "falls back to dense retention",
    ),
    (
        "vllm-0.33",
        _violation(
            Promise.ECONOMY, KeptUnneeded(1, SWA4, 2, 2), (FULL4, SWA4), prompt=2, eagle=True
        ),
        "EAGLE peek block",
    ),
    (
        "vllm-0.33",
        _violation(Promise.REPLAY, ShortOfDense(0, 4, 0), partial=True),
        "engine-model difference",
    ),
    (
        "vllm-0.33",
        _violation(Promise.REPLAY, ShortOfDense(0, 4, 0), eagle=True),
        "the mirror of #53945/#54713",
    ),
]


@pytest.mark.parametrize(("policy", "violation", "expected"), CASES)
def test_each_rule_explains_its_violation(policy: str, violation: Violation, expected: str) -> None:
    assert expected in diagnose(policy, violation)


def test_a_violation_no_rule_explains_is_new() -> None:
    plain = _violation(Promise.REPLAY, ShortOfFullAttention(0, 4))
    assert diagnose("vllm-0.33", plain) == UNDIAGNOSED


def test_a_target_window_missing_the_junctions_eagle_landing_is_eagle_per_group() -> None:
    """vLLM adds ``J - B`` only in EAGLE groups' managers (docs/findings.md,
    ``eagle-junction-target-group``); the vllm-0.33 policy reproduces it."""
    target = GroupSpec.sliding_window(4, 5, eagle_group=False)
    geometry = HybridGeometry([GroupSpec.full(4), target], 4, use_eagle=True, retention_interval=0)
    base = tuple(range(40))
    scenario = Scenario("junction", geometry, [base, base[:16] + (99,) * 8], base[:13] + (77,) * 8)
    violation = check(scenario, EngineSubject(VllmPolicy()))
    assert violation is not None
    assert diagnose("vllm-0.33", violation).startswith("new (EAGLE per group)")
