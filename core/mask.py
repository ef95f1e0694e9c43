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
assignments. The plan is request-independent, and so is everything validated about
the group: :class:`GroupMask` binds the alignment, the group, EAGLE and
``R`` once (validated at construction, the plan computed there) and its
:meth:`GroupMask.reachable_block_mask` checks only the block range and the
boundaries, inline, building an error only once a check failed. The free
:func:`reachable_block_mask` is that bound call on a fresh binding, so there
is one copy of each rule. Rejected: skipping the per-call checks (a bad range
would silently give a wrong mask) and caching bindings inside the free
function (a hidden global). ``MaskPlan`` is a ``NamedTuple``, not an attrs
class, because the kernels unpack it. ``reference.oracle`` restates the
decision block by block.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import attrs

from .errors import InvalidArgument, int_error, require_int, require_optional_int
from .geometry import GroupKind, GroupSpec

__all__ = ["GroupMask", "MaskPlan", "mask_plan", "reachable_block_mask"]

# Blocks a binding pre-tiles its periodic runs for: a per-step mask is a
# handful of blocks, a whole prompt a few thousand (64 KiB per bound group).
_TILED_BLOCKS = 8192


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


def _alignment(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    require_int(attribute.name, value, 1)


def _spec(instance: object, attribute: attrs.Attribute[GroupSpec], value: object) -> None:
    if not isinstance(value, GroupSpec):
        raise InvalidArgument(attribute.name, value, "must be a GroupSpec")


def _flag(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if type(value) is not bool:
        raise InvalidArgument(attribute.name, value, "must be a bool")


def _interval(instance: GroupMask, attribute: attrs.Attribute[int | None], value: object) -> None:
    interval = require_optional_int(attribute.name, value, 0)
    alignment, block = instance.alignment_tokens, instance.spec.block_size
    if interval and (interval % block or interval % alignment):
        raise InvalidArgument(
            attribute.name,
            interval,
            f"must be a multiple of alignment_tokens={alignment} and of the "
            f"group's block_size={block}",
        )


@attrs.frozen
class GroupMask:
    """Decision 3 bound to one group of one engine: what :func:`reachable_block_mask`
    takes that does not change from call to call.

    Attributes (validated at construction, :class:`InvalidArgument` naming
    the attribute): ``alignment_tokens`` (``A >= 1``), ``spec`` (a
    :class:`GroupSpec`), ``use_eagle`` (a bool), ``retention_interval``
    (``None``, or ``>= 0`` and a multiple of both ``A`` and the group's
    block size). Derived: :attr:`plan`, the group's :class:`MaskPlan`
    (``None`` when it caches every block).
    """

    alignment_tokens: int = attrs.field(validator=_alignment)
    spec: GroupSpec = attrs.field(validator=_spec)
    use_eagle: bool = attrs.field(validator=_flag)
    retention_interval: int | None = attrs.field(default=None, validator=_interval)
    plan: MaskPlan | None = attrs.field(init=False, eq=False, repr=False)

    _tiles: list[bool] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # After the validators: the plan is derived once, from valid fields,
        # and so are the periodic runs of the first blocks (one slice per call).
        plan = _plan(self.alignment_tokens, self.spec, self.use_eagle, self.retention_interval)
        object.__setattr__(self, "plan", plan)
        tiles: list[bool] = []
        if plan is not None and 0 < plan.period <= _TILED_BLOCKS:
            template = [False] * (plan.period - plan.run) + [True] * plan.run
            tiles = template * (_TILED_BLOCKS // plan.period + 2)
        object.__setattr__(self, "_tiles", tiles)

    def reachable_block_mask(
        self, start_block: int, end_block: int, reachable_boundaries: Sequence[int] = ()
    ) -> list[bool] | None:
        """:func:`reachable_block_mask` for this group: blocks ``[start_block,
        end_block)``, the request's boundaries in tokens. Raises
        :class:`InvalidArgument` for a negative or reversed block range or a
        negative boundary."""
        if (
            type(start_block) is not int
            or type(end_block) is not int
            or not (0 <= start_block <= end_block)
        ):
            raise _range_error(start_block, end_block)
        plan = self.plan
        if plan is None:
            _check_boundaries(reachable_boundaries)
            return None
        period, run, shift, block, alignment, keeps_boundaries = plan
        length = end_block - start_block
        if period:
            # self._tiles is indexed by (i - shift) mod period from its start.
            phase = (start_block - shift) % period
            if phase + length <= len(self._tiles):
                mask = self._tiles[phase : phase + length]
            else:
                mask = _periodic_runs(start_block, end_block, period, run, shift)
            if start_block < shift and mask:
                mask[0] = False  # block 0 precedes the first run (k = 0 is no promise)
        else:
            mask = [False] * length
        if not keeps_boundaries:
            _check_boundaries(reachable_boundaries)
            return mask
        # Each boundary is checked as it is used (one pass: this loop is the
        # whole cost of a boundaries-only mask). Its run ends at block
        # floor_A(x) / B + shift (floor_to inlined), at ``end`` from start_block.
        offset = shift - start_block
        if run == 1:  # a Mamba state, or a window one block deep: one index
            last = offset - 1  # the run's one block, relative to start_block
            for boundary in reachable_boundaries:
                if type(boundary) is not int:
                    raise _boundary_error(reachable_boundaries)
                index = boundary // alignment * alignment // block + last
                if 0 <= index < length:
                    mask[index] = True
                elif boundary < 0:  # never lands in range: checked off the hot branch
                    raise _boundary_error(reachable_boundaries)
            return mask
        for boundary in reachable_boundaries:
            if type(boundary) is not int or boundary < 0:
                raise _boundary_error(reachable_boundaries)
            end = boundary // alignment * alignment // block + offset
            lo = end - run if end > run else 0
            hi = end if end < length else length
            if lo < hi:
                mask[lo:hi] = [True] * (hi - lo)
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


def _boundary_error(boundaries: Sequence[object]) -> InvalidArgument:
    # Called once the inline check failed: name the first bad boundary.
    index, boundary = next(
        (index, value)
        for index, value in enumerate(boundaries)
        if type(value) is not int or value < 0
    )
    return int_error(f"reachable_boundaries[{index}]", boundary, 0)


def mask_plan(
    alignment_tokens: int, spec: GroupSpec, use_eagle: bool, retention_interval: int | None
) -> MaskPlan | None:
    """The :class:`MaskPlan` of a group, or ``None`` when it caches every block.

    Arguments are those of :func:`reachable_block_mask` and are validated the
    same way (by :class:`GroupMask`).
    """
    return GroupMask(alignment_tokens, spec, use_eagle, retention_interval).plan


def _plan(
    alignment_tokens: int, spec: GroupSpec, use_eagle: bool, interval: int | None
) -> MaskPlan | None:
    # The plan of valid arguments (GroupMask validated them).
    block = spec.block_size
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

    The call of a :class:`GroupMask` bound to the group (an engine binds it
    once and calls :meth:`GroupMask.reachable_block_mask`). Raises
    :class:`InvalidArgument` for negative or reversed block ranges, a
    non-positive alignment, a retention interval that is negative or not a
    multiple of both ``A`` and the group's block size, or a negative boundary.
    """
    return GroupMask(alignment_tokens, spec, use_eagle, retention_interval).reachable_block_mask(
        start_block, end_block, tuple(reachable_boundaries)
    )


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
