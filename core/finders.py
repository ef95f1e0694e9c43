"""Per-group finders: the longest hit one group can serve up to a bound.

Reconciliation (``core.reconcile``) needs, per group, a callable
``finder(bound, drop_eagle) -> hit``. These are the finders of the three
group kinds over a cache given as ``is_cached(block_index) -> bool``, so the
reference engine and the tests share them. Each returns the largest
``A``-aligned length the group can serve from first principles
(docs/domain.md) with its EAGLE drop within ``bound`` (0 if none); the
sliding-window scan asks about each block at most once. :class:`GroupLookup`
binds what is fixed for a group once (docs/design/bound-calls.md); full
attention may take a :data:`CachedRun` that counts the run of cached blocks
from block 0 in one call (docs/design/cached-run.md).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from .errors import InvalidArgument, require_int
from .geometry import GroupKind, GroupSpec, sliding_window_need
from .grid import floor_to, lcm

__all__ = [
    "Finder",
    "GroupLookup",
    "group_finder",
    "longest_full_attention_hit",
    "longest_mamba_hit",
    "longest_sliding_window_hit",
]

Finder = Callable[[int, bool], int]
"""``finder(bound, drop_eagle) -> hit``: one group's longest servable hit."""

IsCached = Callable[[int], bool]

CachedRun = Callable[[int], int]
"""``cached_run(limit) -> blocks``: how many blocks from block 0 on are cached, at most
``limit`` (the first uncached index, or ``limit``): full attention's run in one call."""


def longest_full_attention_hit(
    is_cached: IsCached, bound: int, *, block_size: int, alignment_tokens: int, drop_tokens: int
) -> int:
    """Longest ``A``-aligned ``a`` with ``[0, a + d)`` cached and ``a + d <= bound``.

    ``d`` is ``drop_tokens``, the EAGLE drop (0 without EAGLE).
    The raw match is the run of cached blocks from block 0, capped at
    ``bound``; ``d`` is removed from it and the result re-floored to ``A``.
    """
    return _full_attention_scan(is_cached, None, bound, block_size, alignment_tokens, drop_tokens)


