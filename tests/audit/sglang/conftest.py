"""The SGLang audit tests run only where SGLang 0.5.23 is installed (``make audit-sglang-setup``).

Without it every test here is skipped with the reason (pytest's ``-ra``
summary prints it), unless ``--require-sglang`` is given (CI and
``make audit-sglang``), where its absence is an error. SGLang's import graph
reaches vLLM's, so ``tests/audit/conftest.py``'s rule for vLLM applies too.
"""

from __future__ import annotations

import pytest

from junction.audit.sglang.env import sglang_missing_reason
from tests.audit.installed import skip_unless_installed


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_unless_installed(
        config,
        items,
        "tests/audit/sglang/",
        "SGLang",
        sglang_missing_reason(),
        "--require-sglang",
    )
