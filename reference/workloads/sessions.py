"""Agent sessions: one shared system prompt, many sessions of growing turns.

A workload is a list of :class:`Arrival`: a prompt, how many output tokens to
generate, and how many engine steps after the previous arrival it comes in.
What the loops of ``drive`` need from a request is :class:`Turn`, which a
hash-id trace's requests also are (``hash_prompts.HashArrival``, whose
prompt is built only when it is submitted).
:func:`agent_sessions` is a pure function of its arguments and ``seed``: every
session starts with the same system prompt, and each turn resends the session
so far plus a new message, so turns reuse their predecessors' prompts.

The loops that feed arrivals to an engine are in ``drive`` (one concept
each). Rejected: keeping generators nobody ran (multi-turn chat without a
system prompt, random prompts with a sharing probability); the agent session
is the workload the junction matters for, and traces cover the rest.
"""

from __future__ import annotations

import random
from typing import Protocol

import attrs

__all__ = ["Arrival", "Turn", "agent_sessions"]


class Turn(Protocol):
    """A request as the loops of ``drive`` submit it.

    ``arrival_ms`` is when it arrives on the engine's clock (``None``: the
    workload has no timestamps); ``prompt`` may be built on each access.
    """

    @property
    def prompt(self) -> tuple[int, ...]: ...

    @property
    def prompt_length(self) -> int: ...

    @property
    def max_output_tokens(self) -> int: ...

    @property
    def arrival_ms(self) -> int | None: ...


@attrs.frozen
class Arrival:
    """One request: its prompt, its output length, and its gap in engine steps."""

    prompt: tuple[int, ...]
    max_output_tokens: int
    steps_after_previous: int = 0
    # The reply the workload scripts (its next turn resends it); () lets the engine
    # make up its own, which no later turn resends.
    answer: tuple[int, ...] = ()

    @property
    def prompt_length(self) -> int:
        return len(self.prompt)

    @property
    def arrival_ms(self) -> None:
        """Token-id traces and the built-in workload carry no timestamps."""
        return None


def _text(rng: random.Random, length: int, vocab: int) -> tuple[int, ...]:
    return tuple(rng.randrange(vocab) for _ in range(length))


def agent_sessions(
    seed: int,
    *,
    sessions: int = 20,
    turns: int = 3,
    system_prompt_tokens: int = 512,
    message_tokens: tuple[int, int] = (16, 128),
    output_tokens: tuple[int, int] = (4, 32),
    gap_steps: int = 8,
    vocab: int = 32_000,
    resend_answers: bool = False,
) -> list[Arrival]:
    """Sessions arrive one after another; within a session, turns follow each other.

    Each turn resends the session's earlier messages and a reply after each.
    By default that reply is drawn here, and the engine generates another
    answer of its own length: a turn then shares its predecessor's prompt,
    never its answer. With ``resend_answers`` the reply is the turn's answer
    (``Arrival.answer``, as many output tokens), so the next turn resends the
    prompt and the whole answer, as a conversation does; the prompts are the
    same draws either way.
    """
    rng = random.Random(seed)
    system = _text(rng, system_prompt_tokens, vocab)
    arrivals = []
    for _ in range(sessions):
        history = system
        for _ in range(turns):
            history += _text(rng, rng.randint(*message_tokens), vocab)
            prompt, output = history, rng.randint(*output_tokens)
            reply = _text(rng, rng.randint(*output_tokens), vocab)
            if resend_answers:
                arrivals.append(Arrival(prompt, len(reply), gap_steps, reply))
            else:
                arrivals.append(Arrival(prompt, output, gap_steps))
            history += reply
    return arrivals
