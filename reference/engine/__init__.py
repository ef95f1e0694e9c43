"""The reference engine: a deterministic simulator whose decisions all come from core.

It calls a retention policy through the ``Policy`` protocol (``policy.py``) and
never imports a concrete policy: the caller chooses one. The names below are
what a caller imports; the modules behind them are internal.
"""

from .config import EngineConfig, Metrics
from .engine import Engine, RequestTooLarge
from .eviction import (
    EVICTION_POLICIES,
    EvictionPolicy,
    FlopAware,
    FlopModel,
    LayerCost,
    LeastRecentlyUsed,
    eviction_policy,
)
from .finish import FinishReason
from .invariants import InvariantViolation, MambaStateMissing
from .policy import CheckedPolicy, Policy, PolicyError, PolicyOutOfTime, PolicyTimeout, RequestView
from .request import Request, RequestStatus
from .speculative import SpeculativeDecoding
from .tier import ExternalTier, TierSaving

__all__ = [
    "EVICTION_POLICIES",
    "CheckedPolicy",
    "Engine",
    "EngineConfig",
    "EvictionPolicy",
    "ExternalTier",
    "FinishReason",
    "FlopAware",
    "FlopModel",
    "InvariantViolation",
    "LayerCost",
    "LeastRecentlyUsed",
    "MambaStateMissing",
    "Metrics",
    "Policy",
    "PolicyError",
    "PolicyOutOfTime",
    "PolicyTimeout",
    "Request",
    "RequestStatus",
    "RequestTooLarge",
    "RequestView",
    "SpeculativeDecoding",
    "TierSaving",
    "eviction_policy",
]
