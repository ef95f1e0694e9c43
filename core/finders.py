"""Per-group finders: the longest hit one group can serve up to a bound.

Reconciliation (``core.reconcile``) only needs, per group, a callable
``finder(bound, drop_eagle) -> hit``. These are the finders for the three
group kinds over a group's cache state, given as a predicate
``is_cached(block_index) -> bool`` on the request's block-hash chain, so the
reference engine (a hash lookup) and tests (a set) share them.

What "servable" means, from first principles (docs/domain.md, "First principles"), for an
``A``-aligned length ``a`` and, under EAGLE, the tokens ``d`` the lookup must
match past ``a`` and drop (:meth:`GroupSpec.eagle_drop_tokens`):

* full attention: every block covering ``[0, a + d)`` is cached;
* sliding window: the blocks covering ``[a - W + 1, a)`` plus, under EAGLE,
  the block just past ``a`` are cached, ``a`` on the group's block grid;
* Mamba: the state block ending exactly at ``a`` is cached (no drop).

Each finder returns the largest servable ``a`` with ``a + d <= bound`` (0 if
none): the bound already includes the drop margin the coordinator granted.
The sliding-window finder scans right to left from the deepest candidate and
jumps past each uncached block, so it asks about every block at most once
instead of re-checking ``need`` blocks per candidate.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import InvalidArgument, require_int
from .geometry import GroupKind, GroupSpec, sliding_window_need
from .grid import cdiv, floor_to, lcm

__all__ = [
    "Finder",
    "group_finder",
    "longest_full_attention_hit",
    "longest_mamba_hit",
    "longest_sliding_window_hit",
]

Finder = Callable[[int, bool], int]
"""``finder(bound, drop_eagle) -> hit``: one group's longest servable hit."""

IsCached = Callable[[int], bool]


def longest_full_attention_hit(
    is_cached: IsCached, bound: int, *, block_size: int, alignment_tokens: int, drop_tokens: int
) -> int:
    """Longest ``A``-aligned ``a`` with ``[0, a + d)`` cached and ``a + d <= bound``.

    ``d`` is ``drop_tokens``, the EAGLE drop (0 without EAGLE).
    The raw match is the run of cached blocks from block 0, capped at
    ``bound``; ``d`` is removed from it and the result re-floored to ``A``.
    """
    blocks = 0
    while blocks < cdiv(bound, block_size) and is_cached(blocks):
        blocks += 1
    raw = min(blocks * block_size, bound)
    return floor_to(max(raw - drop_tokens, 0), alignment_tokens)


def longest_sliding_window_hit(
    is_cached: IsCached,
    bound: int,
    *,
    block_size: int,
    window: int,
    alignment_tokens: int,
    use_eagle: bool,
) -> int:
    """Longest ``a`` (on both the ``A`` and block grids) whose window tail is cached.

    The tail of ``a`` is blocks ``[max(0, a/B - cdiv(W-1, B)), a/B + E)``;
    it must end at or before ``floor_B(bound)``. A run shorter than ``need``
    that starts at block 0 also serves (the window reaches past token 0).

    Scans right to left from the deepest aligned tail and stops at the first
    that is cached: on a hit it asks about ``need`` blocks, not all of them.
    An uncached block rules out every tail that contains it, so the next
    candidate tail ends at that block; each block is asked about at most once.
    Raises :class:`InvalidArgument` on the arguments of
    :func:`sliding_window_need`.
    """
    need = sliding_window_need(window, block_size, use_eagle)
    peek = 1 if use_eagle else 0
    step = lcm(alignment_tokens, block_size) // block_size  # hit blocks between candidates
    tail_end = bound // block_size
    while tail_end > peek:
        tail_end = peek + floor_to(tail_end - peek, step)
        if tail_end <= peek:
            break
        first = max(tail_end - need, 0)
        index = tail_end - 1
        while index >= first and is_cached(index):
            index -= 1
        if index < first:
            return (tail_end - peek) * block_size
        tail_end = index
    return 0


def longest_mamba_hit(
    is_cached: IsCached, bound: int, *, block_size: int, alignment_tokens: int
) -> int:
    """Deepest cached state ``(i + 1) * B <= bound`` that is a multiple of ``A``."""
    for index in range(bound // block_size - 1, -1, -1):
        if (index + 1) * block_size % alignment_tokens == 0 and is_cached(index):
            return (index + 1) * block_size
    return 0


def group_finder(spec: GroupSpec, is_cached: IsCached, *, alignment_tokens: int) -> Finder:
    """The :data:`Finder` of one group whose cached blocks are ``is_cached``.

    Raises :class:`InvalidArgument` when ``spec`` is not a :class:`GroupSpec`,
    ``is_cached`` is not callable or ``alignment_tokens < 1``.
    """
    if not isinstance(spec, GroupSpec):
        raise InvalidArgument("spec", spec, "must be a GroupSpec")
    if not callable(is_cached):
        raise InvalidArgument("is_cached", is_cached, "must be callable: block index -> bool")
    require_int("alignment_tokens", alignment_tokens, 1)
    if spec.kind is GroupKind.FULL:
        drop = spec.eagle_drop_tokens(alignment_tokens)

        def find_full(bound: int, drop_eagle: bool) -> int:
            return longest_full_attention_hit(
                is_cached,
                bound,
                block_size=spec.block_size,
                alignment_tokens=alignment_tokens,
                drop_tokens=drop if drop_eagle else 0,
            )

        return find_full
    if spec.kind is GroupKind.SLIDING_WINDOW:
        window = spec.window
        assert window is not None  # guaranteed by GroupSpec's validator

        def find_window(bound: int, drop_eagle: bool) -> int:
            return longest_sliding_window_hit(
                is_cached,
                bound,
                block_size=spec.block_size,
                window=window,
                alignment_tokens=alignment_tokens,
                use_eagle=drop_eagle,
            )

        return find_window

    def find_state(bound: int, drop_eagle: bool) -> int:
        return longest_mamba_hit(
            is_cached, bound, block_size=spec.block_size, alignment_tokens=alignment_tokens
        )

    return find_state
