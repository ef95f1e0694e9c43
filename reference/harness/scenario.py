"""A replayable input of one promise check, and its JSON form.

A scenario is plain data (geometry, prompts, budget, pool), never a closure
over an engine, so a counterexample found on one subject replays on any other
(the reference engine, vLLM's own code) and travels in a bug report as JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from junction.core import GroupKind, GroupSpec, HybridGeometry, InvalidArgument
from junction.reference.engine.finish import DEFAULT_FINISH, FinishReason
from junction.reference.engine.speculative import SpeculativeDecoding
from junction.reference.errors import int_at_least, member

from .promise import Promise

__all__ = ["Scenario"]


def _prompts(value: Iterable[Iterable[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(prompt) for prompt in value)


def _ints(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


def _promise(name: Promise | str) -> Promise:
    return Promise.named(name)


def _finish(name: FinishReason | str) -> FinishReason:
    return member(FinishReason, "finish", name)


def _speculative(value: SpeculativeDecoding | dict[str, Any] | None) -> SpeculativeDecoding | None:
    if value is None or isinstance(value, SpeculativeDecoding):
        return value
    if not isinstance(value, dict) or "num_tokens" not in value:
        rule = "must be None, a SpeculativeDecoding or its JSON object (num_tokens, ...)"
        raise InvalidArgument("speculative", value, rule)
    return SpeculativeDecoding(**value)


@attrs.frozen
class Scenario:
    """What one promise check runs.

    ``prompts`` run one after another to completion; with ``gaps`` (the
    ``safety`` promise) they arrive ``gaps[i]`` steps apart instead, into a
    pool of ``num_blocks``. ``probe`` is the request looked up afterwards
    (empty when unused; for the ``next_turn`` promise the next turn's new
    text, looked up after the first prompt's transcript). ``declared``: the
    checkpoints the first prompt's application declares (the
    ``declared_prefix`` promise; its probe is the sibling). ``finish``: how
    every prompt ends after its ``max_output_tokens`` outputs (stopped by
    default; ``engine.finish``). ``speculative``: the engine's decode steps
    (``engine.speculative``; ``None``, one token a step).
    """

    promise: Promise = attrs.field(converter=_promise)
    geometry: HybridGeometry
    prompts: tuple[tuple[int, ...], ...] = attrs.field(converter=_prompts)
    probe: tuple[int, ...] = attrs.field(converter=_ints, default=())
    budget: int = attrs.field(default=16, validator=int_at_least(1))
    num_blocks: int = attrs.field(default=5000, validator=int_at_least(1))
    gaps: tuple[int, ...] = attrs.field(converter=_ints, default=())
    max_output_tokens: int = attrs.field(default=2, validator=int_at_least(1))
    declared: tuple[int, ...] = attrs.field(converter=_ints, default=())
    finish: FinishReason = attrs.field(converter=_finish, default=DEFAULT_FINISH)
    speculative: SpeculativeDecoding | None = attrs.field(converter=_speculative, default=None)

    @declared.validator
    def _declared(
        self, attribute: attrs.Attribute[tuple[int, ...]], value: tuple[int, ...]
    ) -> None:
        if self.promise is Promise.DECLARED_PREFIX and not value:
            rule = "the declared_prefix promise needs a declared checkpoint"
            raise InvalidArgument(attribute.name, value, rule)

    @gaps.validator
    def _gaps(self, attribute: attrs.Attribute[tuple[int, ...]], value: tuple[int, ...]) -> None:
        if value and len(value) != len(self.prompts):
            raise InvalidArgument(
                attribute.name, value, f"must hold one gap per prompt ({len(self.prompts)})"
            )

    def to_json(self) -> dict[str, Any]:
        geometry = self.geometry
        return {
            "promise": self.promise.value,
            "geometry": {
                "groups": [
                    {
                        "kind": g.kind.value,
                        "block_size": g.block_size,
                        "window": g.window,
                        # Only a group that is not an EAGLE group says so (the default).
                        **({} if g.eagle_group else {"eagle_group": False}),
                    }
                    for g in geometry.groups
                ],
                "hash_block_size": geometry.hash_block_size,
                "partial_hits": geometry.partial_hits,
                "use_eagle": geometry.use_eagle,
                "retention_interval": geometry.retention_interval,
            },
            "prompts": [list(p) for p in self.prompts],
            "probe": list(self.probe),
            "budget": self.budget,
            "num_blocks": self.num_blocks,
            "gaps": list(self.gaps),
            "max_output_tokens": self.max_output_tokens,
            # Only a scenario that declares checkpoints, ends otherwise than
            # stopped or decodes speculatively says so (the defaults).
            **({"declared": list(self.declared)} if self.declared else {}),
            **({"finish": self.finish.value} if self.finish is not DEFAULT_FINISH else {}),
            **({"speculative": self.speculative.to_json()} if self.speculative else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Scenario:
        g = data["geometry"]
        groups = []
        for group in g["groups"]:
            kind = GroupKind(group["kind"])
            window = group["window"] if kind is GroupKind.SLIDING_WINDOW else None
            groups.append(
                GroupSpec(
                    kind,
                    group["block_size"],
                    window,
                    eagle_group=group.get("eagle_group", True),
                )
            )
        geometry = HybridGeometry(
            groups,
            g["hash_block_size"],
            partial_hits=g["partial_hits"],
            use_eagle=g["use_eagle"],
            retention_interval=g["retention_interval"],
        )
        fields = {k: v for k, v in data.items() if k != "geometry"}
        return cls(geometry=geometry, **fields)
