"""The workload a simulation runs: sessions of turns, built in or from a trace.

The simulator drives the engine in a closed loop, so a workload is grouped
by session: the built-in one by its sessions, a token-id trace by its
``session`` field, and a hash-id trace (no sessions) one request per
session in timestamp order, each prompt built only when submitted (the
trace's 145 million tokens are never all in memory). Grouping hash-id
requests by their leading id is not done: a shared system prompt would chain
unrelated users into one serialised session. The system prompt, which a
trace does not mark, is taken as the longest prefix every prompt starts
with.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from junction.reference.errors import int_at_least, non_empty
from junction.reference.workloads.answers import hash_continuations, session_answers
from junction.reference.workloads.hash_prompts import HashArrival, PromptBuilder
from junction.reference.workloads.mooncake import HASH_BLOCK_TOKENS, HashTraceRequest
from junction.reference.workloads.sessions import Arrival, Turn, agent_sessions
from junction.reference.workloads.trace import TraceRequest
from junction.reference.workloads.tracefile import TraceRequests

__all__ = [
    "MESSAGE_TOKENS",
    "OUTPUT_TOKENS",
    "Workload",
    "builtin_workload",
    "hash_trace_workload",
    "trace_file_workload",
    "trace_workload",
]

# The built-in agent turns: a tool result or user message, then the reply.
MESSAGE_TOKENS = (64, 1024)
OUTPUT_TOKENS = (8, 64)


def _common_prefix(sequences: Iterable[Sequence[int]]) -> int:
    """How many leading items every sequence shares (0 for none), taking one at a time."""
    each = iter(sequences)
    first = next(each, None)
    if first is None:
        return 0
    length = len(first)
    for sequence in each:
        length = min(length, len(sequence))
        if sequence[:length] != first[:length]:
            length = next(i for i in range(length) if sequence[i] != first[i])
        if length == 0:
            break
    return length


def _shared_prefix(turns: Sequence[Turn]) -> int:
    """The longest prefix every prompt starts with, building one prompt at a time."""
    # No sessions gives 0: the validator of ``sessions`` names that.
    return _common_prefix(turn.prompt for turn in turns)


def _shared_hash_prefix(requests: Sequence[HashTraceRequest]) -> int:
    """The same from hash ids: the leading ids every request has, capped at the shortest."""
    if not requests:
        return 0
    common = _common_prefix(request.hash_ids for request in requests)
    shortest = min(request.input_length for request in requests)
    return min(common * HASH_BLOCK_TOKENS, shortest)


@attrs.frozen
class Workload:
    """Sessions of turns (an :class:`Arrival`'s gap is not used here)."""

    source: str
    sessions: tuple[tuple[Turn, ...], ...] = attrs.field(
        validator=attrs.validators.deep_iterable(
            member_validator=non_empty,  # a session has a turn
            iterable_validator=non_empty,
        )
    )
    # The longest prefix every prompt starts with (the system prompt); computed from
    # the prompts unless given (a hash-id trace computes it from its ids).
    shared_prefix_tokens: int = attrs.field(
        default=attrs.Factory(lambda self: _shared_prefix(self.turns), takes_self=True),
        validator=int_at_least(0),
    )

    @property
    def requests(self) -> int:
        return sum(len(session) for session in self.sessions)

    @property
    def turns(self) -> list[Turn]:
        """Every turn, session after session."""
        return [turn for session in self.sessions for turn in session]

    @property
    def prompt_tokens(self) -> int:
        return sum(turn.prompt_length for session in self.sessions for turn in session)

    @property
    def holds_prompts(self) -> bool:
        """Whether its prompts are in memory (a hash-id trace builds each at submission)."""
        return not all(isinstance(turn, HashArrival) for turn in self.turns)

    @property
    def timestamped(self) -> bool:
        """Whether every turn has an arrival time (a hash-id trace's requests do)."""
        return all(turn.arrival_ms is not None for turn in self.turns)


def builtin_workload(
    seed: int,
    sessions: int,
    turns: int,
    system_prompt_tokens: int,
    resend_answers: bool = False,
) -> Workload:
    """``agent_sessions``, regrouped into its sessions (it emits them turn after turn).

    ``resend_answers``: each turn's reply is its answer, which the next turn
    resends (``agent_sessions``); off, the next turn resends a drawn reply.
    """
    arrivals = agent_sessions(
        seed,
        sessions=sessions,
        turns=turns,
        system_prompt_tokens=system_prompt_tokens,
        message_tokens=MESSAGE_TOKENS,
        output_tokens=OUTPUT_TOKENS,
        resend_answers=resend_answers,
    )
    grouped = tuple(tuple(arrivals[i : i + turns]) for i in range(0, len(arrivals), turns))
    answers = ", answers resent" if resend_answers else ""
    return Workload(
        f"agent sessions: {sessions} sessions x {turns} turns, "
        f"{system_prompt_tokens}-token system prompt, seed {seed}{answers}",
        grouped,
    )


def trace_workload(
    path: str, requests: Sequence[TraceRequest], answers_from_continuations: bool = False
) -> Workload:
    """A trace's lines grouped by session, sessions in order of first appearance.

    ``answers_from_continuations``: a turn whose next turn extends its prompt
    answers what that turn carries there (``workloads.answers``).
    """
    sessions: dict[object, list[TraceRequest]] = {}
    for request in requests:
        key = ("line", request.line) if request.session is None else ("session", request.session)
        sessions.setdefault(key, []).append(request)
    grouped, answered = [], 0
    for turns in sessions.values():
        answers = session_answers(turns) if answers_from_continuations else [()] * len(turns)
        answered += sum(1 for answer in answers if answer)
        grouped.append(
            tuple(
                Arrival(turn.prompt, turn.output_tokens, answer=answer)
                for turn, answer in zip(turns, answers, strict=True)
            )
        )
    note = f", answers from continuations: {answered:,}" if answers_from_continuations else ""
    return Workload(f"trace {path}{note}", tuple(grouped))


def hash_trace_workload(
    path: str, requests: Sequence[HashTraceRequest], answers_from_continuations: bool = False
) -> Workload:
    """Each request of a hash-id trace a session of its own, in timestamp order.

    Prompts are built when they are submitted (:class:`HashArrival`).
    ``answers_from_continuations``: a request a later one continues answers
    what that one carries there, its partial last block rebuilt from it
    (``workloads.answers``); the source says of how many requests.
    """
    ordered = sorted(requests, key=lambda request: request.timestamp)  # stable: file order
    if not answers_from_continuations:
        builder = PromptBuilder()
        return Workload(
            f"hash-id trace {path}",
            tuple((HashArrival(r, builder),) for r in ordered),
            _shared_hash_prefix(ordered),
        )
    found = hash_continuations(ordered)
    rebuilt: dict[int, int] = {}
    for index, (request, continuation) in enumerate(zip(ordered, found, strict=True)):
        whole = request.input_length // HASH_BLOCK_TOKENS
        if continuation is None or not request.input_length % HASH_BLOCK_TOKENS:
            continue
        # A partial block is rebuilt one way: a twin prompt continued otherwise keeps
        # no answer (its continuation would not resend its rebuilt block).
        block = continuation.request.hash_ids[whole]
        if rebuilt.setdefault(request.hash_ids[-1], block) != block:
            found[index] = None
    builder = PromptBuilder(rebuilt)
    answered = sum(1 for continuation in found if continuation is not None)
    return Workload(
        f"hash-id trace {path}, answers from continuations: {answered:,} of {len(ordered):,}",
        tuple(
            (HashArrival(r, builder, continuation),)
            for r, continuation in zip(ordered, found, strict=True)
        ),
        _shared_hash_prefix(ordered),
    )


def trace_file_workload(path: str, requests: TraceRequests) -> Workload:
    """The workload of a parsed trace file of any format (``workloads.tracefile.FORMATS``):
    a hash-id trace's requests each a session, a token-id trace's grouped by session."""
    hashed = [r for r in requests if isinstance(r, HashTraceRequest)]
    if hashed:  # one format per file: all of them
        return hash_trace_workload(path, hashed)
    return trace_workload(path, [r for r in requests if isinstance(r, TraceRequest)])
