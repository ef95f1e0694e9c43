"""vLLM's KV-cache groups as core groups, for the mask and lookup adapters.

The installed release's package translates (``core_group`` of
:mod:`junction.upstream`'s release: only the three kinds the core models, by
manager class); a group of no core kind is an option the core cannot
express, refused here. An adapter translates once per binding
(docs/design/dropin-translations.md).
"""

from __future__ import annotations

from typing import Any

from junction.core import GroupSpec
from junction.upstream import VllmRelease

from .errors import Decision, UnsupportedOption

__all__ = ["core_group"]


def core_group(
    release: VllmRelease, decision: Decision, manager_cls: type, spec: Any, block_size: int
) -> GroupSpec:
    """The core group of a vLLM group whose blocks hold ``block_size`` tokens, or
    :class:`UnsupportedOption` naming its manager.

    ``block_size`` is the group's effective block, which the caller states:
    decode-context parallelism shards an attention block's KV across ranks,
    so each rank's block covers ``dcp_world_size`` times the spec's tokens
    (vLLM's managers use that block for hashing, lookup and masks), while
    Mamba state is replicated and keeps the spec's block.
    """
    group = release.core_group(manager_cls, spec, block_size)
    if group is None:
        raise UnsupportedOption(decision, "kv_cache_manager", manager_cls.__name__)
    return group