def _full_attention_scan(
    is_cached: IsCached,
    cached_run: CachedRun | None,
    bound: int,
    block_size: int,
    alignment: int,
    drop: int,
) -> int:
    limit = -(-bound // block_size)  # blocks that reach into [0, bound): cdiv, inlined
    if cached_run is None:
        blocks = 0
        while blocks < limit and is_cached(blocks):
            blocks += 1
    else:
        blocks = cached_run(limit)
        if type(blocks) is not int or not 0 <= blocks <= limit:
            raise InvalidArgument(
                "cached_run",
                blocks,
                f"asked for the cached run of at most {limit} blocks: must return an int "
                f"in [0, {limit}]",
            )
    raw = min(blocks * block_size, bound) - drop
    return raw // alignment * alignment if raw > 0 else 0  # floor_to, inlined


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
    Raises :class:`InvalidArgument` on the arguments of
    :func:`sliding_window_need`.
    """
    need = sliding_window_need(window, block_size, use_eagle)
    step = lcm(alignment_tokens, block_size) // block_size
    return _sliding_window_scan(is_cached, bound, block_size, need, 1 if use_eagle else 0, step)


def _sliding_window_scan(
    is_cached: IsCached,
    bound: int,
    block_size: int,
    need: int,
    peek: int,
    step: int,
) -> int:
    """:func:`longest_sliding_window_hit` of valid arguments: ``need`` blocks per
    tail, ``peek`` (``E``) blocks past the hit, ``step`` blocks between candidates.

    Scans right to left from the deepest aligned tail and stops at the first
    that is cached: on a hit it asks about ``need`` blocks, not all of them.
    An uncached block rules out every tail that contains it, so the next
    candidate tail ends at that block; each block is asked about at most once.
    """
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
    grid = lcm(alignment_tokens, block_size)
    return _mamba_scan(is_cached, bound, block_size, grid)


def _mamba_scan(is_cached: IsCached, bound: int, block_size: int, grid: int) -> int:
    # States end on the block grid and hits on A's: only multiples of their
    # lcm ``grid`` can serve, deepest first.
    for end in range(floor_to(bound, grid), 0, -grid):
        if is_cached(end // block_size - 1):
            return end
    return 0


def _spec(instance: object, attribute: attrs.Attribute[GroupSpec], value: object) -> None:
    if not isinstance(value, GroupSpec):
        raise InvalidArgument(attribute.name, value, "must be a GroupSpec")


def _alignment(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    require_int(attribute.name, value, 1)


@attrs.frozen
class GroupLookup:
    """Lookup bound to one group of one engine: its spec and the alignment ``A``.

    A finder asked to drop (``drop_eagle``) drops only for an EAGLE group
    (:attr:`GroupSpec.eagle_group`); any other group's lookup ends at the hit.

    Validated at construction (:class:`InvalidArgument` naming ``spec`` or
    ``alignment_tokens``); what a scan needs that follows from them (the
    drop, the window's ``need`` with and without EAGLE, the candidate grid)
    is computed once there. :meth:`finder` gives the :data:`Finder` over one
    request's cached blocks.
    """

    spec: GroupSpec = attrs.field(validator=_spec)
    alignment_tokens: int = attrs.field(validator=_alignment)
    # Derived once: a window's need and peek blocks without / with EAGLE (the
    # same twice for a group that is not an EAGLE group: it never drops), and
    # what every finder reads, in one tuple: the block, ``A``, the EAGLE drop
    # in tokens and the candidate step (blocks for a window, tokens for a state).
    _needs: tuple[int, int] = attrs.field(init=False, eq=False, repr=False)
    _peeks: tuple[int, int] = attrs.field(init=False, eq=False, repr=False)
    _scan: tuple[int, int, int, int] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        spec, alignment = self.spec, self.alignment_tokens
        needs = (0, 0)
        if spec.kind is GroupKind.SLIDING_WINDOW:
            needs = (spec.blocks_for_hit(False), spec.blocks_for_hit(True))
        grid = lcm(alignment, spec.block_size)
        step = grid // spec.block_size if spec.kind is GroupKind.SLIDING_WINDOW else grid
        drop = spec.eagle_drop_tokens(alignment)
        object.__setattr__(self, "_needs", needs)
        object.__setattr__(self, "_peeks", (0, 1 if spec.eagle_group else 0))
        object.__setattr__(self, "_scan", (spec.block_size, alignment, drop, step))

    def finder(self, is_cached: IsCached, cached_run: CachedRun | None = None) -> Finder:
        """The :data:`Finder` of this group whose cached blocks are ``is_cached``.

        ``cached_run`` (optional, :data:`CachedRun`) is the same cached blocks'
        leading run, which a full-attention group's scan asks instead of
        ``is_cached`` block by block; the other kinds do not use it.

        Raises :class:`InvalidArgument` when ``is_cached`` is not callable,
        ``cached_run`` is neither None nor callable, or (when the finder runs)
        ``cached_run`` answers outside ``[0, limit]``.
        """
        if not callable(is_cached):
            raise InvalidArgument("is_cached", is_cached, "must be callable: block index -> bool")
        if cached_run is not None and not callable(cached_run):
            raise InvalidArgument(
                "cached_run", cached_run, "must be None or callable: limit -> leading cached blocks"
            )
        block, alignment, drop, step = self._scan
        kind = self.spec.kind
        if kind is GroupKind.FULL:

            def find_full(bound: int, drop_eagle: bool) -> int:
                return _full_attention_scan(
                    is_cached, cached_run, bound, block, alignment, drop if drop_eagle else 0
                )

            return find_full
        if kind is GroupKind.SLIDING_WINDOW:
            needs, peeks = self._needs, self._peeks

            def find_window(bound: int, drop_eagle: bool) -> int:
                return _sliding_window_scan(
                    is_cached, bound, block, needs[drop_eagle], peeks[drop_eagle], step
                )

            return find_window

        def find_state(bound: int, drop_eagle: bool) -> int:
            return _mamba_scan(is_cached, bound, block, step)

        return find_state


def group_finder(spec: GroupSpec, is_cached: IsCached, *, alignment_tokens: int) -> Finder:
    """The :data:`Finder` of one group whose cached blocks are ``is_cached``
    (:meth:`GroupLookup.finder` of a fresh binding).

    Raises :class:`InvalidArgument` when ``spec`` is not a :class:`GroupSpec`,
    ``is_cached`` is not callable or ``alignment_tokens < 1``.
    """
    return GroupLookup(spec, alignment_tokens).finder(is_cached)
