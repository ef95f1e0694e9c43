"""What a promise check answers: a verdict, and a violation as typed numbers.

A check returns a :class:`Violation`: the promise, the scenario, the subject
that broke it and one *problem* record holding the numbers that failed.
Readers (the findings, the vLLM diagnosis) match on the record's type and read
its fields; prose is only rendered (``str``) for people, so rewording a
message changes no reader.

Rejected: one record with optional fields for every check (most fields would
be ``None`` for any one problem, and nothing would say which go together);
free-form ``dict`` payloads (untyped).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs

from junction.core import GroupSpec
from junction.reference.engine.policy import RequestView
from junction.reference.errors import int_at_least

from .promise import Promise
from .scenario import Scenario

__all__ = [
    "Invariant",
    "KeptTooMany",
    "KeptUnneeded",
    "LookupMismatch",
    "MissedPosition",
    "NoProgress",
    "OffGrid",
    "OverBudget",
    "Problem",
    "RequestState",
    "ResumeWithoutState",
    "ShortOfDense",
    "ShortOfFullAttention",
    "ShortOfLocal",
    "ShortOfSegment",
    "Stalled",
    "Verdict",
    "Violation",
]


class Verdict(enum.Enum):
    """A promise's outcome over a run of examples."""

    KEPT = "kept"
    VIOLATED = "violated"
    ERROR = "error"  # the policy raised or answered something malformed
    TIMEOUT = "timeout"  # a policy call outlived its limit, or an example outlived the run
    # No example was judged: the time ran out first, ``where`` left none in the
    # promise's scope, or every one was invalid. Never a pass.
    UNCHECKED = "unchecked"
    # Kept on every example judged, but on fewer than the run's minimum: never a pass.
    TOO_FEW = "too few"

    @property
    def failed(self) -> bool:
        return self is not Verdict.KEPT


