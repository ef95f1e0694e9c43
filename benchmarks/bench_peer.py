"""The fast replay beside the peer, kvcache-simulator 0.1.3, on the conversation trace
(a benchmark, not a test; the peer is the ``peer`` extra).

Both in the peer's accounting: Llama 3.1 8B (131,072 bytes a token, in both
catalogs), the trace's own 512-token blocks, pools of ``floor(GiB x 2**30 /
(512 x 131,072))`` blocks at 8 to 1,024 GiB, hits counted over the last half
of the requests. Junction replays full attention on blocks of 512 with one
more block (the engine's null block); the peer runs its C++ backend and its
Python one. Timed, alternating in one process, ``--rounds`` times (each run
reads the trace itself):

- the three evictions (Junction LRU, FIFO, Belady; the peer LRU, FIFO, its
  optimal) and LRU alone, each side;
- Junction's hybrid sweep: Qwen3-Next 80B-A3B as ``junction hbm`` lays it
  out (blocks of 544, four groups), the four table variants x 8 budgets, LRU,
  on the default engine (compiled where numba imports) and on the Python one.

Junction's runs take the replay's default engine (``auto``: its LRU points
compiled where numba, the ``fast`` extra, imports). Before the rounds, the
compiled replay's first call is timed in a fresh process with an empty
numba cache (it compiles) and again with that cache (it loads), on the
trace's first requests. Prints each run's wall time, the medians and two
ratios with their targets: Junction's LRU over the peer's Python LRU (at
most 1), and the hybrid sweep over the peer's Python LRU (at most 2). Then
the hit rates of the last round. The differences of semantics are in docs/replay.md ("The peer") and
pinned by tests/replay/test_peer.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from junction.core import GroupSpec, HybridGeometry
from junction.reference.replay import Point, future_uses, replay
from junction.reference.replay.models import catalog_model
from junction.reference.replay.stream import hash_trace_requests
from junction.reference.simulator.variants import table_variants

TRACE = Path(__file__).resolve().parents[1] / "examples/traces/mooncake-conversation.jsonl.gz"
BUDGETS = (8, 16, 32, 64, 128, 256, 512, 1024)
BYTES_PER_TOKEN = 131_072  # Llama 3.1 8B, bf16: 32 layers x 2 x 8 heads x 128 x 2
BLOCK = 512
EVICTIONS = {"lru": "lru", "fifo": "fifo", "belady": "optimal"}
HYBRID = "qwen3-next-80b-a3b"

Rates = dict[str, list[float]]


def junction_side(evictions: Sequence[str]) -> Rates:
    """Full attention on the peer's blocks: ``evictions`` x 8 budgets, one pass."""
    geometry = HybridGeometry([GroupSpec.full(BLOCK)], BLOCK)
    requests = hash_trace_requests(TRACE, BLOCK)
    window = len(requests) // 2
    measured = sum(r.prompt_tokens for r in requests[window:])
    blocks = [gib * 2**30 // (BLOCK * BYTES_PER_TOKEN) + 1 for gib in BUDGETS]
    points = [Point("dense", None, b, e) for e in evictions for b in blocks]
    uses = future_uses(geometry, requests) if "belady" in evictions else None
    results = replay(geometry, requests, points, uses=uses, measure_from=window)
    rates: Rates = {e: [] for e in evictions}
    for result in results:
        rates[result.point.eviction].append(result.hit_tokens / measured)
    return rates


def hybrid_side(engine: str = "auto", first: int = 0) -> Rates:
    """``junction hbm --model qwen3-next-80b-a3b --evictions lru``'s replay: 32 points
    (of the trace's ``first`` requests; 0: all)."""
    model = catalog_model(HYBRID)
    geometry = HybridGeometry(model.groups(), model.block_size)
    requests = hash_trace_requests(TRACE, geometry.hash_block_size, first)
    interval = 4 * geometry.scheduler_block_size
    variants = table_variants(interval)
    points = [
        Point(v.policy, v.retention_interval, model.blocks(gib), "lru")
        for v in variants
        for gib in BUDGETS
    ]
    results = replay(geometry, requests, points, engine=engine)
    rates: Rates = {v.label: [] for v in variants}
    for variant, result in zip((v for v in variants for _ in BUDGETS), results, strict=True):
        rates[variant.label].append(result.token_hit_rate)
    return rates


def peer_side(backend: str, evictions: Sequence[str]) -> Rates:
    """The peer's sweep of ``evictions`` (Junction's names) x 8 budgets."""
    from kvcache_sim.simulator import run_sweep
    from kvcache_sim.trace import parse_trace_file

    trace = parse_trace_file(str(TRACE), block_size=BLOCK)
    policies = [EVICTIONS[e] for e in evictions]
    result = run_sweep(
        trace,
        model_id="llama-3.1-8b",
        budgets_gib=list(BUDGETS),
        policies=policies,
        backend=backend,
    )
    rates: Rates = {e: [] for e in evictions}
    for point in result["points"]:
        for ours in evictions:
            rates[ours].append(point["results"][EVICTIONS[ours]]["hitRate"])
    return rates


def _runs(peer: bool) -> dict[str, Callable[[], Rates]]:
    """Every timed run by name, in the order one round takes them."""
    every, lru = tuple(EVICTIONS), ("lru",)
    runs: dict[str, Callable[[], Rates]] = {}
    if peer:
        runs["peer C++, 3 evictions"] = lambda: peer_side("cpp", every)
        runs["peer Python, 3 evictions"] = lambda: peer_side("python", every)
    runs["Junction, 3 evictions"] = lambda: junction_side(every)
    if peer:
        runs["peer C++, LRU"] = lambda: peer_side("cpp", lru)
        runs["peer Python, LRU"] = lambda: peer_side("python", lru)
    runs["Junction, LRU"] = lambda: junction_side(lru)
    runs["Junction hybrid (Qwen3-Next, 4 x 8), LRU"] = hybrid_side
    runs["Junction hybrid, Python replay"] = lambda: hybrid_side("python")
    return runs


def first_calls() -> None:
    """The compiled replay's first call in a fresh process: with an empty numba cache
    (it compiles the kernels) and then with the cache that call wrote (it loads them)."""
    try:
        import junction.reference.replay.compiled  # noqa: F401
    except ImportError as error:
        print(f"the compiled replay does not import ({error}): every run is Python")
        return
    code = (
        "import time; started = time.perf_counter(); "
        "from benchmarks.bench_peer import hybrid_side; "
        "hybrid_side('compiled', 200); print(f'{time.perf_counter() - started:.1f}')"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        root = Path(__file__).resolve().parents[1]
        for label in ("empty numba cache (compiles)", "its cache (loads)"):
            done = subprocess.run(
                [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True
            )
            took = done.stdout.strip() or done.stderr.strip().splitlines()[-1]
            print(f"first compiled call, 200 requests, {label}: {took} s", flush=True)


def _peer_installed() -> bool:
    try:
        import kvcache_sim.simulator  # noqa: F401
    except ImportError:
        print("the peer (kvcache-simulator, the peer extra) is not installed")
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    args = parser.parse_args()
    peer = _peer_installed()
    first_calls()
    runs = _runs(peer)
    times: dict[str, list[float]] = {name: [] for name in runs}
    last: dict[str, Rates] = {}
    for round_ in range(1, args.rounds + 1):
        for name, run in runs.items():
            started = time.perf_counter()
            last[name] = run()
            times[name].append(time.perf_counter() - started)
            print(f"round {round_}: {name}: {times[name][-1]:.1f} s", flush=True)
        print(f"load average after round {round_}: {os.getloadavg()[0]:.2f}", flush=True)
    median = {name: statistics.median(seconds) for name, seconds in times.items()}
    print(f"\nmedian wall time of {args.rounds} rounds:")
    for name, seconds in median.items():
        print(f"  {name}: {seconds:.1f} s")
    if peer:
        python = median["peer Python, LRU"]
        ours = median["Junction, LRU"]
        hybrid = median["Junction hybrid (Qwen3-Next, 4 x 8), LRU"]
        met = {True: "met", False: "not met"}
        print(f"(a) Junction LRU / peer Python LRU: {ours / python:.2f} ({met[ours <= python]})")
        print(
            f"(b) hybrid / peer Python LRU: {hybrid / python:.2f} "
            f"(target 2; {met[hybrid <= 2 * python]})"
        )
    print("\nGiB: " + " ".join(f"{gib:>7}" for gib in BUDGETS))
    ours_rates = last["Junction, 3 evictions"]
    theirs = last.get("peer C++, 3 evictions")
    for eviction in EVICTIONS:
        print(f"{eviction:>6} junction: " + " ".join(f"{r:.4f}" for r in ours_rates[eviction]))
        if theirs is not None:
            print(f"{eviction:>6} peer:     " + " ".join(f"{r:.4f}" for r in theirs[eviction]))
    swept = last["Junction hybrid (Qwen3-Next, 4 x 8), LRU"]
    if swept != last["Junction hybrid, Python replay"]:
        print("the two engines' hybrid hit rates differ")
    for label, rates in swept.items():
        print(f"{HYBRID} {label}: " + " ".join(f"{r:.4f}" for r in rates))


if __name__ == "__main__":
    main()
