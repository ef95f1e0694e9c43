"""The compiled replay's memory is in ``hbm``'s estimate, checked before it allocates.

Its books (``compiled._Books``: a stamp per key, group and point, and each
point's ring) outgrow the Python pools' estimate many times over where the
pools are small; ``cli.inputs.ReplaySize`` counts them, so ``hbm`` replays in
Python where only that fits, and refuses in one line, exit 2, where neither
does. A ring is sized by the trace's keys where they are fewer than its pool,
so a pool far larger than the trace allocates no more than the trace needs.
"""

from __future__ import annotations

import tracemalloc

import pytest

from junction.command import dispatch as main
from junction.core import HybridGeometry
from junction.reference.cli import hbm, inputs
from junction.reference.replay import Point, replay
from junction.reference.replay.models import catalog_model
from junction.reference.replay.stream import replay_requests
from junction.reference.simulator.memory import MemoryLimit
from junction.reference.workloads.mooncake import parse_hash_trace
from junction.reference.workloads.tracefile import read_trace_text

from .test_engines import _require_numba

MODEL = "gemma-3-27b"  # seven groups: the books' stamp is seven ids a unit


def test_the_estimate_bounds_the_compiled_replays_books() -> None:
    """Sixteen small LRU pools over the trace's first requests: the books take more
    than the Python replay's estimate, and stay under the estimate with them."""
    _require_numba()
    memory = catalog_model(MODEL)
    geometry = HybridGeometry(memory.groups(), memory.block_size)
    trace = parse_hash_trace(read_trace_text(hbm.TRACE, 2**30), "mooncake")[:150]
    points = [Point("junction", 0, 50 + i) for i in range(16)]
    unit = geometry.hash_block_size
    pools = [point.num_blocks for point in points]
    size = inputs.ReplaySize.of(trace, unit, len(geometry.groups), pools, 1, False, pools)
    requests = replay_requests(trace, unit)
    replay(geometry, requests[:2], points[:1], engine="compiled")  # numba loads its kernels
    tracemalloc.start()
    try:
        replay(geometry, requests, points, engine="compiled")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert size.keys_bytes + size.pools_bytes < peak / 4
    assert peak < size.keys_bytes + size.pools_bytes + size.compiled_bytes


def test_hbm_replays_in_python_where_only_the_python_pools_fit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A limit above the Python replay's estimate and below the compiled books: one
    line saying so, and every point replayed in Python; below both: one line naming
    the Python replay's need, exit 2, and the replay never starts."""
    _require_numba()
    argv = ["hbm", "--model", MODEL, "--requests", "150", "--hbm", "0.25,0.26"]
    sizes: list[inputs.ReplaySize] = []

    def seen(option: str, size: inputs.ReplaySize, unit: int) -> None:
        sizes.append(size)
        raise inputs.InputError("stopped")

    with monkeypatch.context() as patch:
        patch.setattr(inputs, "check_replay_memory", seen)
        assert main(argv) == 2
    books, pools = sizes  # with the books, then every point in Python
    assert len(books.compiled) == 8 and not books.pools  # four variants, two pools, lru
    assert len(pools.pools) == 8 and not pools.compiled
    python = pools.keys_bytes + pools.pools_bytes
    assert books.compiled_bytes > 2 * python
    engines: list[str] = []
    real = hbm.replay_in_parallel

    def recorded(*args: object, **options: object) -> object:
        engines.append(str(options["engine"]))
        return real(*args, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(hbm, "replay_in_parallel", recorded)
    check = inputs.check_replay_memory

    def limited(limit: int) -> None:
        def checked(option: str, size: inputs.ReplaySize, unit: int) -> None:
            with monkeypatch.context() as patch:  # the trace's own checks keep the real limit
                patch.setattr(inputs, "memory_limit", lambda: MemoryLimit(limit, "a test"))
                check(option, size, unit)

        monkeypatch.setattr(inputs, "check_replay_memory", checked)

    limited(2 * python)
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err
    (note,) = [line for line in err.splitlines() if "replaying in Python" in line]
    assert "compiled books" in note and "over the limit" in note, note
    assert engines == ["python"]
    limited(python // 2)
    monkeypatch.setattr(hbm, "_replay", lambda *a: pytest.fail("the replay started"))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "over the limit" in err and "compiled books" not in err, err


def test_a_pool_far_larger_than_the_trace_sizes_its_ring_by_the_trace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A budget of ten million GiB: the rings hold the trace's keys, not the pool."""
    _require_numba()
    argv = ["hbm", "--model", "llama-3.1-8b", "--hbm", "10000000", "--requests", "5"]
    assert main([*argv, "--evictions", "lru"]) == 0, capsys.readouterr().err
