"""Decision 3: which newly full blocks a group hashes (``reachable_block_mask``).

An unmarked block is never hashed, so it never serves a hit: the mask *is*
the retention policy of a sparse group. Full attention keeps everything; a
sliding window keeps, for each promised position, the ``need`` blocks ending
there (and the EAGLE peek block past it); a Mamba group keeps the one state
block ending there. Promised positions are the periodic segment ends (every
``A`` when dense, every ``R > 0``) and the reachable boundaries floored to
``A``. Both sparse kinds reduce to a request-independent :class:`MaskPlan`
(runs of ``run`` blocks ending at ``k * period + shift``), which the batched
kernels take from here. :class:`GroupMask` binds the group once and checks
per call only the range and the boundaries; the free function is a fresh
binding. Why slices, and how an interval off the grid is kept:
docs/design/bound-calls.md, docs/design/off-grid-intervals.md.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import attrs

from .errors import InvalidArgument, int_error, require_int, require_optional_int
from .geometry import GroupKind, GroupSpec
from .grid import cdiv

__all__ = ["GroupMask", "MaskPlan", "OffGridInterval", "mask_plan", "reachable_block_mask"]

# Blocks a binding pre-tiles its periodic runs for: a per-step mask is a
# handful of blocks, a whole prompt a few thousand (64 KiB per bound group).
_TILED_BLOCKS = 8192

# The most blocks one mask list holds: CPython allocates a list's 8-byte slots
# in one block of at most sys.maxsize bytes. A longer range is refused by name
# rather than overflowing an index inside the tiling; a dense group's answer
# (None) holds any range.
_MOST_BLOCKS = sys.maxsize // 8


class OffGridInterval(enum.Enum):
    """Where a group keeps its segment checkpoints when ``R`` is off its grid.

    Off the grid means ``R`` is not a multiple of both the alignment ``A``
    and the group's block: a segment boundary ``k * R`` is then no position a
    lookup can resume at. Both forms agree on the grid.
    """

    #: Junction's: each segment boundary ``k * R`` promises the deepest
    #: position a lookup can land at in it, ``floor_A(k * R)``, exactly as a
    #: reachable boundary does (docs/domain.md, decision 3).
    SEGMENT_ENDS = "segment-ends"
    #: vLLM 0.33.0's: ``R`` floored to the group's block, a run every
    #: ``R // B`` blocks (dense when that is not wider than a hit needs, or
    #: for Mamba below two blocks). Its runs drift off the segment ends and
    #: off ``A`` (docs/findings.md, "Segment runs off the alignment").
    FLOORED_INTERVAL = "floored-interval"


class MaskPlan(NamedTuple):
    """The request-independent shape of a sparse group's mask.

    Block ``i`` is kept iff ``period > 0``, ``i >= shift`` and
    ``(i - shift) mod period >= period - run`` (a periodic run), or
    ``segment > 0`` and ``e - run <= i < e`` with
    ``e = floor_A(k * segment) // block_size + shift`` for some ``k >= 1``
    with ``floor_A(k * segment) > 0`` (segment ends off the grid), or
    ``keeps_boundaries`` and ``e - run <= i < e`` with
    ``e = floor_A(x) // block_size + shift`` for a reachable boundary ``x``,
    or ``keeps_final`` and ``e - run <= i < e`` for the call's
    ``final_segment_end_block`` ``e``.
    Guarantees ``0 <= run < period`` when ``period > 0``, ``segment == 0``
    when ``period > 0``, and ``shift == 0`` when ``keeps_final``.
    """

    period: int
    run: int
    shift: int
    block_size: int
    alignment_tokens: int
    keeps_boundaries: bool
    segment: int = 0
    keeps_final: bool = False


def _alignment(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    require_int(attribute.name, value, 1)


def _spec(instance: object, attribute: attrs.Attribute[GroupSpec], value: object) -> None:
    if not isinstance(value, GroupSpec):
        raise InvalidArgument(attribute.name, value, "must be a GroupSpec")


def _flag(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if type(value) is not bool:
        raise InvalidArgument(attribute.name, value, "must be a bool")


def _interval(instance: GroupMask, attribute: attrs.Attribute[int | None], value: object) -> None:
    require_optional_int(attribute.name, value, 0)


def _form(instance: GroupMask, attribute: attrs.Attribute[OffGridInterval], value: object) -> None:
    if not isinstance(value, OffGridInterval):
        raise InvalidArgument(attribute.name, value, "must be an OffGridInterval")
    interval, alignment = instance.retention_interval, instance.alignment_tokens
    block = instance.spec.block_size
    if (
        value is OffGridInterval.SEGMENT_ENDS
        and instance.spec.kind is GroupKind.MAMBA
        and interval
        and (interval % alignment or interval % block)
        and alignment % block
        and block % alignment
    ):
        # Which state blocks the floored segment ends reach then has no closed
        # form; no engine has it (A is L, a multiple of B, or H, a divisor).
        raise InvalidArgument(
            "retention_interval",
            interval,
            f"off the grid of a Mamba group needs alignment_tokens={alignment} and "
            f"block_size={block} to divide one another",
        )


@attrs.frozen
class GroupMask:
    """Decision 3 bound to one group of one engine: what :func:`reachable_block_mask`
    takes that does not change from call to call.

    Attributes (validated at construction, :class:`InvalidArgument` naming
    the attribute): ``alignment_tokens`` (``A >= 1``), ``spec`` (a
    :class:`GroupSpec`), ``use_eagle`` (a bool), ``retention_interval``
    (``None`` or ``>= 0``; off the group's grid, not a multiple of both ``A``
    and its block, a Mamba group needs ``A`` and its block to divide one
    another), ``off_grid_interval`` (an :class:`OffGridInterval`: where
    the segment checkpoints of an off-grid ``R`` go). Derived: :attr:`plan`,
    the group's :class:`MaskPlan` (``None`` when it caches every block).
    """

    alignment_tokens: int = attrs.field(validator=_alignment)
    spec: GroupSpec = attrs.field(validator=_spec)
    use_eagle: bool = attrs.field(validator=_flag)
    retention_interval: int | None = attrs.field(default=None, validator=_interval)
    off_grid_interval: OffGridInterval = attrs.field(
        default=OffGridInterval.SEGMENT_ENDS, validator=_form
    )
    plan: MaskPlan | None = attrs.field(init=False, eq=False, repr=False)

    _tiles: list[bool] = attrs.field(init=False, eq=False, repr=False)
    # A plan of boundaries only whose runs are one block (a Mamba group under
    # R = 0, or a window one block deep): ``(A, B, shift - 1)``, else None.
    # Its masks are the hot path of pinned retention, so they skip the
    # general plan's unpacking and branches (vLLM's own mask has none).
    _single: tuple[int, int, int] | None = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # After the validators: the plan is derived once, from valid fields,
        # and so are the periodic runs of the first blocks (one slice per call).
        plan = _plan(
            self.alignment_tokens,
            self.spec,
            self.use_eagle,
            self.retention_interval,
            self.off_grid_interval,
        )
        object.__setattr__(self, "plan", plan)
        tiles: list[bool] = []
        if plan is not None and 0 < plan.period <= _TILED_BLOCKS:
            template = [False] * (plan.period - plan.run) + [True] * plan.run
            tiles = template * (_TILED_BLOCKS // plan.period + 2)
        object.__setattr__(self, "_tiles", tiles)
        single = None
        if (
            plan is not None
            and plan.run == 1
            and plan.keeps_boundaries
            and not (plan.period or plan.segment or plan.keeps_final)
        ):
            single = (plan.alignment_tokens, plan.block_size, plan.shift - 1)
        object.__setattr__(self, "_single", single)

    def reachable_block_mask(
        self,
        start_block: int,
        end_block: int,
        reachable_boundaries: Sequence[int] = (),
        final_segment_end_block: int | None = None,
    ) -> list[bool] | None:
        """:func:`reachable_block_mask` for this group: blocks ``[start_block,
        end_block)``, the request's boundaries in tokens, the end of its final
        segment in blocks. Raises :class:`InvalidArgument` for a negative or
        reversed block range, one too long for a list (``sys.maxsize // 8``
        blocks) where the answer is a list, a negative boundary or a negative
        final end."""
        if (
            type(start_block) is not int
            or type(end_block) is not int
            or not (0 <= start_block <= end_block)
        ):
            raise _range_error(start_block, end_block)
        single = self._single
        if single is not None and final_segment_end_block is None:
            alignment, block, last = single
            length = end_block - start_block
            if length > _MOST_BLOCKS:
                raise _length_error(start_block, end_block)
            mask = [False] * length
            last -= start_block  # the run's one block, relative to start_block
        else:
            if final_segment_end_block is not None and (
                type(final_segment_end_block) is not int or final_segment_end_block < 0
            ):
                raise int_error("final_segment_end_block", final_segment_end_block, 0)
            plan = self.plan
            if plan is None:
                # Inline: a dense group's whole cost is this check.
                for boundary in reachable_boundaries:
                    if type(boundary) is not int or boundary < 0:
                        raise _boundary_error(reachable_boundaries)
                return None
            period, run, shift, block, alignment, keeps_boundaries, segment, keeps_final = plan
            length = end_block - start_block
            if length > _MOST_BLOCKS:
                raise _length_error(start_block, end_block)
            if period:
                # self._tiles is indexed by (i - shift) mod period from its start.
                phase = (start_block - shift) % period
                if phase + length <= len(self._tiles):
                    mask = self._tiles[phase : phase + length]
                else:
                    mask = _periodic_runs(start_block, end_block, period, run, shift)
                if start_block < shift and mask:
                    mask[0] = False  # block 0 precedes the first run (k = 0 is no promise)
            elif segment:
                mask = _segment_end_runs(start_block, end_block, plan)
            else:
                mask = [False] * length
            if keeps_final and final_segment_end_block is not None:
                # The run ending at the final segment's end (shift is 0 here).
                lo = max(final_segment_end_block - run - start_block, 0)
                hi = min(final_segment_end_block - start_block, length)
                if lo < hi:
                    mask[lo:hi] = [True] * (hi - lo)
            if not keeps_boundaries:
                _check_boundaries(reachable_boundaries)
                return mask
            # Each boundary is checked as it is used (one pass: this loop is the
            # whole cost of a boundaries-only mask). Its run ends at block
            # floor_A(x) / B + shift (floor_to inlined), at ``end`` from start_block.
            offset = shift - start_block
            if run != 1:
                for boundary in reachable_boundaries:
                    if type(boundary) is not int or boundary < 0:
                        raise _boundary_error(reachable_boundaries)
                    end = boundary // alignment * alignment // block + offset
                    lo = end - run if end > run else 0
                    hi = end if end < length else length
                    if lo < hi:
                        mask[lo:hi] = [True] * (hi - lo)
                return mask
            last = offset - 1  # the run's one block, relative to start_block
        # A Mamba state, or a window one block deep: one index per boundary.
        for boundary in reachable_boundaries:
            if type(boundary) is not int:
                raise _boundary_error(reachable_boundaries)
            index = boundary // alignment * alignment // block + last
            if 0 <= index < length:
                mask[index] = True
            elif boundary < 0:  # never lands in range: checked off the hot branch
                raise _boundary_error(reachable_boundaries)
        return mask


def _check_boundaries(boundaries: Sequence[object]) -> None:
    for boundary in boundaries:
        if type(boundary) is not int or boundary < 0:
            raise _boundary_error(boundaries)


def _range_error(start_block: object, end_block: object) -> InvalidArgument:
    # Called once the inline check failed: start is bad, else end is.
    if type(start_block) is not int or start_block < 0:
        return int_error("start_block", start_block, 0)
    return int_error("end_block", end_block, start_block, "start_block")


def _length_error(start_block: int, end_block: int) -> InvalidArgument:
    return InvalidArgument(
        "end_block",
        end_block,
        f"must be <= start_block ({start_block}) + {_MOST_BLOCKS}: no list holds a longer mask",
    )


def _boundary_error(boundaries: Sequence[object]) -> InvalidArgument:
    # Called once the inline check failed: name the first bad boundary.
    index, boundary = next(
        (index, value)
        for index, value in enumerate(boundaries)
        if type(value) is not int or value < 0
    )
    return int_error(f"reachable_boundaries[{index}]", boundary, 0)


def mask_plan(
    alignment_tokens: int,
    spec: GroupSpec,
    use_eagle: bool,
    retention_interval: int | None,
    off_grid_interval: OffGridInterval = OffGridInterval.SEGMENT_ENDS,
) -> MaskPlan | None:
    """The :class:`MaskPlan` of a group, or ``None`` when it caches every block.

    Arguments are those of :func:`reachable_block_mask` and are validated the
    same way (by :class:`GroupMask`).
    """
    return GroupMask(alignment_tokens, spec, use_eagle, retention_interval, off_grid_interval).plan


def _plan(
    alignment: int,
    spec: GroupSpec,
    use_eagle: bool,
    interval: int | None,
    form: OffGridInterval,
) -> MaskPlan | None:
    # The plan of valid arguments (GroupMask validated them). Segment ends on
    # the grid are periodic in blocks; off it (only ``interval`` can be), the
    # SEGMENT_ENDS form keeps the runs at floor_A(k * R), vLLM's a period of
    # R // B blocks.
    block = spec.block_size
    if spec.kind is GroupKind.FULL:
        return None
    on_grid = interval is None or not (interval % block or interval % alignment)
    floored = form is OffGridInterval.FLOORED_INTERVAL
    if spec.kind is GroupKind.MAMBA:
        # Never a final-segment run: a state exists only where a chunk ended.
        if interval is None:
            return None  # dense
        if on_grid or floored:
            if interval and interval // block <= 1:
                return None  # every block ends a segment (or vLLM's dense fallback)
            return MaskPlan(interval // block, 1, 0, block, alignment, True)
        if block % alignment == 0 and interval <= block:
            return None  # every block's end range [iB, (i+1)B) holds a k * R
        return MaskPlan(0, 1, 0, block, alignment, True, interval)
    if alignment % block:
        # A hit may land mid-block; a block-granular mask cannot say which
        # tail it needs, so keep everything rather than drop a reachable block.
        return None
    need = spec.blocks_for_hit(use_eagle)
    peek = spec.eagle_lookup(use_eagle)  # only an EAGLE group keeps a peek block
    shift = 1 if peek else 0
    final = not peek and interval != 0  # no final run without segments or past a peek
    segment = alignment if interval is None else interval
    if on_grid or floored:
        period = segment // block
        if segment and need >= period:
            return None  # the periodic tails already cover every block
        return MaskPlan(period, need, shift, block, alignment, interval is not None, 0, final)
    # Consecutive floored segment ends lie floor_A(R) or ceil_A(R) apart (the
    # wider gap occurs): runs of ``need`` blocks close every gap iff the wider does.
    if need * block >= cdiv(segment, alignment) * alignment:
        return None
    return MaskPlan(0, need, shift, block, alignment, True, segment, final)


def reachable_block_mask(
    start_block: int,
    end_block: int,
    alignment_tokens: int,
    spec: GroupSpec,
    use_eagle: bool,
    retention_interval: int | None = None,
    reachable_boundaries: Iterable[int] = (),
    *,
    final_segment_end_block: int | None = None,
    off_grid_interval: OffGridInterval = OffGridInterval.SEGMENT_ENDS,
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
    * ``R`` off the group's grid (not a multiple of both ``A`` and ``B``):
      the periodic runs are those of the segment ends ``floor_A(k * R) > 0``,
      ``k >= 1``, as if each were a boundary (``None`` when they cover every
      block); ``off_grid_interval=FLOORED_INTERVAL`` takes vLLM 0.33.0's form
      instead (:class:`OffGridInterval`).
    * ``final_segment_end_block`` ``e`` (the end of the request's last,
      partial segment, in blocks: a lookup of what is cached may land at
      ``e * B``): a sliding window without EAGLE, under ``R != 0``, also
      keeps ``[e - need, e)``. Nothing else changes: under EAGLE a hit at
      ``e * B`` would need the peek block past the end, ``R = 0`` has no
      segments, and a Mamba state exists only where a chunk ended.

    The call of a :class:`GroupMask` bound to the group (an engine binds it
    once and calls :meth:`GroupMask.reachable_block_mask`). Raises
    :class:`InvalidArgument` for negative or reversed block ranges (or one
    longer than a list holds, ``sys.maxsize // 8`` blocks, where the answer is
    a list), a non-positive alignment, a negative retention interval (or an off-grid
    one of a Mamba group whose ``A`` and ``B`` do not divide one another), a
    negative boundary or a negative ``final_segment_end_block``.
    """
    return GroupMask(
        alignment_tokens, spec, use_eagle, retention_interval, off_grid_interval
    ).reachable_block_mask(
        start_block, end_block, tuple(reachable_boundaries), final_segment_end_block
    )


