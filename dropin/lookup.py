"""The lookup adapter: ``HybridKVCacheCoordinator.find_longest_cache_hit`` onto the core.

The coordinator's configuration becomes a :class:`junction.core.HybridGeometry`
(cacheable groups in vLLM's order, the hash unit, partial hits and EAGLE
exactly as vLLM's lookup applies them), bound once per configuration with the
pool readers (``audit.vllm.lookup.group_readers``). A call lets the core's
reconciliation decide the hit ``h`` and the longest single-group hit ``ℓ``
and hands vLLM the blocks each group contributes to ``[0, h)``, ``h`` and
``ℓ - h``. The handed blocks are exactly the ones the core proved, found
however far their registration lies: collecting them reads the pool, it
decides nothing. In ``identical`` mode the answer is vLLM 0.33.0's own,
departures included (``audit.vllm.lookup_model``). Refused with
:class:`UnsupportedOption`: a group of no core kind, prefill context
parallelism, a scheduler block other than the groups' lcm
(docs/design/dropin-translations.md).
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Iterator
from typing import Any

import attrs

from junction.core import Finder, GroupKind, GroupSpec, HitReconciler, HybridGeometry, cdiv

from ..audit.vllm.lookup import GroupReader, group_readers
from ..audit.vllm.lookup_model import ALL_QUIRKS, NO_QUIRKS, Probe, VllmLookup, departures
from .bindings import IdentityCache
from .errors import Decision, UnsupportedOption
from .groups import core_group

__all__ = ["core_find_longest_cache_hit", "vllm_find_longest_cache_hit"]


@attrs.frozen
class _BoundLookup:
    """What one coordinator configuration fixes: the geometry of its cacheable
    groups, their KV-cache group ids, the reconciler and the pool readers."""

    geometry: HybridGeometry
    # What collecting a hit's blocks reads, per geometry group: its vLLM group
    # id, its spec, whether the coordinator keeps its blocks up to ℓ (not h),
    # its EAGLE drop (0 without EAGLE), and the blocks a sliding window's hit
    # ends with, read without the peek (None: another kind, listed from block 0).
    collecting: tuple[tuple[int, GroupSpec, bool, int, int | None], ...]
    num_groups: int
    reconciler: HitReconciler
    readers: tuple[GroupReader, ...]
    # What a lookup walks, per geometry group: its reader, its vLLM group id,
    # the pool's group-id argument (vLLM passes its own lists likewise), and
    # whether it is full attention read by whole blocks (its run's blocks are
    # the hit's, kept as the run reads them).
    reading: tuple[tuple[GroupReader, int, list[int], bool], ...]
    # The group asked first, the first full-attention group (None: there is
    # none): its vLLM group id, the pool's group-id argument, and the hash
    # units that hold its block 0, deepest first (the block's last unit read
    # by whole blocks, any of its units under partial hits). With none of
    # them registered it serves 0 tokens, every group is asked about 0 and
    # the answer is no hit.
    first: tuple[int, list[int], tuple[int, ...]] | None
    first_group_id: int  # its vLLM group id (-1: none)
    # Whether that answer is also vLLM's own (identical mode): without EAGLE,
    # where no group is asked past the candidate 0.
    first_is_vllms: bool
    # Whether every lookup's answer is (identical mode): where none of vLLM's
    # departures can act (audit.vllm.lookup_model.departures).
    core_is_vllms: bool
    # Identical mode elsewhere: vLLM's lookup restated, bound to the geometry,
    # and what it probes per geometry group: its reader, its vLLM group id,
    # the pool's group-id argument, and whether it reads registered hash units.
    model: VllmLookup
    probing: tuple[tuple[GroupReader, int, list[int], bool], ...]


def core_find_longest_cache_hit(
    self: Any, block_hashes: Any, max_cache_hit_length: int
) -> tuple[tuple[list[Any], ...], int, int]:
    """Drop-in for ``HybridKVCacheCoordinator.find_longest_cache_hit`` (mode
    ``corrected``): its signature, names included; the core's reconciliation."""
    return _core_lookup(self, _bind(self), block_hashes, max_cache_hit_length)


