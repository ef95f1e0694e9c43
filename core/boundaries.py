"""The positions a request promises to keep reachable.

One request hands the mask (``core.mask``) the positions a later request may
resume at: the replay boundary ``P - 1`` (a resend looks up at most
``N - 1`` tokens) and the junction ``J`` when one was detected; under EAGLE
also ``floor(P - d)`` and ``floor(J - d)`` (a lookup matches ``d`` tokens
past its hit), and with partial hits the prompt's last whole block (a
partial block is never cached). One function, so the split, the mask and
the finders talk about the same positions (docs/domain.md, "one source of
truth"). A boundary that floors to 0 promises nothing (no lookup resumes at
0) and is left out here, not in the mask, which stays vLLM 0.33's by its
arguments (docs/design/boundaries-at-zero.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import InvalidArgument, require_int
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
    *,
    hit_grid_tokens: int = 1,
    declared_checkpoints: Iterable[int] = (),
) -> tuple[int, ...]:
    """``P - 1`` and, when the request carries one (``J != 0``), ``J``.

    ``whole_block_sizes`` are the block sizes of the full-attention groups
    that hits may land inside (partial hits,
    :attr:`HybridGeometry.sub_block_full_attention_sizes`); with
    ``w = min floor_B(P)`` over them, ``min(w, P - 1)`` is promised too.
    Under EAGLE (``eagle_drop_tokens = d > 0``) ``P - d``, ``J - d`` and
    ``w - d`` are promised as well. Sorted, without repeats, and each at
    least ``hit_grid_tokens`` (the grid the mask floors to,
    :attr:`HybridGeometry.hit_grid_tokens`; 1 by default): a position that
    floors to 0 there is no resumption and is left out.

    ``declared_checkpoints``: positions the request's application declares
    (a marker in its input), each promised as the junction is: ``x``, and
    ``x - d`` under EAGLE (a sibling sharing the prefix up to ``x`` diverges
    right after it); one flooring to 0 is left out like any other.

    Raises :class:`InvalidArgument` when ``num_prompt_tokens < 1``, ``J < 0``,
    ``eagle_drop_tokens < 0``, a block size is < 1, ``hit_grid_tokens < 1``
    or a declared checkpoint is not an int in ``[0, P]``.
    """
    replay = replay_boundary(num_prompt_tokens)
    junction = require_int("shared_prefix_boundary", shared_prefix_boundary, 0)
    drop = require_int("eagle_drop_tokens", eagle_drop_tokens, 0)
    sizes = [
        require_int(f"whole_block_sizes[{index}]", size, 1)
        for index, size in enumerate(whole_block_sizes)
    ]
    grid = require_int("hit_grid_tokens", hit_grid_tokens, 1)
    declared = [
        _declared(index, position, num_prompt_tokens)
        for index, position in enumerate(declared_checkpoints)
    ]
    # J = 0 (none) and every landing below the grid fall to the filter below.
    positions = {replay, junction, *declared}
    landings = [num_prompt_tokens, junction, *declared]
    if sizes:
        whole = min(floor_to(num_prompt_tokens, size) for size in sizes)
        positions.add(min(whole, replay))
        landings.append(whole)
    if drop:
        positions |= {x - drop for x in landings}
    return tuple(sorted(x for x in positions if x >= grid))


def _declared(index: int, position: object, num_prompt_tokens: int) -> int:
    """A declared checkpoint, checked: an int in ``[0, P]`` (it marks a prompt position)."""
    name = f"declared_checkpoints[{index}]"
    value = require_int(name, position, 0)
    if value > num_prompt_tokens:
        raise InvalidArgument(
            name,
            value,
            f"must be <= num_prompt_tokens ({num_prompt_tokens}): a declared "
            "checkpoint lies in the prompt",
        )
    return value
