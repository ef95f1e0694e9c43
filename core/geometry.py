"""Cache geometry: the groups of a hybrid model and the grids they imply.

Why value types: every decision is a pure function of a handful of integers,
and the classic bug is passing the wrong group's block size (vLLM #54076). A
frozen ``GroupSpec`` names the kind and sizes of one KV-cache group, and a
frozen ``HybridGeometry`` derives the two grids that everyone else must agree
on — the scheduler block ``L`` (lcm of all block sizes) and the hit alignment
``A`` (``L``, or the hash unit ``H`` when partial hits are on) — exactly once.
Construction validates everything, so a geometry that exists is a geometry the
decisions can trust. Rejected: loose dicts/kwargs (no single place to
validate) and mutable config objects (a decision could see two geometries).
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable

import attrs

from .errors import InvalidArgument, require_int
from .grid import cdiv, lcm

__all__ = ["GroupKind", "GroupSpec", "HybridGeometry", "sliding_window_need"]


class GroupKind(enum.Enum):
    """What a KV-cache group's layers need to resume at a position."""

    FULL = "full"
    SLIDING_WINDOW = "sliding_window"
    MAMBA = "mamba"


def _positive_int(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if type(value) is not int or value < 1:
        raise InvalidArgument(attribute.name, value, "must be an int >= 1")


def _window(instance: GroupSpec, attribute: attrs.Attribute[int | None], value: object) -> None:
    if instance.kind is GroupKind.SLIDING_WINDOW:
        if type(value) is not int or value < 1:
            raise InvalidArgument(attribute.name, value, "a sliding window must be an int >= 1")
    elif value is not None:
        raise InvalidArgument(
            attribute.name, value, f"only sliding-window groups have a window, not {instance.kind}"
        )


def _kind(instance: object, attribute: attrs.Attribute[GroupKind], value: object) -> None:
    if not isinstance(value, GroupKind):
        raise InvalidArgument(attribute.name, value, "must be a GroupKind")


def _flag(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if type(value) is not bool:
        raise InvalidArgument(attribute.name, value, "must be a bool")


@attrs.frozen(cache_hash=True)
class GroupSpec:
    """One KV-cache group: its kind, block size ``B_g``, (SWA only) window ``W``
    and whether it is an EAGLE group.

    Build with :meth:`full`, :meth:`sliding_window` or :meth:`mamba`.
    Guarantees: ``block_size >= 1``; ``window >= 1`` exactly for sliding-window
    groups and ``None`` otherwise; ``eagle_group`` a bool. Raises
    :class:`InvalidArgument` otherwise.

    ``eagle_group``: whether this group's lookup takes the EAGLE drop when
    the geometry has EAGLE on (the draft model's groups, vLLM's
    ``is_eagle_group``). A group that is not one holds only the target
    model's layers, which need nothing past a hit: its lookup matches up to
    the hit and stops there, and a sliding window of it keeps no peek block.
    Default ``True``: every group drops, which is what EAGLE meant before
    groups carried the flag (and vLLM's choice when no group is marked).
    Meaningless for Mamba, which never drops.

    Its hash is cached on the instance: an engine may look up its group's
    :class:`GroupMask` by the spec on every call, and attrs' hash of four
    fields is Python code. A pickle carries no cached hash (a
    process with other string hashes computes its own).
    """

    kind: GroupKind = attrs.field(validator=_kind)
    block_size: int = attrs.field(validator=_positive_int)
    window: int | None = attrs.field(default=None, validator=_window)
    eagle_group: bool = attrs.field(default=True, kw_only=True, validator=_flag)

    @classmethod
    def full(cls, block_size: int, *, eagle_group: bool = True) -> GroupSpec:
        """A full-attention group: any cached prefix is reusable."""
        return cls(GroupKind.FULL, block_size, eagle_group=eagle_group)

    @classmethod
    def sliding_window(cls, block_size: int, window: int, *, eagle_group: bool = True) -> GroupSpec:
        """A sliding-window group: a hit at ``a`` needs tokens ``[a - W + 1, a)``."""
        return cls(GroupKind.SLIDING_WINDOW, block_size, window, eagle_group=eagle_group)

    @classmethod
    def mamba(cls, block_size: int, *, eagle_group: bool = True) -> GroupSpec:
        """A Mamba (state-space) group: a hit at ``a`` needs the state after exactly ``a``."""
        return cls(GroupKind.MAMBA, block_size, eagle_group=eagle_group)

    def eagle_lookup(self, use_eagle: bool) -> bool:
        """Whether this group's lookup matches past a hit and drops: EAGLE is on
        (``use_eagle``) and this is an EAGLE group. Raises
        :class:`InvalidArgument` when ``use_eagle`` is not a bool."""
        if type(use_eagle) is not bool:
            raise InvalidArgument("use_eagle", use_eagle, "must be a bool")
        return use_eagle and self.eagle_group

    def blocks_for_hit(self, use_eagle: bool) -> int:
        """:func:`sliding_window_need` of this group under ``use_eagle`` (with the
        peek block only for an EAGLE group). Only defined for SWA groups."""
        if self.window is None:
            raise InvalidArgument(
                "spec", self, "blocks_for_hit is defined for sliding-window groups"
            )
        return sliding_window_need(self.window, self.block_size, self.eagle_lookup(use_eagle))

    def first_window_block(self, position: int) -> int:
        """The first block the next token's window still reads once ``position``
        tokens are computed: the window is ``[position - W + 1, position)``, so
        blocks below ``floor((position - W + 1) / B)`` (0 at the start) are out of it.
        Only defined for SWA groups; raises :class:`InvalidArgument` otherwise or
        on a negative ``position``."""
        if self.window is None:
            raise InvalidArgument(
                "spec", self, "first_window_block is defined for sliding-window groups"
            )
        start = require_int("position", position, 0) - self.window + 1
        return max(start, 0) // self.block_size

    def eagle_drop_tokens(self, alignment_tokens: int) -> int:
        """Tokens an EAGLE lookup of this group matches past a hit and drops.

        Full attention drops one alignment unit (``min(A, B)``), sliding window
        one block, Mamba nothing (draft heads have no Mamba layers), a group
        that is not an EAGLE group nothing.
        """
        if not self.eagle_group:
            return 0
        if self.kind is GroupKind.FULL:
            return min(alignment_tokens, self.block_size)
        if self.kind is GroupKind.SLIDING_WINDOW:
            return self.block_size
        return 0


def sliding_window_need(window: int, block_size: int, use_eagle: bool) -> int:
    """``need``: contiguous blocks a sliding-window hit needs at a grid point.

    Resuming at ``a`` (a block boundary) the next token's window sees tokens
    ``[a - W + 1, a)``: ``cdiv(W - 1, B)`` blocks. Under EAGLE the lookup also
    matches the block just past ``a`` and drops it, one more. The finder
    searches for runs this long and the mask keeps runs this long, so both
    take it from here. Raises :class:`InvalidArgument` when ``window < 1``,
    ``block_size < 1`` or ``use_eagle`` is not a bool.
    """
    require_int("window", window, 1)
    require_int("block_size", block_size, 1)
    if type(use_eagle) is not bool:
        raise InvalidArgument("use_eagle", use_eagle, "must be a bool")
    return cdiv(window - 1, block_size) + (1 if use_eagle else 0)


def _to_groups(value: Iterable[GroupSpec]) -> tuple[GroupSpec, ...]:
    return tuple(value)


def _groups(
    instance: object, attribute: attrs.Attribute[tuple[GroupSpec, ...]], value: tuple[object, ...]
) -> None:
    if not value:
        raise InvalidArgument(attribute.name, value, "a geometry needs at least one group")
    for index, group in enumerate(value):
        if not isinstance(group, GroupSpec):
            raise InvalidArgument(f"{attribute.name}[{index}]", group, "must be a GroupSpec")


def _hash_block_size(
    instance: HybridGeometry, attribute: attrs.Attribute[int], value: object
) -> None:
    if type(value) is not int or value < 1:
        raise InvalidArgument(attribute.name, value, "must be an int >= 1")
    for index, group in enumerate(instance.groups):
        if group.block_size % value:
            raise InvalidArgument(
                attribute.name,
                value,
                f"the hash unit must divide every block size; groups[{index}] has "
                f"block_size={group.block_size}",
            )


def _use_eagle(instance: HybridGeometry, attribute: attrs.Attribute[bool], value: object) -> None:
    _flag(instance, attribute, value)
    if value and not any(group.eagle_group for group in instance.groups):
        raise InvalidArgument(
            attribute.name,
            value,
            "EAGLE needs at least one EAGLE group (GroupSpec.eagle_group); every group "
            "is marked as holding only the target model's layers",
        )


def _retention_interval(
    instance: HybridGeometry, attribute: attrs.Attribute[int | None], value: object
) -> None:
    if value is None:
        return
    block = instance.scheduler_block_size
    if type(value) is not int or value < 0 or value % block:
        raise InvalidArgument(
            attribute.name,
            value,
            f"must be None (dense), 0 (semantic checkpoints only) or a positive multiple "
            f"of the scheduler block L={block}",
        )


@attrs.frozen
class HybridGeometry:
    """The groups of a hybrid model plus the request-independent cache settings.

    Attributes:
        groups: the KV-cache groups (at least one).
        hash_block_size: ``H``, the hash-chain unit; divides every block size.
        partial_hits: sub-block (hash-unit) hits on/off.
        use_eagle: EAGLE/MTP speculative decoding on/off; when on, the
            groups marked :attr:`GroupSpec.eagle_group` (at least one) drop.
        retention_interval: ``R``: ``None`` dense, ``0`` semantic checkpoints
            only, or a positive multiple of ``L``.

    Derived (computed once, cached on the instance: the engine asks for them
    on every step): :attr:`scheduler_block_size` (``L``),
    :attr:`alignment_tokens` (``A``), :attr:`hit_grid_tokens`,
    :attr:`mamba_block_size` (``b``), :attr:`sub_block_full_attention_sizes`
    and :attr:`eagle_drop_tokens` (``d``). Construction raises
    :class:`InvalidArgument` naming the attribute.
    """

    groups: tuple[GroupSpec, ...] = attrs.field(converter=_to_groups, validator=_groups)
    hash_block_size: int = attrs.field(validator=_hash_block_size)
    partial_hits: bool = attrs.field(default=False, validator=_flag)
    use_eagle: bool = attrs.field(default=False, validator=_use_eagle)
    retention_interval: int | None = attrs.field(default=None, validator=_retention_interval)

    @functools.cached_property
    def scheduler_block_size(self) -> int:
        """``L``: lcm of every group's block size; chunk and hit grids live on it."""
        return lcm(*(group.block_size for group in self.groups))

    @functools.cached_property
    def mamba_block_size(self) -> int:
        """``b``: the Mamba block, the grid vLLM's align-mode split floors chunks to.

        The first Mamba group's block: in align mode vLLM gives every Mamba
        group ``cache_config.block_size`` and its split works on that, while
        page-size unification may widen attention blocks, so ``L`` can be a
        multiple of it. ``L`` without a Mamba group (no split runs then).
        """
        for group in self.groups:
            if group.kind is GroupKind.MAMBA:
                return group.block_size
        return self.scheduler_block_size

    @functools.cached_property
    def alignment_tokens(self) -> int:
        """``A``: hits land on multiples of it (``H`` with partial hits, else ``L``)."""
        return self.hash_block_size if self.partial_hits else self.scheduler_block_size

    @functools.cached_property
    def hit_grid_tokens(self) -> int:
        """The grid every reconciled hit lands on: lcm of ``A`` and each sparse group's block.

        A sliding-window or Mamba group serves only lengths on its own block
        grid, so a hit every group serves is a multiple of all of them. Equals
        ``A`` without partial hits (``A = L`` is a multiple of every block).
        """
        sparse = (g.block_size for g in self.groups if g.kind is not GroupKind.FULL)
        return lcm(self.alignment_tokens, *sparse)

    @functools.cached_property
    def sub_block_full_attention_sizes(self) -> tuple[int, ...]:
        """Block sizes of the full-attention groups whose hits may end inside a block.

        With partial hits ``A = H`` may be finer than a full-attention block;
        such a group matches hash units, but only inside blocks already cached.
        Empty without partial hits.
        """
        alignment = self.alignment_tokens
        return tuple(
            g.block_size
            for g in self.groups
            if g.kind is GroupKind.FULL and g.block_size > alignment
        )

    @functools.cached_property
    def eagle_drop_tokens(self) -> int:
        """``d``: the most tokens any EAGLE group's lookup matches past a hit (0 without EAGLE)."""
        if not self.use_eagle:
            return 0
        return max(group.eagle_drop_tokens(self.alignment_tokens) for group in self.groups)