def _core_lookup(
    coordinator: Any, bound: _BoundLookup, block_hashes: Any, max_cache_hit_length: int
) -> tuple[tuple[list[Any], ...], int, int]:
    """The core's answer and the blocks it proved."""
    # What the lookup reads of the pool is kept per group for collecting the
    # blocks: a run's blocks, else each answer under its hash unit (the
    # first full-attention group's block 0 is read first, into its own).
    first_seen: dict[int, Any] = {}
    if _block_zero(coordinator, bound, block_hashes, max_cache_hit_length, first_seen):
        return tuple([[] for _ in range(bound.num_groups)]), 0, 0
    # Each group reads its own manager's pool, as vLLM's coordinator does
    # (one pool for all, except with HiSparse's host-backed groups).
    managers = coordinator.single_type_managers
    pools: list[Any] = []
    runs: list[list[Any] | None] = []
    found: list[dict[int, Any]] = []
    finders: list[Finder] = []
    for reader, group_id, ids, whole in bound.reading:
        pool = managers[group_id].block_pool
        run: list[Any] | None = [] if whole else None
        seen = first_seen if group_id == bound.first_group_id else {}
        finders.append(_finder(reader, ids, pool, block_hashes, seen, run))
        pools.append(pool)
        runs.append(run)
        found.append(seen)
    lookup_limit = len(block_hashes) * bound.geometry.hash_block_size
    hit, longest = bound.reconciler.hit_lengths(finders, max_cache_hit_length, lookup_limit)
    blocks = _collect(bound, pools, found, runs, block_hashes, max_cache_hit_length, hit, longest)
    return blocks, hit, longest - hit


def _block_zero(
    coordinator: Any,
    bound: _BoundLookup,
    block_hashes: Any,
    max_cache_hit_length: Any,
    seen: dict[int, Any],
) -> bool:
    """Whether the first full-attention group lacks block 0, read first (the
    hit is then 0 tokens for every group); each answer is kept in ``seen``
    under its hash unit. ``False`` for an invalid bound: it takes the general
    path, which raises or answers as it does."""
    first = bound.first
    if first is None or type(max_cache_hit_length) is not int or max_cache_hit_length < 0:
        return False
    group_id, ids, units = first
    get = coordinator.single_type_managers[group_id].block_pool.get_cached_block
    count = len(block_hashes)
    for unit in units:  # a loop, not any() over a generator: this runs on every lookup
        if unit < count:
            seen[unit] = answer = get(block_hashes[unit], ids)
            if answer is not None:
                return False
    return True


def _finder(
    reader: GroupReader,
    ids: list[int],
    pool: Any,
    block_hashes: Any,
    seen: dict[int, Any],
    run: list[Any] | None,
) -> Finder:
    """The group's core finder over the pool. A full-attention group's finder
    gets its cached run, read as vLLM's scan reads it (one pool call a whole
    block; under partial hits, the deepest registered hash unit of the first
    block not registered whole): a group read by whole blocks keeps the
    run's blocks in ``run``, one read by hash units each answer in ``seen``.
    Any other group reads through the reader's predicate (answers in ``seen``)."""
    get = pool.get_cached_block
    if run is not None:  # whole blocks: block i is hash unit (i + 1) * scale - 1
        scale = reader.scale
        count = len(block_hashes) // scale

        def is_cached(index: int) -> bool:
            return index < count and get(block_hashes[(index + 1) * scale - 1], ids) is not None

        def block_run(limit: int) -> int:
            # From what the run holds; a unit read already (block 0) is not asked again.
            end = min(limit, count)
            for index in range(len(run), end):
                unit = (index + 1) * scale - 1
                answer = seen[unit] if unit in seen else get(block_hashes[unit], ids)
                if answer is None:
                    return index
                run.append(answer[0])
            return end

        return reader.lookup.finder(is_cached, block_run)
    covered, units = reader.predicate(pool, block_hashes, seen)
    if reader.spec.kind is not GroupKind.FULL:
        return reader.lookup.finder(covered)
    block_units = reader.covered_block

    def covered_run(limit: int) -> int:
        # Hash unit u is covered iff a unit in [u, its block's end) is
        # registered: a block registered at its last unit is covered whole;
        # in the first that is not, the run ends past its deepest registration.
        start = 0
        while start < limit:
            end = min(start + block_units, units)
            deepest = end - 1
            while deepest >= start:
                if deepest in seen:  # read already (block 0)
                    answer = seen[deepest]
                else:
                    seen[deepest] = answer = get(block_hashes[deepest], ids)
                if answer is not None:
                    break
                deepest -= 1
            if deepest < start + block_units - 1:  # the run ends in this block
                return min(deepest + 1, limit)
            start += block_units
        return limit

    return reader.lookup.finder(covered, covered_run)