def _segment_end_runs(start: int, end: int, plan: MaskPlan) -> list[bool]:
    """The runs ending at ``floor_A(k * segment) // B + shift`` that meet ``[start, end)``.

    From the first run ending past ``start``, each step jumps to the first
    ``k`` whose run ends past the last one's, so the cost is the number of
    distinct runs in range, whatever the ratio of ``R`` to ``B``.
    """
    _, run, shift, block, alignment, _, segment, _ = plan
    mask = [False] * (end - start)
    # A run ends past block ``i`` iff floor_A(k R) >= (i - shift + 1) B, and
    # only ends of segment ends > 0 count (floor_A(k R) >= A).
    floor_position = max(start - shift + 1, 0) * block
    while True:
        target = max(cdiv(floor_position, alignment) * alignment, alignment)
        position = cdiv(target, segment) * segment // alignment * alignment
        run_end = position // block + shift
        if run_end - run >= end:
            return mask
        lo = max(run_end - run, start)
        hi = min(run_end, end)
        mask[lo - start : hi - start] = [True] * (hi - lo)
        floor_position = (run_end - shift + 1) * block


def _periodic_runs(start: int, end: int, period: int, run: int, shift: int) -> list[bool]:
    """Mark blocks ``i >= start`` with ``(i - shift) mod period >= period - run``, in range.

    ``0 < run < period``; the caller clears block 0 when it precedes the first
    run. Ranges shorter than a period assign each intersecting run as a slice;
    longer ones tile a one-period template, so the cost never depends on how
    large the period is. (Bindings slice a pre-tiled prefix instead for the
    first ``_TILED_BLOCKS`` blocks.)
    """
    length = end - start
    if period > length:
        mask = [False] * length
        k = (start - shift) // period + 1
        while (run_end := k * period + shift) - run < end:
            lo = max(start, run_end - run)
            hi = min(end, run_end)
            mask[lo - start : hi - start] = [True] * (hi - lo)
            k += 1
        return mask
    # Template indexed by (i - shift) mod period; tile it and cut at the phase.
    template = [False] * (period - run) + [True] * run
    phase = (start - shift) % period
    return (template * (length // period + 2))[phase : phase + length]
