"""The vLLM audit tests run only where vLLM 0.33.0 is installed (``make audit-setup``).

Without it every test here is skipped with the reason (pytest's ``-ra``
summary prints it), unless ``--require-vllm`` is given (CI and
``make audit-vllm``), where its absence is an error. With another version
installed they error too: the audit's facts are about 0.33.0.
"""

from __future__ import annotations

import pytest

import junction.audit.vllm.scheduler  # noqa: F401 (vLLM's CPU platform, before vLLM loads)
from junction.audit.vllm.env import vllm_missing_reason
from tests.audit.installed import skip_unless_installed


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_unless_installed(
        config, items, "tests/audit/", "vLLM", vllm_missing_reason(), "--require-vllm"
    )
