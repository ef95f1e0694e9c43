"""The rule both audit folders apply at collection: run, skip with the reason, or fail.

An audited engine is an optional install. Where it is missing, its tests are
skipped with the reason (pytest's ``-ra`` summary prints it), unless the
option that requires it is given (``--require-vllm``, ``--require-sglang``:
CI, ``make audit-vllm``, ``make audit-sglang``), where its absence is a
usage error.
"""

from __future__ import annotations

import pytest

__all__ = ["skip_unless_installed"]


def skip_unless_installed(
    config: pytest.Config,
    items: list[pytest.Item],
    folder: str,
    engine: str,
    reason: str | None,
    required_by: str,
) -> None:
    """Mark the items under ``folder`` skipped when ``reason`` says the engine is missing.

    ``required_by`` is the option (``--require-vllm``) that makes it an error instead.
    """
    ours = [item for item in items if item.nodeid.startswith(folder)]
    if reason is None or not ours:
        return
    if config.getoption(required_by):
        raise pytest.UsageError(f"{required_by} is given but {reason}")
    skip = pytest.mark.skip(reason=f"{engine} audit: {reason}")
    for item in ours:
        item.add_marker(skip)
