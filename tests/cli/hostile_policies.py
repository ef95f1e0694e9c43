"""Policies that misbehave on purpose, for ``test_fuzz_hostile``: each breaks ``fuzz`` one way.

Every one is the default policy with one call made hostile, so the run
reaches that call on the first examples. Modules that misbehave on import
are written by the test into a temporary folder instead.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.policy import RequestView
from junction.reference.policies.builtin import JunctionPolicy


class ExitsZero(JunctionPolicy):
    """``split`` raises ``SystemExit(0)``: before, a silent exit 0 (a false pass)."""

    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        raise SystemExit(0)


class Interrupts(JunctionPolicy):
    """``checkpoint_positions`` raises ``KeyboardInterrupt``."""

    def checkpoint_positions(self, geometry: HybridGeometry, request: RequestView) -> list[int]:
        raise KeyboardInterrupt


class SleepsForever(JunctionPolicy):
    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        time.sleep(10**6)
        return 0


class LoopsForever(JunctionPolicy):
    """A Python loop: the interpreter never gets back to the harness."""

    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        while True:
            pass


class LoopsInC(JunctionPolicy):
    """A loop in C that never releases the GIL: no signal handler or thread can run."""

    def checkpoint_positions(self, geometry: HybridGeometry, request: RequestView) -> list[int]:
        return [sum(itertools.count())]


class TwoSecondsPerCall(JunctionPolicy):
    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        time.sleep(2)
        return super().split(geometry, request, num_new_tokens, budget)


class HugeMask(JunctionPolicy):
    """``block_mask`` answers ten million bools, whatever the range asked for."""

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> list[bool]:
        return [True] * 10_000_000


class HugePositions(JunctionPolicy):
    """``checkpoint_positions`` answers ten million positions (one position
    repeated: ten million distinct ints take about the whole call deadline to
    build on a loaded machine, and the answer, not its making, is the test)."""

    def checkpoint_positions(self, geometry: HybridGeometry, request: RequestView) -> list[int]:
        return [1] * 10_000_000


class FalselyFixed(JunctionPolicy):
    """Declares fixed boundaries (inherited) but repeats the first on odd
    computed counts: harmless to every mask, so only the declaration's check
    can find it."""

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        boundaries = super().reachable_boundaries(geometry, group, request)
        return boundaries + boundaries[:1] if request.num_computed_tokens % 2 else boundaries
