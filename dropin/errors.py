"""The one error the drop-in raises of its own: vLLM asked what the core cannot say.

vLLM 0.33.0 decides a few things the core has no input for (docs/domain.md,
the vLLM section). An adapter that met one could
either answer with vLLM's own code or refuse. Falling back would make a run
with the core swapped in silently part-vLLM, so every test that passed would
prove less than it says; the adapters refuse instead, with this error, which
names the decision, the option and the value, so a failing engine test reads
as "the core cannot express X" rather than as a wrong answer.

It is not an ``InvalidArgument``: the value is valid for vLLM, and bad input
to the core still raises the core's own error unchanged. Both derive from
``junction.core.JunctionError``.
"""

from __future__ import annotations

import enum

from junction.core import JunctionError

__all__ = ["Decision", "UnsupportedOption"]


class Decision(enum.Enum):
    """The three vLLM decision points the drop-in replaces."""

    SPLIT = "Scheduler._mamba_block_aligned_split"
    MASK = "reachable_block_mask"
    LOOKUP = "HybridKVCacheCoordinator.find_longest_cache_hit"


class UnsupportedOption(JunctionError, NotImplementedError):
    """vLLM called a decision with an option the core cannot express.

    Attributes:
        decision: the replaced decision point.
        option: vLLM's name for the option (an attribute or argument name).
        value: the value vLLM passed or configured.
    """

    def __init__(self, decision: Decision, option: str, value: object) -> None:
        self.decision = decision
        self.option = option
        self.value = value
        super().__init__(
            f"{decision.value}: the core cannot express {option}={value!r} "
            "(no fallback to vLLM's own code)"
        )
