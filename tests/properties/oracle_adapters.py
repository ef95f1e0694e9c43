"""Calls into the oracle with core's argument shapes (the oracle never imports core)."""

from __future__ import annotations

from typing import Any

from junction.reference.oracle.first_principles import (
    OracleGroup,
    oracle_reachable_block_mask,
    oracle_reconcile,
)

from .core_under_test import Finder, HybridGeometry, group_finder


def oracle_mask(args: dict[str, Any]) -> list[bool] | None:
    spec = args["spec"]
    return oracle_reachable_block_mask(
        args["start_block"],
        args["end_block"],
        args["alignment_tokens"],
        spec.kind.value,
        spec.block_size,
        spec.window,
        args["use_eagle"],
        args["retention_interval"],
        args["reachable_boundaries"],
        args.get("final_segment_end_block"),
        spec.eagle_group,
    )


def finders_for(geometry: HybridGeometry, cached: list[frozenset[int]]) -> list[Finder]:
    return [
        group_finder(spec, blocks.__contains__, alignment_tokens=geometry.alignment_tokens)
        for spec, blocks in zip(geometry.groups, cached, strict=True)
    ]


def oracle_hits(
    geometry: HybridGeometry, cached: list[frozenset[int]], max_hit: int, limit: int
) -> tuple[int, int, int]:
    groups = [
        OracleGroup(spec.kind.value, spec.block_size, spec.window, blocks, spec.eagle_group)
        for spec, blocks in zip(geometry.groups, cached, strict=True)
    ]
    return oracle_reconcile(groups, geometry.alignment_tokens, geometry.use_eagle, max_hit, limit)
