"""The vLLM releases Junction knows, one sibling package each, and the one installed.

A release's package (``vllm_0_33`` for vLLM 0.33.0) holds everything that
knows that release: loading it, translating its specs, reading its pools,
its lookup restated with its departures. :class:`VllmRelease` is what the
drop-in reads of one; :func:`vllm_release` picks the package of the
installed vLLM by its version. Supporting another release is one more
sibling package and its name in :data:`VLLM_RELEASES`
(docs/design/upstream-layer.md).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import TYPE_CHECKING, Any, Protocol, cast

from junction.core import GroupSpec, HybridGeometry

from .pins import EngineMissing, Pin, public_version

if TYPE_CHECKING:
    from . import vllm_0_33
    from .vllm_0_33 import GroupReader, VllmLookup

__all__ = ["VLLM_RELEASES", "VllmMissing", "VllmRelease", "vllm_release"]

# The packages beside this module, one per vLLM release, oldest first.
VLLM_RELEASES: tuple[str, ...] = ("vllm_0_33",)


class VllmMissing(EngineMissing):
    """vLLM is not installed; the message says how to install it."""


class VllmRelease(Protocol):
    """What a vLLM release's package provides (as module attributes)."""

    PIN: Pin  # the release it knows, and the extra that installs it

    def vllm(self) -> Any:
        """The release's modules, loaded once after checking :attr:`PIN`:
        ``managers``, ``scheduler`` and ``coordinator`` among them."""

    def core_group(self, manager_cls: type, spec: Any, block_size: int) -> GroupSpec | None:
        """The core group a manager of ``manager_cls`` over ``spec`` decides as,
        its blocks ``block_size`` tokens; ``None`` for a manager of no core kind."""

    def group_readers(self, geometry: HybridGeometry) -> tuple[GroupReader, ...]:
        """How each group's core finder reads the release's block pool."""

    def vllm_lookup(self, geometry: HybridGeometry) -> VllmLookup | None:
        """The release's own lookup on ``geometry``, departures included;
        ``None`` where none can act (its answer is the core's)."""


def vllm_release(version: str | None = None) -> VllmRelease:
    """The package of vLLM ``version`` (default: the installed vLLM's), by its
    public version (a local label is the same release).

    Raises :class:`VllmMissing` when vLLM is not installed and
    ``RuntimeError`` naming the known releases for any other."""
    releases = [
        cast(VllmRelease, importlib.import_module(f"{__package__}.{name}"))
        for name in VLLM_RELEASES
    ]
    newest = releases[-1].PIN
    if version is None:
        reason = newest.missing_reason()
        if reason is not None:
            raise VllmMissing(reason)
        version = importlib.metadata.version(newest.distribution)
    for release in releases:
        if release.PIN.version == public_version(version):
            return release
    known = ", ".join(release.PIN.version for release in releases)
    raise RuntimeError(
        f"vLLM {version} is installed; Junction knows vLLM {known} "
        f"(`make {newest.extra}-setup` installs {newest.version})"
    )


if TYPE_CHECKING:
    # Each release's package provides the protocol, checked by mypy.
    _RELEASES: tuple[VllmRelease, ...] = (vllm_0_33,)
