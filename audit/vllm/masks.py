"""vLLM 0.33.0's reachable-block mask, called as its caching path calls it.

``SingleTypeKVCacheManager.cache_blocks`` hands the group's manager class
(``SlidingWindowManager``, ``MambaManager``; full attention inherits the
base, which caches everything) the newly full block range, the coordinator's
hit alignment, the group's real spec, the manager's EAGLE bit and the
configured retention interval. :func:`vllm_block_mask` makes that call with
the same arguments for a core geometry, so a policy's ``block_mask`` can be
compared with it on identical inputs. :func:`vllm_group_mask` makes any call
of the class method, options included (an off-grid retention interval, the
final segment's end: what the offloading connector hands it).
"""

from __future__ import annotations

from collections.abc import Sequence

from junction.core import GroupSpec, HybridGeometry
from junction.upstream.vllm_0_33.specs import manager_class, vllm_spec

__all__ = ["vllm_block_mask", "vllm_group_mask"]


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
    return vllm_group_mask(
        group,
        start_block,
        end_block,
        geometry.alignment_tokens,
        group.eagle_lookup(geometry.use_eagle),  # the group's manager's own flag
        geometry.retention_interval,
        boundaries,
    )


def vllm_group_mask(
    group: GroupSpec,
    start_block: int,
    end_block: int,
    alignment_tokens: int,
    use_eagle: bool,
    retention_interval: int | None,
    boundaries: Sequence[int] = (),
    final_segment_end_block: int | None = None,
) -> list[bool] | None:
    """vLLM's ``reachable_block_mask`` class method of ``group``'s manager, on its real spec."""
    answer = manager_class(group).reachable_block_mask(
        start_block=start_block,
        end_block=end_block,
        alignment_tokens=alignment_tokens,
        kv_cache_spec=vllm_spec(group),
        use_eagle=use_eagle,
        retention_interval=retention_interval,
        reachable_boundaries=list(boundaries),
        final_segment_end_block=final_segment_end_block,
    )
    return None if answer is None else [bool(flag) for flag in answer]
