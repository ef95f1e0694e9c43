"""The audit tests run only where their engine is installed (``make audit-setup``,
``make audit-sglang-setup``): vLLM 0.33.0 for everything here, SGLang 0.5.23
too for ``sglang/`` (its import graph reaches vLLM's).

Without it a folder's tests are skipped with the reason (pytest's ``-ra``
summary prints it), unless ``--require-vllm`` / ``--require-sglang`` is given
(CI, ``make audit-vllm``, ``make audit-sglang``), where its absence is an
error (:mod:`tests.audit.installed`, one rule per row of
``junction.audit.engines.ENGINES``). With another version installed they
error too: the audit's facts are about the pinned one.
"""

from __future__ import annotations

import pytest

import junction.audit.vllm.scheduler  # noqa: F401 (vLLM's CPU platform, before vLLM loads)
from tests.audit.installed import skip_missing_engines


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_missing_engines(config, items)
