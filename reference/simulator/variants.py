"""Retention variants: a registered policy (or a user's) at one retention interval ``R``.

A variant configures a policy of the one registry
(``junction.reference.policies.registry``), resolved by name, with ``R``
going into the geometry; there is no second name -> factory table here. The
simulator compares the registered retention policies (``Role.RETENTION``:
``dense``, ``interval``, ``junction``) and any other registered or
``module:attribute`` policy asked for (``simulate --policy``, labelled by its
name), such as ``junction+decode``.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from junction.core import InvalidArgument
from junction.reference.engine.policy import Policy
from junction.reference.policies.registry import Role, policy_names, resolve_policy

__all__ = ["COMPARED_POLICIES", "VARIANT_POLICIES", "Variant", "sweep_variants", "table_variants"]

COMPARED_POLICIES = tuple(sorted(policy_names(Role.RETENTION)))  # dense, interval, junction
# With the next turn kept too (benchmarks/bench_next_turn.py, simulate --policy).
VARIANT_POLICIES = (*COMPARED_POLICIES, "junction+decode")


def _policy(instance: Variant, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or (value not in policy_names() and ":" not in value):
        raise InvalidArgument(
            attribute.name, value, "must be a registered policy or module:attribute"
        )


def _interval(instance: Variant, attribute: attrs.Attribute[int | None], value: object) -> None:
    dense = instance.policy == "dense"
    if dense and value is not None:
        raise InvalidArgument(attribute.name, value, "must be None for dense")
    if not dense and (type(value) is not int or value < 0):
        raise InvalidArgument(attribute.name, value, "must be an int >= 0")


@attrs.frozen
class Variant:
    """One retention setting: a registered policy's name and the interval ``R``."""

    policy: str = attrs.field(validator=_policy)
    retention_interval: int | None = attrs.field(validator=_interval)

    @property
    def pinned(self) -> bool:
        """Whether the junction is pinned: all but the interval policy pin it."""
        return self.policy != "interval"

    @property
    def label(self) -> str:
        if self.policy not in VARIANT_POLICIES:
            return f"{self.policy} R={self.retention_interval}"
        if self.policy == "dense":
            return "dense"
        decode = " + decode" if self.policy == "junction+decode" else ""
        if self.retention_interval == 0:
            return ("R=0 pinned" if self.pinned else "R=0 unpinned") + decode
        return f"{'pinned' if self.pinned else 'interval'} R={self.retention_interval}{decode}"

    def make_policy(self) -> Policy:
        return resolve_policy(self.policy)


def table_variants(interval: int) -> tuple[Variant, ...]:
    """The rows of the table: dense, interval R, R=0 unpinned, R=0 pinned."""
    return (
        Variant("dense", None),
        Variant("interval", interval),
        Variant("interval", 0),
        Variant("junction", 0),
    )


def sweep_variants(intervals: Sequence[int]) -> tuple[Variant, ...]:
    """The plot's points: pinned and unpinned at R = 0 and every interval, and dense."""
    points = [Variant(policy, r) for policy in ("junction", "interval") for r in (0, *intervals)]
    return (*points, Variant("dense", None))
