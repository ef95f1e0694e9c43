"""The compiled replay's inner loops (numba): lookup, admission and a plan's run.

The books of ``pool.ReplayPool`` for ``lru`` with the states in the blocks
and caching on, for many points at once, on dense ids instead of prefix
keys (``compiled``; group ``g``'s block ``j`` is id ``units[(j + 1) *
per[g] - 1] * width + g``): per id and point a stamp (:data:`ABSENT`,
:data:`HELD` by the running request, or free: its place in the free queue
plus one), and per point the free queue as a ring of ids in the order they
were freed. A key taken from the queue leaves a stale entry (its stamp no
longer names that place), skipped by eviction and dropped when a full ring
is compacted; a ring holds twice the keys its point can have free (its
pool's blocks, or every id where fewer: ``sweep.compiled_ring``), so
compaction frees at least half. Sequential reads and writes, and a request's lookups read a few rows
of ids, each with every point's stamp. The lookup is ``core``'s finders and
``HitReconciler`` written out; every branch mirrors the Python it stands
for (``tests/replay/test_engines.py`` compares the two replays).
Compiled on first use and cached on disk (``cache=True``), a cache numba
keys on this file alone: so nothing here reads another module's value,
the plan's and the pool's codes come in as an argument (``codes``).
Importing this needs numba.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np
import numpy.typing as npt

__all__ = ["FULL", "MAMBA", "TALLIES", "WINDOW", "lookup_all", "run_all"]

Ints = npt.NDArray[np.int64]
Stamps = npt.NDArray[np.int32]  # [id, point]
Rings = npt.NDArray[np.int32]  # every point's ring, one after another (``heads[3]``)

ABSENT, HELD = 0, -1
FULL, WINDOW, MAMBA = 0, 1, 2  # group kinds, as ``layout`` numbers them
# tallies' columns: requests, lookup tokens, hit tokens, prompt tokens, prefill tokens
# computed, refused requests, refused tokens, evictions.
TALLIES = 8

F = TypeVar("F", bound=Callable[..., Any])


def _compiled(function: F) -> F:
    """Compiled on first call, then loaded from numba's on-disk cache (see above)."""
    return cast(F, numba.njit(cache=True, nogil=True)(function))


@_compiled
def _block(units: Ints, per: Ints, width: int, group: int, index: int) -> int:
    return int(units[(index + 1) * per[group] - 1] * width + group)


@_compiled
def _is_cached(
    stamp: Stamps, point: int, units: Ints, per: Ints, width: int, lengths: Ints, g: int, i: int
) -> bool:
    return bool(i < lengths[g] and stamp[_block(units, per, width, g, i), point] != ABSENT)


