"""The built-in hybrid geometries the simulator compares policies on.

Each is a tuple of groups and one line describing it (the table's header and
the plot's title). The hash unit is the smallest block, so every group's
block is a whole number of hash units; the retention interval ``R`` and EAGLE
are per run, so a choice builds its geometry on demand.

Besides the three simple geometries, four presets give real hybrid families
the block sizes vLLM 0.33.0 chooses for them (FlashAttention, bf16, prefix
caching with Mamba in align mode, one GPU): ``nemotron-h``, ``qwen3-next``,
``gpt-oss`` and ``gemma3``. They are plain data here (no vLLM at run time);
``tests/audit/test_presets.py`` derives them with vLLM's own page-size code
and ``docs/model-layouts.md`` tabulates them. A family's layers of one kind
are one group here, where vLLM may split them into several groups of equal
layer count: that changes the memory a token takes, not where states are
kept. Gated DeltaNet (Qwen3-Next's linear attention) is a Mamba group: vLLM
manages it as one, a recurrent state that can only be resumed where saved.
"""

from __future__ import annotations

import attrs

from junction.core import GroupSpec, HybridGeometry

__all__ = ["DEFAULT_GEOMETRIES", "GEOMETRIES", "PRESETS", "GeometryChoice"]


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
PRESETS: dict[str, GeometryChoice] = {
    "nemotron-h": GeometryChoice(
        (GroupSpec.full(528), GroupSpec.mamba(528)),
        "Nemotron-H 8B: Mamba-2 + full attention (blocks 528, vLLM's page-size rule): L = 528",
    ),
    "qwen3-next": GeometryChoice(
        (GroupSpec.full(544), GroupSpec.mamba(544)),
        "Qwen3-Next 80B-A3B: Gated DeltaNet + full attention, 3:1 (blocks 544): L = 544",
    ),
    "gpt-oss": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.sliding_window(16, 128)),
        "gpt-oss 120B: full attention + sliding window 128, alternating (blocks 16): L = 16",
    ),
    "gemma3": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.sliding_window(16, 1024)),
        "Gemma 3 27B: full attention + sliding window 1024, 1:5 (blocks 16): L = 16",
    ),
}
GEOMETRIES.update(PRESETS)
DEFAULT_GEOMETRIES = ("full+mamba", "full+swa")
