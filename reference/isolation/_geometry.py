"""A geometry and its groups as plain data, and back: how they cross to a policy worker.

The parent sends each geometry once, whole (:func:`geometry_json`), and
then names it by a number; a group travels as its index in that geometry
or, when it is not one of its groups, as its fields (:func:`group_json`).
"""

from __future__ import annotations

from typing import Any

from junction.core import GroupKind, GroupSpec, HybridGeometry

__all__ = ["geometry_from_json", "geometry_json", "group_from_json", "group_json"]


def group_json(group: GroupSpec) -> dict[str, Any]:
    """Every field of ``group`` as plain data."""
    return {
        "kind": group.kind.value,
        "block_size": group.block_size,
        "window": group.window,
        "eagle_group": group.eagle_group,
    }


def geometry_json(geometry: HybridGeometry) -> dict[str, Any]:
    """Every field of ``geometry`` as plain data."""
    return {
        "groups": [group_json(g) for g in geometry.groups],
        "hash_block_size": geometry.hash_block_size,
        "partial_hits": geometry.partial_hits,
        "use_eagle": geometry.use_eagle,
        "retention_interval": geometry.retention_interval,
    }


def group_from_json(data: dict[str, Any]) -> GroupSpec:
    return GroupSpec(
        GroupKind(data["kind"]), data["block_size"], data["window"], eagle_group=data["eagle_group"]
    )


def geometry_from_json(data: dict[str, Any]) -> HybridGeometry:
    return HybridGeometry(
        [group_from_json(g) for g in data["groups"]],
        data["hash_block_size"],
        partial_hits=data["partial_hits"],
        use_eagle=data["use_eagle"],
        retention_interval=data["retention_interval"],
    )
