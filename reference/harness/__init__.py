"""The promise harness: the ten promises checked on any subject, and the findings built on it.

One concept per module: :mod:`.promise` (the promises), :mod:`.scenario`
(a replayable input and its JSON), :mod:`.verdict` (verdicts and typed
violations), :mod:`.subject` (what a check needs of a prefix cache) with
:mod:`.engine_subject` (the reference engine as one), :mod:`.promises` (the
checks, written once), :mod:`.strategies` (random scenarios),
:mod:`.runner` (``run_conformance``, ``replay``), :mod:`.report`, and the
findings about the vLLM policies (:mod:`.findings`, :mod:`.diagnosis`).
"""

from .engine_subject import EngineFactory, EngineSubject
from .promise import Promise
from .promises import check
from .report import ConformanceReport, PromiseVerdict
from .runner import replay, run_conformance
from .scenario import Scenario
from .strategies import scenarios
from .subject import Hits, Prefill, Resume, Run, Subject
from .verdict import RequestState, Verdict, Violation

__all__ = [
    "ConformanceReport",
    "EngineFactory",
    "EngineSubject",
    "Hits",
    "Prefill",
    "Promise",
    "PromiseVerdict",
    "RequestState",
    "Resume",
    "Run",
    "Scenario",
    "Subject",
    "Verdict",
    "Violation",
    "check",
    "replay",
    "run_conformance",
    "scenarios",
]
