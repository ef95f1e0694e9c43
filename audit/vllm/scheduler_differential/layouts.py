"""The layouts the scheduler differential runs on: one per hybrid configuration.

A layout is a geometry as vLLM 0.33.0 would build it, a pool small enough to
evict and preempt, a per-step budget and the engine options the scheduler runs
with; :func:`layouts` is the list the run and its fast slice
(``tests/audit/test_dropin_engine.py``) take, data rather than logic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from junction.core import GroupSpec, HybridGeometry
from junction.upstream.vllm_0_33.specs import vllm_geometry

from ..scheduler import build_scheduler
from . import connector as external
from .connector import Connector, Loads

__all__ = ["Layout", "layouts"]

# 96 blocks shared by the groups: a few requests at once, so the pool evicts
# and, with the long outputs, preempts.
_POOL = 96


@attrs.frozen
class Layout:
    """One hybrid configuration: its geometry, pool and per-step budget, and
    the engine options the scheduler runs with (lookahead hashes, a backend
    writing internal prefill checkpoints on tiles of that many tokens, a KV
    connector's external hits, :mod:`.connector`)."""

    name: str
    geometry: HybridGeometry
    num_blocks: int
    budget: int
    max_num_seqs: int = 8
    hash_lookahead_tokens: int = 0
    prefill_checkpoint_alignment: int | None = None
    connector: Connector | None = None

    def build_scheduler(self) -> Any:
        """A fresh real vLLM ``Scheduler`` with this layout's pool, budget and
        options (its connector not yet seeded with external prefixes)."""
        connector = self.connector
        return build_scheduler(
            self.geometry,
            num_blocks=self.num_blocks,
            max_num_batched_tokens=self.budget,
            max_num_seqs=self.max_num_seqs,
            hash_lookahead_tokens=self.hash_lookahead_tokens,
            prefill_checkpoint_alignment=self.prefill_checkpoint_alignment,
            kv_transfer_config=(
                None
                if connector is None
                else external.transfer_config(self.geometry.scheduler_block_size, connector)
            ),
        )


def layouts() -> list[Layout]:
    """The layouts of the differential run: each engine option the drop-in supports
    (retention, block sizes and hash units, windows, EAGLE and its draft groups,
    lookahead hashes, internal checkpoints, a KV connector), alone and combined."""
    full, mamba, window = GroupSpec.full, GroupSpec.mamba, GroupSpec.sliding_window
    found: list[Layout] = []

    def add(
        name: str,
        groups: Sequence[GroupSpec],
        unit: int,
        lookahead: int = 0,
        checkpoints: int | None = None,
        connector: Connector | None = None,
        **opts: Any,
    ) -> None:
        geometry = vllm_geometry(groups, unit, **opts)
        budget = max(4 * geometry.scheduler_block_size, 64)
        layout = Layout(name, geometry, _POOL, budget, 8, lookahead, checkpoints, connector)
        found.append(layout)

    for r in (None, 0, 32):
        add(f"full16+mamba16 R={r}", [full(16), mamba(16)], 16, retention_interval=r)
    for r in (None, 0):
        add(f"full8+mamba16 R={r}", [full(8), mamba(16)], 8, retention_interval=r)
        add(f"full16+mamba64 H=16 (partial) R={r}", [full(16), mamba(64)], 16, retention_interval=r)
        add(f"full64+mamba64 H=16 (partial) R={r}", [full(64), mamba(64)], 16, retention_interval=r)
    add("full32+mamba64 H=16 (partial) R=64", [full(32), mamba(64)], 16, retention_interval=64)
    for w in (1, 40, 70):
        for r in (None, 0):
            add(f"full16+window{w}/16 R={r}", [full(16), window(16, w)], 16, retention_interval=r)
    add("full8+window40/16 R=0", [full(8), window(16, 40)], 8, retention_interval=0)
    add(
        "full16+window40/16+mamba16 R=0",
        [full(16), window(16, 40), mamba(16)],
        16,
        retention_interval=0,
    )
    add("full16+window70/16+mamba16 dense", [full(16), window(16, 70), mamba(16)], 16)
    add(
        "full16+window40/16+mamba32 R=32",
        [full(16), window(16, 40), mamba(32)],
        16,
        retention_interval=32,
    )
    # EAGLE with the block drop, every group an EAGLE group.
    add("EAGLE full16+mamba16 R=0", [full(16), mamba(16)], 16, use_eagle=True, retention_interval=0)
    add("EAGLE full16+mamba16 dense", [full(16), mamba(16)], 16, use_eagle=True)
    add(
        "EAGLE full16+window40/16 R=0",
        [full(16), window(16, 40)],
        16,
        use_eagle=True,
        retention_interval=0,
    )
    add("EAGLE full16+window1/16", [full(16), window(16, 1)], 16, use_eagle=True)
    add(
        "EAGLE full16+window40/8 R=0",
        [full(16), window(8, 40)],
        8,
        use_eagle=True,
        retention_interval=0,
    )
    add(
        "EAGLE full16+window70/8+mamba16 R=0",
        [full(16), window(8, 70), mamba(16)],
        8,
        use_eagle=True,
        retention_interval=0,
    )
    add("EAGLE full16+mamba64 H=16 (partial)", [full(16), mamba(64)], 16, use_eagle=True)
    add(
        "EAGLE full64+mamba64 H=16 (partial) R=0",
        [full(64), mamba(64)],
        16,
        use_eagle=True,
        retention_interval=0,
    )
    # EAGLE on a draft group only.
    add(
        "EAGLE draft=mamba full64+mamba64 H=16 (partial)",
        [full(64, eagle_group=False), mamba(64)],
        16,
        use_eagle=True,
    )
    add(
        "EAGLE draft=full full16+window40/16 R=0",
        [full(16), window(16, 40, eagle_group=False)],
        16,
        use_eagle=True,
        retention_interval=0,
    )
    add(
        "EAGLE draft=window full16+window40/8 R=0",
        [full(16, eagle_group=False), window(8, 40)],
        8,
        use_eagle=True,
        retention_interval=0,
    )
    add(
        "EAGLE draft=full full16+mamba16 R=0",
        [full(16), mamba(16, eagle_group=False)],
        16,
        use_eagle=True,
        retention_interval=0,
    )
    add(
        "EAGLE draft=window full16+window40/16+mamba16",
        [full(16, eagle_group=False), window(16, 40), mamba(16, eagle_group=False)],
        16,
        use_eagle=True,
    )
    # vLLM 0.33.0's lookahead hashes (EAGLE without the block drop).
    add(
        "EAGLE lookahead 1 full16+mamba16 R=0",
        [full(16), mamba(16)],
        16,
        lookahead=1,
        retention_interval=0,
    )
    add("EAGLE lookahead 3 full16+window40/16", [full(16), window(16, 40)], 16, lookahead=3)
    add("EAGLE lookahead 1 full16+mamba64 H=16 (partial)", [full(16), mamba(64)], 16, lookahead=1)
    # Internal prefill checkpoints (a backend writing a state inside a chunk).
    add(
        "checkpoints/8 full16+mamba16 R=0",
        [full(16), mamba(16)],
        16,
        checkpoints=8,
        retention_interval=0,
    )
    add("checkpoints/16 full16+mamba64 H=16 (partial)", [full(16), mamba(64)], 16, checkpoints=16)
    add(
        "checkpoints/16 EAGLE full16+mamba16",
        [full(16), mamba(16)],
        16,
        checkpoints=16,
        use_eagle=True,
    )
    # A KV connector's external hits (.connector): loaded in the step,
    # asynchronously, or restoring a lagging group's state (NIXL's path).
    # vLLM 0.33.0 itself fails on some (VllmFailure); the run ends there.
    sync, later = Connector(Loads.SYNC), Connector(Loads.ASYNC)
    restoring = Connector(Loads.SYNC, restores_lagging_state=True)
    add(
        "connector sync full16+mamba16 R=0",
        [full(16), mamba(16)],
        16,
        connector=sync,
        retention_interval=0,
    )
    add("connector async full16+mamba16 R=None", [full(16), mamba(16)], 16, connector=later)
    add(
        "connector sync full16+mamba64 H=16 (partial) R=0",
        [full(16), mamba(64)],
        16,
        connector=sync,
        retention_interval=0,
    )
    add(
        "connector async full16+mamba64 H=16 (partial)",
        [full(16), mamba(64)],
        16,
        connector=later,
    )
    add("connector sync full16+window1/16", [full(16), window(16, 1)], 16, connector=sync)
    add(
        "connector async full16+window40/16 R=0",
        [full(16), window(16, 40)],
        16,
        connector=later,
        retention_interval=0,
    )
    add(
        "connector sync full16+window40/16+mamba16 R=0",
        [full(16), window(16, 40), mamba(16)],
        16,
        connector=sync,
        retention_interval=0,
    )
    add(
        "connector async EAGLE full16+window40/8 R=0",
        [full(16), window(8, 40)],
        8,
        connector=later,
        use_eagle=True,
        retention_interval=0,
    )
    add(
        "connector sync EAGLE draft=mamba full64+mamba64 H=16 (partial)",
        [full(64, eagle_group=False), mamba(64)],
        16,
        connector=sync,
        use_eagle=True,
    )
    add(
        "connector sync checkpoints/16 full16+mamba64 H=16 (partial)",
        [full(16), mamba(64)],
        16,
        checkpoints=16,
        connector=sync,
    )
    add(
        "connector restoring full16+mamba16 R=0",
        [full(16), mamba(16)],
        16,
        connector=restoring,
        retention_interval=0,
    )
    add(
        "connector restoring full16+mamba64 H=16 (partial)",
        [full(16), mamba(64)],
        16,
        connector=restoring,
    )
    add(
        "connector restoring full16+window40/16+mamba64 H=16 (partial)",
        [full(16), window(16, 40), mamba(64)],
        16,
        connector=restoring,
    )
    add(
        "connector restoring full16+window40/16+mamba16 R=0",
        [full(16), window(16, 40), mamba(16)],
        16,
        connector=restoring,
        retention_interval=0,
    )
    return found
