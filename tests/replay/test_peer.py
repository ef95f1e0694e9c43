"""The fast replay against the peer, kvcache-simulator 0.1.3 (the ``peer`` extra), on an
attention-only cache of the trace's own 512-token blocks.

``peer_model.Cache`` is that cache with one switch per difference of semantics
(docs/replay.md, "The peer"). Its two ends are checked on the conversation
trace's first requests, LRU, FIFO and optimal (the engine's Belady), under
pressure: every switch on the peer's side finds the peer's hits (skipped
without the peer), every switch on the engine's side the fast replay's hits,
evictions and refusals. The ladder (:data:`LADDER`) turns the switches one at a
time from the peer's side to the engine's; each tiny trace below is built for
one difference, and its comment computes the hits and cached blocks at every
step: they change at that difference's step (and, where the pool is too small
for the engine to run the trace's requests, at 3's). The peer (where
installed) and the fast replay give the two ends.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path

import attrs
import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.replay import Point, PrefixKeys, ReplayRequest, future_uses, replay
from junction.reference.workloads.mooncake import parse_hash_trace
from tests import options

from .peer_model import ENGINE, PEER, Cache, Node, Outcome, Semantics, Trace

TRACE = Path(__file__).resolve().parents[2] / "examples/traces/mooncake-conversation.jsonl.gz"
REPLAY_EVICTION = {
    "lru": "lru",
    "fifo": "fifo",
    "optimal": "belady",
}  # the peer's name -> the replay's

# From the peer's semantics to the engine's, one difference a step: 2, 1, 4, 3, then 5
# (2 first: a hit never reaches a partial last block once 1 holds, so caching one then
# only fills the cache; the pool holding the running request needs the engine's eviction,
# and caching its outputs needs the pool to hold them).
LADDER = (
    PEER,
    attrs.evolve(PEER, whole_blocks_only=True),
    attrs.evolve(PEER, whole_blocks_only=True, last_token_recomputed=True),
    attrs.evolve(ENGINE, running_request_held=False, outputs_cached=False),
    attrs.evolve(ENGINE, outputs_cached=False),
    ENGINE,
)


def require_module(module: str, required: bool, option: str, missing: str) -> None:
    """Skip the test where ``module`` is not installed; fail it where ``option`` (given
    as ``required``) asks for it."""
    if importlib.util.find_spec(module) is None:
        if required:
            pytest.fail(f"{option} is given but {missing}")
        pytest.skip(missing)


def _require_peer() -> None:
    missing = "kvcache-simulator is not installed (the peer extra; `make setup` installs it)"
    require_module("kvcache_sim", options.require_peer, "--require-peer", missing)


def peer_run(trace: Trace, capacity: int, eviction: str) -> int:
    """The peer's hit tokens over the last half of the requests (its Python backend)."""
    _require_peer()
    from kvcache_sim.plan import build_execution_plan
    from kvcache_sim.policies import simulate_policy
    from kvcache_sim.trace import parse_trace_lines

    lines = [json.dumps({"input_length": n, "hash_ids": list(ids)}) for n, ids in trace]
    plan = build_execution_plan(parse_trace_lines(lines, block_size=512), warmup_fraction=0.5)
    result = simulate_policy(plan, eviction, capacity)
    assert result.measurementMode == "fixed_window"  # the cache filled in the first half
    return int(result.hitTokens)


def replay_run(
    trace: Trace, capacity: int, eviction: str, measure_from: int, outputs: Sequence[int] = ()
) -> tuple[int, ...]:
    """The fast replay's hit tokens, evictions and refusals: full attention on blocks of
    512, each request's output tokens (one by default), ``capacity`` blocks besides the
    null block."""
    geometry = HybridGeometry([GroupSpec.full(512)], 512)
    keys = PrefixKeys(512)
    counts = list(outputs) or [1] * len(trace)
    stream = [
        ReplayRequest(n, out, keys.hash_ids(ids, n))
        for (n, ids), out in zip(trace, counts, strict=True)
    ]
    point = Point("dense", None, capacity + 1, REPLAY_EVICTION[eviction])
    uses = future_uses(geometry, stream)
    (result,) = replay(geometry, stream, [point], uses=uses, measure_from=measure_from)
    return result.hit_tokens, result.evictions, result.refused


