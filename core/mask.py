"""Decision 3: which newly full blocks a group hashes (``reachable_block_mask``).

An unmarked block is never hashed, so it can never serve a hit: the mask *is*
the retention policy for sparse groups. Full attention keeps everything. A
sliding-window group keeps, for each promised position ``a``, the ``need``
blocks that end at ``a`` (plus the EAGLE peek block past it); a Mamba group
keeps the one state block ending at ``a``. Promised positions are the
periodic segment boundaries (every ``A`` when dense, every ``R`` when
``R > 0``, none when ``R == 0``) and the request's reachable boundaries
(replay boundary, junction) floored to ``A``.

Why slices instead of a per-block loop: engines call this on every step for
every request and group, and a 64-block mask must cost a few microseconds.
The periodic pattern is built once per call as a ``p``-long template, tiled
with list repetition and cut at the right phase; boundaries are slice
assignments. ``reference.oracle`` restates the same decision block by block.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import InvalidArgument, require_int, require_optional_int
from .geometry import GroupKind, GroupSpec
from .grid import floor_to

__all__ = ["reachable_block_mask"]


def reachable_block_mask(
    start_block: int,
    end_block: int,
    alignment_tokens: int,
    spec: GroupSpec,
    use_eagle: bool,
    retention_interval: int | None = None,
    reachable_boundaries: Iterable[int] = (),
) -> list[bool] | None:
    """Mark the blocks ``[start_block, end_block)`` that must be hashed.

    Returns ``None`` when every block is to be cached (full attention; dense
    Mamba; a sliding window whose periodic tails already cover every block, or
    whose alignment ``A`` is not a whole number of its blocks), else a list of
    ``end_block - start_block`` bools, element ``k`` for block
    ``start_block + k``. Guarantees (SPEC section 5):

    * SWA (``need = cdiv(W-1, B) + E``, ``shift = E``, ``p = seg / B`` with
      ``seg = A`` if ``R is None``, ``R`` if ``R > 0``): block ``i`` is marked
      iff ``i >= shift`` and ``(i - shift) mod p >= p - need`` (periodic
      tails), or, when ``R is not None``, ``i`` lies in
      ``[e - need, e)`` with ``e = floor_A(x) / B + shift`` for a boundary ``x``.
    * Mamba: with ``R > 0`` block ``i`` is marked iff ``(i + 1) mod (R / B) == 0``
      (``None`` when ``R <= B``); block ``floor_A(x) // B - 1`` is marked for
      every boundary ``x``.

    Raises :class:`InvalidArgument` for negative or reversed block ranges, a
    non-positive alignment, a retention interval that is negative or not a
    multiple of both ``A`` and the group's block size, or a negative boundary.
    """
    require_int("start_block", start_block, 0)
    require_int("end_block", end_block, start_block, "start_block")
    require_int("alignment_tokens", alignment_tokens, 1)
    if not isinstance(spec, GroupSpec):
        raise InvalidArgument("spec", spec, "must be a GroupSpec")
    if type(use_eagle) is not bool:
        raise InvalidArgument("use_eagle", use_eagle, "must be a bool")
    block = spec.block_size
    interval = require_optional_int("retention_interval", retention_interval, 0)
    if interval and (interval % block or interval % alignment_tokens):
        raise InvalidArgument(
            "retention_interval",
            interval,
            f"must be a multiple of alignment_tokens={alignment_tokens} and of the "
            f"group's block_size={block}",
        )
    boundaries = tuple(reachable_boundaries)
    for index, boundary in enumerate(boundaries):
        require_int(f"reachable_boundaries[{index}]", boundary, 0)

    if spec.kind is GroupKind.FULL:
        return None
    if spec.kind is GroupKind.SLIDING_WINDOW:
        return _sliding_window_mask(
            start_block,
            end_block,
            alignment_tokens,
            spec,
            use_eagle,
            interval,
            boundaries,
        )
    return _mamba_mask(start_block, end_block, alignment_tokens, block, interval, boundaries)


def _sliding_window_mask(
    start: int,
    end: int,
    alignment: int,
    spec: GroupSpec,
    use_eagle: bool,
    retention_interval: int | None,
    boundaries: tuple[int, ...],
) -> list[bool] | None:
    block = spec.block_size
    if alignment % block:
        # A hit may land mid-block; a block-granular mask cannot say which
        # tail it needs, so keep everything rather than drop a reachable block.
        return None
    need = spec.blocks_for_hit(use_eagle)
    shift = 1 if use_eagle else 0
    segment = alignment if retention_interval is None else retention_interval
    if segment:
        period = segment // block
        if need >= period:
            return None
        mask = _periodic_tails(start, end, period, need, shift)
    else:
        mask = [False] * (end - start)
    if retention_interval is not None:
        for boundary in boundaries:
            tail_end = floor_to(boundary, alignment) // block + shift
            lo = max(start, tail_end - need)
            hi = min(end, tail_end)
            if lo < hi:
                mask[lo - start : hi - start] = [True] * (hi - lo)
    return mask


def _mamba_mask(
    start: int,
    end: int,
    alignment: int,
    block: int,
    retention_interval: int | None,
    boundaries: tuple[int, ...],
) -> list[bool] | None:
    if retention_interval is None:
        return None
    if retention_interval:
        period = retention_interval // block
        if period <= 1:
            return None
        mask = _periodic_tails(start, end, period, 1, 0)
    else:
        mask = [False] * (end - start)
    for boundary in boundaries:
        state_block = floor_to(boundary, alignment) // block - 1
        if start <= state_block < end:
            mask[state_block - start] = True
    return mask


def _periodic_tails(start: int, end: int, period: int, run: int, shift: int) -> list[bool]:
    """Mark blocks ``[k*period + shift - run, k*period + shift)``, all ``k >= 1``, in range.

    ``0 < run < period``. Short ranges (fewer blocks than a period) assign
    each intersecting run as a slice; longer ones tile a one-period template,
    so the cost never depends on how large the period is.
    """
    length = end - start
    if period > length:
        mask = [False] * length
        k = max((start - shift) // period + 1, 1)
        while (tail_end := k * period + shift) - run < end:
            lo = max(start, tail_end - run)
            hi = min(end, tail_end)
            mask[lo - start : hi - start] = [True] * (hi - lo)
            k += 1
        return mask
    # Template indexed by (i - shift) mod period; tile it and cut at the phase.
    template = [False] * (period - run) + [True] * run
    phase = (start - shift) % period
    mask = (template * (length // period + 2))[phase : phase + length]
    if start < shift:
        mask[0] = False  # block 0 precedes the first tail (k = 0 is no promise)
    return mask
