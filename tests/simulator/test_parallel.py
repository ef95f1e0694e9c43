"""``simulator.parallel``: the same results in this process, in worker processes and on Ray.

Every run builds its own engine from the same seed, so where it runs must not
change a single number: the tests compare whole ``RunResult`` values (every
field, the latency percentiles included), in the order of the specs, and
check that a run's error reaches the caller with its own type. The Ray test
starts a local Ray of 2 CPUs once for the module (about 15 s on 2 cores);
where Ray is not installed it is skipped with the reason, except where it
is required (``ray_support``: under CI, `make setup` installs it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import attrs
import pytest

from junction.reference.simulator import parallel
from junction.reference.simulator.geometries import GEOMETRIES
from junction.reference.simulator.parallel import (
    BuiltinSource,
    RayUnreachable,
    RunSpec,
    TraceSource,
    load_workload,
    run_all,
    run_spec,
)
from junction.reference.simulator.pool import PoolSize
from junction.reference.simulator.result import RunResult
from junction.reference.simulator.run import Settings, run_one
from junction.reference.simulator.variants import Variant
from junction.reference.workloads.drive import PoolTooSmall
from junction.reference.workloads.trace import TraceError
from tests.groups import WALL_CLOCK

from .ray_support import require_ray

SETTINGS = Settings(
    num_blocks=4000,
    max_num_batched_tokens=512,
    chunk_tokens=128,
    use_eagle=False,
    concurrency=3,
    seed=0,
)
BUILTIN = BuiltinSource(seed=1, sessions=6, turns=3, system_prompt_tokens=300)
VARIANTS = (Variant("dense", None), Variant("interval", 0), Variant("junction", 0))


def hash_trace(path: Path) -> TraceSource:
    """A small hash-id trace: 10 requests sharing a 2-block prefix, 1 s apart."""
    lines = [
        {
            "timestamp": 1000 * i,
            "input_length": 512 * 3 + 100 + 40 * i,
            "output_length": 16,
            "hash_ids": [0, 1, 100 + i % 3, 200 + i],
        }
        for i in range(10)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return TraceSource(str(path))


@pytest.fixture
def specs(tmp_path: Path) -> list[RunSpec]:
    """Both workload kinds, two geometries, three pool kinds, three variants: 30 runs."""
    trace = hash_trace(tmp_path / "trace.jsonl")
    built_in = [
        RunSpec(BUILTIN, geometry, variant, SETTINGS, pool)
        for pool in (None, PoolSize("fraction", 0.5), PoolSize("tokens", 4096))
        for geometry in ("full+mamba", "full+swa")
        for variant in VARIANTS
    ]
    traced = [
        RunSpec(trace, geometry, variant, SETTINGS, PoolSize("unbounded", None), "default")
        for geometry in ("gpt-oss", "full+mamba")
        for variant in VARIANTS
    ]
    return built_in + traced


def test_processes_give_the_sequential_results_in_order(specs: list[RunSpec]) -> None:
    heard: list[RunResult] = []
    sequential = run_all(specs, jobs=1)
    in_processes = run_all(specs, jobs=2, on_result=heard.append)
    assert in_processes == sequential
    assert [(r.geometry, r.variant) for r in sequential] == [(s.geometry, s.variant) for s in specs]
    assert sorted(heard, key=in_processes.index) == in_processes  # each heard once
    assert len({r.token_hit_rate for r in sequential}) > 3  # the runs do differ


def test_a_spec_is_run_one_on_its_loaded_workload_and_resolved_settings(
    specs: list[RunSpec],
) -> None:
    for spec in (specs[6], specs[-1]):  # a fraction of the working set; a trace at its times
        workload = spec.source.load()
        assert spec.pool is not None
        geometry = GEOMETRIES[spec.geometry].build(None, False)
        blocks = spec.pool.blocks(geometry, workload)
        assert blocks is not None
        arrivals = "trace" if spec.arrivals == "default" else spec.settings.arrivals
        settings = attrs.evolve(spec.settings, num_blocks=blocks, arrivals=arrivals)
        assert run_spec(spec) == run_one(spec.geometry, spec.variant, workload, settings)
    assert specs[-1].source.load().timestamped  # the default chose the trace's times


def test_a_worker_loads_a_workload_once_while_its_source_repeats(
    specs: list[RunSpec], monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[object] = []
    original = BuiltinSource.load

    def counted(self: BuiltinSource) -> object:
        loads.append(self)
        return original(self)

    monkeypatch.setattr(BuiltinSource, "load", counted)
    monkeypatch.setattr(parallel, "_loaded", None)
    run_all(specs[:6], jobs=1)
    assert loads == [BUILTIN]
    other = attrs.evolve(BUILTIN, seed=2)
    assert load_workload(other) is load_workload(other)
    assert loads == [BUILTIN, other]


def test_a_run_error_reaches_the_caller_with_its_type(tmp_path: Path) -> None:
    small = RunSpec(BUILTIN, "full+swa", VARIANTS[0], attrs.evolve(SETTINGS, num_blocks=8))
    fine = RunSpec(BUILTIN, "full+swa", VARIANTS[0], SETTINGS)
    with pytest.raises(PoolTooSmall, match="blocks"):
        run_all([fine, small, fine], jobs=2)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"timestamp": 0, "input_length": 10, "output_length": 1}\n')
    with pytest.raises(TraceError, match=re.escape("broken.jsonl:1: field 'hash_ids'")):
        run_all([RunSpec(TraceSource(str(broken)), "full+swa", VARIANTS[0], SETTINGS)] * 2, jobs=2)


@pytest.mark.parametrize(
    ("jobs", "ray", "message"),
    [
        (0, None, "jobs=0: must be an int >= 1 or None"),
        (True, None, "jobs=True: must be an int >= 1 or None"),
        (2, "auto", "jobs=2: must be None with ray='auto'"),
    ],
)
def test_bad_arguments_are_named(jobs: int, ray: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run_all([], jobs=jobs, ray=ray)


@pytest.fixture(scope="module")
def local_ray(pytestconfig: pytest.Config) -> Iterator[ModuleType]:
    ray = require_ray(pytestconfig)
    ray.init(num_cpus=2, include_dashboard=False)
    yield ray
    ray.shutdown()


@WALL_CLOCK  # `ray="auto"` joins a Ray running on this machine: one at a time
def test_ray_gives_the_sequential_results_in_order(
    specs: list[RunSpec], local_ray: ModuleType
) -> None:
    heard: list[RunResult] = []
    on_ray = run_all(specs, ray="auto", on_result=heard.append)
    assert on_ray == run_all(specs, jobs=1)
    assert sorted(heard, key=on_ray.index) == on_ray
    assert local_ray.is_initialized()  # the caller's Ray is left running
    small = RunSpec(BUILTIN, "full+swa", VARIANTS[0], attrs.evolve(SETTINGS, num_blocks=8))
    with pytest.raises(PoolTooSmall, match="blocks"):
        run_all([specs[0], small], ray="auto")


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("127.0.0.1:1", "no Ray cluster answers at 127.0.0.1:1"),
        ("ray://127.0.0.1:1", "no Ray cluster answers at ray://127.0.0.1:1"),
        ("nowhere", "'nowhere' is not HOST:PORT, ray://HOST:PORT or auto"),
        ("host:port", "'host:port' is not HOST:PORT"),
        # An unclosed IPv6 bracket: urllib's own ValueError, named as the address's.
        ("ray://[::1", r"'ray://\[::1' is not HOST:PORT"),
        ("[::1", r"'\[::1' is not HOST:PORT"),
    ],
)
def test_an_unreachable_ray_fails_at_once(
    address: str, message: str, pytestconfig: pytest.Config
) -> None:
    require_ray(pytestconfig)
    with pytest.raises(RayUnreachable, match=message):
        run_all([], ray=address)
