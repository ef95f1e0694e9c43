"""The SGLang audit tests run only where SGLang 0.5.23 is installed (``make audit-sglang-setup``).

Without it every test here is skipped with the reason (pytest's ``-ra``
summary prints it), unless ``JUNCTION_REQUIRE_SGLANG`` is set (CI and
``make audit-sglang``), where its absence is an error. SGLang's import graph
reaches vLLM's, so ``tests/audit/conftest.py``'s rule for vLLM applies too.
"""

from __future__ import annotations

import os

import pytest

from junction.audit.sglang.env import sglang_missing_reason


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [item for item in items if item.nodeid.startswith("tests/audit/sglang/")]
    reason = sglang_missing_reason()
    if reason is None or not ours:
        return
    if os.environ.get("JUNCTION_REQUIRE_SGLANG"):
        raise pytest.UsageError(f"JUNCTION_REQUIRE_SGLANG is set but {reason}")
    skip = pytest.mark.skip(reason=f"SGLang audit: {reason}")
    for item in ours:
        item.add_marker(skip)