@_compiled
def _find(
    stamp: Stamps,
    point: int,
    units: Ints,
    layout: Ints,
    lengths: Ints,
    g: int,
    bound: int,
    dropping: bool,
    alignment: int,
) -> int:
    """``core.finders``' scan of group ``g`` (``GroupLookup.finder``'s three kinds)."""
    width = layout.shape[1]
    kind, size, drop, step = layout[0, g], layout[1, g], layout[3, g], layout[4, g]
    per = layout[2]
    if kind == FULL:
        limit = -(-bound // size)
        blocks = 0
        while blocks < limit and _is_cached(stamp, point, units, per, width, lengths, g, blocks):
            blocks += 1
        raw = min(blocks * size, bound) - (drop if dropping else 0)
        return int(raw // alignment * alignment) if raw > 0 else 0
    if kind == WINDOW:
        need = layout[6, g] if dropping else layout[5, g]
        peek = layout[8, g] if dropping else layout[7, g]
        tail_end = bound // size
        while tail_end > peek:
            tail_end = peek + (tail_end - peek) // step * step
            if tail_end <= peek:
                break
            first = max(tail_end - need, 0)
            index = tail_end - 1
            while index >= first and _is_cached(stamp, point, units, per, width, lengths, g, index):
                index -= 1
            if index < first:
                return int((tail_end - peek) * size)
            tail_end = index
        return 0
    end = bound // step * step
    while end > 0:
        if _is_cached(stamp, point, units, per, width, lengths, g, end // size - 1):
            return int(end)
        end -= step
    return 0


@_compiled
def lookup_all(
    stamp: Stamps,
    units: Ints,
    layout: Ints,
    order: Ints,
    lengths: Ints,
    alignment: int,
    prompt: int,
    unit: int,
    last: int,
    longest: Ints,
    counted: bool,
    tallies: Ints,
    found: Ints,
) -> None:
    """Each point's ``(hit, longest)`` in ``found[point]`` (hit -1: refused, as
    ``sweep._one`` refuses, its tallies counted): ``HitReconciler.hit_lengths``."""
    groups = layout.shape[1]
    accepted = np.empty(groups, np.int64)
    max_hit = prompt - 1
    limit = prompt - prompt % unit
    for point in range(stamp.shape[1]):
        if longest[point] >= 0 and last > longest[point]:
            found[point, 0] = -1
            if counted:
                tallies[point, 5] += 1
                tallies[point, 6] += prompt
            continue
        accepted[:] = -1
        best = 0
        hit = max_hit
        while True:
            candidate = hit
            for index in order:
                known = accepted[index]
                if known >= 0 and (known == candidate or layout[0, index] == FULL):
                    if known < candidate:
                        candidate = known
                    continue
                drop = layout[9, index]
                bound = candidate
                if drop > 0:
                    bound = min(candidate + drop, limit)
                answer = _find(
                    stamp, point, units, layout, lengths, index, bound, drop > 0, alignment
                )
                accepted[index] = answer
                candidate = answer
                if answer > best:
                    best = answer
            if candidate >= hit:
                break
            hit = candidate
        found[point, 0] = hit
        found[point, 1] = best


@_compiled
def _take(stamp: Stamps, heads: Ints, point: int, key: int) -> None:
    """A hit takes a cached key: a free one leaves the queue (its entry goes stale)."""
    if stamp[key, point] > 0:
        heads[2, point] -= 1
        stamp[key, point] = HELD


@_compiled
def _free(stamp: Stamps, ring: Rings, heads: Ints, point: int, key: int) -> None:
    """A key joins the back of the free queue (an ``OrderedDict`` keeps a present
    key in its place); a full ring is compacted first. ``heads[:, point]``: the
    queue's front and back places, its keys, the ring's start and size."""
    if stamp[key, point] > 0:
        return
    tail, base, size = heads[1, point], heads[3, point], heads[4, point]
    if tail == size:
        tail = 0
        for place in range(heads[0, point], size):
            kept = ring[base + place]
            if stamp[kept, point] == place + 1:
                ring[base + tail] = kept
                stamp[kept, point] = tail + 1
                tail += 1
        heads[0, point] = 0
    ring[base + tail] = key
    stamp[key, point] = tail + 1
    heads[1, point] = tail + 1
    heads[2, point] += 1


@_compiled
def _evict(stamp: Stamps, ring: Rings, heads: Ints, point: int) -> int:
    """The front of the free queue leaves the cache; its key."""
    while True:
        place = heads[0, point]
        key = ring[heads[3, point] + place]
        heads[0, point] = place + 1
        if stamp[key, point] == place + 1:
            stamp[key, point] = ABSENT
            heads[2, point] -= 1
            return int(key)


@_compiled
def _give(
    stamp: Stamps,
    ring: Rings,
    heads: Ints,
    point: int,
    slots: Ints,
    g: int,
    first: int,
    end: int,
    null: int,
) -> int:
    """``ReplayPool._give`` of ``slots[g, first:end]`` in reverse; the blocks freed."""
    kept = 0
    for at in range(end - 1, first - 1, -1):
        key = slots[g, at]
        if key == null:
            continue
        kept += 1
        if key >= 0:
            _free(stamp, ring, heads, point, key)
    return kept


@_compiled
def run_all(
    stamp: Stamps,
    ring: Rings,
    heads: Ints,
    counts: Ints,
    peaks: Ints,
    tallies: Ints,
    units: Ints,
    layout: Ints,
    usable: Ints,
    found: Ints,
    plans: Ints,
    plan_at: Ints,
    slots: Ints,
    prompt: int,
    counted: bool,
    failed: Ints,
    codes: Ints,
) -> bool:
    """Admit and run the request in every point not refused: ``ReplayPool.admit``
    then ``ReplayPool.run`` of ``plans[plan_at[point]:]`` (``RequestPlan.flat``, its
    prefill tokens just before); ``codes``: ``plan``'s RELEASE and STATE, ``pool``'s
    NULL and PRIVATE.
    False, with ``failed`` = (point, blocks asked, blocks free), where a step asks
    for more blocks than the pool has free."""
    release, state, null, private = codes[0], codes[1], codes[2], codes[3]
    groups = layout.shape[1]
    per = layout[2]
    lengths = np.zeros(groups, np.int64)
    running = np.zeros(groups, np.bool_)
    for point in range(stamp.shape[1]):
        hit = found[point, 0]
        if hit < 0:
            continue
        held = 0
        for g in range(groups):  # admit: take the blocks the hit reuses
            kind, size = layout[0, g], layout[1, g]
            full = hit // size
            first = 0
            if kind == MAMBA:
                first = full - 1 if full else 0
            elif kind == WINDOW:
                first = max(hit - layout[10, g] + 1, 0) // size
            lengths[g] = full - first if kind == MAMBA else full
            if kind == WINDOW:
                slots[g, :first] = null
            for at in range(first, full):
                key = _block(units, per, groups, g, at)
                slots[g, at - first if kind == MAMBA else at] = key
                _take(stamp, heads, point, key)
                held += 1
        running[:] = False
        at = plan_at[point]
        for _ in range(plans[at]):
            at += 1
            count = plans[at]
            for g in range(groups):  # a state continues in place only in a private block
                if layout[0, g] == MAMBA and not (lengths[g] == 1 and slots[g, 0] == private):
                    running[g] = True
                    count += 1
            if count:
                spare = usable[point] - held - heads[2, point]
                if count > spare:
                    if count > spare + heads[2, point]:
                        failed[0] = point
                        failed[1] = count
                        failed[2] = spare + heads[2, point]
                        return False
                    for _ in range(count - spare):  # the front of the free queue
                        counts[point, _evict(stamp, ring, heads, point) % groups] -= 1
                    tallies[point, 7] += count - spare
                held += count
            at += 1
            for _ in range(plans[at]):
                g, more = plans[at + 1], plans[at + 2]
                slots[g, lengths[g] : lengths[g] + more] = private
                lengths[g] += more
                at += 2
            at += 1
            for _ in range(plans[at]):
                kind, g, works = plans[at + 1], plans[at + 2], plans[at + 3]
                at += 3
                if kind == release:
                    first, end = plans[at + 1], plans[at + 2]
                    held -= _give(stamp, ring, heads, point, slots, g, first, end, null)
                    slots[g, first:end] = null
                    at += 2 * works
                    continue
                if kind == state and running[g]:  # the state moves on from its block
                    running[g] = False
                    if lengths[g]:
                        held -= 1
                        key = slots[g, 0]
                        if key >= 0:
                            _free(stamp, ring, heads, point, key)
                    slots[g, 0] = private
                    lengths[g] = 1
                count = counts[point, g]
                for _ in range(works):  # offer (slot, block): cached unless its key is
                    slot, block = plans[at + 1], plans[at + 2]
                    at += 2
                    if slots[g, slot] != private:
                        continue
                    key = _block(units, per, groups, g, block)
                    if stamp[key, point] != ABSENT:
                        continue
                    stamp[key, point] = HELD
                    slots[g, slot] = key
                    count += 1
                counts[point, g] = count
                if count > peaks[point, g]:
                    peaks[point, g] = count
        for g in range(groups):
            held -= _give(stamp, ring, heads, point, slots, g, 0, lengths[g], null)
        if counted:
            tallies[point, 0] += 1
            tallies[point, 1] += prompt
            tallies[point, 2] += hit
            tallies[point, 3] += prompt
            tallies[point, 4] += plans[plan_at[point] - 1]
    return True
