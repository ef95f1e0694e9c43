"""The rule the audit tests apply at collection, per engine: run, skip with the reason, or fail.

An audited engine is an optional install. Where one is missing, the tests
under its folder (``AuditedEngine.tests``) are skipped with the reason
(pytest's ``-ra`` summary prints it), unless its option is given
(``--require-vllm``, ``--require-sglang``: CI, ``make audit-vllm``, ``make
audit-sglang``), where its absence is a usage error. Every row of
``junction.audit.engines.ENGINES`` is read, so an added engine gets the rule
and its option with no edit here.
"""

from __future__ import annotations

import pytest

from junction.audit import engines

__all__ = ["skip_missing_engines"]


def skip_missing_engines(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark skipped the items under each missing engine's folder, or raise
    ``pytest.UsageError`` when that engine's ``--require-NAME`` is given."""
    for engine in engines.ENGINES:
        ours = [item for item in items if item.nodeid.startswith(engine.tests)]
        reason = engine.missing_reason()
        if reason is None or not ours:
            continue
        if config.getoption(engine.require_option) or config.getoption("--require-all"):
            raise pytest.UsageError(f"{engine.require_option} is given but {reason}")
        skip = pytest.mark.skip(reason=f"{engine.pin.name} audit: {reason}")
        for item in ours:
            item.add_marker(skip)
