"""The lookup adapter: ``HybridKVCacheCoordinator.find_longest_cache_hit`` onto the core.

The coordinator's configuration becomes a :class:`junction.core.HybridGeometry`
(cacheable groups in vLLM's order, the hash unit, partial hits and EAGLE
exactly as vLLM's lookup applies them), bound once per configuration with the
release's pool readers (``group_readers`` of the installed release's package,
:mod:`junction.upstream`). A call lets the core's reconciliation decide the
hit ``h`` and the longest single-group hit ``ℓ`` and hands vLLM the blocks
each group contributes to ``[0, h)``, ``h`` and ``ℓ - h``. The handed blocks
are exactly the ones the core proved, found however far their registration
lies: collecting them reads the pool, it decides nothing. In ``identical``
mode the answer is the release's own lookup, departures included
(``vllm_lookup``). Refused with :class:`UnsupportedOption`: a group of no core
kind, prefill context parallelism, a scheduler block other than the groups'
lcm (docs/design/dropin-translations.md).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from junction.core import Finder, GroupKind, GroupSpec, HitReconciler, HybridGeometry, cdiv
from junction.upstream import vllm_release

from .bindings import IdentityCache, OwnerCache
from .errors import Decision, UnsupportedOption
from .groups import core_group

if TYPE_CHECKING:
    from junction.upstream.vllm_0_33 import GroupReader, VllmLookup

__all__ = ["core_find_longest_cache_hit", "vllm_find_longest_cache_hit"]

Blocks = tuple[list[Any], ...]  # one list of vLLM blocks per KV-cache group
Probe = Callable[[int], bool]


@attrs.frozen
class _Group:
    """One cacheable group of the coordinator, as a lookup reads its pool and
    collects its blocks."""

    group_id: int  # vLLM's KV-cache group id
    ids: list[int]  # the pool's group-id argument, ``[group_id]``, built once
    spec: GroupSpec  # the core group, as in the geometry
    reader: GroupReader
    # Full attention read by whole blocks: its cached run's blocks are the hit's.
    whole_blocks: bool
    # The coordinator hands back its blocks up to ℓ, not h (``retains_longer_hit``).
    retained: bool
    # Tokens its EAGLE lookup reads past the bound (0 without EAGLE).
    peek: int
    # A sliding window's blocks at the end of a hit (None: another kind, listed from block 0).
    window: int | None
    # Identical mode: its probe also reads which hash units are registered.
    reads_registered: bool


@attrs.frozen
class _BoundLookup:
    """What one coordinator configuration fixes."""

    geometry: HybridGeometry
    num_groups: int  # every KV-cache group, cacheable or not
    groups: tuple[_Group, ...]  # the cacheable ones, in the geometry's order
    reconciler: HitReconciler
    # The group asked first, the first full-attention group (None: there is
    # none), and the hash units holding its block 0, deepest first. With none
    # of them registered it serves 0 tokens, every group is asked about 0 and
    # the answer is no hit, read before anything else.
    first: _Group | None
    first_units: tuple[int, ...]
    # Identical mode: the release's own lookup (None: it is the core's here),
    # and whether its answer is also the core's when block 0 is missing
    # (without EAGLE no group is asked past the candidate 0).
    model: VllmLookup | None
    first_is_vllms: bool


def core_find_longest_cache_hit(
    self: Any, block_hashes: Any, max_cache_hit_length: int
) -> tuple[Blocks, int, int]:
    """Drop-in for ``HybridKVCacheCoordinator.find_longest_cache_hit`` (mode
    ``corrected``): its signature, names included; the core's reconciliation."""
    return _core_lookup(self, _bind(self), block_hashes, max_cache_hit_length)


