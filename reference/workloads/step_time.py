"""The engine's clock: a model of how long one step takes, from what it scheduled.

The reference engine computes no tensors, so times are modelled:
:meth:`StepTimeModel.step_ms` turns a step's chunks into milliseconds from a
fixed cost per step (``step_ms``), a cost per prefill token
(``prefill_token_us``), attention's quadratic part per prefill token and
1,000 tokens of context (``attention_us_per_ktoken``) and a cost per decode
row (``decode_row_us``). The defaults are illustrative, not measured:
roughly a 3B hybrid on one H100-class GPU, so that one modelled engine keeps
up with the Mooncake conversation trace; set them for your model and
hardware (the report states them).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from junction.reference.errors import number_between

__all__ = ["StepTimeModel"]

_non_negative = number_between(0.0, 1e9, below_high=True, floats=True)


@attrs.frozen
class StepTimeModel:
    """The cost of one engine step (field order is the report's key order)."""

    step_ms: float = attrs.field(default=2.0, validator=_non_negative)
    prefill_token_us: float = attrs.field(default=10.0, validator=_non_negative)
    attention_us_per_ktoken: float = attrs.field(default=0.6, validator=_non_negative)
    decode_row_us: float = attrs.field(default=50.0, validator=_non_negative)

    def step_time_ms(self, prefill: Iterable[tuple[int, int]], decode_rows: int) -> float:
        """A step's milliseconds: its ``(start, tokens)`` prefill chunks and its decode rows."""
        tokens = context = 0
        for start, count in prefill:
            tokens += count
            context += count * start + count * (count - 1) // 2
        micros = (
            tokens * self.prefill_token_us
            + context / 1000 * self.attention_us_per_ktoken
            + decode_rows * self.decode_row_us
        )
        return self.step_ms + micros / 1000

    def describe(self) -> str:
        """One line for the output: that times are modelled, and how."""
        return (
            f"times are modelled, not measured: a step costs {self.step_ms:g} ms "
            f"+ {self.prefill_token_us:g} us per prefill token "
            f"+ {self.attention_us_per_ktoken:g} us per prefill token per 1,000 tokens of context "
            f"+ {self.decode_row_us:g} us per decode row"
        )
