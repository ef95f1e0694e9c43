"""The fast replay beside the peer, kvcache-simulator 0.1.3, on the conversation trace
(a benchmark, not a test; the peer is the ``peer`` extra).

Both in the peer's accounting: Llama 3.1 8B (131,072 bytes a token, in both
catalogs), the trace's own 512-token blocks, pools of ``floor(GiB x 2**30 /
(512 x 131,072))`` blocks at 8 to 1,024 GiB, hits counted over the last half
of the requests. Junction replays full attention on blocks of 512 with one
more block (the engine's null block), LRU, FIFO and Belady eviction, in one
pass; the peer runs LRU, FIFO and its optimal, with its C++ backend and its
Python one, when it is importable. Prints each side's hit rates and wall
time. The differences of semantics are in docs/replay.md ("The peer") and
pinned by tests/replay/test_peer.py.
"""

from __future__ import annotations

import time
from pathlib import Path

from junction.core import GroupSpec, HybridGeometry
from junction.reference.replay import Point, future_uses, replay
from junction.reference.replay.stream import hash_trace_requests

TRACE = Path(__file__).resolve().parents[1] / "examples/traces/mooncake-conversation.jsonl.gz"
BUDGETS = (8, 16, 32, 64, 128, 256, 512, 1024)
BYTES_PER_TOKEN = 131_072  # Llama 3.1 8B, bf16: 32 layers x 2 x 8 heads x 128 x 2
BLOCK = 512
EVICTIONS = {"lru": "lru", "fifo": "fifo", "belady": "optimal"}


def junction_side() -> dict[str, list[float]]:
    started = time.perf_counter()
    geometry = HybridGeometry([GroupSpec.full(BLOCK)], BLOCK)
    requests = hash_trace_requests(TRACE, BLOCK)
    window = len(requests) // 2
    measured = sum(r.prompt_tokens for r in requests[window:])
    blocks = [gib * 2**30 // (BLOCK * BYTES_PER_TOKEN) + 1 for gib in BUDGETS]
    points = [Point("dense", None, b, e) for e in EVICTIONS for b in blocks]
    uses = future_uses(geometry, requests)
    results = replay(geometry, requests, points, uses=uses, measure_from=window)
    rates: dict[str, list[float]] = {e: [] for e in EVICTIONS}
    for result in results:
        rates[result.point.eviction].append(result.hit_tokens / measured)
    print(f"junction fast replay: {len(points)} points in {time.perf_counter() - started:.1f} s")
    return rates


def peer_side(backend: str) -> dict[str, list[float]] | None:
    try:
        from kvcache_sim.simulator import run_sweep
        from kvcache_sim.trace import parse_trace_file
    except ImportError:
        print("the peer (kvcache-simulator, the peer extra) is not installed")
        return None
    started = time.perf_counter()
    trace = parse_trace_file(str(TRACE), block_size=BLOCK)
    result = run_sweep(trace, model_id="llama-3.1-8b", budgets_gib=list(BUDGETS), backend=backend)
    print(f"peer ({backend}): {time.perf_counter() - started:.1f} s")
    rates: dict[str, list[float]] = {e: [] for e in EVICTIONS}
    for point in result["points"]:
        for ours, theirs in EVICTIONS.items():
            rates[ours].append(point["results"][theirs]["hitRate"])
    return rates


def main() -> None:
    ours = junction_side()
    theirs = peer_side("cpp")
    peer_side("python")
    print("GiB: " + " ".join(f"{gib:>7}" for gib in BUDGETS))
    for eviction in EVICTIONS:
        print(f"{eviction:>6} junction: " + " ".join(f"{r:.4f}" for r in ours[eviction]))
        if theirs is not None:
            print(f"{eviction:>6} peer:     " + " ".join(f"{r:.4f}" for r in theirs[eviction]))


if __name__ == "__main__":
    main()
