"""The positions a request promises to keep reachable.

One request hands the mask (``core.mask``) the token positions a later
request may resume at: the replay boundary ``P - 1`` (a resend of the prompt
looks up at most ``N - 1`` tokens, so its hit floors ``P - 1``) and the
junction ``J`` when one was detected. The mask floors each to the hit
alignment itself. Keeping this in one function is the point of SPEC section
6: the split, the mask and the finder must all talk about the same positions.

Under EAGLE a lookup matches ``d`` tokens past its hit (the largest drop of
any group, :attr:`HybridGeometry.eagle_drop_tokens`) up to the request's
hashed tokens, so a resend lands at ``floor(P - d)`` and a sibling that
diverges right after the junction at ``floor(J - d)``: both are promised too.
(vLLM 0.33 keeps ``floor_L(P) - L``-style shifted replay positions and the
junction shifted by the group's block.)
"""

from __future__ import annotations

from .errors import require_int

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
    replay_grid: int = 0,
) -> tuple[int, ...]:
    """``P - 1`` and, when the request carries one (``J != 0``), ``J``.

    With ``replay_grid > 0`` (partial hits: the scheduler block ``L``) also
    ``P - 1`` floored to it: full attention caches whole blocks only, so a
    resend may reach no further than the last whole block of the prompt.
    Under EAGLE (``eagle_drop_tokens = d > 0``) a lookup matches ``d`` tokens
    past its hit, so a resend (or a longer sibling) lands at ``P - d`` and a
    sibling diverging after the junction at ``J - d``: those are promised too
    (when >= 0). Sorted, without repeats.

    Raises :class:`InvalidArgument` when ``num_prompt_tokens < 1``, ``J < 0``,
    ``eagle_drop_tokens < 0`` or ``replay_grid < 0``.
    """
    replay = replay_boundary(num_prompt_tokens)
    junction = require_int("shared_prefix_boundary", shared_prefix_boundary, 0)
    drop = require_int("eagle_drop_tokens", eagle_drop_tokens, 0)
    grid = require_int("replay_grid", replay_grid, 0)
    positions = {replay, junction} if junction else {replay}
    if grid:
        positions.add(replay // grid * grid)
    if drop:
        positions |= {x - drop for x in (num_prompt_tokens, junction) if x and x >= drop}
    return tuple(sorted(positions))
