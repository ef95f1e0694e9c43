"""A workload's mix of inexact resends: where the next turn stops carrying the answer.

Real clients do not resend an answer token for token: a stop string is cut
from its end, a chat template strips the reasoning from its start, a
re-tokenization changes a token anywhere. The next turn then shares the
engine's answer only up to the *divergence point* ``d`` (tokens of the answer
it still carries as the engine emitted them), and a decode checkpoint past
``d`` is no use to it. A prefix cache sees nothing of a divergence but ``d``,
so a mix draws ``d`` per request and the engine emits the scripted answer
with every token from ``d`` on changed (:meth:`ResendMix.emitted`): the next
turn's prompt, which resends the scripted answer, is unchanged.

The default, :data:`EXACT`, resends every answer as it was emitted, as every
run did before the mix existed, so every recorded result stands. A mix draws
from the request's submission index and its own seed alone, so changing it
changes no prompt, arrival, finish or answer length.
"""

from __future__ import annotations

import enum
import random

import attrs

from junction.core import InvalidArgument

from .shares import check_share, describe_shares, draw

__all__ = ["EXACT", "Resend", "ResendMix"]


class Resend(enum.Enum):
    """How a next turn resends its predecessor's answer."""

    EXACT = "exact"  # every token as the engine emitted it: d = the answer's length
    STOP_CUT = "stop_cut"  # a stop string cut from the end: d = length - stop_tokens
    REASONING_STRIPPED = "reasoning_stripped"  # the template drops it from the start: d = 0
    TOKEN_CHANGED = "token_changed"  # re-tokenization drifts at one drawn token: d uniform


@attrs.frozen
class ResendMix:
    """Relative shares of the four resends (any scale, not all 0), the seed of the
    per-request draw, and the tokens a stop string's cut removes (``stop_tokens``);
    :class:`InvalidArgument` naming a bad one."""

    exact: float = attrs.field(default=1.0, validator=check_share)
    stop_cut: float = attrs.field(default=0.0, validator=check_share)
    reasoning_stripped: float = attrs.field(default=0.0, validator=check_share)
    token_changed: float = attrs.field(default=0.0, validator=check_share)
    seed: int = attrs.field(default=0)
    stop_tokens: int = attrs.field(default=4)

    def __attrs_post_init__(self) -> None:
        if type(self.seed) is not int:
            raise InvalidArgument("seed", self.seed, "must be an int")
        if type(self.stop_tokens) is not int or self.stop_tokens < 1:
            raise InvalidArgument("stop_tokens", self.stop_tokens, "must be an int >= 1")
        if not sum(self._shares()) > 0:
            raise InvalidArgument("exact", self.exact, "the shares must not all be 0")

    def _shares(self) -> tuple[float, ...]:
        return (self.exact, self.stop_cut, self.reasoning_stripped, self.token_changed)

    def resend(self, index: int) -> Resend:
        """How request ``index`` (its submission order) is resent by its next turn."""
        return draw(list(Resend), self._shares(), self.seed, index)

    def divergence(self, index: int, length: int) -> int:
        """The divergence point of request ``index``'s answer of ``length`` tokens: how
        many of its first tokens the next turn carries as emitted (``length``: all)."""
        if type(length) is not int or length < 0:
            raise InvalidArgument("length", length, "must be an int >= 0")
        kind = self.resend(index)
        if kind is Resend.STOP_CUT:
            return max(0, length - self.stop_tokens)
        if kind is Resend.REASONING_STRIPPED:
            return 0
        if kind is Resend.TOKEN_CHANGED and length:
            return random.Random(f"{self.seed}/{index}/token").randrange(length)
        return length

    def emitted(self, index: int, answer: tuple[int, ...]) -> tuple[int, ...]:
        """What the engine emits for request ``index`` whose next turn resends ``answer``:
        ``answer`` with every token from the divergence point on changed."""
        d = self.divergence(index, len(answer))
        # The lowest bit flipped: another token id, still in the vocabulary's range.
        return answer[:d] + tuple(token ^ 1 for token in answer[d:])

    def describe(self) -> str:
        """``exact 0.7, stop_cut 0.3; stop strings of 4 tokens`` (the non-zero shares,
        normalised; the stop strings' length where they are cut)."""
        cut = f"; stop strings of {self.stop_tokens} tokens" if self.stop_cut else ""
        return describe_shares(list(Resend), self._shares()) + cut


EXACT = ResendMix()
