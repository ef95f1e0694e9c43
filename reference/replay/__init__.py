"""The fast replay: hit rate, prefill saved, memory and evictions of many
(policy x pool x eviction) points over one read of a trace.

Sequential arrivals only (one request at a time, as
``workloads.drive.run_sequential``), where it is proven equal to the
reference engine request by request (``tests/replay``): the same hit, the
same evictions and the same cached blocks per group. Every retention
decision comes from the policy, which takes them from ``core`` (the finders
and the reconciliation, the split, the mask and its promised positions); the
replay only keeps the books the engine's pool keeps, with integer prefix keys
instead of hashed tokens. TTFT needs the engine's steps: it stays the
reference engine's.
"""

from .keys import PrefixKeys
from .plan import Planner, RequestPlan
from .pool import EVICTIONS, FutureUses, ReplayPool, Usage
from .sweep import Point, PointResult, ReplayRequest, RequestRecord, future_uses, replay

__all__ = [
    "EVICTIONS",
    "FutureUses",
    "Planner",
    "Point",
    "PointResult",
    "PrefixKeys",
    "ReplayPool",
    "ReplayRequest",
    "RequestPlan",
    "RequestRecord",
    "Usage",
    "future_uses",
    "replay",
]