def _positions(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


@attrs.frozen
class RequestState:
    """What a policy reads of a request (a ``RequestView``), frozen at one moment."""

    num_prompt_tokens: int = attrs.field(validator=int_at_least(0))
    num_tokens: int = attrs.field(validator=int_at_least(0))
    num_computed_tokens: int = attrs.field(validator=int_at_least(0))
    shared_prefix_boundary: int = attrs.field(validator=int_at_least(0))
    declared_checkpoints: tuple[int, ...] = attrs.field(default=(), converter=_positions)
    # Under speculative decode steps, where they left Mamba states (engine.request).
    decode_states_from: int | None = None
    decode_states: tuple[int, ...] = attrs.field(default=(), converter=_positions)

    @classmethod
    def of(cls, request: RequestView) -> RequestState:
        """A snapshot of a request (the engine's, or a vLLM ``Request``)."""
        begun = getattr(request, "decode_states_from", None)
        return cls(
            int(request.num_prompt_tokens),
            int(request.num_tokens),
            int(request.num_computed_tokens),
            int(request.shared_prefix_boundary),
            tuple(getattr(request, "declared_checkpoints", ())),
            None if begun is None else int(begun),
            tuple(getattr(request, "decode_states", ())),
        )

    def __str__(self) -> str:
        return f"P={self.num_prompt_tokens}, J={self.shared_prefix_boundary}"


# -- promises 1 and 2 ---------------------------------------------------------
@attrs.frozen
class ShortOfFullAttention:
    """The probe hit less than full attention alone serves (the literal scope)."""

    hit: int
    full_attention: int

    def describe(self, subject: str) -> str:
        return f"hit {self.hit}, full attention alone {self.full_attention}"


@attrs.frozen
class ShortOfDense:
    """The probe hit less than the same subject with every block and state cached."""

    hit: int
    dense: int
    retention_interval: int | None

    def describe(self, subject: str) -> str:
        return f"hit {self.hit} under R={self.retention_interval}, {self.dense} with every block"


# -- promise 8 with promise 9 -------------------------------------------------
@attrs.frozen
class ShortOfLocal:
    """The next turn on another instance sharing the tier hit less than on the
    instance that ran its first turn."""

    hit: int
    local: int

    def describe(self, subject: str) -> str:
        return f"next turn on another instance hit {self.hit}, {self.local} on the first one"


# -- promise 3 ----------------------------------------------------------------
@attrs.frozen
class ShortOfSegment:
    hit: int
    segments: tuple[int, ...]  # the materialised segment boundaries within reach

    def describe(self, subject: str) -> str:
        return f"hit {self.hit}, materialised segment boundaries {list(self.segments)}"


# -- promise 4 ----------------------------------------------------------------
@attrs.frozen
class KeptUnneeded:
    group_id: int
    group: GroupSpec
    unneeded: int
    kept: int

    def describe(self, subject: str) -> str:
        return (
            f"group {self.group_id} ({self.group}) keeps {self.unneeded} of {self.kept} "
            "blocks that no promised position needs"
        )


@attrs.frozen
class KeptTooMany:
    group_id: int
    group: GroupSpec
    kept: int
    allowance: int

    def describe(self, subject: str) -> str:
        return (
            f"group {self.group_id} ({self.group}) keeps {self.kept} blocks; "
            f"the boundaries allow {self.allowance}"
        )


# -- promise 5 ----------------------------------------------------------------
@attrs.frozen
class Stalled:
    """The split scheduled nothing although prefill remained."""

    request: RequestState
    chunk_ends: tuple[int, ...]

    def describe(self, subject: str) -> str:
        return f"{self.request}: the split scheduled nothing at {list(self.chunk_ends[-1:])}"


@attrs.frozen
class OverBudget:
    request: RequestState
    start: int
    end: int
    budget: int

    def describe(self, subject: str) -> str:
        return f"{self.request}: chunk [{self.start}, {self.end}), budget {self.budget}"


@attrs.frozen
class OffGrid:
    request: RequestState
    start: int
    end: int
    grid: int

    def describe(self, subject: str) -> str:
        return f"{self.request}: chunk [{self.start}, {self.end}) ends off the grid {self.grid}"


@attrs.frozen
class MissedPosition:
    """A promised position strictly inside the prefill is no chunk end."""

    request: RequestState
    position: int
    chunk_ends: tuple[int, ...]

    def describe(self, subject: str) -> str:
        return (
            f"{self.request}: promised position {self.position} is no chunk end "
            f"{list(self.chunk_ends)}"
        )


@attrs.frozen
class NoProgress:
    request: RequestState
    start: int
    wanted: int

    def describe(self, subject: str) -> str:
        return f"{self.request}: no progress from {self.start} with {self.wanted} tokens"


# -- promise 6 ----------------------------------------------------------------
@attrs.frozen
class LookupMismatch:
    got: tuple[int, int, int]  # the subject's (h, ℓ, J)
    oracle: tuple[int, int, int]  # first principles on the subject's own cache

    def describe(self, subject: str) -> str:
        return f"{subject} (h, ℓ, J) = {self.got}, oracle {self.oracle} on the same cache"


# -- promise 7 ----------------------------------------------------------------
@attrs.frozen
class ResumeWithoutState:
    tokens: int  # the resuming request's length
    hit: int

    def describe(self, subject: str) -> str:
        return (
            f"a {self.tokens}-token request resumes at {self.hit}, "
            "where no chunk end left a Mamba state"
        )


@attrs.frozen
class Invariant:
    """The subject's own consistency check failed (the reference engine's ``check``).

    ``detail`` is the subject's message: an invariant is the subject's own
    statement, so nothing reads numbers back from it.
    """

    detail: str

    def describe(self, subject: str) -> str:
        return f"{subject} invariant: {self.detail}"


Problem = (
    ShortOfFullAttention
    | ShortOfDense
    | ShortOfLocal
    | ShortOfSegment
    | KeptUnneeded
    | KeptTooMany
    | Stalled
    | OverBudget
    | OffGrid
    | MissedPosition
    | NoProgress
    | LookupMismatch
    | ResumeWithoutState
    | Invariant
)


@attrs.frozen
class Violation:
    """A promise a subject broke on a scenario, and the numbers that failed."""

    scenario: Scenario
    subject: str  # who broke it: "engine", "vLLM", ...
    problem: Problem

    @property
    def promise(self) -> Promise:
        return self.scenario.promise

    def __str__(self) -> str:
        return self.problem.describe(self.subject)
