"""Ray for the tests that compare a sweep on Ray with one in-process.

Ray is the optional ``ray`` extra. Where it is missing, those tests are
skipped with the reason (pytest's ``-ra`` prints it), except where a missing
Ray must fail: under CI (``CI`` set, as CI services do) or with
``JUNCTION_REQUIRE_RAY`` set (``.ci/run`` sets it, as it sets
``JUNCTION_REQUIRE_VLLM``), since `make setup` installs it there.
"""

from __future__ import annotations

import os
from types import ModuleType

import pytest

__all__ = ["require_ray"]


def require_ray() -> ModuleType:
    """The ``ray`` module, or a skip saying why (a failure where Ray is required)."""
    try:
        import ray
    except ImportError:
        required = [name for name in ("CI", "JUNCTION_REQUIRE_RAY") if os.environ.get(name)]
        if required:
            names = " and ".join(required)
            pytest.fail(
                f"{names} set but Ray is not installed (`make setup` installs the ray extra)"
            )
        pytest.skip("Ray is not installed (pip install -e '.[ray]'; `make setup` does)")
    return ray
