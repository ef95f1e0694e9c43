"""The seeded multi-turn workload the scheduler differential replays on a layout.

Shared system prompts, forks, resends, extensions by the answer a request
will get (:func:`output_token`, the same in every run) and prefix cuts on the
hash or scheduler grid, a few aborts; arrivals spread so that several requests
run at once.
"""

from __future__ import annotations

import random

import attrs

from .layouts import Layout

__all__ = ["Request", "output_token", "workload"]

_MAX_OUTPUT = 16
_LONG_OUTPUT = 96  # about one request in three decodes this long: preemption


def _longest_prompt(grid: int) -> int:
    return 6 * grid + 40


def output_token(position: int) -> int:
    """The token a request samples at ``position``: the same in every run, so
    a workload can extend a conversation with the answer it will get."""
    return 5000 + (position * 7919) % 997


@attrs.frozen
class Request:
    """One request of a workload: when it arrives, its prompt, how many tokens
    it generates and, for an aborted one, the step it is aborted at."""

    request_id: str
    arrival: int
    prompt: tuple[int, ...]
    max_tokens: int
    abort_at: int | None = None


def workload(layout: Layout, seed: int, count: int) -> list[Request]:
    """``count`` requests of a seeded multi-turn workload on ``layout``.

    System prompts are shared; each new request is a fresh conversation on
    one, a fork (a prefix of an earlier request plus a new turn), a resend,
    an extension (an earlier prompt, the answer it gets, a new turn) or a
    prefix cut on the hash or scheduler grid; about one in ten is aborted a
    few steps after it arrives. Arrivals are spread so that several run at
    once in a pool of ``layout.num_blocks`` blocks (eviction, preemption).
    """
    rng = random.Random(seed * 1_000_003 + len(layout.name))
    geometry = layout.geometry
    unit, grid = geometry.hash_block_size, geometry.scheduler_block_size
    fresh = iter(range(10_000, 1 << 30))

    def turn(low: int, high: int) -> tuple[int, ...]:
        return tuple(next(fresh) for _ in range(rng.randint(low, high)))

    systems = [turn(grid // 2, 3 * grid) for _ in range(3)]
    made: list[Request] = []
    arrival = 0
    for number in range(count):
        kind = rng.random()
        max_tokens = rng.randint(1, _MAX_OUTPUT if rng.random() < 0.7 else _LONG_OUTPUT)
        if not made or kind < 0.25:
            prompt = rng.choice(systems) + turn(1, 2 * grid)
        elif kind < 0.45:
            base = rng.choice(made).prompt
            prompt = base[: rng.randint(1, len(base))] + turn(1, grid)
        elif kind < 0.6:
            prompt = rng.choice(made).prompt
        elif kind < 0.8:
            earlier = rng.choice(made)
            answer = tuple(
                output_token(p)
                for p in range(len(earlier.prompt), len(earlier.prompt) + earlier.max_tokens)
            )
            prompt = earlier.prompt + answer + turn(1, grid)
        else:
            base = rng.choice(made).prompt
            step = rng.choice((unit, grid))
            cut = max(step * rng.randint(1, max(len(base) // step, 1)), 1)
            prompt = base[: min(cut, len(base))]
        prompt = prompt[: _longest_prompt(grid)] or turn(1, 4)
        abort_at = arrival + rng.randint(0, 3) if rng.random() < 0.1 else None
        made.append(Request(f"r{number}", arrival, prompt, max_tokens, abort_at))
        arrival += rng.choice((0, 0, 0, 1, 1, 2))
    return made
