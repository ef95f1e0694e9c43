"""The vLLM audit tests run only where vLLM 0.33.0 is installed (``make audit-setup``).

Without it every test here is skipped with the reason (pytest's ``-ra``
summary prints it), unless ``JUNCTION_REQUIRE_VLLM`` is set (CI and
``make audit-vllm``), where its absence is an error. With another version
installed they error too: the audit's facts are about 0.33.0.
"""

from __future__ import annotations

import os

import pytest

from junction.audit.vllm_env import vllm_missing_reason


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    audit = [item for item in items if item.nodeid.startswith("tests/audit/")]
    reason = vllm_missing_reason()
    if reason is None or not audit:
        return
    if os.environ.get("JUNCTION_REQUIRE_VLLM"):
        raise pytest.UsageError(f"JUNCTION_REQUIRE_VLLM is set but {reason}")
    skip = pytest.mark.skip(reason=f"vLLM audit: {reason}")
    for item in audit:
        item.add_marker(skip)
