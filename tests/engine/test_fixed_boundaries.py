"""Reused boundaries change nothing: a policy declaring ``fixed_boundaries``
gives the same run, step for step, as the same policy asked on every mask.

The workloads of the determinism test (shared prefixes, eviction,
preemption, three geometries) run with the built-in declaration and with it
off; the digests of every step must agree, and the declared run must have
asked the policy fewer times (once per request, group and junction, where
the undeclared run asks on every mask). ``Engine.check`` is off here: it
asks the policy again to verify the declaration
(``tests/conformance/test_harness.py`` finds a false one through it).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine
from junction.reference.engine.policy import RequestView
from junction.reference.policies.builtin import JunctionPolicy
from tests.engine.test_determinism import GEOMETRIES, step_digests


def test_reused_boundaries_give_the_same_run(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = 0
    reachable_boundaries = JunctionPolicy.reachable_boundaries

    def counting(
        self: JunctionPolicy, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> Sequence[int]:
        nonlocal asked
        asked += 1
        return reachable_boundaries(self, geometry, group, request)

    monkeypatch.setattr(JunctionPolicy, "reachable_boundaries", counting)
    monkeypatch.setattr(Engine, "check", lambda self: None)
    declared = [step_digests(geometry) for geometry in GEOMETRIES]
    asked_declared, asked = asked, 0
    monkeypatch.setattr(JunctionPolicy, "fixed_boundaries", False)
    assert [step_digests(geometry) for geometry in GEOMETRIES] == declared
    assert 0 < asked_declared < asked, (asked_declared, asked)