def model(
    trace: Trace, capacity: int, eviction: str, semantics: Semantics, outputs: Sequence[int] = ()
) -> Outcome:
    return Cache(trace, capacity, eviction, semantics, outputs).run()


# -- the two ends, on the trace ---------------------------------------------------
# (requests, capacity): the first 400 requests under two pools, and the whole trace
# under the benchmark's 8 GiB (128 blocks; a few minutes, with --whole-trace).
SCALES = [(400, 24), (400, 96), pytest.param(0, 128, marks=pytest.mark.whole_trace)]


@pytest.fixture(scope="module")
def conversation() -> tuple[Trace, tuple[int, ...]]:
    """The conversation trace's requests by timestamp (file order on ties), and their
    output tokens."""
    requests = parse_hash_trace(gzip.decompress(TRACE.read_bytes()).decode(), str(TRACE))
    ordered = sorted(requests, key=lambda r: r.timestamp)
    return [(r.input_length, r.hash_ids) for r in ordered], tuple(r.output_length for r in ordered)


@pytest.mark.parametrize(("requests", "capacity"), SCALES)
@pytest.mark.parametrize("eviction", ["lru", "fifo", "optimal"])
def test_the_model_with_the_peers_semantics_is_the_peer(
    conversation: tuple[Trace, tuple[int, ...]], requests: int, capacity: int, eviction: str
) -> None:
    trace = conversation[0][: requests or None]
    outcome = model(trace, capacity, eviction, PEER)
    assert outcome.evictions > 0
    assert outcome.measured(len(trace) // 2) == peer_run(trace, capacity, eviction)


@pytest.mark.parametrize(("requests", "capacity"), SCALES)
@pytest.mark.parametrize("eviction", ["lru", "fifo", "optimal"])
def test_the_model_with_the_engines_semantics_is_the_fast_replay(
    conversation: tuple[Trace, tuple[int, ...]], requests: int, capacity: int, eviction: str
) -> None:
    """With the trace's output lengths: the running request holds its output's blocks
    and the pool caches the full ones."""
    trace, outputs = (part[: requests or None] for part in conversation)
    outcome = model(trace, capacity, eviction, ENGINE, outputs)
    assert outcome.evictions > 0
    found = (outcome.measured(0), outcome.evictions, outcome.refused)
    assert found == replay_run(trace, capacity, eviction, 0, outputs)


# The peer's pools for Llama 3.1 8B (131,072 bytes a token) and Qwen3 8B (147,456) at
# 3 to 200 GiB: floor(GiB x 2**30 / (512 x bytes)) blocks of 512 tokens.
BUDGETS = [
    pytest.param(gib * 2**30 // (512 * size), id=f"{name}-{gib}GiB")
    for name, size in (("llama-3.1-8b", 131_072), ("qwen3-8b", 147_456))
    for gib in (3, 12, 20, 48, 96, 200)
]


@pytest.mark.whole_trace
@pytest.mark.parametrize("capacity", BUDGETS)
def test_on_the_whole_trace_the_replay_is_the_peer_and_the_five_steps(
    conversation: tuple[Trace, tuple[int, ...]], capacity: int
) -> None:
    """LRU, hits over the last half: the ladder's first step is the peer's and its last
    the fast replay's (hits and evictions), so the replay's hits are the peer's plus the
    five steps' changes, exactly (docs/replay.md lists them per budget)."""
    trace, outputs = conversation
    half = len(trace) // 2
    assert model(trace, capacity, "lru", PEER).measured(half) == peer_run(trace, capacity, "lru")
    engine = model(trace, capacity, "lru", ENGINE, outputs)
    hits, evictions, _ = replay_run(trace, capacity, "lru", half, outputs)
    assert (engine.measured(half), engine.evictions) == (hits, evictions)


# -- the ladder, on tiny traces ----------------------------------------------------
@attrs.frozen
class Case:
    """A trace, a cache, the hits over its last half at each step of :data:`LADDER`
    and the blocks cached at the end at each step."""

    name: str
    trace: Trace
    capacity: int
    eviction: str
    hits: tuple[int, int, int, int, int, int]
    cached: tuple[frozenset[Node], ...]
    outputs: tuple[int, ...] = ()  # each request's output tokens (one by default)


def blocks(*paths: Node) -> frozenset[Node]:
    return frozenset(paths)


CASES = [
    Case(
        # Whole shared blocks and a partial tail of each prompt's own: nothing differs.
        # Measured: (1, 2, 3) hits 1,536 tokens, (4, 5, 6, 7, 14) nothing, (4, 5, 15)
        # hits 1,024 tokens. The cached blocks differ: the peer, which caches partial
        # tails, evicted to hold them; the engine's pool, holding the five blocks of
        # (4, 5, 6, 7, 14) while it runs, evicted (1, 2, 3) and (1, 2).
        "agree",
        [
            (1024 + 100, [1, 2, 10]),
            (1536 + 7, [1, 2, 3, 11]),
            (512 + 300, [1, 12]),
            (1536 + 1, [1, 2, 3, 13]),
            (2048 + 50, [4, 5, 6, 7, 14]),
            (1024 + 20, [4, 5, 15]),
        ],
        6,
        "lru",
        (2560,) * 6,
        (
            blocks((4,), (4, 5), (4, 5, 6), (4, 5, 6, 7), (4, 5, 6, 7, 14), (4, 5, 15)),
            blocks((1,), (1, 2), (4,), (4, 5), (4, 5, 6), (4, 5, 6, 7)),
            blocks((1,), (1, 2), (4,), (4, 5), (4, 5, 6), (4, 5, 6, 7)),
            blocks((1,), (1, 2), (4,), (4, 5), (4, 5, 6), (4, 5, 6, 7)),
            blocks((1,), (4,), (4, 5), (4, 5, 6), (4, 5, 6, 7)),
            blocks((1,), (4,), (4, 5), (4, 5, 6), (4, 5, 6, 7)),
        ),
    ),
    Case(
        # 1: a resend of a prompt of two whole blocks hits both in the peer; a hit
        # covers at most P - 1 = 1,023 tokens here: one block. (The engine's pool then
        # evicts the cached second block to compute it again: the pool is full.)
        "last token",
        [(1024, [1, 2]), (1024, [1, 2])],
        2,
        "lru",
        (1024, 1024, 512, 512, 512, 512),
        (blocks((1,), (1, 2)),) * 6,
    ),
    Case(
        # 2: the peer caches the partial last block (188 tokens) and a resend hits it.
        "partial block",
        [(700, [1, 2]), (700, [1, 2])],
        2,
        "lru",
        (700, 512, 512, 512, 512, 512),
        (blocks((1,), (1, 2)),) + (blocks((1,)),) * 5,
    ),
    Case(
        # Both keep the running request's hits: the second request hits (1,), (1, 2),
        # which fill the cache, and adds nothing (the peer protects its path's cached
        # blocks, the engine's request holds them); the third hits both. 3: the pool of
        # two refuses the three-block requests.
        "hits protected",
        [(1024, [1, 2]), (1536, [1, 2, 3]), (1025, [1, 2, 5])],
        2,
        "lru",
        (2048, 2048, 2048, 2048, 0, 0),
        (blocks((1,), (1, 2)),) * 6,
    ),
    Case(
        # 4, LRU: the peer protects the blocks on the request's path when it starts,
        # not those it adds: to add (1, 2, 3) to a full cache it evicts (1, 2), just
        # added, and stops (the parent is gone): the resend hits (1,). The engine's
        # request holds what it cached: nothing to evict, it stops at (1, 2), which the
        # resend hits. 3: a pool of two holds no request of four blocks: both refused.
        "added blocks unprotected",
        [(1536 + 10, [1, 2, 3, 4]), (1536 + 10, [1, 2, 3, 4])],
        2,
        "lru",
        (512, 512, 512, 1024, 0, 0),
        (blocks((1,)),) * 3 + (blocks((1,), (1, 2)), blocks(), blocks()),
    ),
    Case(
        # 4, FIFO: the peer's queue holds every block, the running request's too. The
        # third request hits (5,), (5, 6) and, adding (5, 6, 7) and (5, 6, 7, 8), evicts
        # (1, 2) (the peer's own run: its partial (5, 6, 91)) and then (5,), its own
        # hit: the resend hits nothing. The engine evicts free blocks only: (1, 2), then
        # nothing is free and it stops; the resend hits (5,), (5, 6), (5, 6, 7). 3: the
        # pool of three refuses both five-block requests.
        "fifo protects nothing",
        [
            (1025, [1, 2, 90]),
            (1025, [5, 6, 91]),
            (2049, [5, 6, 7, 8, 92]),
            (2049, [5, 6, 7, 8, 93]),
        ],
        3,
        "fifo",
        (1024, 1024, 1024, 2560, 0, 0),
        (
            blocks((5, 6, 7), (5, 6, 7, 8), (5, 6, 7, 8, 93)),
            blocks((5, 6), (5, 6, 7), (5, 6, 7, 8)),
            blocks((5, 6), (5, 6, 7), (5, 6, 7, 8)),
            blocks((5,), (5, 6), (5, 6, 7)),
            blocks((5,), (5, 6)),
            blocks((5,), (5, 6)),
        ),
    ),
    Case(
        # 4, optimal: (3,) is never used again and (1, 2), the only leaf, is used next
        # by the third request: the peer declines to cache (3,) and both later requests
        # hit (1,), (1, 2). The engine caches every block: its Belady evicts (1, 2) (used
        # as soon as (1,), and the deeper) for (3,); the third request hits (1,) and
        # caches (1, 2) again in place of (3,); the fourth hits both. 3: the engine's
        # pool of two refuses the three-block requests (the second request, of two
        # blocks, evicted both for its own).
        "optimal declines",
        [(1024, [1, 2]), (513, [3, 91]), (1025, [1, 2, 92]), (1025, [1, 2, 93])],
        2,
        "optimal",
        (2048, 2048, 2048, 1536, 0, 0),
        (blocks((1,), (1, 2)),) * 4 + (blocks((3,)),) * 2,
    ),
    Case(
        # 3: caching whole blocks only (from step 1), the peer's two blocks of cache hold
        # (1,), (1, 2) and the resend hits both; the engine's pool must hold all three of
        # the running request's blocks: a pool of two refuses it. (2: the peer's own
        # run adds the partial (1, 2, 3) by evicting (1, 2), just added, and stops.)
        "running request",
        [(1024 + 100, [1, 2, 3]), (1024 + 100, [1, 2, 3])],
        2,
        "lru",
        (512, 1024, 1024, 1024, 0, 0),
        (
            blocks((1,)),
            *[blocks((1,), (1, 2))] * 3,
            blocks(),
            blocks(),
        ),
    ),
    Case(
        # 5: the third request's output fills two blocks past its prompt's. Cached under
        # keys no prompt has, they are free blocks of the cache when it finishes, and the
        # fourth request's two blocks evict the least recently freed, (1, 2) and (1,): the
        # resend hits nothing. Uncached, they go back unhashed, the fourth request takes
        # them and the resend hits (1,). (1: the resend's second block holds its last
        # token. 3: the third request, three blocks with its output, evicts (8,)'s three
        # blocks at 3, 4 and 5 alike, as the peer and step 3 do caching (3,), (4,), (4, 5).)
        "output cached",
        [(1536, [8, 9, 10]), (1024, [1, 2]), (512, [3]), (1024, [4, 5]), (1024, [1, 2])],
        5,
        "lru",
        (1024, 1024, 512, 512, 512, 0),
        (blocks((1,), (1, 2), (3,), (4,), (4, 5)),) * 6,
        (1, 1, 1025, 1, 1),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_difference_changes_the_hits_at_its_own_step(case: Case) -> None:
    outcomes = [model(case.trace, case.capacity, case.eviction, s, case.outputs) for s in LADDER]
    middle = len(case.trace) // 2
    assert tuple(o.measured(middle) for o in outcomes) == case.hits
    assert tuple(o.cached for o in outcomes) == case.cached


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_peer_is_the_first_step(case: Case) -> None:
    assert peer_run(case.trace, case.capacity, case.eviction) == case.hits[0]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_fast_replay_is_the_last_step(case: Case) -> None:
    middle = len(case.trace) // 2
    hits, _, _ = replay_run(case.trace, case.capacity, case.eviction, middle, case.outputs)
    assert hits == case.hits[-1]
