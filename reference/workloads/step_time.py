"""The engine's clock: a model of how long one step takes, from what it scheduled.

The reference engine computes no tensors, so a replay's times are modelled:
each ``engine.step()`` returns its chunks ``(request, start, tokens)`` and
:meth:`StepTimeModel.step_ms` turns them into milliseconds:

* ``step_ms``: a fixed cost per step (launch, scheduling, sampling);
* ``prefill_token_us``: per prefill token (the weights' matmuls);
* ``attention_us_per_ktoken``: per prefill token, per 1,000 tokens of
  context before it (attention's quadratic part): a chunk of ``t`` tokens
  from ``s`` costs it on ``t * s + t * (t - 1) / 2`` tokens of context;
* ``decode_row_us``: per decode row (a one-token chunk past the prompt).

The defaults are illustrative, not measured: roughly a 3B-parameter hybrid
model on one H100-class GPU (100,000 prefill tokens a second before
attention; 16,000 tokens of context double a prefill token's cost; a decode
row 50 microseconds), chosen so that one modelled engine keeps up with the
Mooncake conversation trace (about 40,000 prompt tokens a second) with room
to queue. Set them for your model and hardware; the report states them.
Rejected: a per-layer model (the geometry's groups are not its layer
counts), and decode rows that grow with context (a second coefficient nobody
here could calibrate).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

__all__ = ["StepTimeModel"]

_non_negative = attrs.validators.and_(
    attrs.validators.instance_of(float), attrs.validators.ge(0.0), attrs.validators.lt(1e9)
)


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
