"""Decision 3: which newly full blocks a group hashes (``reachable_block_mask``).

An unmarked block is never hashed, so it can never serve a hit: the mask *is*
the retention policy for sparse groups. Full attention keeps everything. A
sliding-window group keeps, for each promised position ``a``, the ``need``
blocks that end at ``a`` (plus the EAGLE peek block past it); a Mamba group
keeps the one state block ending at ``a``. Promised positions are the
periodic segment boundaries (every ``A`` when dense, every ``R`` when
``R > 0``, none when ``R == 0``) and the request's reachable boundaries
(replay boundary, junction) floored to ``A``.

Both sparse kinds reduce to one shape, a :class:`MaskPlan`: keep a run of
``run`` blocks ending at block ``k * period + shift`` for every ``k >= 1``,
and (if ``keeps_boundaries``) the run ending at ``floor_A(x) / B + shift`` for
every boundary ``x``. The plan is request-independent, so the batched paths
in ``kernels/`` take it from here instead of re-deriving the dense cases.

Why slices instead of a per-block loop: engines call this on every step for
every request and group, and a 64-block mask must cost a few microseconds.
The periodic part tiles a one-period template (or, for periods longer than
the range, assigns the few runs that intersect it); boundaries are slice
assignments. ``MaskPlan`` is a ``NamedTuple``, not an attrs class, because it
is built on every call. ``reference.oracle`` restates the decision block by
block.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from .errors import InvalidArgument, require_int, require_optional_int
from .geometry import GroupKind, GroupSpec
from .grid import floor_to

__all__ = ["MaskPlan", "mask_plan", "reachable_block_mask"]


class MaskPlan(NamedTuple):
    """The request-independent shape of a sparse group's mask.

    Block ``i`` is kept iff ``period > 0``, ``i >= shift`` and
    ``(i - shift) mod period >= period - run`` (a periodic run), or
    ``keeps_boundaries`` and ``e - run <= i < e`` with
    ``e = floor_A(x) // block_size + shift`` for a reachable boundary ``x``.
    Guarantees ``0 <= run < period`` when ``period > 0``.
    """

    period: int
    run: int
    shift: int
    block_size: int
    alignment_tokens: int
    keeps_boundaries: bool


def mask_plan(
    alignment_tokens: int, spec: GroupSpec, use_eagle: bool, retention_interval: int | None
) -> MaskPlan | None:
    """The :class:`MaskPlan` of a group, or ``None`` when it caches every block.

    Arguments are those of :func:`reachable_block_mask` and are validated the
    same way.
    """
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
    if spec.kind is GroupKind.FULL:
        return None
    if spec.kind is GroupKind.MAMBA:
        if interval is None or interval == block:
            return None  # dense, or every block ends a segment
        return MaskPlan(interval // block, 1, 0, block, alignment_tokens, True)
    if alignment_tokens % block:
        # A hit may land mid-block; a block-granular mask cannot say which
        # tail it needs, so keep everything rather than drop a reachable block.
        return None
    need = spec.blocks_for_hit(use_eagle)
    segment = alignment_tokens if interval is None else interval
    period = segment // block
    if segment and need >= period:
        return None  # the periodic tails already cover every block
    return MaskPlan(
        period, need, 1 if use_eagle else 0, block, alignment_tokens, interval is not None
    )


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
    ``start_block + k``. Guarantees (docs/domain.md, decision 3):

    * SWA (``need = cdiv(W-1, B) + E``, ``shift = E``, ``p = seg / B`` with
      ``seg = A`` if ``R is None``, ``R`` if ``R > 0``): block ``i`` is marked
      iff ``i >= shift`` and ``(i - shift) mod p >= p - need`` (periodic
      tails), or, when ``R is not None``, ``i`` lies in
      ``[e - need, e)`` with ``e = floor_A(x) / B + shift`` for a boundary ``x``.
    * Mamba: with ``R > 0`` block ``i`` is marked iff ``(i + 1) mod (R / B) == 0``
      (``None`` when ``R == B``); block ``floor_A(x) // B - 1`` is marked for
      every boundary ``x``.

    Raises :class:`InvalidArgument` for negative or reversed block ranges, a
    non-positive alignment, a retention interval that is negative or not a
    multiple of both ``A`` and the group's block size, or a negative boundary.
    """
    require_int("start_block", start_block, 0)
    require_int("end_block", end_block, start_block, "start_block")
    plan = mask_plan(alignment_tokens, spec, use_eagle, retention_interval)
    boundaries = tuple(reachable_boundaries)
    for index, boundary in enumerate(boundaries):
        require_int(f"reachable_boundaries[{index}]", boundary, 0)
    if plan is None:
        return None
    period, run, shift, block, alignment, keeps_boundaries = plan
    if period:
        mask = _periodic_runs(start_block, end_block, period, run, shift)
    else:
        mask = [False] * (end_block - start_block)
    if keeps_boundaries:
        for boundary in boundaries:
            run_end = floor_to(boundary, alignment) // block + shift
            lo = max(start_block, run_end - run)
            hi = min(end_block, run_end)
            if lo < hi:
                mask[lo - start_block : hi - start_block] = [True] * (hi - lo)
    return mask


def _periodic_runs(start: int, end: int, period: int, run: int, shift: int) -> list[bool]:
    """Mark blocks ``[k*period + shift - run, k*period + shift)``, all ``k >= 1``, in range.

    ``0 < run < period``. Short ranges (fewer blocks than a period) assign
    each intersecting run as a slice; longer ones tile a one-period template,
    so the cost never depends on how large the period is.
    """
    length = end - start
    if period > length:
        mask = [False] * length
        k = max((start - shift) // period + 1, 1)
        while (run_end := k * period + shift) - run < end:
            lo = max(start, run_end - run)
            hi = min(end, run_end)
            mask[lo - start : hi - start] = [True] * (hi - lo)
            k += 1
        return mask
    # Template indexed by (i - shift) mod period; tile it and cut at the phase.
    template = [False] * (period - run) + [True] * run
    phase = (start - shift) % period
    mask = (template * (length // period + 2))[phase : phase + length]
    if start < shift:
        mask[0] = False  # block 0 precedes the first run (k = 0 is no promise)
    return mask
