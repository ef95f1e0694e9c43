"""The mask adapter: ``SlidingWindowManager`` / ``MambaManager.reachable_block_mask``.

The group's spec maps to a core group and the call returns the core's mask
(``None`` = cache every block, as in vLLM); everything but the block range
and the boundaries is fixed per group, so a :class:`junction.core.GroupMask`
is bound once per setting (:mod:`.bindings`). A negative boundary (EAGLE's
``J - B``) marks nothing in vLLM and is left out; decode-context parallelism
scales a window's block. Refused with :class:`UnsupportedOption`: no
alignment, and the one retention interval the core rejects; any other
invalid input is re-raised as the core raised it
(docs/design/dropin-translations.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from junction.core import GroupKind, GroupMask, InvalidArgument
from junction.upstream import vllm_release

from .bindings import IdentityCache
from .errors import Decision, UnsupportedOption
from .groups import core_group

__all__ = ["core_mask"]

# A group's GroupMask.reachable_block_mask, bound once.
_BoundMask = Callable[[int, int, Sequence[int], int | None], list[bool] | None]


def core_mask(
    cls: type,
    start_block: int,
    end_block: int,
    alignment_tokens: int | None,
    kv_cache_spec: Any,
    use_eagle: bool,
    retention_interval: int | None = None,
    reachable_boundaries: Sequence[int] = (),
    dcp_world_size: int = 1,
    final_segment_end_block: int | None = None,
) -> list[bool] | None:
    """Drop-in for the class method: its signature, names included (``cls`` is
    the class it was called on)."""
    manager_cls = cls
    key = (
        manager_cls,
        id(kv_cache_spec),
        alignment_tokens,
        use_eagle,
        retention_interval,
        dcp_world_size,
    )
    bound = _find(key)
    if bound is None:  # the group's first call: bind (and validate) once
        if alignment_tokens is None:
            raise UnsupportedOption(Decision.MASK, "alignment_tokens", alignment_tokens)
        bound = _masks.keep(
            key,
            (manager_cls, kv_cache_spec),
            _group_mask(
                manager_cls,
                kv_cache_spec,
                alignment_tokens,
                use_eagle,
                retention_interval,
                dcp_world_size,
            ).reachable_block_mask,
        )
    boundaries = reachable_boundaries
    if type(boundaries) is not list and type(boundaries) is not tuple:
        boundaries = list(boundaries)  # read once, whatever iterable it is
    try:
        return bound(start_block, end_block, boundaries, final_segment_end_block)
    except InvalidArgument:
        # A negative boundary (EAGLE's J - B) marks nothing in vLLM: retried
        # without the negatives, the error stands unless one was left out.
        kept = [boundary for boundary in boundaries if type(boundary) is not int or boundary >= 0]
        if len(kept) == len(boundaries):
            raise
        return bound(start_block, end_block, kept, final_segment_end_block)


_masks: IdentityCache[_BoundMask] = IdentityCache()
_find = _masks.find  # the dict's own get: a call's lookup is one C call, no attribute


def _group_mask(
    manager_cls: type,
    kv_cache_spec: Any,
    alignment_tokens: int,
    use_eagle: bool,
    retention_interval: int | None,
    dcp_world_size: int,
) -> GroupMask:
    release = vllm_release()
    group = core_group(release, Decision.MASK, manager_cls, kv_cache_spec, kv_cache_spec.block_size)
    if group.kind is not GroupKind.MAMBA:
        # A sliding window's block is sharded under decode-context parallelism;
        # a Mamba state is replicated (vLLM's Mamba mask reads the spec's block).
        group = attrs.evolve(group, block_size=group.block_size * dcp_world_size)
    try:
        return GroupMask(alignment_tokens, group, use_eagle, retention_interval)
    except InvalidArgument as error:
        if error.argument == "retention_interval":
            raise UnsupportedOption(
                Decision.MASK, "retention_interval", retention_interval
            ) from error
        raise
