"""The engine compiled by mypyc runs step for step like the interpreted one.

``junction.reference.engine.compiled`` builds the engine's modules with
mypyc into a tree of their own (``make compiled-engine``; ``make test``
builds it first). Two child processes, one importing that tree and one the
checkout, run the same workloads: every built-in policy, on geometries with
windows, Mamba groups, EAGLE, partial hits and retention intervals, pools
tight enough to evict and preempt, aborts, an external tier, and
``check()`` after every step. Each run hashes every step's chunks, metrics,
cache map and operation count, then every request's end state; the two
lists must be equal. Each child also runs the promise harness (every
promise on ``junction``, which keeps them all; the junction promise on
``interval``, which breaks it): the same verdicts on the same examples, and
the same shrunk counterexample. The compiled child first confirms that its
engine modules are extension modules, not the ``.py`` files.

Without a fresh build the comparison skips, unless
``JUNCTION_REQUIRE_COMPILED`` is set (CI), where that is a failure. A
stale build is refused by name (``StaleBuild``); those refusals are pinned
below without building anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine import compiled
from junction.reference.engine.compiled import StaleBuild
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.tier import ExternalTier
from junction.reference.harness.promise import Promise
from junction.reference.harness.runner import run_conformance
from junction.reference.policies.builtin import IntervalPolicy, JunctionPolicy, builtin_policies

GEOMETRIES = [
    HybridGeometry(
        [GroupSpec.full(16), GroupSpec.sliding_window(16, 128), GroupSpec.mamba(16)],
        16,
        retention_interval=0,
    ),
    HybridGeometry(
        [GroupSpec.full(4), GroupSpec.sliding_window(4, 6), GroupSpec.mamba(8)],
        4,
        retention_interval=0,
    ),
    HybridGeometry([GroupSpec.full(8), GroupSpec.mamba(4)], 2, partial_hits=True, use_eagle=True),
    HybridGeometry([GroupSpec.full(4), GroupSpec.sliding_window(2, 5)], 2, retention_interval=8),
    HybridGeometry(
        [GroupSpec.full(8), GroupSpec.sliding_window(8, 32), GroupSpec.mamba(16)],
        8,
        retention_interval=32,
    ),
]


def run_digest(geometry: HybridGeometry, policy_name: str, pool: int, seed: int) -> str:
    """A hash of every step and of every request's end state, of one seeded workload."""
    rng = random.Random(seed)
    policy = builtin_policies()[policy_name]()
    tier = ExternalTier(200) if seed % 2 else None
    engine = Engine(
        EngineConfig(
            geometry,
            num_blocks=pool,
            max_num_batched_tokens=48,
            long_prefill_token_threshold=16 if seed % 2 else 0,
            seed=seed,
            policy=policy,
            tier=tier,
        )
    )
    digest = hashlib.sha256()

    def step() -> None:
        state = (engine.step(), engine.metrics, sorted(engine.pool.cached), engine.pool.operations)
        digest.update(repr(state).encode())
        engine.check()

    prefix = [rng.randrange(60) for _ in range(120)]
    submitted = []
    for _ in range(40):
        shared = rng.randrange(len(prefix) + 1)
        prompt = prefix[:shared] + [rng.randrange(60) for _ in range(rng.randrange(1, 40))]
        try:
            submitted.append(engine.submit(tuple(prompt), rng.randrange(1, 12)))
        except ValueError as refused:
            digest.update(str(refused).encode())
        for _ in range(rng.randrange(3)):
            if not engine.idle:
                step()
        if submitted and rng.random() < 0.05:
            engine.abort(rng.choice(submitted))
    while not engine.idle:
        step()
    ends = [
        (r.hit_length, r.shared_prefix_boundary, r.num_tokens, r.status, list(r.chain.hashes))
        for r in engine.requests.values()
    ]
    digest.update(repr(ends).encode())
    return digest.hexdigest()


def digests() -> list[str]:
    """Every run's digest, in a fixed order."""
    return [
        run_digest(geometry, name, pool, seed)
        for geometry in GEOMETRIES
        for name in sorted(builtin_policies())
        for pool, seed in ((60, 1), (400, 2))
    ]


