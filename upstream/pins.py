"""An upstream engine pinned to the release what Junction knows of it is about.

vLLM and SGLang are each installed ``--no-deps`` from an extra of their own
(``make audit-setup``, ``make audit-sglang-setup``) and imported on first use
(``upstream.vllm_0_33.env``, ``audit.sglang.env``). Before importing anything
both loaders ask the same two questions: is the engine installed (if not: the
reason the tests print when they skip, naming the make target), and is it the
pinned version (another version is an error, not "missing": what is known is
about the pinned one). Rejected: each loader asking on its own (two copies of
the same check and messages, differing only in the names).
"""

from __future__ import annotations

import importlib.metadata

import attrs

from junction.core import JunctionError

__all__ = ["EngineMissing", "Pin", "public_version"]


class EngineMissing(JunctionError, RuntimeError):
    """An audited engine is not installed; the message says how to install it."""


def public_version(version: str) -> str:
    """``version`` without its PEP 440 local label (``0.33.0+cu128`` is 0.33.0:
    a build of the same release for another platform, the same code)."""
    return version.split("+", 1)[0]


@attrs.frozen
class Pin:
    """An engine's distribution, pinned version and the extra that installs it."""

    distribution: str  # the name ``importlib.metadata`` knows it by
    name: str  # the name messages use
    version: str
    extra: str  # ``make {extra}-setup`` installs it

    def missing_reason(self) -> str | None:
        """Why the engine cannot be audited here, or ``None`` when it is installed."""
        try:
            importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return (
                f"{self.name} {self.version} is not installed (run `make {self.extra}-setup`: "
                f"the `{self.extra}` extra, installed with --no-deps)"
            )
        return None

    def require(self, missing: type[Exception]) -> None:
        """Raise ``missing`` (with the reason) when the engine is absent, and
        ``RuntimeError`` when another version is installed."""
        reason = self.missing_reason()
        if reason is not None:
            raise missing(reason)
        found = importlib.metadata.version(self.distribution)
        if public_version(found) != self.version:
            raise RuntimeError(
                f"Junction is written against {self.name} {self.version}, found {found}: "
                f"run `make {self.extra}-setup`"
            )
