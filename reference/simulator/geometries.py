"""The built-in hybrid geometries the simulator compares policies on.

Each is a tuple of groups and one line describing it (the table's header and
the plot's title). The hash unit is the smallest block, so every group's
block is a whole number of hash units; the retention interval ``R`` and EAGLE
are per run, so a choice builds its geometry on demand.
"""

from __future__ import annotations

import attrs

from junction.core import GroupSpec, HybridGeometry

__all__ = ["DEFAULT_GEOMETRIES", "GEOMETRIES", "GeometryChoice"]


@attrs.frozen
class GeometryChoice:
    """A built-in geometry: its groups and one line describing it."""

    groups: tuple[GroupSpec, ...] = attrs.field(validator=attrs.validators.min_len(1))
    description: str

    def build(self, retention_interval: int | None, use_eagle: bool) -> HybridGeometry:
        hash_unit = min(group.block_size for group in self.groups)
        return HybridGeometry(
            self.groups, hash_unit, use_eagle=use_eagle, retention_interval=retention_interval
        )

    @property
    def scheduler_block(self) -> int:
        """``L``: every retention interval must be a multiple of it."""
        return self.build(None, False).scheduler_block_size


GEOMETRIES: dict[str, GeometryChoice] = {
    "full+mamba": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.mamba(64)),
        "full attention (block 16) + Mamba in align mode (block 64): L = 64",
    ),
    "full+swa": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.sliding_window(16, 128)),
        "full attention (block 16) + sliding window 128 (block 16): L = 16",
    ),
    "full+swa+mamba": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.sliding_window(16, 128), GroupSpec.mamba(64)),
        "full attention + sliding window 128 (blocks 16) + Mamba (block 64): L = 64",
    ),
}
DEFAULT_GEOMETRIES = ("full+mamba", "full+swa")
