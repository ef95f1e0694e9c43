"""The built-in hybrid geometries the simulator compares policies on.

Each is a tuple of groups and one line describing it; ``R`` and EAGLE are
per run, so a choice builds its geometry on demand. Besides three simple
geometries, four presets give real families (``nemotron-h``, ``qwen3-next``,
``gpt-oss``, ``gemma3``) the block sizes vLLM 0.33.0 chooses for them, as
plain data: ``tests/audit/test_presets.py`` derives them with vLLM's code
and ``docs/model-layouts.md`` tabulates them. Each choice carries a FLOP
model (``engine.eviction.FlopModel``) counted from the family's config
defaults: a model of the cost, not a measurement.
"""

from __future__ import annotations

import attrs

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.eviction import FlopModel, LayerCost
from junction.reference.errors import non_empty

__all__ = ["DEFAULT_GEOMETRIES", "GEOMETRIES", "PRESETS", "GeometryChoice"]


@attrs.frozen
class GeometryChoice:
    """A built-in geometry: its groups, one line describing it, and its FLOP model."""

    groups: tuple[GroupSpec, ...] = attrs.field(validator=non_empty)
    description: str
    flops: FlopModel

    def build(self, retention_interval: int | None, use_eagle: bool) -> HybridGeometry:
        hash_unit = min(group.block_size for group in self.groups)
        return HybridGeometry(
            self.groups, hash_unit, use_eagle=use_eagle, retention_interval=retention_interval
        )

    @property
    def scheduler_block(self) -> int:
        """``L``: every retention interval must be a multiple of it."""
        return self.build(None, False).scheduler_block_size


def _attention(layers: int, d_model: int, heads: int, kv_heads: int, head_dim: int) -> LayerCost:
    """``layers`` attention layers: Q, K, V and O projections, and the scores and mixing."""
    weights = d_model * (2 * heads * head_dim + 2 * kv_heads * head_dim)
    return LayerCost(2 * weights * layers, 4 * heads * head_dim * layers)


# An illustrative 3B-class hybrid (d_model 2048, 16 heads x 128, 4 KV heads):
# 4 attention, 4 sliding-window and 20 Mamba-2 layers (expand 2), a 2-billion-weight MLP.
_ILLUSTRATIVE = FlopModel(
    full=_attention(4, 2048, 16, 4, 128),
    sliding_window=_attention(4, 2048, 16, 4, 128),
    mamba=LayerCost(2 * 20 * (2048 * 2 * 4096 + 4096 * 2048)),
    shared_flops_per_token=2 * 2_000_000_000,
    page_bytes=16 * 4 * 128 * 2 * 2,
)
# Nemotron-H 8B: d_model 4096; 4 attention layers (32 heads, 8 KV heads x 128);
# 24 Mamba-2 layers (in_proj 4096 -> 2 x 8192 + 2 x 8 x 128 + 128, out_proj 8192 -> 4096);
# 24 MLP layers (squared ReLU, 21504 wide: two matrices).
_NEMOTRON_H = FlopModel(
    full=_attention(4, 4096, 32, 8, 128),
    mamba=LayerCost(2 * 24 * (4096 * (2 * 8192 + 2 * 8 * 128 + 128) + 8192 * 4096)),
    shared_flops_per_token=2 * 24 * 2 * 4096 * 21504,
    page_bytes=2_162_688,
)
# Qwen3-Next 80B-A3B: d_model 2048; 12 gated attention layers (16 heads x 256, the
# query projection doubled for the gate; 2 KV heads); 36 Gated DeltaNet layers
# (qkvz 2048 -> 12288, ba -> 64, out 4096 -> 2048, and a 32 x 128 x 128 state update
# at 4 FLOPs per entry); 48 MoE layers with 10 routed + 1 shared expert of 3 x 2048 x 512.
_QWEN3_NEXT = FlopModel(
    full=LayerCost(
        2 * 12 * (2048 * 2 * 16 * 256 + 2 * 2048 * 2 * 256 + 16 * 256 * 2048), 4 * 16 * 256 * 12
    ),
    mamba=LayerCost(36 * (2 * (2048 * 12288 + 2048 * 64 + 4096 * 2048) + 4 * 32 * 128 * 128)),
    shared_flops_per_token=2 * 48 * 11 * 3 * 2048 * 512,
    page_bytes=1_114_112,
)
# gpt-oss 120B: d_model 2880; 18 full and 18 sliding-window layers (64 heads, 8 KV heads
# x 64); MoE on all 36 layers, 4 active experts of 3 x 2880 x 2880.
_GPT_OSS = FlopModel(
    full=_attention(18, 2880, 64, 8, 64),
    sliding_window=_attention(18, 2880, 64, 8, 64),
    shared_flops_per_token=2 * 36 * 4 * 3 * 2880 * 2880,
    page_bytes=16 * 8 * 64 * 2 * 2,
)
# Gemma 3 27B: d_model 5376; 10 full and 52 sliding-window layers (32 heads, 16 KV heads
# x 128); a gated MLP 21504 wide (three matrices) on all 62 layers.
_GEMMA3 = FlopModel(
    full=_attention(10, 5376, 32, 16, 128),
    sliding_window=_attention(52, 5376, 32, 16, 128),
    shared_flops_per_token=2 * 62 * 3 * 5376 * 21504,
    page_bytes=16 * 16 * 128 * 2 * 2,
)

GEOMETRIES: dict[str, GeometryChoice] = {
    "full+mamba": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.mamba(64)),
        "full attention (block 16) + Mamba in align mode (block 64): L = 64",
        _ILLUSTRATIVE,
    ),
    "full+swa": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.sliding_window(16, 128)),
        "full attention (block 16) + sliding window 128 (block 16): L = 16",
        _ILLUSTRATIVE,
    ),
    "full+swa+mamba": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.sliding_window(16, 128), GroupSpec.mamba(64)),
        "full attention + sliding window 128 (blocks 16) + Mamba (block 64): L = 64",
        _ILLUSTRATIVE,
    ),
}
PRESETS: dict[str, GeometryChoice] = {
    "nemotron-h": GeometryChoice(
        (GroupSpec.full(528), GroupSpec.mamba(528)),
        "Nemotron-H 8B: Mamba-2 + full attention (blocks 528, vLLM's page-size rule): L = 528",
        _NEMOTRON_H,
    ),
    "qwen3-next": GeometryChoice(
        (GroupSpec.full(544), GroupSpec.mamba(544)),
        "Qwen3-Next 80B-A3B: Gated DeltaNet + full attention, 3:1 (blocks 544): L = 544",
        _QWEN3_NEXT,
    ),
    "gpt-oss": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.sliding_window(16, 128)),
        "gpt-oss 120B: full attention + sliding window 128, alternating (blocks 16): L = 16",
        _GPT_OSS,
    ),
    "gemma3": GeometryChoice(
        (GroupSpec.full(16), GroupSpec.sliding_window(16, 1024)),
        "Gemma 3 27B: full attention + sliding window 1024, 1:5 (blocks 16): L = 16",
        _GEMMA3,
    ),
}
GEOMETRIES.update(PRESETS)
DEFAULT_GEOMETRIES = ("full+mamba", "full+swa")