def vllm_find_longest_cache_hit(
    self: Any, block_hashes: Any, max_cache_hit_length: int
) -> tuple[tuple[list[Any], ...], int, int]:
    """Drop-in for ``HybridKVCacheCoordinator.find_longest_cache_hit`` (mode
    ``identical``): vLLM 0.33.0's answer, its four lookup departures
    included (``audit.vllm.lookup_model`` with every quirk on), reading the pool
    on demand through the same readers; the blocks collected by the same rule.
    Where no departure can act on the configuration, that answer is the
    core's, and the core's path gives it."""
    coordinator = self
    bound = _bind(coordinator)
    if bound.core_is_vllms:  # no departure can act on this configuration
        return _core_lookup(coordinator, bound, block_hashes, max_cache_hit_length)
    if bound.first_is_vllms and _block_zero(
        coordinator, bound, block_hashes, max_cache_hit_length, {}
    ):
        return tuple([[] for _ in range(bound.num_groups)]), 0, 0
    managers = coordinator.single_type_managers
    pools: list[Any] = []
    found: list[dict[int, Any]] = []
    probes: list[tuple[Probe, Probe | None]] = []
    for reader, group_id, ids, reads_registered in bound.probing:
        pool = managers[group_id].block_pool
        seen: dict[int, Any] = {}
        is_cached, _ = reader.predicate(pool, block_hashes, seen)
        registered = _registration(pool, ids, block_hashes, seen) if reads_registered else None
        probes.append((is_cached, registered))
        pools.append(pool)
        found.append(seen)
    lookup_limit = len(block_hashes) * bound.geometry.hash_block_size
    hit, longest, _ = bound.model.hit_lengths(probes, max_cache_hit_length, lookup_limit)
    runs: list[list[Any] | None] = [None] * len(pools)
    blocks = _collect(bound, pools, found, runs, block_hashes, max_cache_hit_length, hit, longest)
    return blocks, hit, longest - hit


def _registration(pool: Any, ids: list[int], block_hashes: Any, found: dict[int, Any]) -> Probe:
    """Whether hash unit ``i`` of the chain is registered for the group, each
    answer kept in ``found``."""
    get, units = pool.get_cached_block, len(block_hashes)

    def registered(index: int) -> bool:
        if not 0 <= index < units:
            return False
        found[index] = answer = get(block_hashes[index], ids)
        return answer is not None

    return registered


def _collect(
    bound: _BoundLookup,
    pools: list[Any],
    found: list[dict[int, Any]],
    runs: list[list[Any] | None],
    block_hashes: Any,
    max_cache_hit_length: int,
    hit: int,
    longest: int,
) -> tuple[list[Any], ...]:
    """Each vLLM group's blocks for a hit of ``hit`` tokens (``longest`` for a
    group the coordinator keeps past the hit); no blocks for the others."""
    blocks: list[list[Any]] = [[] for _ in range(bound.num_groups)]
    if not longest:  # no group hit anything (h <= ℓ): every group gets no blocks
        return tuple(blocks)
    unit = bound.geometry.hash_block_size
    lookup_limit = len(block_hashes) * unit
    groups = zip(bound.collecting, pools, found, runs, strict=True)
    for (group_id, group, retained, peek, window), pool, seen, run in groups:
        length = longest if retained else hit
        if run is not None:
            # Whole blocks from block 0, each proved by the run that read it:
            # the hit's blocks are the run's first ones.
            blocks[group_id] = run[: cdiv(length, group.block_size)]
            continue
        # How far the group's own lookup reads: the bound plus its EAGLE peek
        # (none for a group that is not an EAGLE group), within the hashed
        # tokens. It orders the registrations a block is taken from.
        read_limit = min(max_cache_hit_length + peek, lookup_limit) // unit
        blocks[group_id] = _group_blocks(
            pool, seen, block_hashes, group_id, group, window, unit, length, read_limit
        )
    return tuple(blocks)


_spec_of = operator.attrgetter("kv_cache_spec")
_manager_setting = operator.attrgetter("__class__", "block_size", "pcp_world_size")
_use_eagle = operator.attrgetter("use_eagle")


def _bind(coordinator: Any) -> _BoundLookup:
    """The coordinator's binding. Kept per live coordinator with what its
    configuration is read from (vLLM fixes it at construction: its KV-cache
    config, managers and attention groups, its hash unit, partial hits and
    scheduler block), and used while that is still its own; else looked up
    by what it is built from (:func:`_bind_by_key`), built on a miss."""
    kept = _kept.get(id(coordinator))
    if (
        kept is not None
        and kept[0]() is not None  # alive, under its id: this very coordinator
        and kept[1] is coordinator.kv_cache_config
        and kept[2] is coordinator.single_type_managers
        and kept[3] is coordinator.attention_groups
        and kept[4]
        == (
            coordinator.hash_block_size,
            coordinator.enable_partial_hash_hits,
            coordinator.scheduler_block_size,
        )
    ):
        return kept[5]
    bound = _bind_by_key(coordinator)
    key = id(coordinator)
    _kept[key] = (
        weakref.ref(coordinator, lambda _, key=key: _kept.pop(key, None)),  # type: ignore[misc]
        coordinator.kv_cache_config,
        coordinator.single_type_managers,
        coordinator.attention_groups,
        (
            coordinator.hash_block_size,
            coordinator.enable_partial_hash_hits,
            coordinator.scheduler_block_size,
        ),
        bound,
    )
    return bound


