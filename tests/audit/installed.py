"""The rule both audit folders apply at collection: run, skip with the reason, or fail.

An audited engine is an optional install. Where it is missing, its tests are
skipped with the reason (pytest's ``-ra`` summary prints it), unless the
variable that requires it is set (CI, ``make audit-vllm``,
``make audit-sglang``), where its absence is a usage error.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["skip_unless_installed"]


def skip_unless_installed(
    items: list[pytest.Item], folder: str, engine: str, reason: str | None, required_by: str
) -> None:
    """Mark the items under ``folder`` skipped when ``reason`` says the engine is missing."""
    ours = [item for item in items if item.nodeid.startswith(folder)]
    if reason is None or not ours:
        return
    if os.environ.get(required_by):
        raise pytest.UsageError(f"{required_by} is set but {reason}")
    skip = pytest.mark.skip(reason=f"{engine} audit: {reason}")
    for item in ours:
        item.add_marker(skip)
