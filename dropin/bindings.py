"""Core bindings cached by the identity of the vLLM objects they were built from.

The adapters bind the core once per group or engine configuration (a
``GroupMask``, a ``HybridGeometry`` with its reconciler) and look the
binding up on every call. Keying by vLLM's spec objects themselves would
hash each frozen dataclass field by field on every call, which costs more
than the decision; keying by ``id`` is a few integer hashes. An ``id`` is
only unique while its object lives, so each entry holds the objects it was
keyed by: while the entry exists their ids cannot be reused. The cache is
bounded (cleared when full: an engine has a handful of configurations, a
test process a few hundred).
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["IdentityCache"]

T = TypeVar("T")
Key = tuple[object, ...]


class IdentityCache(Generic[T]):
    """Values keyed by some objects' identities plus some hashable settings."""

    def __init__(self, limit: int = 1024) -> None:
        self._limit = limit
        self._entries: dict[Key, tuple[tuple[object, ...], T]] = {}

    def find(self, objects: tuple[object, ...], settings: Key) -> T | None:
        """The value kept for these objects and settings, or ``None``."""
        entry = self._entries.get((*map(id, objects), *settings))
        return None if entry is None else entry[1]

    def keep(self, objects: tuple[object, ...], settings: Key, value: T) -> T:
        """Keep ``value`` for these objects (held alive by the entry) and settings."""
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[(*map(id, objects), *settings)] = (objects, value)
        return value