# Beside the coordinators, never on them: an attribute set on a vLLM object
# (or a read of its ``__dict__``) can turn its inline attribute values into a
# real dict for good on CPython 3.11, after which no call of a method on it is
# specialized, and every coordinator method vLLM calls runs the generic
# lookup. An entry goes with its coordinator (the weak reference's callback).
_kept: dict[int, tuple[weakref.ref[Any], Any, Any, Any, tuple[Any, ...], _BoundLookup]] = {}


def _bind_by_key(coordinator: Any) -> _BoundLookup:
    specs = tuple(map(_spec_of, coordinator.kv_cache_config.kv_cache_groups))
    managers = coordinator.single_type_managers
    key = (
        *map(id, specs),
        tuple(map(_manager_setting, managers)),
        tuple(map(_use_eagle, coordinator.attention_groups)),
        coordinator.hash_block_size,
        bool(coordinator.enable_partial_hash_hits),
        coordinator.scheduler_block_size,
    )
    bound = _lookups.find(key)
    if bound is None:  # the configuration's first lookup: bind (and validate) once
        bound = _lookups.keep(key, specs, _bound(coordinator))
    return bound


_lookups: IdentityCache[_BoundLookup] = IdentityCache()


def _bound(coordinator: Any) -> _BoundLookup:
    groups = coordinator.kv_cache_config.kv_cache_groups
    managers = coordinator.single_type_managers
    cacheable: list[tuple[int, type, Any, int]] = []
    retained: list[bool] = []  # the coordinator keeps the group's blocks past h
    for group_id, (group, manager) in enumerate(zip(groups, managers, strict=True)):
        if not group.kv_cache_spec.prefix_cacheable:
            continue  # scratch groups take no part in lookup; vLLM gives them no blocks
        if manager.pcp_world_size != 1:
            raise UnsupportedOption(Decision.LOOKUP, "pcp_world_size", manager.pcp_world_size)
        # manager.block_size: the spec's block times dcp_world_size for a
        # DCP-sharded group, the block vLLM hashes and looks up by.
        cacheable.append((group_id, type(manager), group.kv_cache_spec, manager.block_size))
        retained.append(bool(manager.retains_longer_hit))
    # EAGLE per group: vLLM looks groups of equal specs up together, and such
    # a spec group drops when any member is an EAGLE group; each member takes
    # its spec group's flag, which is what vLLM's lookup does with it.
    drops = {
        group_id: spec_group.use_eagle
        for spec_group in coordinator.attention_groups
        for group_id in spec_group.group_ids
    }
    eagle_groups = [drops[group_id] for group_id, _, _, _ in cacheable]
    partial_hits = bool(coordinator.enable_partial_hash_hits)
    geometry = HybridGeometry(
        [
            attrs.evolve(core_group(Decision.LOOKUP, manager_cls, spec, block), eagle_group=drop)
            for (_, manager_cls, spec, block), drop in zip(cacheable, eagle_groups, strict=True)
        ],
        coordinator.hash_block_size,
        partial_hits=partial_hits,
        use_eagle=any(eagle_groups),
    )
    scheduler_block_size = coordinator.scheduler_block_size
    if not partial_hits and geometry.scheduler_block_size != scheduler_block_size:
        # vLLM aligns hits to its configured scheduler block; the core to the lcm.
        raise UnsupportedOption(Decision.LOOKUP, "scheduler_block_size", scheduler_block_size)
    group_ids = tuple(group_id for group_id, _, _, _ in cacheable)
    full = [k for k, group in enumerate(geometry.groups) if group.kind is GroupKind.FULL]
    for k, keeps in enumerate(retained):
        # ℓ is the first full-attention group's own hit; no other group's.
        if keeps and full[:1] != [k]:
            raise UnsupportedOption(Decision.LOOKUP, "retains_longer_hit", cacheable[k][1].__name__)
    readers = tuple(
        attrs.evolve(reader, group_id=group_id)  # read the pool under vLLM's group id
        for reader, group_id in zip(group_readers(geometry), group_ids, strict=True)
    )
    alignment = geometry.alignment_tokens
    peeks = tuple(
        group.eagle_drop_tokens(alignment) if geometry.use_eagle else 0 for group in geometry.groups
    )
    reading = tuple(
        (
            reader,
            reader.group_id,
            [reader.group_id],
            group.kind is GroupKind.FULL and not reader.covered_block,
        )
        for group, reader in zip(geometry.groups, readers, strict=True)
    )
    first = None
    if full:
        reader = readers[full[0]]
        # Block 0's last hash unit; read by units, each of the block's units.
        last = (reader.covered_block or reader.scale) - 1
        units = tuple(range(last, -1, -1)) if reader.covered_block else (last,)
        first = (reader.group_id, [reader.group_id], units)
    model = VllmLookup(geometry, ALL_QUIRKS)
    probing = tuple(
        (reader, reader.group_id, [reader.group_id], reads)
        for reader, reads in zip(readers, model.reads_registered, strict=True)
    )
    return _BoundLookup(
        geometry,
        tuple(
            (
                group_id,
                group,
                keeps,
                peek,
                group.blocks_for_hit(False) if group.kind is GroupKind.SLIDING_WINDOW else None,
            )
            for group_id, group, keeps, peek in zip(
                group_ids, geometry.groups, retained, peeks, strict=True
            )
        ),
        len(groups),
        HitReconciler(geometry),
        readers,
        reading,
        first,
        -1 if first is None else first[0],
        not geometry.use_eagle,
        departures(geometry) == NO_QUIRKS,
        model,
        probing,
    )


