"""Per-call cost of the core decisions (a benchmark, not a test).

Times, through pyperf (``benchmarks.timing``), the stop-point split and
64-block masks of each sparse kind, each call with full argument validation
(the free functions, which bind afresh on every call), and prints each
case's median in microseconds. Run: ``make bench``
(``python -m benchmarks.bench_core``; pyperf's options, e.g. ``--fast``).
"""

from __future__ import annotations

from collections.abc import Callable

from junction.core import GroupSpec, mamba_block_aligned_split, reachable_block_mask

from .timing import runner, time_calls

BLOCK = 16
SWA = GroupSpec.sliding_window(BLOCK, 4 * BLOCK)
MAMBA = GroupSpec.mamba(BLOCK)
BOUNDARIES = (64 * BLOCK - 1, 40 * BLOCK + 3)


def _split() -> int:
    return mamba_block_aligned_split(
        num_computed_tokens=5 * BLOCK + 3,
        num_new_tokens=20 * BLOCK,
        num_prompt_tokens=64 * BLOCK + 7,
        num_tokens=64 * BLOCK + 7,
        block_size=BLOCK,
        shared_prefix_boundary=17 * BLOCK + 5,
        use_eagle=True,
        hash_block_size=BLOCK // 4,
        partial_hits=True,
        max_prefill_tokens=2048,
    )


CASES: dict[str, Callable[[], object]] = {
    "split (mid-block start, junction, partial hits, EAGLE)": _split,
    "mask 64 blocks, sliding window, R=None (periodic)": lambda: reachable_block_mask(
        0, 64, 8 * BLOCK, SWA, False, None, BOUNDARIES
    ),
    "mask 64 blocks, sliding window, R=0 (boundaries)": lambda: reachable_block_mask(
        0, 64, BLOCK, SWA, True, 0, BOUNDARIES
    ),
    "mask 64 blocks, sliding window, R=8L (segments + boundaries)": lambda: reachable_block_mask(
        3, 67, BLOCK, SWA, False, 8 * BLOCK, BOUNDARIES
    ),
    "mask 64 blocks, mamba, R=0 (boundaries)": lambda: reachable_block_mask(
        0, 64, BLOCK, MAMBA, False, 0, BOUNDARIES
    ),
    "mask 64 blocks, mamba, R=4L (segments + boundaries)": lambda: reachable_block_mask(
        0, 64, BLOCK, MAMBA, False, 4 * BLOCK, BOUNDARIES
    ),
}


def main() -> None:
    made = runner(__spec__.name)
    results = [(name, made.bench_time_func(name, time_calls, call)) for name, call in CASES.items()]
    if made.args.worker:
        return
    print("median per call")
    for name, bench in results:
        print(f"  {bench.median() * 1e6:6.2f} us  {name}")


if __name__ == "__main__":
    main()
