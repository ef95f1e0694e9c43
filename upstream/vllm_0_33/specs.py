"""vLLM 0.33.0's KV-cache specs and core's groups, each way, and the geometry vLLM implies.

A vLLM group becomes a core group by its manager class (:func:`core_group`),
not its spec: subclasses of vLLM's managers (chunked-local, circular-buffer,
sink attention) decide differently, so any other manager has no core kind.
HiSparse's host-tier manager is full attention for the decisions (it
inherits the lookup unchanged; only where its blocks live differs).

A :class:`core.GroupSpec` becomes the spec vLLM's managers are built from:
``FullAttentionSpec``, ``SlidingWindowSpec`` (window ``W``) or ``MambaSpec``
in ``"align"`` cache mode (the only mode that caches Mamba states). Head
counts, dtypes and state shapes are placeholders: nothing the audit calls
reads them.

Why a derived geometry: whether hits may land inside a block is not ours to
choose when we claim to be vLLM. vLLM turns partial (hash-unit) hits on when a
Mamba ``align`` group is wider than the hash unit and every other group can
look up hash units (``partial_hash_hits_enabled``); :func:`vllm_geometry` asks
that function, so ``geometry.alignment_tokens`` is exactly the
``cache_hit_alignment_tokens`` vLLM's coordinator hands its managers.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import attrs

from junction.core import GroupKind, GroupSpec, HybridGeometry, InvalidArgument

from .env import vllm

__all__ = [
    "core_group",
    "group_of",
    "kv_cache_config",
    "manager_class",
    "vllm_geometry",
    "vllm_partial_hits",
    "vllm_spec",
]


@functools.cache
def vllm_spec(group: GroupSpec) -> Any:
    """The real vLLM spec of one group (cached: specs are frozen dataclasses)."""
    v = vllm()
    common: dict[str, Any] = dict(
        block_size=group.block_size, num_kv_heads=1, head_size=1, dtype=v.torch.float32
    )
    if group.kind is GroupKind.FULL:
        return v.interface.FullAttentionSpec(**common)
    if group.kind is GroupKind.SLIDING_WINDOW:
        return v.interface.SlidingWindowSpec(**common, sliding_window=group.window)
    return v.interface.MambaSpec(
        block_size=group.block_size,
        shapes=((1,),),
        dtypes=(v.torch.float32,),
        mamba_cache_mode="align",
    )


def _vllm_key(group: GroupSpec) -> tuple[object, ...]:
    """What makes two core groups one vLLM spec (the EAGLE flag is not part of it)."""
    return (group.kind, group.block_size, group.window)


def manager_class(group: GroupSpec) -> Any:
    """vLLM's manager class for the group (``FullAttentionManager``, ...)."""
    managers = vllm().managers
    if group.kind is GroupKind.FULL:
        return managers.FullAttentionManager
    if group.kind is GroupKind.SLIDING_WINDOW:
        return managers.SlidingWindowManager
    return managers.MambaManager


def core_group(manager_cls: type, spec: Any, block_size: int) -> GroupSpec | None:
    """The core group of a vLLM 0.33.0 group whose manager is ``manager_cls``
    over ``spec``, its blocks ``block_size`` tokens (the caller states the
    effective block); ``None`` for a manager of no core kind."""
    return group_of(vllm().managers, manager_cls, spec, block_size)


def group_of(managers: Any, manager_cls: type, spec: Any, block_size: int) -> GroupSpec | None:
    """:func:`core_group` over ``managers``, a module of vLLM 0.33.0's manager
    classes (``VllmModules.managers``)."""
    if manager_cls in (managers.FullAttentionManager, managers.HiSparseSourceManager):
        return GroupSpec.full(block_size)
    if manager_cls is managers.SlidingWindowManager:
        return GroupSpec.sliding_window(block_size, spec.sliding_window)
    if manager_cls is managers.MambaManager:
        return GroupSpec.mamba(block_size)
    return None


def kv_cache_config(
    groups: Sequence[GroupSpec], num_blocks: int, retention_interval: int | None
) -> Any:
    """A real ``KVCacheConfig``: one KV-cache group per core group, marked an
    EAGLE group (``is_eagle_group``) as the core group is
    (:attr:`GroupSpec.eagle_group`; every group marked is what vLLM does when
    none is)."""
    interface = vllm().interface
    return interface.KVCacheConfig(
        num_blocks=num_blocks,
        kv_cache_tensors=[],
        kv_cache_groups=[
            interface.KVCacheGroupSpec(
                [f"layer{index}"], vllm_spec(group), is_eagle_group=group.eagle_group
            )
            for index, group in enumerate(groups)
        ],
        prefix_cache_retention_interval=retention_interval,
    )


def vllm_partial_hits(groups: Sequence[GroupSpec], hash_block_size: int) -> bool:
    """vLLM's ``partial_hash_hits_enabled`` for these groups (hybrid, no DCP)."""
    if len(groups) < 2:
        return False  # one group: the unitary coordinator, block-aligned hits only
    config = kv_cache_config(groups, 1, None)
    return bool(
        vllm().utils.partial_hash_hits_enabled(
            config.kv_cache_groups,
            hash_block_size,
            1,
            [manager_class(group) for group in groups],
        )
    )


def vllm_geometry(
    groups: Sequence[GroupSpec],
    hash_block_size: int,
    *,
    use_eagle: bool = False,
    retention_interval: int | None = None,
) -> HybridGeometry:
    """The geometry a vLLM 0.33.0 configuration with these groups implies.

    Partial hits are on exactly when vLLM turns them on. EAGLE per group as
    vLLM's lookup applies it: under EAGLE a group drops when it is marked
    (:attr:`GroupSpec.eagle_group`) or its spec equals a marked group's (vLLM
    looks equal specs up together, dropping for all when one is marked), and
    every group when none is marked. Raises
    ``InvalidArgument`` for a configuration vLLM rejects: Mamba groups of
    different block sizes (one ``cache_config.block_size``), or a retention
    interval without a sliding-window or Mamba group.
    """
    mamba_sizes = {g.block_size for g in groups if g.kind is GroupKind.MAMBA}
    if len(mamba_sizes) > 1:
        raise InvalidArgument(
            "groups", sorted(mamba_sizes), "vLLM gives every Mamba group one block size"
        )
    if retention_interval and all(g.kind is GroupKind.FULL for g in groups):
        raise InvalidArgument(
            "retention_interval",
            retention_interval,
            "vLLM rejects a retention interval without a sparse group",
        )
    if use_eagle:
        marked = {_vllm_key(g) for g in groups if g.eagle_group}
        groups = [attrs.evolve(g, eagle_group=not marked or _vllm_key(g) in marked) for g in groups]
    return HybridGeometry(
        groups,
        hash_block_size,
        partial_hits=vllm_partial_hits(groups, hash_block_size),
        use_eagle=use_eagle,
        retention_interval=retention_interval,
    )
