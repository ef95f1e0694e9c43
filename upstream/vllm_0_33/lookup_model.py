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
from collections.abc import Callable, Container, Sequence
from typing import Protocol

import attrs

from junction.core import (
    Finder,
    GroupKind,
    GroupLookup,
    GroupSpec,
    HybridGeometry,
    InvalidArgument,
    floor_to,
    lcm,
)

from .readers import group_readers

__all__ = [
    "ALL_QUIRKS",
    "NO_QUIRKS",
    "CacheView",
    "Probe",
    "Quirks",
    "VllmLookup",
    "departures",
    "model_reconcile",
    "vllm_lookup",
]


class CacheView(Protocol):
    """What :func:`model_reconcile` reads of one group (the audit's ``GroupView``):
    the cached indices of the chain in the units of the group's reader spec,
    and the registered hash units."""

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
            raise InvalidArgument("name", name, f"must be a quirk, one of {sorted(flags)}")
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


def vllm_lookup(geometry: HybridGeometry) -> VllmLookup | None:
    """vLLM 0.33.0's own lookup on ``geometry``, every departure included;
    ``None`` where none can act (:func:`departures`): its answer is the core's."""
    if departures(geometry) == NO_QUIRKS:
        return None
    return VllmLookup(geometry, ALL_QUIRKS)


Probe = Callable[[int], bool]
# A group's finder over one request's probes: (is_cached, is_registered) -> Finder.
FinderForm = Callable[[Probe, Probe | None], Finder]


def _window_form(spec: GroupSpec, alignment: int, quirks: Quirks) -> FinderForm:
    block = spec.block_size
    needs = (spec.blocks_for_hit(False), spec.blocks_for_hit(True))
    grid = lcm(alignment, block)

    def form(is_cached: Probe, _: Probe | None) -> Finder:
        def find(bound: int, drop: bool) -> int:
            need = needs[drop]
            blocks = bound // block
            if need == 0 and not quirks.swa_window_of_one_needs_a_block:
                return floor_to(blocks * block, grid)  # every grid point serves
            run = 0  # cached blocks counted leftwards from an aligned right edge
            for index in range(blocks - 1, -1, -1):
                if not is_cached(index):
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

    return form


def _full_unit_form(group: GroupSpec, geometry: HybridGeometry) -> FinderForm:
    unit, block, alignment = geometry.hash_block_size, group.block_size, geometry.alignment_tokens
    scale = block // unit
    drop_tokens = group.eagle_drop_tokens(alignment)

    def form(_: Probe, is_registered: Probe | None) -> Finder:
        if is_registered is None:
            raise InvalidArgument(
                "is_registered", None, f"{group} is read by hash units: its finder needs it"
            )
        registered = is_registered

        def find(bound: int, drop: bool) -> int:
            blocks = 0
            while (blocks + 1) * block <= bound and registered((blocks + 1) * scale - 1):
                blocks += 1
            hit = blocks * block
            first = blocks * scale
            top = min(first + scale - 1, bound // unit)
            for index in range(top - 1, first - 1, -1):
                if registered(index):
                    hit = (index + 1) * unit
                    break
            if drop and hit:
                hit -= drop_tokens
            return floor_to(hit, alignment)

        return find

    return form


def _core_form(spec: GroupSpec, alignment: int) -> FinderForm:
    lookup = GroupLookup(spec, alignment)

    def form(is_cached: Probe, _: Probe | None) -> Finder:
        return lookup.finder(is_cached)

    return form


class VllmLookup:
    """vLLM 0.33.0's lookup on one geometry, restated with the chosen
    departures, bound once: what the geometry fixes (each group's finder,
    its EAGLE margin, the lookup order, whether vLLM stops after one round)
    is derived here, so a call only reads the request's cache (the drop-in's
    ``identical`` mode asks on every lookup).

    A call's probes are per group, in the geometry's order, over the chain in
    the units of the group's reader spec (:func:`.readers.group_readers`):
    whether index ``i`` is cached, and whether hash unit ``i`` is registered
    (read only for full attention read by hash units; ``None`` elsewhere).
    """

    __slots__ = (
        "_forms",
        "_margins",
        "_order",
        "_simple",
        "geometry",
        "quirks",
        "reads_registered",
    )

    def __init__(self, geometry: HybridGeometry, quirks: Quirks = ALL_QUIRKS) -> None:
        self.geometry, self.quirks = geometry, quirks
        alignment = geometry.alignment_tokens
        forms: list[FinderForm] = []
        reads_registered: list[bool] = []
        for group, reader in zip(geometry.groups, group_readers(geometry), strict=True):
            by_units = group.kind is GroupKind.FULL and reader.spec.block_size < group.block_size
            if reader.spec.kind is GroupKind.SLIDING_WINDOW:
                forms.append(_window_form(reader.spec, alignment, quirks))
            elif by_units and quirks.full_probe_below_bound:
                forms.append(_full_unit_form(group, geometry))
            else:
                forms.append(_core_form(reader.spec, alignment))
            reads_registered.append(by_units and quirks.full_probe_below_bound)
        self._forms = tuple(forms)
        self.reads_registered = tuple(reads_registered)
        groups = geometry.groups
        eagle = geometry.use_eagle
        self._margins = tuple(g.eagle_drop_tokens(alignment) if eagle else 0 for g in groups)
        self._order = tuple(
            sorted(range(len(groups)), key=lambda k: groups[k].kind is not GroupKind.FULL)
        )
        # vLLM looks groups with equal specs up together, and with one
        # full-attention spec plus one other stops after the first round.
        specs = list(dict.fromkeys(groups))
        self._simple = len(specs) == 2 and any(spec.kind is GroupKind.FULL for spec in specs)

    def hit_lengths(
        self,
        probes: Sequence[tuple[Probe, Probe | None]],
        max_hit_length: int,
        hashed_tokens: int,
    ) -> tuple[int, int, int]:
        """``(h, ℓ, J)`` of vLLM's lookup as restated, over ``probes``."""
        quirks = self.quirks
        groups = self.geometry.groups
        finders = [
            form(is_cached, is_registered)
            for form, (is_cached, is_registered) in zip(self._forms, probes, strict=True)
        ]
        eagle, margins = self.geometry.use_eagle, self._margins
        found: dict[int, int] = {}
        verified: set[int] = set()
        hit, longest = max_hit_length, 0
        while True:
            candidate = hit
            for index in self._order:
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
            if self._simple:
                break
        return hit, longest, longest if longest > hit else 0


_bound_lookup = functools.lru_cache(maxsize=256)(VllmLookup)


def model_reconcile(
    geometry: HybridGeometry,
    views: Sequence[CacheView],
    max_hit_length: int,
    hashed_tokens: int,
    quirks: Quirks = ALL_QUIRKS,
) -> tuple[int, int, int]:
    """``(h, ℓ, J)`` of vLLM's lookup as restated, with the chosen departures,
    over views read through ``geometry``'s readers (:func:`.readers.group_readers`)."""
    probes = [(view.cached.__contains__, view.registered.__contains__) for view in views]
    return _bound_lookup(geometry, quirks).hit_lengths(probes, max_hit_length, hashed_tokens)
