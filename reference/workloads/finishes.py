"""A workload's mix of finish reasons: how its requests end.

Every request of a workload ends after its scripted outputs (the trace's
``output_length``, a session's drawn reply), and the mix says for what
reason: stopped (a stop token or string), length-capped or aborted
(``engine.finish``). The default, :data:`ALL_STOPPED`, ends every request
stopped, which is what every run did before the mix existed, so every
recorded result stands. A mix draws each request's reason from its
submission index and its own seed alone (no draw of the workload's own
random stream), so changing the mix changes no prompt, arrival or answer.

Neither trace format records finish reasons: the Mooncake conversation
trace has ``timestamp``, ``input_length``, ``output_length`` and
``hash_ids`` only. What it implies is an output cap: ``length_cap`` ends a
request whose output count is exactly the cap length-capped, whatever the
shares say (docs/next-turn.md, "Finish reasons").
"""

from __future__ import annotations

import attrs

from junction.core import InvalidArgument
from junction.reference.engine.finish import FinishReason

from .shares import check_share, describe_shares, draw

__all__ = ["ALL_STOPPED", "MOONCAKE_CONVERSATION", "FinishMix"]


@attrs.frozen
class FinishMix:
    """Relative shares of the finish reasons (any scale, not all 0), the seed of the
    per-request draw, and an output cap (``None``: none) at which a request is
    length-capped; :class:`InvalidArgument` naming a bad one."""

    stopped: float = attrs.field(default=1.0, validator=check_share)
    length_capped: float = attrs.field(default=0.0, validator=check_share)
    aborted: float = attrs.field(default=0.0, validator=check_share)
    seed: int = attrs.field(default=0)
    length_cap: int | None = attrs.field(default=None)

    def __attrs_post_init__(self) -> None:
        if type(self.seed) is not int:
            raise InvalidArgument("seed", self.seed, "must be an int")
        cap = self.length_cap
        if cap is not None and (type(cap) is not int or cap < 1):
            raise InvalidArgument("length_cap", cap, "must be None or an int >= 1")
        if not self.stopped + self.length_capped + self.aborted > 0:
            raise InvalidArgument("stopped", self.stopped, "the shares must not all be 0")

    def reason(self, index: int, outputs: int = 0) -> FinishReason:
        """The reason request ``index`` (its submission order) with ``outputs`` output
        tokens ends with."""
        if outputs == self.length_cap:
            return FinishReason.LENGTH_CAPPED
        shares = (self.stopped, self.length_capped, self.aborted)
        return draw(list(FinishReason), shares, self.seed, index)

    def describe(self) -> str:
        """``stopped 0.8, length_capped 0.2`` (the non-zero shares, normalised), and
        ``; length-capped at 2000`` with a cap."""
        text = describe_shares(list(FinishReason), (self.stopped, self.length_capped, self.aborted))
        return text if self.length_cap is None else f"{text}; length-capped at {self.length_cap}"


#: Every request stopped: the default, and every run before finish reasons existed.
ALL_STOPPED = FinishMix()

#: What the Mooncake conversation trace implies: its outputs stop at 2,000 tokens
#: (30 of 12,031 requests exactly there, one or two at each length just below),
#: an output cap; every other request ended before it, stopped or aborted, which
#: the trace cannot tell apart: taken as stopped.
MOONCAKE_CONVERSATION = FinishMix(length_cap=2000)
