"""The core swapped into a running vLLM 0.33.0: :func:`install`, :func:`uninstall`, and
:func:`swapped_in`.

vLLM makes the three retention decisions in three methods:
``Scheduler._mamba_block_aligned_split`` (decision 2, the chunk split),
``SlidingWindowManager.reachable_block_mask`` and
``MambaManager.reachable_block_mask`` (decision 3, class methods; full
attention's base method keeps every block, as the core does) and
``HybridKVCacheCoordinator.find_longest_cache_hit`` (decision 1). Installing
replaces those four class attributes with adapters (:mod:`.split`,
:mod:`.mask`, :mod:`.lookup`) that translate vLLM's arguments onto the core,
call it, and translate its answer back, nothing more. Every instance, existing
or future, then decides through the core, because the methods are looked up
on the class.

A call the core cannot express raises :class:`UnsupportedOption` naming the
option and its value; no adapter ever calls vLLM's own decision code, so a
run with the core swapped in is the core's, entirely.

Installing is idempotent; :func:`uninstall` puts back exactly the objects it
took out of each class's ``__dict__`` (the ``classmethod`` wrappers
included), so ``Cls.__dict__[name] is original`` holds afterwards. The
classes are the ones vLLM's modules hold when asked: after a reload of one
of them (new classes, vLLM's code again) :func:`installed` says False and
:func:`install` puts the stale installation back and installs on the new
classes.

Not thread-safe: installing rebinds class attributes process-wide while other
threads may be calling them, and the bookkeeping of what was replaced is a
module global. Install before the engine starts (or in a test's setup) and
uninstall after it stops, from one thread. Rejected: patching instances (an
engine builds new schedulers and coordinators; they would decide with vLLM's
code), and wrapping vLLM's methods so they run either implementation (a
fallback by another name).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from ..audit.vllm.env import vllm
from .errors import Decision, UnsupportedOption
from .lookup import core_find_longest_cache_hit, vllm_find_longest_cache_hit
from .mask import core_mask
from .modes import Mode
from .split import core_split

__all__ = [
    "Decision",
    "Mode",
    "UnsupportedOption",
    "decision_points",
    "install",
    "installed",
    "installed_mode",
    "swapped_in",
    "uninstall",
]

# (class, attribute) -> the object install() took out of the class __dict__.
_originals: dict[tuple[type, str], Any] = {}
_mode: list[Mode] = []  # the installed mode, while _originals holds anything
_LOOKUPS = {
    Mode.CORRECTED: core_find_longest_cache_hit,
    Mode.IDENTICAL: vllm_find_longest_cache_hit,
}


# The adapters themselves, with vLLM's signatures: no wrapper frame per call.
_MASK: Any = classmethod(core_mask)


def _live(module: Any) -> Any:
    """The module vLLM imports under that name now (a re-import makes a new one)."""
    return sys.modules.get(module.__name__, module)


def decision_points(mode: Mode | str = Mode.CORRECTED) -> dict[tuple[type, str], Any]:
    """Each replaced class attribute of vLLM 0.33.0, on the classes vLLM's
    modules hold now, mapped to its core adapter in ``mode``."""
    lookup = _LOOKUPS[Mode.of(mode)]
    v = vllm()
    managers = _live(v.managers)
    return {
        (_live(v.scheduler).Scheduler, "_mamba_block_aligned_split"): core_split,
        (managers.SlidingWindowManager, "reachable_block_mask"): _MASK,
        (managers.MambaManager, "reachable_block_mask"): _MASK,
        (_live(v.coordinator).HybridKVCacheCoordinator, "find_longest_cache_hit"): lookup,
    }


def installed() -> bool:
    """Whether vLLM's live classes decide through the core: each decision point
    of the classes vLLM's modules hold now is the drop-in's adapter."""
    return installed_mode() is not None


def installed_mode() -> Mode | None:
    """The mode vLLM's live classes decide in, or ``None`` when they run
    vLLM's own code (never installed, uninstalled, or reloaded since)."""
    if not _originals:
        return None
    mode = _mode[0]
    points = decision_points(mode).items()
    live = all(cls.__dict__.get(name) is adapter for (cls, name), adapter in points)
    return mode if live else None


def install(mode: Mode | str = Mode.CORRECTED) -> None:
    """Swap the core into vLLM 0.33.0 in ``mode`` (``"corrected"`` or
    ``"identical"``, :mod:`.modes`); idempotent, and installing another mode
    switches. Raises ``InvalidArgument`` for another mode and ``VllmMissing``
    without vLLM. A stale installation (classes vLLM no longer runs) is put
    back first."""
    mode = Mode.of(mode)
    if installed_mode() is mode:
        return
    uninstall()
    for (cls, name), adapter in decision_points(mode).items():
        _originals[(cls, name)] = cls.__dict__[name]
        setattr(cls, name, adapter)
    _mode.append(mode)


def uninstall() -> None:
    """Put vLLM's own decision code back exactly (a no-op when not installed)."""
    while _originals:
        (cls, name), original = _originals.popitem()
        setattr(cls, name, original)
    _mode.clear()


@contextlib.contextmanager
def swapped_in(mode: Mode | str = Mode.CORRECTED) -> Iterator[None]:
    """The core swapped in, in ``mode``, for the ``with`` block; what was
    installed before (nothing, or another mode) is back after it."""
    mode = Mode.of(mode)
    before = installed_mode()
    install(mode)
    try:
        yield
    finally:
        if before is None:
            uninstall()
        else:
            install(before)
