"""Which core the batched paths answer for: ``junction.core``, or an engine's vendored copy.

An engine that vendored the core under its own name passes that module as
``core=`` to each batched decision. Two things then come from the copy: the
core functions a path calls (so a group spec must be the copy's
``GroupSpec``) and the error type: every ``InvalidArgument`` a batched path
raises is the copy's, translated once where a path returns. The batched
arithmetic is the kernels' own, proven equal to ``junction.core``; a copy
``vendor check`` finds unedited is that code, so the proof carries over. For
a fixed copy, ``functools.partial(kernels.reachable_block_mask, core=copy)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from junction import core as installed
from junction.core import InvalidArgument

__all__ = ["errors_of", "resolve_core"]

# What the batched paths use of a core module.
_NAMES = ("InvalidArgument", "mask_plan", "GroupSpec")


def resolve_core(core: object) -> ModuleType:
    """``core``, or ``junction.core`` for ``None``; rejects what is not a core module."""
    if core is None:
        return installed
    if not isinstance(core, ModuleType) or not all(hasattr(core, name) for name in _NAMES):
        raise InvalidArgument(
            "core", core, f"must be junction.core or a vendored copy (a module with {_NAMES})"
        )
    return core


@contextmanager
def errors_of(core: ModuleType) -> Iterator[None]:
    """Raise ``junction.core``'s :class:`InvalidArgument` as ``core``'s (same argument,
    value and rule, same traceback); ``core``'s own errors pass through."""
    try:
        yield
    except InvalidArgument as error:
        if core.InvalidArgument is InvalidArgument:
            raise
        copy = core.InvalidArgument(error.argument, error.value, error.rule)
        raise copy.with_traceback(error.__traceback__) from None
