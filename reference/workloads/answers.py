"""Answers a trace does not record, reconstructed from the turns that resend them.

A trace records prompts and output lengths, not answers, so the engine's
made-up output shares nothing with the next turn, which resends the real
answer. This optional reconstruction gives a request the tokens its
*continuation* carries right after its prompt, as its scripted answer
(``Engine.submit(answer=)``): for a token-id trace, the session's next turn
when it extends this prompt; for a hash-id trace, the earliest later request
agreeing on this one's whole blocks and reaching past its end (a partial
last block is rebuilt from it). Two users of one system prompt can look like
a continuation, so the count reported is an upper bound. Without the option
a replay is unchanged.
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
