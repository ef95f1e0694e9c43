"""What one simulation run measured: every number of one (geometry, variant) run.

:class:`RunResult` holds the numbers as typed fields; the table, the plot
and the JSON all read those fields, so no output is parsed back from another.
``to_json`` spells out the key order of ``simulate.json`` (the demo's JSON is
committed and must not change when the code moves), which is why it is not
``attrs.asdict``: that would also follow field order, but silently.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs

from junction.core import InvalidArgument
from junction.reference.errors import int_at_least, number_between

from .instances import TierReport
from .variants import Variant

__all__ = ["GroupRetention", "Latency", "RunResult"]

_count = int_at_least(0)
_rate = number_between(0.0, 1.0)


@attrs.frozen
class GroupRetention:
    """One KV-cache group of a run: its shape and its blocks retained at the peak and end."""

    kind: str
    block_size: int
    window: int | None
    retained_peak: int = attrs.field(validator=_count)
    retained_final: int = attrs.field(validator=_count)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "block_size": self.block_size,
            "window": self.window,
            "retained_peak": self.retained_peak,
            "retained_final": self.retained_final,
        }


def _percentiles(
    instance: Latency, attribute: attrs.Attribute[tuple[float, ...]], value: object
) -> None:
    if (
        not isinstance(value, tuple)
        or len(value) != 100
        or any(not isinstance(v, float) or v < 0 for v in value)
        or list(value) != sorted(value)
    ):
        raise InvalidArgument(
            attribute.name, value, "must be 100 ascending floats >= 0 (percentiles 1..100)"
        )


@attrs.frozen
class Latency:
    """A distribution of modelled times in milliseconds, as its 100 percentiles.

    ``percentiles[k - 1]`` is the ``k``-th percentile by nearest rank (the
    smallest sample with at least ``k`` % of the samples at or below it), so
    ``percentiles[99]`` is the maximum. A hundred numbers are what the table,
    the JSON and the distribution figure all read: every number the figure
    shows is in the JSON. Rejected: interpolated percentiles (a p99 that no
    request had) and every sample (12,000 numbers per run in the JSON).
    """

    percentiles: tuple[float, ...] = attrs.field(validator=_percentiles)
    mean: float = attrs.field(validator=number_between(0.0))

    @classmethod
    def of(cls, samples: Sequence[float]) -> Latency:
        """The distribution of ``samples`` (at least one)."""
        if not samples:
            raise InvalidArgument("samples", samples, "must hold at least one time")
        ordered = sorted(samples)
        count = len(ordered)
        return cls(
            tuple(float(ordered[math.ceil(k * count / 100) - 1]) for k in range(1, 101)),
            sum(ordered) / count,
        )

    @property
    def p50(self) -> float:
        return self.percentiles[49]

    @property
    def p90(self) -> float:
        return self.percentiles[89]

    @property
    def p99(self) -> float:
        return self.percentiles[98]

    def to_json(self) -> dict[str, Any]:
        return {
            "p50": self.p50,
            "p90": self.p90,
            "p99": self.p99,
            "mean": self.mean,
            "max": self.percentiles[99],
            "percentiles": list(self.percentiles),
        }


@attrs.frozen
class RunResult:
    """Every number of one run (one geometry, one variant).

    The sparse counts sum the groups other than full attention: they are
    what a retention policy saves. ``system_prompt_hit_rate`` is ``None``
    when the prompts share no prefix. ``prefill_saved_share`` is the share
    of prompt tokens not computed (negative where preemptions recomputed
    more than the hits saved). Times are modelled (``workloads.step_time``).
    ``tier``: the instances and their shared tier, when the run had either
    (``simulator.instances``); the other counts then sum every instance.
    ``prefill_flops_saved``: the prefill FLOPs of every request's reused
    prefix at its last admission, under the geometry's FLOP model
    (``simulator.geometries``); ``eviction`` the pool's eviction policy.
    """

    geometry: str
    variant: Variant
    token_hit_rate: float = attrs.field(validator=_rate)
    system_prompt_hit_rate: float | None = attrs.field(validator=attrs.validators.optional(_rate))
    prefill_tokens_computed: int = attrs.field(validator=_count)
    steps: int = attrs.field(validator=_count)
    sparse_retained_peak: int = attrs.field(validator=_count)
    sparse_retained_final: int = attrs.field(validator=_count)
    evictions: int = attrs.field(validator=_count)
    preemptions: int = attrs.field(validator=_count)
    lookup_tokens: int = attrs.field(validator=_count)
    hit_tokens: int = attrs.field(validator=_count)
    groups: tuple[GroupRetention, ...]
    prefill_saved_share: float = attrs.field(validator=number_between(-math.inf, 1.0))
    ttft_ms: Latency
    queue_ms: Latency
    makespan_ms: float = attrs.field(validator=number_between(0.0))
    tier: TierReport | None = None
    eviction: str = "lru"
    prefill_flops_saved: int = attrs.field(default=0, validator=_count)

    @property
    def label(self) -> str:
        """The variant's label, and the tier's saving when there is one."""
        if self.tier is None:
            return self.variant.label
        return f"{self.variant.label}, {self.tier.saving} saving"

    def to_json(self) -> dict[str, Any]:
        tier = {} if self.tier is None else {"tier": self.tier.to_json()}
        return {
            "geometry": self.geometry,
            "label": self.variant.label,
            "policy": self.variant.policy,
            "retention_interval": self.variant.retention_interval,
            "pinned": self.variant.pinned,
            "token_hit_rate": self.token_hit_rate,
            "system_prompt_hit_rate": self.system_prompt_hit_rate,
            "prefill_tokens_computed": self.prefill_tokens_computed,
            "steps": self.steps,
            "sparse_retained_peak": self.sparse_retained_peak,
            "sparse_retained_final": self.sparse_retained_final,
            "evictions": self.evictions,
            "preemptions": self.preemptions,
            "lookup_tokens": self.lookup_tokens,
            "hit_tokens": self.hit_tokens,
            "groups": [group.to_json() for group in self.groups],
            "prefill_saved_share": self.prefill_saved_share,
            "ttft_ms": self.ttft_ms.to_json(),
            "queue_ms": self.queue_ms.to_json(),
            "makespan_ms": self.makespan_ms,
            **tier,
            "eviction": self.eviction,
            "prefill_flops_saved": self.prefill_flops_saved,
        }
