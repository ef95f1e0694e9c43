"""The same config and submissions give the same run, step for step, in any process.

Two runs in one process share every hash salt, so they cannot show that a
run depends on ``PYTHONHASHSEED`` (a ``str`` or ``bytes`` hashed into the
block-hash chain or the output tokens would). Here two subprocesses with
different seeds run the same workloads and print a digest of every step:
the scheduled chunks, the metrics and the cache map; the lists must match.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.request import RequestStatus
from junction.reference.policies.builtin import JunctionPolicy

ROOT = Path(__file__).resolve().parents[2]

GEOMETRIES = [
    HybridGeometry(
        [GroupSpec.full(4), GroupSpec.sliding_window(4, 6), GroupSpec.mamba(8)],
        4,
        retention_interval=0,
    ),
    HybridGeometry([GroupSpec.full(8), GroupSpec.mamba(4)], 2, partial_hits=True, use_eagle=True),
    HybridGeometry([GroupSpec.full(4), GroupSpec.sliding_window(2, 5)], 2, retention_interval=8),
]


def step_digests(geometry: HybridGeometry) -> list[str]:
    """One sha256 per step of a workload with shared prefixes, eviction and preemption."""
    rng = random.Random(7)
    engine = Engine(
        EngineConfig(
            geometry,
            # The least pool every request fits alone (Engine.blocks_at_peak: 26
            # for the 54 + 5 token request with the window of 5): tight enough
            # to force eviction and preemption.
            num_blocks=27,
            max_num_batched_tokens=24,
            long_prefill_token_threshold=16,
            seed=3,
            policy=JunctionPolicy(),
        )
    )
    prefix = [rng.randrange(50) for _ in range(40)]
    for _ in range(16):
        shared = rng.randrange(len(prefix) + 1)
        prompt = prefix[:shared] + [rng.randrange(50) for _ in range(rng.randrange(1, 20))]
        engine.submit(tuple(prompt), rng.randrange(1, 6))
    digests = []
    outputs = []
    while not engine.idle and len(digests) < 2_000:
        chunks = engine.step()
        engine.check()
        state = (chunks, engine.metrics, sorted(engine.pool.cached))
        digests.append(hashlib.sha256(repr(state).encode()).hexdigest())
        # A finished request's tokens are readable until the next step.
        outputs += [
            tuple(engine.requests[request_id].tokens)
            for request_id, _, _ in chunks
            if engine.requests[request_id].status is RequestStatus.FINISHED
        ]
    digests.append(hashlib.sha256(repr(outputs).encode()).hexdigest())
    metrics = engine.metrics
    assert engine.idle and metrics.hit_tokens and metrics.evictions and metrics.preemptions, metrics
    return digests


def main() -> None:
    for geometry in GEOMETRIES:
        print(" ".join(step_digests(geometry)))


def run_in_subprocess(hash_seed: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", "from tests.engine.test_determinism import main; main()"],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_two_processes_with_different_hash_seeds_run_step_for_step_alike() -> None:
    first, second = run_in_subprocess("1"), run_in_subprocess("2")
    assert len(first) == len(GEOMETRIES)
    for geometry, a, b in zip(GEOMETRIES, first, second, strict=True):
        steps_a, steps_b = a.split(), b.split()
        diverged = next(
            (i for i, (x, y) in enumerate(zip(steps_a, steps_b, strict=False)) if x != y), None
        )
        assert steps_a == steps_b, f"{geometry}: runs diverge at step {diverged}"
