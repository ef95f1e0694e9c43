"""The drop-in against vLLM 0.33.0's own code, per call, at vLLM's own call sites.

Each case of ``benchmarks.bench_audit`` calls vLLM's function as vLLM does
(``Scheduler._mamba_block_aligned_split``, ``SlidingWindowManager`` /
``MambaManager.reachable_block_mask``,
``HybridKVCacheCoordinator.find_longest_cache_hit``); here that same call is
timed twice through pyperf (``benchmarks.timing``), in one process: as
installed vLLM has it, and with ``junction.dropin`` swapped in around each
timed value, so the second includes everything the adapter adds to the
core (reading vLLM's arguments, finding the binding, and for the lookup
collecting the hit's blocks, which the core's finders do not return). The
ratio is drop-in / vLLM. Before timing, each case asserts both give the
same answer.

Needs vLLM (``make audit-setup``). Run: ``python -m benchmarks.bench_dropin``.
"""

from __future__ import annotations

import contextlib

from junction import dropin

from .bench_audit import cases
from .timing import runner, side_by_side


def main() -> None:
    made = runner(__spec__.name, in_process=True, processes=5)
    rows = []
    for case in cases():
        theirs = case.vllm()
        with dropin.swapped_in():
            assert case.vllm() == theirs, case.name
        rows.append((case.name, case.vllm, case.vllm))
    side_by_side(made, ("drop-in", "vLLM"), rows, (dropin.swapped_in, contextlib.nullcontext))


if __name__ == "__main__":
    main()
