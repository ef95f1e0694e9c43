"""vLLM 0.33.0's lookup restated, each departure from first principles a switch.

``core.reconcile_hits`` is the exact lookup (docs/domain.md, "Decision 1").
vLLM's ``HybridKVCacheCoordinator.find_longest_cache_hit`` departs from it in
four places, findings 8 to 11 of docs/findings.md, each behind the
:class:`Quirks` flag of the finding's key (``lookup-<flag>``):
with every flag on this equals vLLM exactly, with every flag off it equals
``core.reconcile_hits``, so each flag isolates one finding and no
unexplained disagreement hides behind a known one. Restated here: the
sliding-window finder (right to left, as vLLM searches) and full attention's
hash-unit finder under partial hits; the block-grained full-attention and
Mamba finders are core's, which equal vLLM's.
"""

from __future__ import annotations

import functools
from collections.abc import Container, Sequence
from typing import Protocol

import attrs

from junction.core import (
    Finder,
    GroupKind,
    GroupLookup,
    GroupSpec,
    HybridGeometry,
    floor_to,
    group_finder,
    lcm,
)

__all__ = ["ALL_QUIRKS", "NO_QUIRKS", "CacheView", "Quirks", "departures", "model_reconcile"]


class CacheView(Protocol):
    """What the model reads of one group (``audit.vllm.lookup.GroupView``, or the
    drop-in's view that asks the pool on demand): the group, the finder's spec,
    the cached indices of the chain in ``spec`` units, the registered hash units."""

    @property
    def group(self) -> GroupSpec: ...
    @property
    def spec(self) -> GroupSpec: ...
    @property
    def cached(self) -> Container[int]: ...
    @property
    def registered(self) -> Container[int]: ...


@attrs.frozen
class Quirks:
    """Which of vLLM's departures the model reproduces (docs/findings.md, ``lookup-<flag>``)."""

    verified_set: bool = True
    swa_realign_before_drop: bool = True
    swa_window_of_one_needs_a_block: bool = True
    full_probe_below_bound: bool = True

    def only(self, name: str) -> Quirks:
        """This one flag on, the others off."""
        flags = {field.name: field.name == name for field in attrs.fields(Quirks)}
        if name not in flags:
            raise ValueError(f"unknown quirk {name!r}: one of {sorted(flags)}")
        return Quirks(**flags)


ALL_QUIRKS = Quirks()
NO_QUIRKS = Quirks(False, False, False, False)


def departures(geometry: HybridGeometry) -> Quirks:
    """The departures that can change an answer on ``geometry``: with these
    flags the model equals vLLM on every pool (``tests/audit/test_lookup.py``),
    so where none can, vLLM's lookup is the core's. Each flag's departure
    acts only in its own case: the verified set and the realignment only
    where a group drops (EAGLE); the one-token window only where a window's
    hit needs no block; the probe below the bound only where full attention
    is read by hash units (partial hits, its block past the alignment)."""
    alignment = geometry.alignment_tokens
    windows = [g for g in geometry.groups if g.kind is GroupKind.SLIDING_WINDOW]
    return Quirks(
        verified_set=geometry.use_eagle,
        swa_realign_before_drop=geometry.use_eagle and bool(windows),
        swa_window_of_one_needs_a_block=any(
            0 in (g.blocks_for_hit(False), g.blocks_for_hit(True)) for g in windows
        ),
        full_probe_below_bound=any(
            g.kind is GroupKind.FULL and g.block_size > alignment for g in geometry.groups
        ),
    )


def _window_finder(view: CacheView, alignment: int, quirks: Quirks) -> Finder:
    spec = view.spec
    block, cached = spec.block_size, view.cached

    def find(bound: int, drop: bool) -> int:
        need = spec.blocks_for_hit(drop)
        blocks = bound // block
        if need == 0 and not quirks.swa_window_of_one_needs_a_block:
            return floor_to(blocks * block, lcm(alignment, block))  # every grid point serves
        run = 0  # cached blocks counted leftwards from an aligned right edge
        for index in range(blocks - 1, -1, -1):
            if index not in cached:
                run = 0
                continue
            if run == 0 and (index if drop else index + 1) * block % alignment:
                continue  # a run must end where the hit (after the drop) is aligned
            run += 1
            if run >= need:
                return (index + run - (1 if drop else 0)) * block
        # No run of `need` blocks: the run from block 0 serves on its own.
        length = run
        if quirks.swa_realign_before_drop:
            while length and length * block % alignment:
                length -= 1
        if drop and length:
            length -= 1
        while length and length * block % alignment:
            length -= 1
        return length * block

    return find


