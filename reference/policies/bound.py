"""The built-in policies' masks, bound once per group setting and reused.

``core.reachable_block_mask`` is a fresh :class:`core.GroupMask` per call:
right for a one-off call, wasteful in a policy asked for a mask on every
chunk, where the binding's validation and its derived plan (and, for a
periodic plan, its pre-tiled runs of 8,192 blocks) would be rebuilt each
time for the same group. Bindings are cached by value (alignment, group,
EAGLE, ``R``; all frozen and hashable), so every policy instance and every
engine with the same setting shares one. Rejected: a cache per policy
instance keyed by the geometry's identity (a policy would need an
``__init__`` that every subclass must call, and identity keys must hold
their objects alive to stay unique).
"""

from __future__ import annotations

import functools

from junction.core import GroupMask, GroupSpec

__all__ = ["group_mask"]


@functools.lru_cache(maxsize=1024)
def group_mask(
    alignment_tokens: int, spec: GroupSpec, use_eagle: bool, retention_interval: int | None
) -> GroupMask:
    """The group's binding (``core.InvalidArgument`` for a setting the core rejects)."""
    return GroupMask(alignment_tokens, spec, use_eagle, retention_interval)
