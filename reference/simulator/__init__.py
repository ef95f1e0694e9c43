"""The simulator: retention policies side by side on one workload, with tables, JSON and a plot.

The names below are what a caller imports; the modules behind them are
internal (the plots, which import matplotlib, are imported where drawn).
"""

from .geometries import DEFAULT_GEOMETRIES, GEOMETRIES, PRESETS, GeometryChoice
from .parallel import (
    BuiltinSource,
    NotTimestamped,
    RayUnreachable,
    RunSpec,
    TraceSource,
    run_all,
    run_spec,
)
from .pool import PoolSize
from .result import Latency, RunResult
from .run import ARRIVALS, Settings, run_one, simulate
from .variants import COMPARED_POLICIES, Variant
from .workload import Workload, builtin_workload, trace_file_workload, trace_workload

__all__ = [
    "ARRIVALS",
    "COMPARED_POLICIES",
    "DEFAULT_GEOMETRIES",
    "GEOMETRIES",
    "PRESETS",
    "BuiltinSource",
    "GeometryChoice",
    "Latency",
    "NotTimestamped",
    "PoolSize",
    "RayUnreachable",
    "RunResult",
    "RunSpec",
    "Settings",
    "TraceSource",
    "Variant",
    "Workload",
    "builtin_workload",
    "run_all",
    "run_one",
    "run_spec",
    "simulate",
    "trace_file_workload",
    "trace_workload",
]
