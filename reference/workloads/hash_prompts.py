"""Prompt tokens for a hash-id trace, built from its ids so block hashing sees its sharing.

A hash-id trace (``workloads.mooncake``) records which 512-token blocks
prompts share, not their tokens. :func:`block_tokens` gives each id its 512
tokens as a pure function of the id: the id itself first (so distinct ids
differ from their first token on), then 511 tokens below 256 drawn from
``random.Random(id)``. :meth:`PromptBuilder.prompt` concatenates a request's
blocks and cuts the last to ``input_length``, so the engine's prefix hashing,
at any block size, finds exactly the sharing the trace records. Tokens below
256 are CPython's shared small ints, an id's tokens are cached (bounded) and
a prompt is built only when submitted, so a 145-million-token trace fits in
memory (docs/design/hash-prompt-tokens.md).
"""

from __future__ import annotations

import functools
import random

import attrs

from .answers import Continuation
from .mooncake import HASH_BLOCK_TOKENS, HashTraceRequest

__all__ = ["CACHED_BLOCKS", "HashArrival", "PromptBuilder", "block_tokens"]

CACHED_BLOCKS = 8192  # at most 8192 x 512 pointers: 32 MiB


def block_tokens(hash_id: int) -> tuple[int, ...]:
    """The 512 tokens of one hash id: the id, then 511 drawn from ``Random(hash_id)``."""
    draw = random.Random(hash_id).getrandbits
    return (hash_id, *(draw(8) for _ in range(HASH_BLOCK_TOKENS - 1)))


class PromptBuilder:
    """Builds prompts from hash ids, the most recently used ids' tokens cached.

    ``rebuilt``: a partial last block's id -> the id whose tokens it takes (its
    continuation's block there, ``workloads.answers``); empty by default.
    """

    def __init__(self, rebuilt: dict[int, int] | None = None) -> None:
        self.block = functools.lru_cache(maxsize=CACHED_BLOCKS)(block_tokens)
        self.rebuilt = rebuilt or {}

    def prompt(self, request: HashTraceRequest) -> tuple[int, ...]:
        """The request's ``input_length`` tokens: its blocks in order, the last one cut."""
        return self.tokens(request, 0, request.input_length)

    def tokens(self, request: HashTraceRequest, start: int, end: int) -> tuple[int, ...]:
        """Tokens ``[start, end)`` of the request's prompt (``end <= input_length``)."""
        ids = request.hash_ids
        first, last = start // HASH_BLOCK_TOKENS, -(-end // HASH_BLOCK_TOKENS)
        partial = request.input_length % HASH_BLOCK_TOKENS
        tokens: list[int] = []
        for index in range(first, last):
            hash_id = ids[index]
            if partial and index == len(ids) - 1:
                # Its continuation's block, or that one's, when it is a partial block too.
                while hash_id in self.rebuilt:
                    hash_id = self.rebuilt[hash_id]
            tokens += self.block(hash_id)
        offset = first * HASH_BLOCK_TOKENS
        return tuple(tokens[start - offset : end - offset])


@attrs.frozen
class HashArrival:
    """One request of a hash-id trace whose prompt is built each time it is asked for.

    A replay asks once, when it submits the request; the prompt then lives
    only as long as the engine keeps it.
    """

    request: HashTraceRequest
    builder: PromptBuilder = attrs.field(eq=False, repr=False)
    # Where its answer lies in a later request (``workloads.answers``); None: no answer.
    continuation: Continuation | None = None

    @property
    def prompt(self) -> tuple[int, ...]:
        return self.builder.prompt(self.request)

    @property
    def answer(self) -> tuple[int, ...]:
        """The answer its continuation resends (``()`` without one), built when asked."""
        found = self.continuation
        if found is None:
            return ()
        return self.builder.tokens(found.request, found.start, found.end)

    @property
    def prompt_length(self) -> int:
        return self.request.input_length

    @property
    def max_output_tokens(self) -> int:
        return self.request.output_length

    @property
    def arrival_ms(self) -> int:
        return self.request.timestamp