def vllm_find_longest_cache_hit(
    self: Any, block_hashes: Any, max_cache_hit_length: int
) -> tuple[Blocks, int, int]:
    """Drop-in for ``HybridKVCacheCoordinator.find_longest_cache_hit`` (mode
    ``identical``): the release's own answer, its lookup departures included,
    reading the pool on demand through the same readers; the blocks collected
    by the same rule. Where no departure can act, that answer is the core's,
    and the core's path gives it."""
    coordinator = self
    bound = _bind(coordinator)
    model = bound.model
    if model is None:
        return _core_lookup(coordinator, bound, block_hashes, max_cache_hit_length)
    if bound.first_is_vllms and _block_zero(
        coordinator, bound, block_hashes, max_cache_hit_length, {}
    ):
        return _no_hit(bound), 0, 0
    managers = coordinator.single_type_managers
    pools: list[Any] = []
    found: list[dict[int, Any]] = []
    probes: list[tuple[Probe, Probe | None]] = []
    for group in bound.groups:
        pool = managers[group.group_id].block_pool
        seen: dict[int, Any] = {}
        is_cached, _ = group.reader.predicate(pool, block_hashes, seen)
        registered = (
            _registration(pool, group.ids, block_hashes, seen) if group.reads_registered else None
        )
        probes.append((is_cached, registered))
        pools.append(pool)
        found.append(seen)
    lookup_limit = len(block_hashes) * bound.geometry.hash_block_size
    hit, longest, _ = model.hit_lengths(probes, max_cache_hit_length, lookup_limit)
    runs: list[list[Any] | None] = [None] * len(pools)
    blocks = _collect(bound, pools, found, runs, block_hashes, max_cache_hit_length, hit, longest)
    return blocks, hit, longest - hit


def _no_hit(bound: _BoundLookup) -> Blocks:
    return tuple([[] for _ in range(bound.num_groups)])


def _core_lookup(
    coordinator: Any, bound: _BoundLookup, block_hashes: Any, max_cache_hit_length: int
) -> tuple[Blocks, int, int]:
    """The core's answer and the blocks it proved."""
    # What the lookup reads of the pool is kept per group for collecting the
    # blocks: a run's blocks, else each answer under its hash unit (the
    # first full-attention group's block 0 is read first, into its own).
    first_seen: dict[int, Any] = {}
    if _block_zero(coordinator, bound, block_hashes, max_cache_hit_length, first_seen):
        return _no_hit(bound), 0, 0
    # Each group reads its own manager's pool, as vLLM's coordinator does
    # (one pool for all, except with HiSparse's host-backed groups).
    managers = coordinator.single_type_managers
    pools: list[Any] = []
    runs: list[list[Any] | None] = []
    found: list[dict[int, Any]] = []
    finders: list[Finder] = []
    for group in bound.groups:
        pool = managers[group.group_id].block_pool
        run: list[Any] | None = [] if group.whole_blocks else None
        seen = first_seen if group is bound.first else {}
        finders.append(group.reader.finder(pool, block_hashes, seen, run))
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
    """Whether the first full-attention group lacks block 0 (the hit is then 0
    tokens for every group); each answer is kept in ``seen`` under its hash
    unit. ``False`` for an invalid bound: it takes the general path, which
    raises or answers as it does."""
    first = bound.first
    if first is None or type(max_cache_hit_length) is not int or max_cache_hit_length < 0:
        return False
    get = coordinator.single_type_managers[first.group_id].block_pool.get_cached_block
    count = len(block_hashes)
    for unit in bound.first_units:
        if unit < count:
            seen[unit] = answer = get(block_hashes[unit], first.ids)
            if answer is not None:
                return False
    return True


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
) -> Blocks:
    """Each vLLM group's blocks for a hit of ``hit`` tokens (``longest`` for a
    group the coordinator keeps past the hit); no blocks for the others."""
    blocks: list[list[Any]] = [[] for _ in range(bound.num_groups)]
    if not longest:  # no group hit anything (h <= ℓ): every group gets no blocks
        return tuple(blocks)
    unit = bound.geometry.hash_block_size
    lookup_limit = len(block_hashes) * unit
    for group, pool, seen, run in zip(bound.groups, pools, found, runs, strict=True):
        length = longest if group.retained else hit
        if run is not None:
            # Whole blocks from block 0, each proved by the run that read it:
            # the hit's blocks are the run's first ones.
            blocks[group.group_id] = run[: cdiv(length, group.spec.block_size)]
            continue
        # How far the group's own lookup reads: the bound plus its EAGLE peek,
        # within the hashed tokens. It orders the registrations a block is taken from.
        read_limit = min(max_cache_hit_length + group.peek, lookup_limit) // unit
        blocks[group.group_id] = _group_blocks(
            group, pool, seen, block_hashes, unit, length, read_limit
        )
    return tuple(blocks)


