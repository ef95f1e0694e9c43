"""Deterministic workloads: who arrives when, with which prompt.

A workload is a list of :class:`Arrival`: a prompt, how many output tokens to
generate, and how many engine steps after the previous arrival it comes in.
Every generator is a pure function of its arguments and ``seed``.

* :func:`agent_sessions`: one shared system prompt, many sessions, each turn
  resending the session so far plus a new user message (growing turns).
* :func:`multi_turn_chat`: independent conversations with no shared system
  prompt; each turn extends its own history.
* :func:`random_prompts`: prompts that share a prefix of a common pool with
  probability ``sharing``, otherwise random.
"""

from __future__ import annotations

import random

import attrs

from junction.reference.engine.engine import Engine, Metrics

__all__ = ["Arrival", "agent_sessions", "multi_turn_chat", "random_prompts", "run_workload"]


@attrs.frozen
class Arrival:
    prompt: tuple[int, ...]
    max_output_tokens: int
    steps_after_previous: int = 0


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
) -> list[Arrival]:
    """Sessions arrive one after another; within a session, turns follow each other."""
    rng = random.Random(seed)
    system = _text(rng, system_prompt_tokens, vocab)
    arrivals = []
    for _ in range(sessions):
        history = system
        for _ in range(turns):
            history += _text(rng, rng.randint(*message_tokens), vocab)
            arrivals.append(Arrival(history, rng.randint(*output_tokens), gap_steps))
            history += _text(rng, rng.randint(*output_tokens), vocab)  # the reply
    return arrivals


def multi_turn_chat(
    seed: int,
    *,
    conversations: int = 20,
    turns: int = 4,
    message_tokens: tuple[int, int] = (16, 256),
    output_tokens: tuple[int, int] = (4, 64),
    gap_steps: int = 4,
    vocab: int = 32_000,
) -> list[Arrival]:
    """Conversations interleaved turn by turn; each turn resends its own history."""
    rng = random.Random(seed)
    histories: list[tuple[int, ...]] = [() for _ in range(conversations)]
    arrivals = []
    for _ in range(turns):
        for index in range(conversations):
            histories[index] += _text(rng, rng.randint(*message_tokens), vocab)
            arrivals.append(Arrival(histories[index], rng.randint(*output_tokens), gap_steps))
            histories[index] += _text(rng, rng.randint(*output_tokens), vocab)
    return arrivals


def random_prompts(
    seed: int,
    *,
    requests: int = 100,
    sharing: float = 0.5,
    prompt_tokens: tuple[int, int] = (32, 512),
    output_tokens: tuple[int, int] = (4, 64),
    gap_steps: int = 2,
    vocab: int = 32_000,
) -> list[Arrival]:
    """With probability ``sharing`` a prompt starts with a prefix of one common text."""
    rng = random.Random(seed)
    common = _text(rng, prompt_tokens[1], vocab)
    arrivals = []
    for _ in range(requests):
        length = rng.randint(*prompt_tokens)
        shared = rng.randint(1, length) if rng.random() < sharing else 0
        prompt = common[:shared] + _text(rng, length - shared, vocab)
        arrivals.append(Arrival(prompt, rng.randint(*output_tokens), gap_steps))
    return arrivals


def run_workload(engine: Engine, arrivals: list[Arrival], *, check: bool = False) -> Metrics:
    """Submit each arrival after its gap (stepping meanwhile), then run to completion."""
    for arrival in arrivals:
        for _ in range(arrival.steps_after_previous):
            if engine.idle:
                break
            engine.step()
            if check:
                engine.check()
        engine.submit(arrival.prompt, arrival.max_output_tokens)
    while not engine.idle:
        engine.step()
        if check:
            engine.check()
    return engine.metrics
