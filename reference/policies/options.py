"""The engine options the ``junction`` policy's split takes, in the core's words.

Of vLLM 0.33.0's three split settings (docs/domain.md, decision 2) the
default policy takes the one its promises can rest on,
``prefill_checkpoint_alignment`` (the backend writes the checkpoint state
inside a chunk, keyed on the hit grid ``G`` where a resend lands, so the
split need not stop there), and adds ``decode_checkpoints`` (keep the next
turn, vLLM PR #50551's model; off, nothing changes) with the finishes it is
published on. Not taken, for reasons
of first principles (docs/domain.md, "The promises with the engine options
on"): the exact junction stop (the lookup never reads a state off the Mamba
grid, and the stop breaks split soundness) and hash lookahead tokens (the
reference engine's hash chain does not model them).
"""

from __future__ import annotations

import attrs

from junction.core import InvalidArgument
from junction.reference.engine.finish import PUBLISHED_BY_DEFAULT, FinishReason

__all__ = ["DEFAULT_OPTIONS", "JunctionOptions"]


def _alignment(instance: object, attribute: attrs.Attribute[int | None], value: object) -> None:
    if value is not None and (type(value) is not int or value < 1):
        raise InvalidArgument(attribute.name, value, "must be None or an int >= 1")


def _flag(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if value is not True and value is not False:
        raise InvalidArgument(attribute.name, value, "must be a bool")


def _budget(instance: object, attribute: attrs.Attribute[int | None], value: object) -> None:
    """``None`` or an int ``>= 1`` (a budget, a margin, a time to live)."""
    if value is not None and (type(value) is not int or value < 1):
        raise InvalidArgument(attribute.name, value, "must be None or an int >= 1")


def _finishes(value: object) -> frozenset[FinishReason]:
    reasons = frozenset(value) if isinstance(value, (set, frozenset, tuple, list)) else None
    if reasons is None or not all(isinstance(r, FinishReason) for r in reasons):
        rule = "must be a set of FinishReason"
        raise InvalidArgument("decode_checkpoint_finishes", value, rule)
    return reasons


@attrs.frozen
class JunctionOptions:
    """Engine options of the ``junction`` policy (all off by default).

    ``prefill_checkpoint_alignment``: ``None`` (the backend writes a state
    only at a chunk's end) or the backend's tile in tokens (``>= 1``,
    :class:`InvalidArgument` naming it otherwise). ``decode_checkpoints``:
    keep the next turn's state (a bool). ``decode_checkpoint_finishes``: the
    finishes on which the engine publishes it (``engine.finish``; by default
    every finish but an abort). ``decode_checkpoint_budget``: ``None`` (every
    published checkpoint kept like any cached block) or the turns per
    conversation path whose checkpoints stay cached (``>= 1``; 1 retires a
    turn's once the next turn on its path publishes: ``engine.retirement``).
    ``decode_checkpoint_margin``: ``None`` (one decode checkpoint, the answer's
    end) or a margin in tokens (``>= 1``): a second checkpoint where a next turn
    resending all but the answer's last ``margin`` tokens lands (a cut stop
    string). ``decode_checkpoint_ttl``: ``None`` (kept like any cached block) or
    the later requests (``>= 1``) within which a turn's checkpoint must be resumed
    from, or it is retired (``engine.retirement``). ``decode_checkpoint_keep_path``:
    with a time to live, a turn expiring leaves its path's last state, the
    checkpoint at its prompt's replay state, to the pool's eviction order: no
    budget retires it after (a bool).
    """

    prefill_checkpoint_alignment: int | None = attrs.field(default=None, validator=_alignment)
    decode_checkpoints: bool = attrs.field(default=False, validator=_flag)
    decode_checkpoint_finishes: frozenset[FinishReason] = attrs.field(
        default=PUBLISHED_BY_DEFAULT, converter=_finishes
    )
    decode_checkpoint_budget: int | None = attrs.field(default=None, validator=_budget)
    decode_checkpoint_margin: int | None = attrs.field(default=None, validator=_budget)
    decode_checkpoint_ttl: int | None = attrs.field(default=None, validator=_budget)
    decode_checkpoint_keep_path: bool = attrs.field(default=False, validator=_flag)


DEFAULT_OPTIONS = JunctionOptions()