def _group_blocks(
    group: _Group,
    pool: Any,
    seen: dict[int, Any],
    block_hashes: Any,
    unit: int,
    hit: int,
    read_limit: int,
) -> list[Any]:
    """The blocks ``group`` contributes to a hit of ``hit`` tokens, as vLLM lists
    them (a sliding window's last ``window``, after null blocks).

    Exactly the blocks the core proved: a full-attention unit read by unit is
    proved by any registration inside its block within the chain, however far
    past the lookup's bound it lies, and its block is taken from there; a
    proved block that cannot be found is a bug and raises."""
    if hit == 0:
        return []
    scale = group.spec.block_size // unit

    def cached(index: int) -> Any:
        # What the lookup already read of the pool, else the pool.
        if index in seen:
            found = seen[index]
        else:
            found = pool.get_cached_block(block_hashes[index], group.ids)
        return None if found is None else found[0]

    if group.spec.kind is GroupKind.MAMBA:
        state_unit = hit // unit - 1
        state = cached(state_unit)
        if state is None:  # the core said the group serves the hit: a bug, never a fallback
            raise RuntimeError(
                f"group {group.group_id}: hash unit {state_unit} of a core hit is not cached"
            )
        return [pool.null_block] * (state_unit // scale) + [state]
    num_blocks = cdiv(hit, group.spec.block_size)
    first = 0 if group.window is None else max(num_blocks - group.window, 0)
    blocks = [pool.null_block] * first
    units = len(block_hashes)
    readable = min(read_limit, units)
    for index in range(first, num_blocks):
        # The hit's last unit in this block. The core proved it from any
        # registration of a unit in [needed, block end) within the chain
        # (the readers' covered reading), so that range is searched whole.
        whole = (index + 1) * scale - 1
        if whole < readable:  # the whole block, within the bound: taken first
            block = cached(whole)
            if block is not None:
                blocks.append(block)
                continue
        needed = min(whole, hit // unit - 1)
        end = min(whole + 1, units)
        registrations = _registrations(needed, end, whole, read_limit)
        block = next((found for k in registrations if (found := cached(k)) is not None), None)
        if block is None:  # the core said the group serves the hit: a bug, never a fallback
            raise RuntimeError(f"group {group.group_id}: block {index} of a core hit is not cached")
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


_spec_of = operator.attrgetter("kv_cache_spec")
_manager_setting = operator.attrgetter("__class__", "block_size", "pcp_world_size")
_use_eagle = operator.attrgetter("use_eagle")
_lookups: IdentityCache[_BoundLookup] = IdentityCache()
_kept: OwnerCache[_BoundLookup] = OwnerCache()


def _bind(coordinator: Any) -> _BoundLookup:
    """The coordinator's binding: kept beside it while what its configuration
    is read from (vLLM fixes it at construction: its KV-cache config, managers
    and attention groups, its hash unit, partial hits and scheduler block) is
    still its own; else looked up by what it is built from, built (and
    validated) on the configuration's first lookup. The kept one is the
    common call's: one ``dict.get`` and a tuple compared (its parts are the
    same objects: each found equal at once), where the key is three maps
    over the groups."""
    sources = (
        coordinator.kv_cache_config,
        coordinator.single_type_managers,
        coordinator.attention_groups,
        coordinator.hash_block_size,
        coordinator.enable_partial_hash_hits,
        coordinator.scheduler_block_size,
    )
    kept = _kept.find(id(coordinator))
    if kept is not None and kept.owner() is coordinator and kept.sources == sources:
        return kept.value
    specs = tuple(map(_spec_of, coordinator.kv_cache_config.kv_cache_groups))
    key = (
        *map(id, specs),
        tuple(map(_manager_setting, coordinator.single_type_managers)),
        tuple(map(_use_eagle, coordinator.attention_groups)),
        coordinator.hash_block_size,
        bool(coordinator.enable_partial_hash_hits),
        coordinator.scheduler_block_size,
    )
    bound = _lookups.find(key)
    if bound is None:
        bound = _lookups.keep(key, specs, _bound(coordinator))
    return _kept.keep(coordinator, sources, bound)


def _bound(coordinator: Any) -> _BoundLookup:
    """The coordinator's configuration, validated (:class:`UnsupportedOption`
    for what the core cannot express) and bound under the installed release."""
    release = vllm_release()
    groups = coordinator.kv_cache_config.kv_cache_groups
    managers = coordinator.single_type_managers
    # EAGLE per group: vLLM looks groups of equal specs up together, and such
    # a spec group drops when any member is an EAGLE group; each member takes
    # its spec group's flag, which is what vLLM's lookup does with it.
    drops = {
        group_id: spec_group.use_eagle
        for spec_group in coordinator.attention_groups
        for group_id in spec_group.group_ids
    }
    cacheable: list[tuple[int, Any]] = []  # (vLLM group id, its manager)
    specs: list[GroupSpec] = []
    for group_id, (group, manager) in enumerate(zip(groups, managers, strict=True)):
        if not group.kv_cache_spec.prefix_cacheable:
            continue  # scratch groups take no part in lookup; vLLM gives them no blocks
        if manager.pcp_world_size != 1:
            raise UnsupportedOption(Decision.LOOKUP, "pcp_world_size", manager.pcp_world_size)
        # manager.block_size: the spec's block times dcp_world_size for a
        # DCP-sharded group, the block vLLM hashes and looks up by.
        spec = core_group(
            release, Decision.LOOKUP, type(manager), group.kv_cache_spec, manager.block_size
        )
        specs.append(attrs.evolve(spec, eagle_group=drops[group_id]))
        cacheable.append((group_id, manager))
    partial_hits = bool(coordinator.enable_partial_hash_hits)
    geometry = HybridGeometry(
        specs,
        coordinator.hash_block_size,
        partial_hits=partial_hits,
        use_eagle=any(spec.eagle_group for spec in specs),
    )
    scheduler_block_size = coordinator.scheduler_block_size
    if not partial_hits and geometry.scheduler_block_size != scheduler_block_size:
        # vLLM aligns hits to its configured scheduler block; the core to the lcm.
        raise UnsupportedOption(Decision.LOOKUP, "scheduler_block_size", scheduler_block_size)
    full = [k for k, spec in enumerate(geometry.groups) if spec.kind is GroupKind.FULL]
    for k, (_, manager) in enumerate(cacheable):
        # ℓ is the first full-attention group's own hit; no other group's.
        if manager.retains_longer_hit and full[:1] != [k]:
            raise UnsupportedOption(Decision.LOOKUP, "retains_longer_hit", type(manager).__name__)
    model = release.vllm_lookup(geometry)
    reads_registered = (False,) * len(specs) if model is None else model.reads_registered
    alignment = geometry.alignment_tokens
    bound_groups = tuple(
        _Group(
            group_id=group_id,
            ids=[group_id],
            spec=spec,
            # Read the pool under vLLM's group id.
            reader=attrs.evolve(reader, group_id=group_id),
            whole_blocks=spec.kind is GroupKind.FULL and not reader.covered_block,
            retained=bool(manager.retains_longer_hit),
            peek=spec.eagle_drop_tokens(alignment) if geometry.use_eagle else 0,
            window=spec.blocks_for_hit(False) if spec.kind is GroupKind.SLIDING_WINDOW else None,
            reads_registered=reads,
        )
        for (group_id, manager), spec, reader, reads in zip(
            cacheable,
            geometry.groups,
            release.group_readers(geometry),
            reads_registered,
            strict=True,
        )
    )
    first = bound_groups[full[0]] if full else None
    first_units: tuple[int, ...] = ()
    if first is not None:
        # Block 0's last hash unit; read by units, each of the block's units.
        last = (first.reader.covered_block or first.reader.scale) - 1
        first_units = tuple(range(last, -1, -1)) if first.reader.covered_block else (last,)
    return _BoundLookup(
        geometry=geometry,
        num_groups=len(groups),
        groups=bound_groups,
        reconciler=HitReconciler(geometry),
        first=first,
        first_units=first_units,
        model=model,
        first_is_vllms=not geometry.use_eagle,
    )
