"""Both sides of the replay's equality, each request alone, recorded.

Besides the counts (:class:`RequestRecord`), the cached blocks themselves
after each request (:data:`Contents`): each cached block as its group, the
prefix length it ends and the request after which it (last) entered the
cache, so the engine's hashed blocks and the replay's keys compare as
multisets (by a digest: equal multisets give equal digests).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Iterable, Sequence

from junction.core import HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.eviction import eviction_policy
from junction.reference.policies.registry import resolve_policy
from junction.reference.replay import (
    Point,
    PrefixKeys,
    ReplayPool,
    ReplayRequest,
    RequestRecord,
    Usage,
    replay,
)
from junction.reference.simulator.geometries import GEOMETRIES

FLOPS = GEOMETRIES["full+swa+mamba"].flops  # a cost for every kind of group

Contents = int  # a digest of the multiset of (group, end, tag) over the cached blocks


class Tags:
    """The request after which each cached identity entered the cache (again), kept
    up to date from one request to the next by set differences."""

    def __init__(self) -> None:
        self.known: dict[Hashable, tuple[int, int, int]] = {}

    def contents(
        self,
        index: int,
        cached: Iterable[Hashable],
        where: Callable[[Hashable], tuple[int, int]],
    ) -> Contents:
        """The digest after request ``index``; ``where(identity)``: its (group, end)."""
        now = set(cached)
        for identity in self.known.keys() - now:
            del self.known[identity]
        for identity in now - self.known.keys():
            self.known[identity] = (*where(identity), index)
        return hash(frozenset(collections.Counter(self.known.values()).items()))


def engine_block(engine: Engine) -> Callable[[Hashable], tuple[int, int]]:
    """(group, end) of an engine's cached block by its key."""
    cached = engine.pool.cached

    def where(key: Hashable) -> tuple[int, int]:
        block = cached[key]  # type: ignore[index]
        return block.key[0] if block.key else -1, block.end

    return where


def engine_records(
    geometry: HybridGeometry,
    policy: str,
    num_blocks: int,
    eviction: str,
    budget: int,
    requests: Sequence[tuple[Sequence[int], int]],
    answers: Sequence[tuple[int, ...]] = (),
) -> tuple[list[RequestRecord], list[Contents]]:
    """Each ``(prompt, outputs)`` submitted when the engine is idle, run to its finish;
    ``answers``: each one's scripted answer (none by default)."""
    engine = Engine(
        EngineConfig(
            geometry,
            num_blocks=num_blocks,
            max_num_batched_tokens=budget,
            policy=resolve_policy(policy),
            eviction=eviction_policy(eviction, FLOPS),
        )
    )
    groups = range(len(geometry.groups))
    records, contents, tags = [], [], Tags()
    scripted = list(answers) or [()] * len(requests)
    for index, ((prompt, outputs), answer) in enumerate(zip(requests, scripted, strict=True)):
        request = engine.requests[engine.submit(tuple(prompt), outputs, answer=answer)]
        while not engine.idle:
            engine.step()
        cached = engine.pool.cached_blocks_per_group()
        peak = engine.metrics.retained_peak
        usage = Usage(
            engine.pool.evictions,
            tuple(cached.get(g, 0) for g in groups),
            tuple(peak.get(g, 0) for g in groups),
        )
        records.append(RequestRecord(request.hit_length, request.shared_prefix_boundary, usage))
        contents.append(tags.contents(index, engine.pool.cached, engine_block(engine)))
    return records, contents


def replay_records(
    geometry: HybridGeometry,
    policy: str,
    num_blocks: int,
    eviction: str,
    budget: int,
    requests: Sequence[ReplayRequest],
) -> tuple[list[RequestRecord], list[Contents]]:
    """The same from the fast replay (one point), with its pool's contents."""
    contents, tags, width = [], Tags(), len(geometry.groups)

    def observe(index: int, pool: ReplayPool) -> None:
        ends = pool.ends or {}
        contents.append(tags.contents(index, pool.cached, lambda k: (k % width, ends[k])))

    point = Point(policy, geometry.retention_interval, num_blocks, eviction)
    (result,) = replay(
        geometry,
        requests,
        [point],
        max_num_batched_tokens=budget,
        flops=FLOPS,
        keep_records=True,
        observe=observe,
    )
    assert result.refused == 0
    return list(result.records), contents


def token_requests(
    geometry: HybridGeometry, requests: Sequence[tuple[Sequence[int], int]]
) -> list[ReplayRequest]:
    keys = PrefixKeys(geometry.hash_block_size)
    return [ReplayRequest(len(p), n, keys.tokens(p)) for p, n in requests]


def assert_equal(
    expected: tuple[list[RequestRecord], list[Contents]],
    found: tuple[list[RequestRecord], list[Contents]],
) -> None:
    """Request by request: the same record, then the same cached blocks."""
    steps = zip(*expected, *found, strict=True)
    for index, (engine, engine_blocks, fast, fast_blocks) in enumerate(steps):
        assert fast == engine, f"request {index}: replay {fast} != engine {engine}"
        assert fast_blocks == engine_blocks, f"request {index}: the cached blocks differ"