def _group_blocks(
    pool: Any,
    seen: dict[int, Any],
    block_hashes: Any,
    group_id: int,
    group: GroupSpec,
    window: int | None,
    unit: int,
    hit: int,
    read_limit: int,
) -> list[Any]:
    """The blocks group ``group_id`` contributes to a hit of ``hit`` tokens, as vLLM lists them
    (a sliding window's last ``window``, after null blocks).

    Exactly the blocks the core proved: a full-attention unit read by unit is
    proved by any registration inside its block within the chain, however far
    past the lookup's bound it lies, and its block is taken from there; a
    proved block that cannot be found is a bug and raises."""
    if hit == 0:
        return []
    scale = group.block_size // unit
    ids = [group_id]
    if group.kind is GroupKind.MAMBA:
        state_unit = hit // unit - 1
        state = (
            seen[state_unit]
            if state_unit in seen
            else pool.get_cached_block(block_hashes[state_unit], ids)
        )
        if state is None:  # the core said the group serves the hit: a bug, never a fallback
            raise RuntimeError(
                f"group {group_id}: hash unit {state_unit} of a core hit is not cached"
            )
        return [pool.null_block] * (state_unit // scale) + [state[0]]

    def cached(index: int) -> Any:
        # What the lookup already read of the pool, else the pool.
        found = seen[index] if index in seen else pool.get_cached_block(block_hashes[index], ids)
        return None if found is None else found[0]

    num_blocks = cdiv(hit, group.block_size)
    first = 0 if window is None else max(num_blocks - window, 0)
    blocks = [pool.null_block] * first
    units = len(block_hashes)
    readable = min(read_limit, units)
    for index in range(first, num_blocks):
        # The hit's last unit in this block. The core proved it from any
        # registration of a unit in [needed, block end) within the chain
        # (audit.vllm.lookup's covered reading), so that range is searched whole.
        whole = (index + 1) * scale - 1
        if whole < readable:  # the whole block, within the bound: taken first
            block = cached(whole)
            if block is not None:
                blocks.append(block)
                continue
        needed = min(whole, hit // unit - 1)
        end = min(whole + 1, units)
        block = next(
            (
                found
                for k in _registrations(needed, end, whole, read_limit)
                if (found := cached(k)) is not None
            ),
            None,
        )
        if block is None:  # the core said the group serves the hit: a bug, never a fallback
            raise RuntimeError(f"group {group_id}: block {index} of a core hit is not cached")
        blocks.append(block)
    return blocks


def _registrations(needed: int, end: int, whole: int, read_limit: int) -> Iterator[int]:
    """The units ``[needed, end)`` whose registration holds unit ``needed``,
    in the order their blocks are taken, which is vLLM's wherever vLLM's
    lookup reads (below ``read_limit``): the whole block's (unit ``whole``),
    then the deepest partial tail; past the bound, the nearest registration
    (vLLM never reads there; the core proves units from it)."""
    readable = min(read_limit, end)
    if whole < readable:
        yield whole
    yield from range(min(readable, whole) - 1, needed - 1, -1)
    yield from range(max(readable, needed), end)
