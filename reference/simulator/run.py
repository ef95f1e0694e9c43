"""Running a simulation: every (geometry, variant) on one workload, one engine each.

Each run gets a fresh engine (a variant's ``R`` is part of the geometry, and
runs must not share a cache), driven by one of ``workloads.drive``'s loops
as ``Settings.arrivals`` says: ``sessions`` (closed loop), ``trace`` (each
request at its timestamp) or ``sequential`` (one at a time), on the clock
of ``Settings.step_time``. With ``Settings.instances`` > 1 or a
``Settings.tier_blocks``, a run is several engines sharing one external tier
(``simulator.instances``). :func:`simulate` reports each finished run
through ``on_progress`` rather than drawing anything: the simulator sits
below the command line, which owns the terminal. Rejected: a progress bar
here (the simulator would import the CLI's terminal layer, against the
layering, and tests and library callers would get redraws they never asked
for).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import attrs

from junction.core import GroupKind, InvalidArgument
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.eviction import EVICTION_POLICIES, eviction_policy
from junction.reference.engine.tier import ExternalTier, TierSaving
from junction.reference.errors import int_at_least, of_type, one_of
from junction.reference.workloads.drive import run_sequential, run_sessions, run_trace
from junction.reference.workloads.step_time import StepTimeModel

from .geometries import GEOMETRIES
from .instances import ROUTES, Route, TierReport, combined_metrics, route, run_instances
from .result import GroupRetention, Latency, RunResult
from .variants import Variant
from .workload import Workload

__all__ = ["ARRIVALS", "EVICTION_POLICIES", "Arrivals", "Settings", "run_one", "simulate"]

Arrivals = Literal["sessions", "trace", "sequential"]
ARRIVALS: tuple[Arrivals, ...] = ("sessions", "trace", "sequential")

_at_least_1 = int_at_least(1)
_at_least_0 = int_at_least(0)


def _pool(
    instance: object, attribute: attrs.Attribute[int | dict[str, int]], value: object
) -> None:
    sizes = value.values() if isinstance(value, dict) else [value]
    if not sizes or any(type(size) is not int or size < 2 for size in sizes):
        raise InvalidArgument(
            attribute.name, value, "must be an int >= 2 or a non-empty dict of them by geometry"
        )


@attrs.frozen
class Settings:
    """The engine side of a simulation (field order is the report's key order)."""

    # One pool for every geometry (--blocks N), or one per geometry (sizes in tokens,
    # fractions of the working set, unbounded: ``simulator.pool``).
    num_blocks: int | dict[str, int] = attrs.field(validator=_pool)
    max_num_batched_tokens: int = attrs.field(validator=_at_least_1)
    chunk_tokens: int = attrs.field(validator=_at_least_0)  # 0: no per-request cap
    use_eagle: bool = attrs.field(validator=of_type(bool))
    concurrency: int = attrs.field(validator=_at_least_1)  # sessions open at once
    seed: int = attrs.field(validator=_at_least_0)
    arrivals: Arrivals = attrs.field(default="sessions", validator=one_of(ARRIVALS))
    step_time: StepTimeModel = attrs.field(factory=StepTimeModel, validator=of_type(StepTimeModel))
    # Engines sharing one external tier of ``tier_blocks`` blocks (0: no tier),
    # requests routed by ``route``; ``tier_saving`` is a ``TierSaving`` value.
    instances: int = attrs.field(default=1, validator=_at_least_1)
    tier_blocks: int = attrs.field(default=0, validator=_at_least_0)
    route: Route = attrs.field(default="round-robin", validator=one_of(ROUTES))
    tier_saving: str = attrs.field(
        default=TierSaving.POLICY.value,
        validator=one_of([saving.value for saving in TierSaving]),
    )

    @property
    def tiered(self) -> bool:
        """Whether a run is several instances or has a tier (``simulator.instances``)."""
        return self.instances > 1 or self.tier_blocks > 0

    # Which free cached block a full pool recycles (engine.eviction); FLOP-aware
    # eviction uses the geometry's FLOP model.
    eviction: str = attrs.field(default="lru", validator=one_of(EVICTION_POLICIES))

    def blocks_for(self, geometry_name: str) -> int:
        """The pool of one geometry's runs."""
        blocks = self.num_blocks
        return blocks[geometry_name] if isinstance(blocks, dict) else blocks


def run_one(
    geometry_name: str,
    variant: Variant,
    workload: Workload,
    settings: Settings,
    on_requests: Callable[[int], None] | None = None,
) -> RunResult:
    """One geometry under one variant; raises ``workloads.drive.PoolTooSmall``.

    ``on_requests(n)`` hears of ``n`` more requests finished, as they finish.
    ``trace`` arrivals need a timestamped workload (``ValueError`` otherwise).
    """
    choice = GEOMETRIES[geometry_name]
    geometry = choice.build(variant.retention_interval, settings.use_eagle)
    tier = ExternalTier(settings.tier_blocks) if settings.tier_blocks else None
    config = EngineConfig(
        geometry,
        num_blocks=settings.blocks_for(geometry_name),
        max_num_batched_tokens=settings.max_num_batched_tokens,
        long_prefill_token_threshold=settings.chunk_tokens,
        seed=settings.seed,
        policy=variant.make_policy(),
        tier=tier,
        tier_saving=TierSaving(settings.tier_saving),
        eviction=eviction_policy(settings.eviction, choice.flops),
    )
    engines = [Engine(config) for _ in range(settings.instances)]
    engine = engines[0]
    model = settings.step_time
    if settings.instances > 1:
        if settings.arrivals == "sessions":
            raise InvalidArgument(
                "arrivals", "sessions", "several instances need trace or sequential arrivals"
            )
        targets = route(workload.sessions, settings.instances, settings.route)
        sequential = settings.arrivals == "sequential"
        replay = run_instances(engines, workload.turns, targets, sequential, model, on_requests)
    elif settings.arrivals == "sessions":
        replay = run_sessions(engine, workload.sessions, settings.concurrency, model, on_requests)
    elif settings.arrivals == "trace":
        replay = run_trace(engine, workload.turns, model, on_requests)
    else:
        replay = run_sequential(engine, workload.turns, model, on_requests)
    metrics = combined_metrics(engines) if settings.tiered else engine.metrics
    shared = workload.shared_prefix_tokens
    requests = [r for each in engines for r in each.requests.values()]
    reused = sum(min(r.hit_length, shared) for r in requests)
    sparse = [i for i, g in enumerate(geometry.groups) if g.kind is not GroupKind.FULL]
    groups = tuple(
        GroupRetention(
            kind=group.kind.value,
            block_size=group.block_size,
            window=group.window,
            retained_peak=metrics.retained_peak.get(i, 0),
            retained_final=metrics.retained_final.get(i, 0),
        )
        for i, group in enumerate(geometry.groups)
    )
    return RunResult(
        geometry=geometry_name,
        variant=variant,
        token_hit_rate=metrics.token_hit_rate,
        system_prompt_hit_rate=reused / (shared * len(requests)) if shared else None,
        prefill_tokens_computed=metrics.prefill_tokens_computed,
        steps=metrics.steps,
        sparse_retained_peak=sum(metrics.retained_peak.get(i, 0) for i in sparse),
        sparse_retained_final=sum(metrics.retained_final.get(i, 0) for i in sparse),
        evictions=metrics.evictions,
        preemptions=metrics.preemptions,
        lookup_tokens=metrics.lookup_tokens,
        hit_tokens=metrics.hit_tokens,
        groups=groups,
        prefill_saved_share=1 - metrics.prefill_tokens_computed / workload.prompt_tokens,
        ttft_ms=Latency.of([timing.ttft_ms for timing in replay.timings]),
        queue_ms=Latency.of([timing.queue_ms for timing in replay.timings]),
        makespan_ms=replay.clock_ms,
        tier=(
            TierReport.of(engines, tier, settings.tier_saving, settings.route)
            if settings.tiered
            else None
        ),
        eviction=settings.eviction,
        # Under the geometry's FLOP model: every layer over each request's reused prefix.
        prefill_flops_saved=sum(
            choice.flops.prefix_flops(geometry, r.hit_length) for r in requests
        ),
    )


def simulate(
    workload: Workload,
    geometries: Sequence[str],
    variants: Sequence[Variant],
    settings: Settings,
    on_progress: Callable[[RunResult], None] | None = None,
    on_requests: Callable[[int], None] | None = None,
) -> list[RunResult]:
    """Every (geometry, variant) run, in that order; ``on_progress`` hears of each as it ends.

    ``on_requests(n)``: ``n`` more requests of the current run finished.
    """
    results = []
    for name in geometries:
        for variant in variants:
            result = run_one(name, variant, workload, settings, on_requests)
            results.append(result)
            if on_progress is not None:
                on_progress(result)
    return results
