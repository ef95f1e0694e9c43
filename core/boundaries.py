"""The positions a request promises to keep reachable.

One request hands the mask (``core.mask``) the token positions a later
request may resume at: the replay boundary ``P - 1`` (a resend of the prompt
looks up at most ``N - 1`` tokens, so its hit floors ``P - 1``) and the
junction ``J`` when one was detected. The mask floors each to the hit grid
itself. Keeping this in one function is the point of docs/domain.md's "one source of truth": the
split, the mask and the finder must all talk about the same positions.

Two lookups land elsewhere, and both are promised too:

* Under EAGLE a lookup matches ``d`` tokens past its hit (the largest drop of
  any group, :attr:`HybridGeometry.eagle_drop_tokens`) up to the request's
  hashed tokens, so a resend lands at ``floor(P - d)`` and a sibling that
  diverges right after the junction at ``floor(J - d)``.
* With partial hits full attention matches hash units, but only inside blocks
  that were cached, and a block is cached only once full. If the prompt's
  last block is never filled, a resend reaches the prompt's last whole block
  ``w = floor_Bf(P)`` and no further (``w - d`` under EAGLE).

Rejected: vLLM 0.33's ``floor_L(P) - L``-style shifted replay positions, which
assume a drop of one scheduler block; the drop is a hash unit with partial
hits, and a state kept a block too low is one no lookup lands on.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import require_int
from .grid import floor_to

__all__ = ["reachable_boundaries", "replay_boundary"]


def replay_boundary(num_prompt_tokens: int) -> int:
    """``P - 1``: the furthest a resend of the prompt can look up.

    Raises :class:`InvalidArgument` when ``num_prompt_tokens < 1``.
    """
    return require_int("num_prompt_tokens", num_prompt_tokens, 1) - 1


def reachable_boundaries(
    num_prompt_tokens: int,
    shared_prefix_boundary: int = 0,
    eagle_drop_tokens: int = 0,
    whole_block_sizes: Iterable[int] = (),
) -> tuple[int, ...]:
    """``P - 1`` and, when the request carries one (``J != 0``), ``J``.

    ``whole_block_sizes`` are the block sizes of the full-attention groups
    that hits may land inside (partial hits,
    :attr:`HybridGeometry.sub_block_full_attention_sizes`); with
    ``w = min floor_B(P)`` over them, ``min(w, P - 1)`` is promised too.
    Under EAGLE (``eagle_drop_tokens = d > 0``) ``P - d``, ``J - d`` and
    ``w - d`` are promised as well (those that are >= 0). Sorted, without
    repeats.

    Raises :class:`InvalidArgument` when ``num_prompt_tokens < 1``, ``J < 0``,
    ``eagle_drop_tokens < 0`` or a block size is < 1.
    """
    replay = replay_boundary(num_prompt_tokens)
    junction = require_int("shared_prefix_boundary", shared_prefix_boundary, 0)
    drop = require_int("eagle_drop_tokens", eagle_drop_tokens, 0)
    sizes = [
        require_int(f"whole_block_sizes[{index}]", size, 1)
        for index, size in enumerate(whole_block_sizes)
    ]
    positions = {replay, junction} if junction else {replay}
    landings = [num_prompt_tokens, junction] if junction else [num_prompt_tokens]
    if sizes:
        whole = min(floor_to(num_prompt_tokens, size) for size in sizes)
        positions.add(min(whole, replay))
        landings.append(whole)
    if drop:
        positions |= {x - drop for x in landings if x >= drop}
    return tuple(sorted(positions))
