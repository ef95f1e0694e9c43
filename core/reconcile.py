"""Decision 1: hit reconciliation and the shared-prefix boundary (junction).

A request may reuse ``[0, h)`` only if every group can serve ``h``.
Reconciliation is the fixed point that starts at ``M = N - 1`` and lets each
group's finder (``core.finders``) accept the candidate or shorten it; since
each finder returns its *largest* servable length, the fixed point is the
largest length every group serves. Full attention is asked first and once
(its servable set is downward closed): its answer ``ℓ`` becomes the junction
when ``ℓ > h``. Under EAGLE a group proves a candidate by matching past it
and dropping ``d`` tokens, once per candidate; vLLM 0.33's "verified" set is
the ``vllm-0.33`` policy's, not this (docs/findings.md, finding 8).
:class:`HitReconciler` binds the geometry once (docs/design/bound-calls.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .errors import InvalidArgument, require_int
from .finders import Finder
from .geometry import GroupKind, HybridGeometry

__all__ = ["HitReconciler", "HitReconciliation", "reconcile_hits", "shared_prefix_boundary"]


def shared_prefix_boundary(hit_length: int, longest_hit_length: int) -> int:
    """The junction ``J``: ``longest_hit_length`` if it exceeds the reconciled hit, else 0.

    Raises :class:`InvalidArgument` when either length is negative or the
    reconciled hit exceeds the longest single-group hit (``h <= ℓ`` always).
    """
    require_int("hit_length", hit_length, 0)
    require_int("longest_hit_length", longest_hit_length, hit_length, "hit_length")
    return _junction(hit_length, longest_hit_length)


def _junction(hit_length: int, longest_hit_length: int) -> int:
    # The rule, for reconciliation, whose lengths hold by construction.
    return longest_hit_length if longest_hit_length > hit_length else 0


@attrs.frozen
class HitReconciliation:
    """The outcome of reconciliation for one admission.

    Guarantees ``0 <= hit_length <= longest_hit_length``, and
    ``shared_prefix_boundary`` is ``longest_hit_length`` when the two differ
    (the groups disagree) and 0 when they are equal.
    """

    hit_length: int
    longest_hit_length: int
    shared_prefix_boundary: int


def _geometry(instance: object, attribute: attrs.Attribute[HybridGeometry], value: object) -> None:
    if not isinstance(value, HybridGeometry):
        raise InvalidArgument(attribute.name, value, "must be a HybridGeometry")


@attrs.frozen
class HitReconciler:
    """Decision 1 bound to one engine's :class:`HybridGeometry` (validated at
    construction: :class:`InvalidArgument` naming ``geometry``).

    Derived once: the order groups are asked in (full attention first) and
    each group's EAGLE drop (0 without EAGLE, for Mamba and for a group that
    is not an EAGLE group: those are asked about the candidate itself).
    """

    geometry: HybridGeometry = attrs.field(validator=_geometry)
    _order: tuple[int, ...] = attrs.field(init=False, eq=False, repr=False)
    _drops: tuple[int, ...] = attrs.field(init=False, eq=False, repr=False)
    _kinds: tuple[GroupKind, ...] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        groups = self.geometry.groups
        order = sorted(range(len(groups)), key=lambda k: groups[k].kind is not GroupKind.FULL)
        alignment, eagle = self.geometry.alignment_tokens, self.geometry.use_eagle
        drops = (group.eagle_drop_tokens(alignment) if eagle else 0 for group in groups)
        object.__setattr__(self, "_order", tuple(order))
        object.__setattr__(self, "_drops", tuple(drops))
        object.__setattr__(self, "_kinds", tuple(group.kind for group in groups))

    def reconcile(
        self, finders: Sequence[Finder], max_hit_length: int, lookup_limit: int | None = None
    ) -> HitReconciliation:
        """:func:`reconcile_hits` for this geometry."""
        hit, longest = self.hit_lengths(finders, max_hit_length, lookup_limit)
        return HitReconciliation(hit, longest, _junction(hit, longest))

    def hit_lengths(
        self, finders: Sequence[Finder], max_hit_length: int, lookup_limit: int | None = None
    ) -> tuple[int, int]:
        """``(h, ℓ)`` of :meth:`reconcile`, without the record: for an adapter
        that answers in its engine's own terms on every admission (the
        junction is :func:`shared_prefix_boundary` of the two). Raises as
        :meth:`reconcile` does."""
        groups = self.geometry.groups
        if len(finders) != len(groups):
            raise InvalidArgument(
                "finders", finders, f"need one finder per group ({len(groups)}), got {len(finders)}"
            )
        # The bounds tested inline; the named checks raise.
        if type(max_hit_length) is not int or max_hit_length < 0:
            require_int("max_hit_length", max_hit_length, 0)
        if lookup_limit is None:
            limit = max_hit_length
        elif type(lookup_limit) is not int or lookup_limit < 0:
            limit = require_int("lookup_limit", lookup_limit, 0)
        else:
            limit = lookup_limit
        alignment = self.geometry.alignment_tokens
        drops, kinds = self._drops, self._kinds
        accepted: list[int | None] = [None] * len(groups)
        longest = 0
        hit = max_hit_length
        while True:
            candidate = hit
            for index in self._order:
                known = accepted[index]
                if known is not None and (known == candidate or kinds[index] is GroupKind.FULL):
                    if known < candidate:
                        candidate = known
                    continue
                drop = drops[index]
                if drop > 0:
                    bound = candidate + drop
                    if bound > limit:
                        bound = limit
                else:
                    bound = candidate
                found = finders[index](bound, drop > 0)
                if type(found) is not int or not 0 <= found <= candidate or found % alignment:
                    raise InvalidArgument(
                        f"finders[{index}]",
                        found,
                        f"a finder asked about candidate {candidate} (bound {bound}) must return "
                        f"an int in [0, {candidate}] that is a multiple of A={alignment}",
                    )
                accepted[index] = found
                candidate = found
                if found > longest:
                    longest = found
            if candidate >= hit:
                break
            hit = candidate
        return hit, longest


def reconcile_hits(
    geometry: HybridGeometry,
    finders: Sequence[Finder],
    max_hit_length: int,
    lookup_limit: int | None = None,
) -> HitReconciliation:
    """Reconcile the groups' hits for a request whose lookup is capped at ``M``.

    ``finders[k]`` is the finder of ``geometry.groups[k]``; ``max_hit_length``
    is ``M = N - 1`` (the last token is always recomputed); ``lookup_limit``
    is how far an EAGLE lookup may match before its drop: the request's
    hashed tokens, as vLLM bounds it (default ``M``, as decision 1 is first stated;
    the drop keeps the hit at or below ``M`` either way). Returns ``h``, the
    largest ``A``-aligned length ``<= M`` that every group serves (EAGLE groups
    with their drop), ``ℓ`` (the first full-attention group's hit, or the first
    group's when there is none) and the junction.

    The call of a :class:`HitReconciler` bound to ``geometry`` (an engine
    binds it once). Raises :class:`InvalidArgument` when ``geometry`` is not a
    :class:`HybridGeometry`, the finders do not match the groups,
    ``M`` is negative, or a finder answers with a length that is not an int,
    is negative, exceeds the candidate it was asked about, or is not a
    multiple of ``A``.
    """
    return HitReconciler(geometry).reconcile(finders, max_hit_length, lookup_limit)
