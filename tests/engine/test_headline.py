"""The seed's headline: junction pinning keeps the system prompt reusable at R = 0.

An agent workload (one shared system prompt, sessions arriving one after
another) on full attention + Mamba in align mode. Under retention 0, every
session after the first two reuses the system prompt (hit at least its
aligned length): the first caches full attention only, the second finds the
full-attention prefix without a Mamba state there (the junction) and leaves
one, and everyone after hits it. Meanwhile the Mamba group retains a small
fraction of the states dense retention keeps.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from junction.core import GroupKind, GroupSpec, HybridGeometry, floor_to
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.workloads.drive import run_workload
from junction.reference.workloads.sessions import agent_sessions

SYSTEM_PROMPT = 700
BLOCK = 16
SESSIONS = 12
TURNS = 3


def run(retention_interval: int | None) -> Engine:
    geometry = HybridGeometry(
        [GroupSpec.full(BLOCK), GroupSpec.mamba(BLOCK), GroupSpec.sliding_window(BLOCK, 128)],
        BLOCK,
        retention_interval=retention_interval,
    )
    engine = Engine(
        EngineConfig(
            geometry, num_blocks=20_000, max_num_batched_tokens=64, policy=JunctionPolicy()
        )
    )
    arrivals = agent_sessions(
        7,
        sessions=SESSIONS,
        turns=TURNS,
        system_prompt_tokens=SYSTEM_PROMPT,
        message_tokens=(200, 400),
        gap_steps=10**6,  # each turn finishes before the next arrives
    )
    run_workload(engine, arrivals, check=True)
    assert engine.pool.evictions == 0
    return engine


@pytest.mark.slow
def test_sessions_after_the_first_two_reuse_the_system_prompt(
    summary: Callable[[str], None],
) -> None:
    sparse, dense = run(0), run(None)
    aligned = floor_to(SYSTEM_PROMPT, BLOCK)
    hits = [request.hit_length for request in sparse.requests.values()]
    sparse_groups = [
        i for i, g in enumerate(sparse.geometry.groups) if g.kind is not GroupKind.FULL
    ]
    kept_sparse = sum(sparse.metrics.retained_peak.get(i, 0) for i in sparse_groups)
    kept_dense = sum(dense.metrics.retained_peak.get(i, 0) for i in sparse_groups)
    summary(
        f"hits under R=0 {hits}; sparse-group blocks retained (peak): "
        f"R=0 {kept_sparse}, dense {kept_dense}; token hit rate R=0 "
        f"{sparse.metrics.token_hit_rate:.3f}, dense {dense.metrics.token_hit_rate:.3f}"
    )
    assert hits[0] == 0
    assert all(hit >= aligned for hit in hits[2 * TURNS :]), hits
    for i in sparse_groups:
        group = sparse.geometry.groups[i].kind.value
        summary(
            f"{group}: R=0 {sparse.metrics.retained_peak.get(i, 0)}, "
            f"dense {dense.metrics.retained_peak.get(i, 0)}"
        )
    assert kept_sparse * 5 <= kept_dense * 2, (kept_sparse, kept_dense)  # at most 40%
