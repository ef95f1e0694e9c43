"""Prompt tokens for a hash-id trace, built from its ids so block hashing sees its sharing.

A hash-id trace (``workloads.mooncake``) records which 512-token blocks two
prompts share, not their tokens. :func:`block_tokens` gives each id its 512
tokens as a pure function of the id alone: the first token is the id itself
(ids are below ``2**31``, the token-id range), so distinct ids differ from
their first token on; the other 511 are drawn from ``random.Random(id)``
(seeded with an int, stable across Python versions and runs) in
``[0, 2**31)``, the token-id range. :meth:`PromptBuilder.prompt` concatenates
a request's blocks and cuts the last one to ``input_length``. Two prompts then
agree on exactly the leading blocks whose ids agree and differ at the first
token of the first id that does not, so the engine's own prefix hashing, at
any block size, finds exactly the sharing the trace records.

Tokens of one id are computed once per :class:`PromptBuilder` and shared by
every prompt that uses it (the conversation trace repeats ids a lot).
Rejected: hashing ``(id, position)`` with ``hashlib`` per token (about ten
times slower on a trace of 145 million prompt tokens) and a vocabulary-sized
id space (ids would have to be remapped, losing the trace's own numbering).
"""

from __future__ import annotations

import random

from .mooncake import HASH_BLOCK_TOKENS, HashTraceRequest

__all__ = ["PromptBuilder", "block_tokens"]


def block_tokens(hash_id: int) -> tuple[int, ...]:
    """The 512 tokens of one hash id: the id, then 511 drawn from ``Random(hash_id)``."""
    draw = random.Random(hash_id).getrandbits
    return (hash_id, *(draw(31) for _ in range(HASH_BLOCK_TOKENS - 1)))


class PromptBuilder:
    """Builds prompts from hash ids, each id's tokens computed once."""

    def __init__(self) -> None:
        self._blocks: dict[int, tuple[int, ...]] = {}

    def block(self, hash_id: int) -> tuple[int, ...]:
        tokens = self._blocks.get(hash_id)
        if tokens is None:
            tokens = self._blocks[hash_id] = block_tokens(hash_id)
        return tokens

    def prompt(self, request: HashTraceRequest) -> tuple[int, ...]:
        """The request's ``input_length`` tokens: its blocks in order, the last one cut."""
        tokens: list[int] = []
        for hash_id in request.hash_ids:
            tokens += self.block(hash_id)
        return tuple(tokens[: request.input_length])
