"""Policies that exploit how a time-boxed run counts its examples, for ``test_fuzz_counting``.

Each is slow only where slowness hides something: where it deviates, near
the run's deadline (read from ``FUZZ_DEADLINE``, a ``time.monotonic`` the
test sets, the same clock in every process), or everywhere.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.policy import RequestView
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.vllm import VllmPolicy

_HONEST = JunctionPolicy()
_VLLM = VllmPolicy()


class SlowWhereItDeviates(VllmPolicy):
    """vLLM 0.33.0's policy (it breaks the replay promise), 0.9 s per call (under
    a 1 s limit) from its first answer that differs from the built-in policy's:
    the example it deviates on is the one in flight when the time runs out."""

    deviated = False

    def _slow_if(self, differs: bool) -> None:
        if differs:
            type(self).deviated = True
        if self.deviated:
            time.sleep(0.9)

    def checkpoint_positions(
        self, geometry: HybridGeometry, request: RequestView
    ) -> tuple[int, ...]:
        answer = tuple(super().checkpoint_positions(geometry, request))
        self._slow_if(answer != tuple(_HONEST.checkpoint_positions(geometry, request)))
        return answer

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> list[bool] | None:
        answer = super().block_mask(geometry, group, request, start_block, end_block, boundaries)
        honest = _HONEST.block_mask(geometry, group, request, start_block, end_block, boundaries)
        self._slow_if(answer != honest)
        return answer


def _deadline() -> float:
    return float(os.environ["FUZZ_DEADLINE"])


class DeviatesAtTheDeadline(JunctionPolicy):
    """The built-in policy until 1.5 s before the deadline; from then on each split
    takes 0.9 s (under a 2 s call limit) and answers other than the built-in
    policy: past its stop (the grid, a promised position, the budget), or one
    token short of it. A violation on the first chunk from there, in the example
    the deadline finds running (two slow calls outlast the lead)."""

    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        honest = super().split(geometry, request, num_new_tokens, budget)
        if time.monotonic() < _deadline() - 1.5:
            return honest
        time.sleep(0.9)
        # Scheduling every token asked for is no deviation where the honest stop is
        # the end of what was asked: a chunk that ends there is kept.
        return num_new_tokens if num_new_tokens != honest else max(honest - 1, 0)


class SlowAtTheDeadline(JunctionPolicy):
    """The built-in policy (it keeps every promise), whose first call in the last
    1.5 s before the deadline answers 1.6 s after it: within a 4 s call limit."""

    answered_late = False

    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        now, deadline = time.monotonic(), _deadline()
        if not self.answered_late and now >= deadline - 1.5:
            type(self).answered_late = True
            time.sleep(deadline + 1.6 - now)
        return super().split(geometry, request, num_new_tokens, budget)


class SlowerThanTheRun(JunctionPolicy):
    """The built-in policy at 1.9 s per call (under a 2 s call limit): a split
    promise's example makes at least four calls, so the first one cannot end
    by the hard limit of a 3 s run (3 + 2 + 1 s), whenever it starts."""

    def checkpoint_positions(
        self, geometry: HybridGeometry, request: RequestView
    ) -> tuple[int, ...]:
        time.sleep(1.9)
        return tuple(super().checkpoint_positions(geometry, request))

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> list[bool] | None:
        time.sleep(1.9)
        return super().block_mask(geometry, group, request, start_block, end_block, boundaries)

    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        time.sleep(1.9)
        return super().split(geometry, request, num_new_tokens, budget)


class SlowEverywhere(JunctionPolicy):
    """The built-in policy at 0.4 s per split: a few examples in a short run."""

    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        time.sleep(0.4)
        return super().split(geometry, request, num_new_tokens, budget)


class ViolatesOnce(JunctionPolicy):
    """vLLM 0.33.0's answers for the first ``CALLS`` calls, the built-in policy's
    after: the failure Hypothesis finds first does not fail again on replay."""

    CALLS = 40
    calls = 0

    def _source(self) -> JunctionPolicy | VllmPolicy:
        type(self).calls += 1
        return _VLLM if type(self).calls <= self.CALLS else _HONEST

    def checkpoint_positions(
        self, geometry: HybridGeometry, request: RequestView
    ) -> tuple[int, ...]:
        return tuple(self._source().checkpoint_positions(geometry, request))

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        return tuple(self._source().reachable_boundaries(geometry, group, request))

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> list[bool] | None:
        source = self._source()
        return source.block_mask(geometry, group, request, start_block, end_block, boundaries)

    def split(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int, budget: int
    ) -> int:
        return self._source().split(geometry, request, num_new_tokens, budget)
