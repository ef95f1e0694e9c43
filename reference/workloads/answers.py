"""Answers a trace does not record, reconstructed from the turns that resend them.

A trace records prompts and output lengths, not what was answered; the
engine makes up its own output tokens, so a conversation's next turn, which
resends the previous prompt and its answer, shares only the prompt with it
(the answer it resends is the real one, not the engine's). This optional
reconstruction gives a request the answer its *continuation* carries: a
later request whose prompt extends this one's carries, right after it, the
tokens at those positions, and they become the request's scripted answer
(``Engine.submit(answer=)``), up to its output length.

* Token-id traces: the continuation is the next turn of the same session,
  when its prompt starts with this turn's prompt.
* Hash-id traces (Mooncake): ids are per 512-token block, and a prompt's
  last, partial block has an id of its own, which its continuation's full
  block there does not share. The continuation is the earliest later request
  (by timestamp) whose ids agree on this request's whole blocks and whose
  prompt reaches past this one's end by its whole output; this request's
  partial block is then rebuilt from the continuation's block (the same
  text, cut), so its prompt is a prefix of its continuation's. A request
  whose whole blocks match a later sibling's without being its turn (two
  users of one system prompt and a short message) is taken for one: the
  trace cannot tell them apart, so the count this reports is an upper bound
  of real continuations.

Without the option a replay is exactly as before: no answer, no rebuilt block.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .mooncake import HASH_BLOCK_TOKENS, HashTraceRequest
from .trace import TraceRequest

__all__ = ["Continuation", "hash_continuations", "session_answers"]


def session_answers(turns: Sequence[TraceRequest]) -> list[tuple[int, ...]]:
    """Per turn of one session, the answer its next turn resends (``()``: none)."""
    answers: list[tuple[int, ...]] = []
    for turn, following in zip(turns, [*turns[1:], None], strict=True):
        length = len(turn.prompt)
        if following is None or following.prompt[:length] != turn.prompt:
            answers.append(())
            continue
        answers.append(following.prompt[length : length + turn.output_tokens])
    return answers


@attrs.frozen
class Continuation:
    """Where a hash-id request's answer lies: in ``request``, tokens ``[start, end)``."""

    request: HashTraceRequest
    start: int
    end: int


def hash_continuations(requests: Sequence[HashTraceRequest]) -> list[Continuation | None]:
    """Per request (in the given order, which must be by timestamp), its continuation.

    Indexed by the chained hash of each leading run of ids, so a trace of
    12,031 requests and 283,000 ids is one pass; every candidate is then
    compared id by id.
    """
    runs: dict[tuple[int, int], list[int]] = {}
    for index, request in enumerate(requests):
        key = 0
        for count, hash_id in enumerate(request.hash_ids, 1):
            key = hash((key, hash_id))
            runs.setdefault((count, key), []).append(index)
    found: list[Continuation | None] = []
    for index, request in enumerate(requests):
        whole = request.input_length // HASH_BLOCK_TOKENS
        end = request.input_length + request.output_length
        found.append(None)
        if whole == 0:
            continue
        key = 0
        for hash_id in request.hash_ids[:whole]:
            key = hash((key, hash_id))
        for later in runs.get((whole, key), ()):
            candidate = requests[later]
            if (
                later > index
                and candidate.input_length >= end
                and candidate.hash_ids[:whole] == request.hash_ids[:whole]
            ):
                found[-1] = Continuation(candidate, request.input_length, end)
                break
    return found
