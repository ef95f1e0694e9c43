"""Several engine instances sharing one external tier: routing, driving, and what they report.

``simulate --instances N --tier BLOCKS`` runs N reference engines, each with
its own pool, all saving to and loading from one ``ExternalTier``. A request
goes to an instance by :data:`ROUTES`: ``round-robin`` in arrival order, or
``session`` (a session's turns on the instance of its first; a hash-id
trace's requests are each a session). Each instance has its own clock
(``drive.Timeline``), as it runs side by side with the others; they are
stepped in the order of their next event on one time line, so a save on one
is visible to a lookup on another exactly when it happened earlier.
Closed-loop ``sessions`` arrivals are refused with several instances (a
turn's next turn would cross clocks).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Literal

import attrs

from junction.core import InvalidArgument
from junction.reference.engine.engine import Engine, Metrics
from junction.reference.engine.tier import ExternalTier
from junction.reference.errors import number_between
from junction.reference.workloads.drive import Replay, Timeline
from junction.reference.workloads.sessions import Turn
from junction.reference.workloads.step_time import StepTimeModel

__all__ = ["ROUTES", "Route", "TierReport", "combined_metrics", "route", "run_instances"]

Route = Literal["round-robin", "session"]
ROUTES: tuple[Route, ...] = ("round-robin", "session")

_rate = number_between(0.0, 1.0)


def route(sessions: Sequence[Sequence[Turn]], instances: int, rule: Route) -> list[int]:
    """The instance of each turn, turns in ``Workload.turns`` order (session after session)."""
    targets: list[int] = []
    for index, session in enumerate(sessions):
        for _ in session:
            position = len(targets) if rule == "round-robin" else index
            targets.append(position % instances)
    return targets


def run_instances(
    engines: Sequence[Engine],
    turns: Sequence[Turn],
    targets: Sequence[int],
    sequential: bool,
    model: StepTimeModel,
    on_finished: Callable[[int], None] | None = None,
) -> Replay:
    """Every turn on its instance: at its timestamp (``trace``) or one at a time.

    Raises ``drive.PoolTooSmall`` as the one-engine loops do, and ``ValueError``
    naming a turn out of arrival order (``trace``).
    """
    timelines = [Timeline(engine, model, on_finished) for engine in engines]
    if sequential:
        now = 0.0
        for turn, target in zip(turns, targets, strict=True):
            timeline = timelines[target]
            timeline.now = max(timeline.now, now)
            timeline.submit(turn, timeline.now)
            while not engines[target].idle:
                timeline.step()
            now = timeline.now
        return _merged(timelines)
    order = sorted(range(len(turns)), key=lambda index: _arrival(turns, index))
    queues: list[deque[int]] = [deque() for _ in engines]
    for index in order:
        queues[targets[index]].append(index)

    def next_event(i: int) -> float:
        if not engines[i].idle:
            return timelines[i].now
        return max(timelines[i].now, _arrival(turns, queues[i][0])) if queues[i] else float("inf")

    while True:
        i = min(range(len(engines)), key=next_event)
        if next_event(i) == float("inf"):
            break
        timeline, queue = timelines[i], queues[i]
        if engines[i].idle:
            timeline.now = max(timeline.now, _arrival(turns, queue[0]))
        while queue and _arrival(turns, queue[0]) <= timeline.now:
            index = queue.popleft()
            timeline.submit(turns[index], _arrival(turns, index))
        timeline.step()
    return _merged(timelines)


def _arrival(turns: Sequence[Turn], index: int) -> float:
    arrival = turns[index].arrival_ms
    if arrival is None:
        raise InvalidArgument(
            f"turns[{index}].arrival_ms", None, "must be an int for trace arrivals"
        )
    return float(arrival)


def _merged(timelines: Sequence[Timeline]) -> Replay:
    """One replay of every instance's requests; the clock is the last instance's."""
    replays = [timeline.replay() for timeline in timelines]
    timings = tuple(timing for replay in replays for timing in replay.timings)
    return Replay(timings, max(replay.clock_ms for replay in replays))


def combined_metrics(engines: Sequence[Engine]) -> Metrics:
    """The instances' counters summed (retained blocks per group: the sum of each one's)."""
    total = Metrics()
    for engine in engines:
        metrics = engine.metrics
        for field in attrs.fields(Metrics):
            value = getattr(metrics, field.name)
            if isinstance(value, dict):
                into = getattr(total, field.name)
                for group_id, count in value.items():
                    into[group_id] = into.get(group_id, 0) + count
            else:
                setattr(total, field.name, getattr(total, field.name) + value)
    return total


@attrs.frozen
class TierReport:
    """What the instances and their shared tier did in one run.

    ``instance_hit_rates``: each instance's token hit rate, local and loaded
    hits together; ``external_hit_tokens``: the hit tokens loaded from the
    tier (all instances); occupancy is stored blocks over ``capacity``.
    """

    capacity: int
    saving: str
    instances: int
    route: Route
    instance_hit_rates: tuple[float, ...]
    external_hit_tokens: int
    occupancy_peak: float = attrs.field(validator=_rate)
    occupancy_final: float = attrs.field(validator=_rate)
    saves: int
    loads: int
    evictions: int

    @classmethod
    def of(
        cls, engines: Sequence[Engine], tier: ExternalTier | None, saving: str, rule: Route
    ) -> TierReport:
        capacity = tier.capacity if tier is not None else 0
        return cls(
            capacity=capacity,
            saving=saving,
            instances=len(engines),
            route=rule,
            instance_hit_rates=tuple(engine.metrics.token_hit_rate for engine in engines),
            external_hit_tokens=sum(engine.metrics.external_hit_tokens for engine in engines),
            occupancy_peak=tier.peak / capacity if tier is not None else 0.0,
            occupancy_final=tier.occupancy if tier is not None else 0.0,
            saves=tier.saves if tier is not None else 0,
            loads=tier.loads if tier is not None else 0,
            evictions=tier.evictions if tier is not None else 0,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "saving": self.saving,
            "instances": self.instances,
            "route": self.route,
            "instance_hit_rates": list(self.instance_hit_rates),
            "external_hit_tokens": self.external_hit_tokens,
            "occupancy_peak": self.occupancy_peak,
            "occupancy_final": self.occupancy_final,
            "saves": self.saves,
            "loads": self.loads,
            "evictions": self.evictions,
        }
