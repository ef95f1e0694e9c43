"""Ray for the tests that compare a sweep on Ray with one in-process.

Ray is the optional ``ray`` extra. Where it is missing, those tests are
skipped with the reason (pytest's ``-ra`` prints it), except where a missing
Ray must fail: with ``--require-ray`` (``.ci/run`` gives it, with
``--require-vllm``), since `make setup` installs it there.
"""

from __future__ import annotations

from types import ModuleType

import pytest

__all__ = ["require_ray"]


def require_ray(config: pytest.Config) -> ModuleType:
    """The ``ray`` module, or a skip saying why (a failure under ``--require-ray``)."""
    try:
        import ray
    except ImportError:
        if config.getoption("--require-ray") or config.getoption("--require-all"):
            pytest.fail(
                "--require-ray is given but Ray is not installed "
                "(`make setup` installs the ray extra)"
            )
        pytest.skip("Ray is not installed (pip install -e '.[ray]'; `make setup` does)")
    return ray
