"""The core swapped into a running vLLM: :func:`install`, :func:`uninstall`, and
:func:`swapped_in`.

Installing replaces the four class attributes through which vLLM makes the
three retention decisions (the chunk split, the two reachable-block masks,
the coordinator's lookup) with adapters (:mod:`.split`, :mod:`.mask`,
:mod:`.lookup`) that translate vLLM's arguments onto the core and its answer
back, so every instance, existing or future, decides through the core. What
the adapters know of vLLM is its release's package in :mod:`junction.upstream`
(vLLM 0.33.0's), picked by the installed version. A call the core cannot
express raises :class:`UnsupportedOption`; nothing falls back to vLLM's code.
Installing is idempotent, :func:`uninstall` restores exactly what it took, a
reload of vLLM's modules is detected; install from one thread before the
engine starts (docs/design/dropin-install.md).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from junction.upstream import vllm_release

from . import bindings
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
    """Each replaced class attribute of the installed vLLM, on the classes
    vLLM's modules hold now, mapped to its core adapter in ``mode``."""
    lookup = _LOOKUPS[Mode.of(mode)]
    v = vllm_release().vllm()
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
    """Swap the core into the installed vLLM in ``mode`` (``"corrected"`` or
    ``"identical"``, :mod:`.modes`); idempotent, and installing another mode
    switches. Raises ``InvalidArgument`` for another mode, ``VllmMissing``
    without vLLM and ``RuntimeError`` for a release :mod:`junction.upstream`
    has no package of. A stale installation (classes vLLM no longer runs) is
    put back first; the adapters bind afresh."""
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
    bindings.forget()


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
