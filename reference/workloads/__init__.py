"""Workloads and traces: what requests arrive, and the loops that feed them to an engine.

The names below are what a caller imports (a trace format is one
``TraceFormat`` in ``FORMATS``); the modules behind them are internal.
"""

from .drive import (
    PoolTooSmall,
    Replay,
    RequestTiming,
    Timeline,
    run_sequential,
    run_sessions,
    run_trace,
    run_workload,
)
from .finishes import ALL_STOPPED, MOONCAKE_CONVERSATION, FinishMix
from .mooncake import HashTraceRequest, parse_hash_trace
from .resends import EXACT, Resend, ResendMix
from .sessions import Arrival, Turn, agent_sessions
from .step_time import StepTimeModel
from .trace import TraceError, TraceRequest, load_trace, parse_trace
from .tracefile import FORMATS, TraceFormat, detect_format, load_any_trace, parse_any_trace

__all__ = [
    "ALL_STOPPED",
    "EXACT",
    "FORMATS",
    "MOONCAKE_CONVERSATION",
    "Arrival",
    "FinishMix",
    "HashTraceRequest",
    "PoolTooSmall",
    "Replay",
    "RequestTiming",
    "Resend",
    "ResendMix",
    "StepTimeModel",
    "Timeline",
    "TraceError",
    "TraceFormat",
    "TraceRequest",
    "Turn",
    "agent_sessions",
    "detect_format",
    "load_any_trace",
    "load_trace",
    "parse_any_trace",
    "parse_hash_trace",
    "parse_trace",
    "run_sequential",
    "run_sessions",
    "run_trace",
    "run_workload",
]
