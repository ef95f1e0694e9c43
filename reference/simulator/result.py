"""What one simulation run measured: every number of one (geometry, variant) run.

:class:`RunResult` holds the numbers as typed fields; the table, the plot
and the JSON all read those fields, so no output is parsed back from another.
``to_json`` spells out the key order of ``simulate.json`` (the demo's JSON is
committed and must not change when the code moves), which is why it is not
``attrs.asdict``: that would also follow field order, but silently.
"""

from __future__ import annotations

from typing import Any

import attrs

from .variants import Variant

__all__ = ["GroupRetention", "RunResult"]

_count = attrs.validators.and_(attrs.validators.instance_of(int), attrs.validators.ge(0))
_rate = attrs.validators.and_(attrs.validators.ge(0.0), attrs.validators.le(1.0))


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


@attrs.frozen
class RunResult:
    """Every number of one run (one geometry, one variant).

    The sparse counts sum the groups other than full attention: they are
    what a retention policy saves. ``system_prompt_hit_rate`` is ``None``
    when the prompts share no prefix.
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

    def to_json(self) -> dict[str, Any]:
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
        }
