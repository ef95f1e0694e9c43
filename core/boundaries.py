"""The positions a request promises to keep reachable.

One request hands the mask (``core.mask``) the token positions a later
request may resume at: the replay boundary ``P - 1`` (a resend of the prompt
looks up at most ``N - 1`` tokens, so its hit floors ``P - 1``) and the
junction ``J`` when one was detected. The mask floors each to the hit
alignment itself. Keeping this in one function is the point of SPEC section
6: the split, the mask and the finder must all talk about the same positions.
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
    num_prompt_tokens: int, shared_prefix_boundary: int = 0
) -> tuple[int, ...]:
    """``(P - 1,)``, plus ``J`` when the request carries a junction (``J != 0``).

    Raises :class:`InvalidArgument` when ``num_prompt_tokens < 1`` or ``J < 0``.
    """
    replay = replay_boundary(num_prompt_tokens)
    if require_int("shared_prefix_boundary", shared_prefix_boundary, 0):
        return (replay, shared_prefix_boundary)
    return (replay,)
