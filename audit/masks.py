"""vLLM 0.33.0's reachable-block mask, called as its caching path calls it.

``SingleTypeKVCacheManager.cache_blocks`` hands the group's manager class
(``SlidingWindowManager``, ``MambaManager``; full attention inherits the
base, which caches everything) the newly full block range, the coordinator's
hit alignment, the group's real spec, the manager's EAGLE bit and the
configured retention interval. :func:`vllm_block_mask` makes that call with
the same arguments for a core geometry, so a policy's ``block_mask`` can be
compared with it on identical inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

from junction.core import GroupSpec, HybridGeometry

from .specs import manager_class, vllm_spec

__all__ = ["vllm_block_mask"]


def vllm_block_mask(
    geometry: HybridGeometry,
    group: GroupSpec,
    start_block: int,
    end_block: int,
    boundaries: Sequence[int],
) -> list[bool] | None:
    """vLLM's mask for blocks ``[start_block, end_block)`` of ``group``.

    ``boundaries`` are passed through unchanged (vLLM accepts negative ones
    and marks nothing for them).
    """
    answer = manager_class(group).reachable_block_mask(
        start_block=start_block,
        end_block=end_block,
        alignment_tokens=geometry.alignment_tokens,
        kv_cache_spec=vllm_spec(group),
        use_eagle=geometry.use_eagle,
        retention_interval=geometry.retention_interval,
        reachable_boundaries=list(boundaries),
    )
    return None if answer is None else [bool(flag) for flag in answer]
