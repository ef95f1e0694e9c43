"""Junction core: the three retention decisions of hybrid-model prefix caches.

Pure functions and frozen value types, standard library + attrs only,
relative imports only: copy this package into an engine unchanged.

* Decision 1, hit reconciliation: :func:`reconcile_hits`,
  :func:`shared_prefix_boundary`, the finders, :func:`reachable_boundaries`.
* Decision 2, chunk stop point: :func:`mamba_block_aligned_split`.
* Decision 3, reachable-block mask: :func:`reachable_block_mask`.
* The one source of truth behind all three: :func:`promised_positions`,
  :func:`checkpoint_stop` and :func:`decode_checkpoint` (with
  :func:`decode_step_state` and :func:`deepest_decode_state` under
  speculative decode steps).

Invalid input raises :class:`InvalidArgument` naming the argument, the value
and the rule; it derives from :class:`JunctionError`, the root of every error
any part of Junction raises on purpose. :class:`ChunkSplitter`,
:class:`GroupMask`, :class:`HitReconciler` and :class:`GroupLookup` bind what
is fixed once (docs/design/bound-calls.md).
"""

from .boundaries import reachable_boundaries, replay_boundary
from .checkpoints import (
    CrossedGridPoints,
    checkpoint_stop,
    decode_checkpoint,
    decode_step_state,
    deepest_decode_state,
    promised_positions,
    promised_stop,
    segment_boundaries,
)
from .errors import InvalidArgument, JunctionError
from .finders import (
    Finder,
    GroupLookup,
    group_finder,
    longest_full_attention_hit,
    longest_mamba_hit,
    longest_sliding_window_hit,
)
from .geometry import GroupKind, GroupSpec, HybridGeometry, sliding_window_need
from .grid import cdiv, floor_to, lcm, next_grid_point
from .mask import GroupMask, MaskPlan, OffGridInterval, mask_plan, reachable_block_mask
from .reconcile import HitReconciler, HitReconciliation, reconcile_hits, shared_prefix_boundary
from .split import (
    ChunkSplitter,
    PrefillCheckpoints,
    last_cacheable_position,
    mamba_block_aligned_split,
    prefill_end,
)

__all__ = [
    "ChunkSplitter",
    "CrossedGridPoints",
    "Finder",
    "GroupKind",
    "GroupLookup",
    "GroupMask",
    "GroupSpec",
    "HitReconciler",
    "HitReconciliation",
    "HybridGeometry",
    "InvalidArgument",
    "JunctionError",
    "MaskPlan",
    "OffGridInterval",
    "PrefillCheckpoints",
    "cdiv",
    "checkpoint_stop",
    "decode_checkpoint",
    "decode_step_state",
    "deepest_decode_state",
    "floor_to",
    "group_finder",
    "last_cacheable_position",
    "lcm",
    "longest_full_attention_hit",
    "longest_mamba_hit",
    "longest_sliding_window_hit",
    "mamba_block_aligned_split",
    "mask_plan",
    "next_grid_point",
    "prefill_end",
    "promised_positions",
    "promised_stop",
    "reachable_block_mask",
    "reachable_boundaries",
    "reconcile_hits",
    "replay_boundary",
    "segment_boundaries",
    "shared_prefix_boundary",
    "sliding_window_need",
]
