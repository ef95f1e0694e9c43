"""The drop-in's two modes: what its lookup answers.

``corrected`` (the default) answers with the core's reconciliation, exact by
first principles: it fixes vLLM 0.33.0's documented lookup departures
(docs/findings.md, findings 8 to 11; docs/dropin.md lists each with its cost).
``identical`` answers exactly as the installed vLLM does, departures included,
by the restatement of its lookup in its release's package
(``upstream.vllm_0_33.lookup_model`` with every quirk on) over the core's
finders, as the ``vllm-0.33`` compatibility policy does for the split and the
mask: a user can adopt the drop-in with no change in behaviour first and
switch to ``corrected`` later. The split and the mask
are vLLM's forms of the core's decisions in both modes (they agree with vLLM
on every call).
"""

from __future__ import annotations

import enum

from junction.core import InvalidArgument

__all__ = ["Mode"]


class Mode(enum.Enum):
    """What the drop-in's lookup answers."""

    CORRECTED = "corrected"
    IDENTICAL = "identical"

    @classmethod
    def of(cls, value: object, argument: str = "mode") -> Mode:
        """The mode ``value`` names (a :class:`Mode` or its string), else
        ``InvalidArgument`` naming ``argument``, the value and the choices."""
        if isinstance(value, Mode):
            return value
        for mode in cls:
            if value == mode.value and isinstance(value, str):
                return mode
        choices = ", ".join(repr(mode.value) for mode in cls)
        raise InvalidArgument(argument, value, f"must be one of {choices}")
