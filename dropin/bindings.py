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

A caller builds the key itself, flat (the ids of the objects, then the
settings), so a call's lookup is one tuple and one ``dict.get``: the
adapters run on every engine step. A binding is built from the vLLM release
installed when it was made, so installing forgets them all (:func:`forget`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

__all__ = ["IdentityCache", "OwnerCache", "forget"]

T = TypeVar("T")
Key = tuple[object, ...]


class IdentityCache(Generic[T]):
    """Values keyed by some objects' identities plus some hashable settings.

    ``find(key)`` is the value kept under ``key``, or ``None``.
    """

    def __init__(self, limit: int = 1024) -> None:
        self._limit = limit
        self._values: dict[Key, T] = {}
        self._held: dict[Key, tuple[object, ...]] = {}
        self.find: Callable[[Key], T | None] = self._values.get
        _caches.append(self)

    def clear(self) -> None:
        """Forget every binding."""
        self._values.clear()
        self._held.clear()

    def keep(self, key: Key, objects: tuple[object, ...], value: T) -> T:
        """Keep ``value`` under ``key``, which holds the ids of ``objects``
        (held alive by the entry, so their ids stay theirs) and settings."""
        if len(self._values) >= self._limit:
            self.clear()
        self._values[key] = value
        self._held[key] = objects
        return value


class Kept(NamedTuple, Generic[T]):
    """A value kept for one owner, with what it was built from."""

    owner: weakref.ref[Any]
    sources: tuple[object, ...]  # the owner's attributes the value was built from
    value: T


class OwnerCache(Generic[T]):
    """One value kept beside each live owner: ``find(id(owner))`` is its
    :class:`Kept`, or ``None``; the caller uses the value while ``owner()`` is
    still the owner and ``sources`` equals what the owner holds now.

    Beside the owners, never on them: an attribute set on a vLLM object (or a
    read of its ``__dict__``) turns its inline values into a real dict for good
    on CPython 3.11, and every method vLLM then calls on it runs unspecialized.
    An entry is dropped with its owner (a weak reference's callback), so an id
    is never read for a later object. Cheaper than an :class:`IdentityCache`
    key, which the adapter rebuilds from the owner's parts on every call.
    """

    def __init__(self) -> None:
        self._kept: dict[int, Kept[T]] = {}
        self.find: Callable[[int], Kept[T] | None] = self._kept.get
        _caches.append(self)

    def clear(self) -> None:
        """Forget every value."""
        self._kept.clear()

    def keep(self, owner: object, sources: tuple[object, ...], value: T) -> T:
        """Keep ``value`` for ``owner`` (replacing its previous one), built from ``sources``."""
        key, kept = id(owner), self._kept

        def drop(_: weakref.ref[Any]) -> None:
            kept.pop(key, None)

        kept[key] = Kept(weakref.ref(owner, drop), sources, value)
        return value


_caches: list[IdentityCache[Any] | OwnerCache[Any]] = []  # every cache made (one per adapter)


def forget() -> None:
    """Forget every binding of every cache (the next call binds afresh)."""
    for cache in _caches:
        cache.clear()
