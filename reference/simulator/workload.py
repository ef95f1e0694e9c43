"""The workload a simulation runs: sessions of turns, built in or from a trace.

The simulator drives the engine in a closed loop (``workloads.drive``), so
a workload here is grouped by session, not a flat arrival list: the built-in
one regroups ``agent_sessions`` (which emits its sessions turn after turn),
a token-id trace groups its lines by their ``session`` field, and a hash-id
trace (which has no sessions) makes each request a session of its own, in
timestamp order (file order among equal timestamps), its prompt built from
its ids by ``workloads.hash_prompts``. ``source`` says where it came from in
words, for the report. Rejected for hash-id traces: grouping requests by
their leading hash id (a shared system prompt would chain unrelated users
into one long session, serialising them).

The system-prompt hit rate needs the system prompt, which a trace does not
mark: it is taken as the longest prefix every prompt starts with.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from junction.reference.workloads.hash_prompts import PromptBuilder
from junction.reference.workloads.mooncake import HashTraceRequest
from junction.reference.workloads.sessions import Arrival, agent_sessions
from junction.reference.workloads.trace import TraceRequest

__all__ = [
    "MESSAGE_TOKENS",
    "OUTPUT_TOKENS",
    "Workload",
    "builtin_workload",
    "hash_trace_workload",
    "trace_workload",
]

# The built-in agent turns: a tool result or user message, then the reply.
MESSAGE_TOKENS = (64, 1024)
OUTPUT_TOKENS = (8, 64)


@attrs.frozen
class Workload:
    """Sessions of turns (each an :class:`Arrival`; its gap is not used here)."""

    source: str
    sessions: tuple[tuple[Arrival, ...], ...] = attrs.field(
        validator=attrs.validators.deep_iterable(
            member_validator=attrs.validators.min_len(1),  # a session has a turn
            iterable_validator=attrs.validators.min_len(1),
        )
    )

    @property
    def requests(self) -> int:
        return sum(len(session) for session in self.sessions)

    @property
    def prompt_tokens(self) -> int:
        return sum(len(turn.prompt) for session in self.sessions for turn in session)

    @property
    def shared_prefix_tokens(self) -> int:
        """The longest prefix every prompt starts with (the system prompt)."""
        prompts = [turn.prompt for session in self.sessions for turn in session]
        first, shortest = prompts[0], min(len(p) for p in prompts)
        length = 0
        while length < shortest and all(p[length] == first[length] for p in prompts):
            length += 1
        return length


def builtin_workload(seed: int, sessions: int, turns: int, system_prompt_tokens: int) -> Workload:
    """``agent_sessions``, regrouped into its sessions (it emits them turn after turn)."""
    arrivals = agent_sessions(
        seed,
        sessions=sessions,
        turns=turns,
        system_prompt_tokens=system_prompt_tokens,
        message_tokens=MESSAGE_TOKENS,
        output_tokens=OUTPUT_TOKENS,
    )
    grouped = tuple(tuple(arrivals[i : i + turns]) for i in range(0, len(arrivals), turns))
    return Workload(
        f"agent sessions: {sessions} sessions x {turns} turns, "
        f"{system_prompt_tokens}-token system prompt, seed {seed}",
        grouped,
    )


def trace_workload(path: str, requests: Sequence[TraceRequest]) -> Workload:
    """A trace's lines grouped by session, sessions in order of first appearance."""
    sessions: dict[object, list[Arrival]] = {}
    for request in requests:
        key = ("line", request.line) if request.session is None else ("session", request.session)
        sessions.setdefault(key, []).append(Arrival(request.prompt, request.output_tokens))
    return Workload(f"trace {path}", tuple(tuple(turns) for turns in sessions.values()))


def hash_trace_workload(path: str, requests: Sequence[HashTraceRequest]) -> Workload:
    """Each request of a hash-id trace a session of its own, in timestamp order."""
    builder = PromptBuilder()
    ordered = sorted(requests, key=lambda request: request.timestamp)  # stable: file order
    return Workload(
        f"hash-id trace {path}",
        tuple((Arrival(builder.prompt(r), r.output_length),) for r in ordered),
    )
