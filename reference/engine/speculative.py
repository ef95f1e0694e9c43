"""Speculative decode steps: ``k`` draft tokens verified a step, a drawn number accepted.

Under EAGLE/MTP (or n-gram drafts) a decode step schedules the last sampled
token and up to ``k`` drafts, verifies them, and keeps the longest accepted
run plus one token the verification samples: the request computes ``1 + a``
tokens in the step and gains ``a + 1`` outputs (``0 <= a <= drafts``). So
its Mamba state moves by several tokens a step and may pass a block end
without ending there; whether that block end holds a state is the engine's
(:class:`core.CrossedGridPoints`). One token a step is every draft rejected.

``accepted``: the counts to accept, step by step per request, cycled (a
scenario's script, readable once shrunk); empty, each step draws its count
from the engine's seed, the request and the step's start: each draft in turn
is accepted with probability ``acceptance_rate`` until the first rejection
(the usual verification model; the default 0.7 is an assumption of a
typical draft head, not a measurement). The drafts a step schedules never
exceed the outputs left to emit, less the one the step samples, nor the
token budget or the long-prefill cap.
"""

from __future__ import annotations

from typing import Any

import attrs

from junction.core import CrossedGridPoints, InvalidArgument
from junction.reference.errors import member

__all__ = ["SpeculativeDecoding"]

_ONE = 1 << 32


def _tokens(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if type(value) is not int or value < 1:
        raise InvalidArgument(attribute.name, value, "must be an int >= 1")


def _crossed(value: CrossedGridPoints | str) -> CrossedGridPoints:
    return member(CrossedGridPoints, "crossed", value)


def _counts(value: Any) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InvalidArgument("accepted", value, "must be a sequence of ints >= 0")
    return tuple(value)


def _rate(instance: object, attribute: attrs.Attribute[float], value: object) -> None:
    if type(value) not in (int, float) or not 0 <= value <= 1:  # type: ignore[operator]
        raise InvalidArgument(attribute.name, value, "must be a number in [0, 1]")


@attrs.frozen
class SpeculativeDecoding:
    """An engine option, off unless given (``EngineConfig.speculative``).

    ``num_tokens``: ``k``, the drafts a step verifies (``>= 1``). ``crossed``:
    what a Mamba block end passed inside a step keeps (captured by default,
    as vLLM 0.33.0 does). ``accepted``: a script of accepted counts, each in
    ``[0, k]`` (empty: drawn). Each is validated (:class:`InvalidArgument`
    naming it).
    """

    num_tokens: int = attrs.field(validator=_tokens)
    crossed: CrossedGridPoints = attrs.field(default=CrossedGridPoints.CAPTURED, converter=_crossed)
    accepted: tuple[int, ...] = attrs.field(default=(), converter=_counts)
    acceptance_rate: float = attrs.field(default=0.7, validator=_rate)

    @accepted.validator
    def _accepted(
        self, attribute: attrs.Attribute[tuple[int, ...]], value: tuple[int, ...]
    ) -> None:
        for index, count in enumerate(value):
            if type(count) is not int or not 0 <= count <= self.num_tokens:
                rule = f"must be an int in [0, num_tokens ({self.num_tokens})]"
                raise InvalidArgument(f"accepted[{index}]", count, rule)

    def accepted_count(self, seed: int, request_id: int, start: int, step: int, drafts: int) -> int:
        """How many of ``drafts`` the request's ``step``-th decode step (from ``start``
        computed tokens) accepts: the script's count (at most ``drafts``), else drawn."""
        if self.accepted:
            return min(self.accepted[step % len(self.accepted)], drafts)
        threshold = self.acceptance_rate * _ONE
        count = 0
        while count < drafts and hash((seed, request_id, start, count)) % _ONE < threshold:
            count += 1
        return count

    def to_json(self) -> dict[str, Any]:
        """Its JSON form: what differs from the defaults, besides ``num_tokens``."""
        data: dict[str, Any] = {"num_tokens": self.num_tokens, "crossed": self.crossed.value}
        if self.accepted:
            data["accepted"] = list(self.accepted)
        if self.acceptance_rate != 0.7:
            data["acceptance_rate"] = self.acceptance_rate
        return data
