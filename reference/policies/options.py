"""The engine options the ``junction`` policy's split takes, in the core's words.

vLLM 0.33.0's scheduler has three settings of the split (docs/domain.md,
decision 2); :class:`VllmSplitOptions` (``reference.policies.vllm``) sets
them in vLLM's names and with its narrowing. The default policy takes the
one that its promises can rest on, here:

* ``prefill_checkpoint_alignment``: the backend writes the prefill's
  checkpoint state inside a chunk, at a whole number of its tiles (this
  many tokens) past the chunk's start (``core.PrefillCheckpoints``). The
  policy keys the checkpoint on the hit grid ``G``, where a resend lands
  (``floor_G(P - 1)``, its promised replay position), not on vLLM's ``A``:
  then the state the backend writes is the one the mask keeps, and the split
  need not stop there (``JunctionPolicy.split``). The reference engine
  writes it (``reference/engine/group_managers.py``, ``MambaManager``).

* ``decode_checkpoints``: keep the next turn (docs/domain.md, "The next
  turn"). The policy declares ``keeps_decode_checkpoints`` and answers the
  engine's ``decode_checkpoints`` question with ``core.decode_checkpoint``:
  the engine pins the states a decoding request's next turn may resume at
  and publishes the one the mask keeps on finish (vLLM PR #50551's model,
  on the hit grid and with the EAGLE drop where that PR keeps the latest
  scheduler-aligned state). Off, the policy keeps what it kept before: its
  digests and results are unchanged.

Not taken, each for a reason of first principles (docs/domain.md, "The
promises with the engine options on"):

* the exact junction stop: the core's lookup resumes a Mamba group only at
  its block's end, so a state at a junction off that grid is never read,
  while the stop makes a chunk end that is neither on the grid nor promised
  (split soundness fails: the counterexample is in
  ``tests/conformance/test_options.py``). The policy already stops at
  ``floor_G(J)``, the deepest position a sibling's lookup lands at;
* hash lookahead tokens: they change what the lookup hashes (a block's hash
  covers ``k`` more tokens), which the reference engine's hash chain does not
  model, and the promised positions (``core.reachable_boundaries``) assume a
  lookup of ``N`` tokens reaches ``N - 1``; with ``k > 1`` a resend lands at
  ``floor(P - k)`` instead.
"""

from __future__ import annotations

import attrs

from junction.core import InvalidArgument

__all__ = ["DEFAULT_OPTIONS", "JunctionOptions"]


def _alignment(instance: object, attribute: attrs.Attribute[int | None], value: object) -> None:
    if value is not None and (type(value) is not int or value < 1):
        raise InvalidArgument(attribute.name, value, "must be None or an int >= 1")


def _flag(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if value is not True and value is not False:
        raise InvalidArgument(attribute.name, value, "must be a bool")


@attrs.frozen
class JunctionOptions:
    """Engine options of the ``junction`` policy (all off by default).

    ``prefill_checkpoint_alignment``: ``None`` (the backend writes a state
    only at a chunk's end) or the backend's tile in tokens (``>= 1``,
    :class:`InvalidArgument` naming it otherwise). ``decode_checkpoints``:
    keep the next turn's state (a bool).
    """

    prefill_checkpoint_alignment: int | None = attrs.field(default=None, validator=_alignment)
    decode_checkpoints: bool = attrs.field(default=False, validator=_flag)


DEFAULT_OPTIONS = JunctionOptions()
