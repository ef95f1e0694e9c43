"""What a promise check needs of a prefix cache: the subject protocol.

The promises are checked once (:mod:`.promises`) against this small
protocol; the reference engine (:mod:`.engine_subject`), vLLM 0.33.0's code
(``junction.audit.vllm.subject``) and SGLang 0.5.23's
(``junction.audit.sglang.subject``) are its adapters. A :class:`Subject` runs
a scenario's prompts with its policy and configuration; the :class:`Run` it
returns answers what the promises are about (lookups, the cached sets the
oracle reads, chunk ends, the blocks kept per group, the split's answer) in
engine-neutral terms. Why one protocol naming exactly what the checks read:
every engine is judged by the same lines, and an engine author implements
one protocol, not one per promise.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol, runtime_checkable

import attrs

from junction.core import HybridGeometry
from junction.reference.engine.policy import Policy
from junction.reference.oracle.first_principles import OracleGroup

from .scenario import Scenario
from .verdict import RequestState

__all__ = ["Hits", "Prefill", "Resume", "Run", "Subject", "TierRun"]


@attrs.frozen
class Hits:
    """A lookup's answer: the hit ``h``, the longest single-group hit ``ℓ``, the junction ``J``."""

    hit: int
    longest: int
    junction: int

    def as_tuple(self) -> tuple[int, int, int]:
        return (self.hit, self.longest, self.junction)


@attrs.frozen
class Prefill:
    """One prompt of the run: its request state at the end and the chunks it computed.

    ``chunks`` are ``(start, end)`` token spans in order; the first starts at
    the admission hit. ``stalled``: the split scheduled nothing although
    prefill remained (a subject that cannot stall leaves it ``False``).
    ``written``: positions inside a chunk where the backend wrote a Mamba
    state (internal prefill checkpoints, and a block end a speculative decode
    step passed when the engine captures those; empty when it writes states
    only at chunk ends). ``transcript``: the prompt and every answer token, once it
    finished (what its next turn resends; empty when the subject cannot say).
    """

    request: RequestState
    chunks: tuple[tuple[int, int], ...]
    stalled: bool = False
    written: tuple[int, ...] = ()
    transcript: tuple[int, ...] = ()

    @property
    def chunk_ends(self) -> tuple[int, ...]:
        return tuple(end for _, end in self.chunks)

    @property
    def materialized(self) -> frozenset[int]:
        """Where a state of this prefill exists: every chunk end and every written state."""
        return frozenset(self.chunk_ends).union(self.written)


@attrs.frozen
class Resume:
    """A lookup the run made (an admission, or a check's probe) and whether the Mamba
    state at its hit existed: a chunk end of an earlier request left the state after
    exactly ``tokens[:hit]`` (align mode writes states only at chunk ends)."""

    tokens: int
    hit: int
    state_materialized: bool


class Run(Protocol):
    """A subject after it ran a scenario's prompts (no eviction unless the scenario asks)."""

    @property
    def geometry(self) -> HybridGeometry: ...

    @property
    def policy(self) -> Policy:
        """The policy whose promised positions and boundaries the subject keeps."""
        ...

    @property
    def prefills(self) -> Sequence[Prefill]:
        """One per prompt that ran, in the scenario's order."""
        ...

    @property
    def resumes(self) -> Sequence[Resume]:
        """Every lookup so far, in order (admissions, then :meth:`lookup` calls)."""
        ...

    @property
    def sub_block_states(self) -> bool:
        """Whether a Mamba group keeps a state at a hash unit inside its block (vLLM's
        partial-tail state); otherwise a state serves only at its block's end."""
        ...

    def lookup(self, prompt: Sequence[int]) -> Hits:
        """The subject's lookup for a new request ``prompt`` (recorded in :attr:`resumes`)."""
        ...

    def cached_sets(self, prompt: Sequence[int]) -> Sequence[OracleGroup]:
        """Per group, which blocks of ``prompt``'s chain it can serve from (the oracle's input)."""
        ...

    def kept(self, group_id: int) -> frozenset[Hashable]:
        """The keys of every block (state) the group keeps cached."""
        ...

    def key(self, prefill: int, group_id: int, end: int) -> Hashable | None:
        """The key :meth:`kept` uses for prompt ``prefill``'s block (state) ending at
        token ``end`` in the group; ``None`` where no such block can exist."""
        ...

    def split(self, request: RequestState, num_new_tokens: int, budget: int) -> int:
        """How many tokens the subject's split schedules for ``request`` this step."""
        ...


@runtime_checkable
class TierRun(Run, Protocol):
    """A run whose :meth:`lookup` goes to another instance sharing its external tier
    (the tier promise), which can also look up on the instance that ran the prompts."""

    @property
    def tier_keeps_decode_checkpoints(self) -> bool:
        """Whether its tier takes the decode checkpoints a finished request publishes."""
        ...

    def lookup_here(self, prompt: Sequence[int]) -> Hits:
        """The lookup on the instance that ran the scenario's prompts."""
        ...


class Subject(Protocol):
    """Something that runs a scenario's prompts with a given policy and configuration."""

    @property
    def name(self) -> str:
        """How violations name it: ``"engine"``, ``"vLLM"``."""
        ...

    def run(self, scenario: Scenario) -> Run:
        """A fresh cache that ran the scenario's prompts.

        Raises ``AssertionError`` when the subject's own invariants break (the
        check reports it as a violation) and ``PolicyError`` when its policy
        raises or answers malformed (an error verdict).
        """
        ...

    def dense(self) -> Subject:
        """The same subject retaining every block and state: the yardstick where
        "as far as full attention alone" cannot hold for any policy."""
        ...
