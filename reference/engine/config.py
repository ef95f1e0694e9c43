"""What shapes an engine's run (:class:`EngineConfig`) and what it counts (:class:`Metrics`)."""

from __future__ import annotations

import attrs

from junction.core import HybridGeometry, InvalidArgument
from junction.reference.engine.eviction import EvictionPolicy, LeastRecentlyUsed
from junction.reference.engine.protocol import Policy
from junction.reference.engine.speculative import SpeculativeDecoding
from junction.reference.engine.tier import ExternalTier, TierSaving

__all__ = ["EngineConfig", "Metrics"]


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int or value < 1:
        raise InvalidArgument(attribute.name, value, "must be an int >= 1")


def _non_negative(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int or value < 0:
        raise InvalidArgument(attribute.name, value, "must be an int >= 0")


def _speculative(
    instance: object, attribute: attrs.Attribute[SpeculativeDecoding | None], value: object
) -> None:
    if value is not None and not isinstance(value, SpeculativeDecoding):
        raise InvalidArgument(attribute.name, value, "must be None or a SpeculativeDecoding")


@attrs.frozen
class EngineConfig:
    """Everything that shapes a run besides the submitted requests.

    ``long_prefill_token_threshold`` caps one request's prefill chunk per step
    (0: no cap). Mamba groups run in align mode; where a prefill chunk stops
    is the ``policy``'s split, and what is cached its mask. The policy has no
    default: the engine sits below the policies and never imports one.
    ``tier``: an external store this instance saves to and loads from
    (``tier.py``; several engines may share one), with ``tier_saving``
    naming what its save path hands the mask.
    ``eviction`` chooses which free cached block a full pool recycles
    (``eviction.py``; least recently freed first by default).
    ``speculative``: decode steps verifying draft tokens (``speculative.py``;
    ``None``, the default: one token a step).
    """

    geometry: HybridGeometry
    num_blocks: int = attrs.field(validator=_positive)
    policy: Policy = attrs.field(kw_only=True)
    max_num_batched_tokens: int = attrs.field(default=2048, validator=_positive)
    long_prefill_token_threshold: int = attrs.field(default=0, validator=_non_negative)
    seed: int = attrs.field(default=0, validator=_non_negative)
    vocab_size: int = attrs.field(default=32_000, validator=_positive)
    tier: ExternalTier | None = attrs.field(default=None, kw_only=True, eq=False)
    tier_saving: TierSaving = attrs.field(default=TierSaving.POLICY, kw_only=True)
    eviction: EvictionPolicy = attrs.field(factory=LeastRecentlyUsed, kw_only=True)
    speculative: SpeculativeDecoding | None = attrs.field(
        default=None, kw_only=True, validator=_speculative
    )


@attrs.define
class Metrics:
    """Counters of one run (``retained_*`` are cached blocks per group id)."""

    steps: int = 0
    chunks: int = 0
    prefill_tokens_computed: int = 0
    lookup_tokens: int = 0
    hit_tokens: int = 0
    external_hit_tokens: int = 0  # the part of ``hit_tokens`` loaded from the tier
    admissions: int = 0
    preemptions: int = 0
    evictions: int = 0
    finished: int = 0
    retained_peak: dict[int, int] = attrs.field(factory=dict)
    retained_final: dict[int, int] = attrs.field(factory=dict)

    @property
    def token_hit_rate(self) -> float:
        return self.hit_tokens / self.lookup_tokens if self.lookup_tokens else 0.0