def _full_unit_finder(
    view: CacheView, geometry: HybridGeometry, drop_tokens: int, quirks: Quirks
) -> Finder:
    unit, block, alignment = (
        geometry.hash_block_size,
        view.group.block_size,
        geometry.alignment_tokens,
    )
    scale = block // unit
    registered = view.registered
    if not quirks.full_probe_below_bound:
        return group_finder(view.spec, view.cached.__contains__, alignment_tokens=alignment)

    def find(bound: int, drop: bool) -> int:
        blocks = 0
        while (blocks + 1) * block <= bound and (blocks + 1) * scale - 1 in registered:
            blocks += 1
        hit = blocks * block
        first = blocks * scale
        top = min(first + scale - 1, bound // unit)
        for index in range(top - 1, first - 1, -1):
            if index in registered:
                hit = (index + 1) * unit
                break
        if drop and hit:
            hit -= drop_tokens
        return floor_to(hit, alignment)

    return find


def _finder(geometry: HybridGeometry, view: CacheView, quirks: Quirks) -> Finder:
    alignment = geometry.alignment_tokens
    if view.spec.kind is GroupKind.SLIDING_WINDOW:
        return _window_finder(view, alignment, quirks)
    if view.group.kind is GroupKind.FULL and view.spec.block_size < view.group.block_size:
        drop = view.group.eagle_drop_tokens(alignment)
        return _full_unit_finder(view, geometry, drop, quirks)
    # group_finder's binding, kept: the drop-in's identical mode asks on every lookup.
    return _group_lookup(view.spec, alignment).finder(view.cached.__contains__)


_group_lookup = functools.lru_cache(maxsize=256)(GroupLookup)


@functools.lru_cache(maxsize=256)
def _shape(geometry: HybridGeometry) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """Per geometry (kept: the drop-in's identical mode asks on every lookup):
    each group's EAGLE margin, the lookup order (full attention first), and
    whether vLLM stops after one round."""
    groups = geometry.groups
    eagle = geometry.use_eagle
    margins = tuple(g.eagle_drop_tokens(geometry.alignment_tokens) if eagle else 0 for g in groups)
    order = sorted(range(len(groups)), key=lambda k: groups[k].kind is not GroupKind.FULL)
    # vLLM looks groups with equal specs up together, and with one
    # full-attention spec plus one other stops after the first round.
    specs = list(dict.fromkeys(groups))
    simple = len(specs) == 2 and any(spec.kind is GroupKind.FULL for spec in specs)
    return margins, tuple(order), simple


def model_reconcile(
    geometry: HybridGeometry,
    views: Sequence[CacheView],
    max_hit_length: int,
    hashed_tokens: int,
    quirks: Quirks = ALL_QUIRKS,
) -> tuple[int, int, int]:
    """``(h, ℓ, J)`` of vLLM's lookup as restated, with the chosen departures."""
    groups = geometry.groups
    finders = [_finder(geometry, view, quirks) for view in views]
    eagle = geometry.use_eagle
    margins, order, simple = _shape(geometry)
    found: dict[int, int] = {}
    verified: set[int] = set()
    hit, longest = max_hit_length, 0
    while True:
        candidate = hit
        for index in order:
            kind = groups[index].kind
            known = found.get(index)
            if known is not None and kind is GroupKind.FULL:
                candidate = min(candidate, known)  # downward closed: looked up once
                continue
            if not quirks.verified_set and known == candidate:
                continue  # proved this very candidate already (core's rule)
            drop = eagle and groups[index].eagle_group
            drop = drop and (index not in verified if quirks.verified_set else True)
            bound = candidate
            if drop and kind is not GroupKind.MAMBA:
                bound = min(candidate + margins[index], hashed_tokens)
            new = finders[index](bound, drop and kind is not GroupKind.MAMBA)
            if drop:
                verified.add(index)
            elif new < candidate:
                verified.clear()
            candidate = found[index] = new
            longest = max(longest, new)
        if candidate >= hit:
            break
        hit = candidate
        if simple:
            break
    return hit, longest, longest if longest > hit else 0