def conformance() -> list[object]:
    """The promise harness on two policies: ``junction`` keeps every promise,
    ``interval`` (no pinning) breaks the junction promise, found and shrunk."""
    verdicts: list[object] = []
    for report in (
        run_conformance(JunctionPolicy(), examples=25, seed=0),
        run_conformance(IntervalPolicy(), examples=200, seed=0, promises=["junction"]),
    ):
        for verdict in report.verdicts:
            example = verdict.counterexample
            shrunk = None if example is None else example.to_json()
            verdicts.append([verdict.promise.value, verdict.status.value, verdict.examples, shrunk])
    return verdicts


def main() -> None:
    """In a child process: ``compiled`` as the argument first checks it runs the build."""
    if sys.argv[1:] == ["compiled"]:
        compiled.assert_compiled()
    print(json.dumps({"digests": digests(), "conformance": conformance()}))


def child(environment: dict[str, str], engine: str) -> dict[str, Any]:
    code = "import sys; from tests.engine.test_compiled import main; main()"
    done = subprocess.run(
        [sys.executable, "-P", "-c", code, engine],
        env={**environment, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_compiled_engine_runs_step_for_step_like_the_interpreted_one() -> None:
    try:
        environment = compiled.environment()
    except StaleBuild as missing:
        if os.environ.get("JUNCTION_REQUIRE_COMPILED"):
            raise
        pytest.skip(str(missing))
    interpreted = compiled.interpreted_environment()
    expected, found = child(interpreted, "interpreted"), child(environment, "compiled")
    runs = zip(expected["digests"], found["digests"], strict=True)
    differ = [i for i, (a, b) in enumerate(runs) if a != b]
    assert not differ, f"the compiled engine's runs {differ} differ from the interpreted ones"
    assert len(expected["digests"]) == len(GEOMETRIES) * len(builtin_policies()) * 2
    # The same examples, the same verdicts, the same shrunk counterexample.
    assert found["conformance"] == expected["conformance"]
    statuses = {(name, status) for name, status, _, _ in found["conformance"]}
    assert ("junction", "violated") in statuses  # interval's, the last verdict
    made = sum(p.applies_to(JunctionPolicy()) for p in Promise)  # the next turn: n/a
    assert sum(status == "kept" for _, status, _, _ in found["conformance"]) == made


def test_run_runs_a_module_on_the_compiled_engine() -> None:
    """``compiled run MODULE ARGS``: the child confirms the build before the module runs."""
    try:
        compiled.check_fresh()
    except StaleBuild as missing:
        if os.environ.get("JUNCTION_REQUIRE_COMPILED"):
            raise
        pytest.skip(str(missing))
    bench = ["benchmarks.bench_engine", "--engine=compiled", "--requests=40", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "junction.reference.engine.compiled", "run", *bench],
        cwd=compiled.ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["operations"] > 0


def manifest(directory: Path, sources: dict[str, str], python: str = sys.version) -> Path:
    (directory / compiled.MANIFEST).write_text(json.dumps({"python": python, "sources": sources}))
    return directory


def test_a_missing_build_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StaleBuild, match=r"no compiled engine \(run `make compiled-engine`\)"):
        compiled.check_fresh(tmp_path)


def test_a_build_of_other_sources_is_refused_naming_the_file(tmp_path: Path) -> None:
    sources = compiled.source_digests()
    compiled.check_fresh(manifest(tmp_path, sources))  # the working tree's own: fresh
    changed = dict(sources, **{"junction/reference/engine/engine.py": "0" * 64})
    with pytest.raises(StaleBuild, match=r"engine/engine\.py is changed since the build"):
        compiled.check_fresh(manifest(tmp_path, changed))
    gone = dict(sources, **{"junction/reference/engine/old.py": "0" * 64})
    with pytest.raises(StaleBuild, match=r"engine/old\.py is gone since the build"):
        compiled.check_fresh(manifest(tmp_path, gone))
    new = {k: v for k, v in sources.items() if not k.endswith("engine/request.py")}
    with pytest.raises(StaleBuild, match=r"engine/request\.py is new since the build"):
        compiled.check_fresh(manifest(tmp_path, new))


def test_a_build_for_another_python_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StaleBuild, match=r"built for Python '3\.0\.0'"):
        compiled.check_fresh(manifest(tmp_path, compiled.source_digests(), python="3.0.0"))


def test_the_interpreted_engine_is_not_taken_for_the_build() -> None:
    with pytest.raises(StaleBuild, match=r"engine\.block_pool was imported from .*\.py, not"):
        compiled.assert_compiled()


if __name__ == "__main__":
    main()
