"""The report of a whole simulation: what ``simulate.json`` holds.

The workload (where it came from and its size), the settings (geometries,
engine settings, arrivals and the step-time model, the table's ``R`` and
the plot's sweep), how times were modelled in words, the table's row
labels, and every run. The key order is fixed (the committed demo's), so a
run's JSON compares byte for byte with ``docs/demo/simulate.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from .geometries import GEOMETRIES
from .result import RunResult
from .run import Settings
from .variants import table_variants
from .workload import Workload

__all__ = ["report"]


def report(
    workload: Workload,
    geometries: Sequence[str],
    settings: Settings,
    interval: int,
    intervals: Sequence[int],
    results: Sequence[RunResult],
) -> dict[str, Any]:
    """The JSON of a simulation; ``interval`` is the table's ``R``, ``intervals`` the sweep."""
    return {
        "workload": {
            "source": workload.source,
            "sessions": len(workload.sessions),
            "requests": workload.requests,
            "prompt_tokens": workload.prompt_tokens,
            "system_prompt_tokens": workload.shared_prefix_tokens,
        },
        "settings": {
            "geometries": {name: GEOMETRIES[name].description for name in geometries},
            **attrs.asdict(settings),
            "interval": interval,
            "intervals": list(intervals),
        },
        "times": settings.step_time.describe(),
        "table": [variant.label for variant in table_variants(interval)],
        "runs": [result.to_json() for result in results],
    }
