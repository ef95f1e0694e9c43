"""Quiet steps change nothing: skipping the quiet groups gives the same run, step for step.

Most decode steps need no block, fill none and release none in the
block-list groups (full attention, sliding window), and continue a Mamba
state in place, so the coordinator asks no manager then
(``Coordinator.after_step``).
Here the workloads of the determinism test (shared prefixes, eviction,
preemption, three geometries) run with that skip and without it (every
``quiet_until`` answering "nothing is quiet"), ``check()`` after every step
(which also verifies that every computed token has its slot and that every
Mamba state sits at the computed tokens); the digests of every step must
agree, and the skip must have been taken (with blocks of 2 tokens, as in
the third geometry, something happens at every token: it never is).
"""

from __future__ import annotations

import pytest

from junction.reference.engine.coordinator import Coordinator
from junction.reference.engine.group_managers import GroupManager, MambaManager
from junction.reference.engine.request import Request
from tests.engine.test_determinism import GEOMETRIES, step_digests


def test_skipping_quiet_groups_gives_the_same_run(monkeypatch: pytest.MonkeyPatch) -> None:
    skipped = 0
    after_step = Coordinator.after_step

    def counting(self: Coordinator, request: Request) -> None:
        nonlocal skipped
        skipped += request.num_computed_tokens <= self.quiet[request.request_id]
        after_step(self, request)

    monkeypatch.setattr(Coordinator, "after_step", counting)
    with_skip = [step_digests(geometry) for geometry in GEOMETRIES]
    assert skipped > 0
    monkeypatch.setattr(GroupManager, "quiet_until", lambda self, request: -1)
    monkeypatch.setattr(MambaManager, "quiet_until", lambda self, request: -1)
    skipped = 0
    assert [step_digests(geometry) for geometry in GEOMETRIES] == with_skip
    assert skipped == 0
