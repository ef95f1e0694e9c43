"""The core loop against the batched torch path on CPU (a benchmark, not a test).

For 1k, 100k and 1M requests: the stop point, and 64-block masks of a
sliding-window group with retention R > 0 and two boundaries per request.
"Core loop" calls ``core`` once per request over prebuilt arguments; "torch"
calls the batched entry once over prebuilt tensors (validation included),
passing what an engine shares across a batch (the Mamba block size, hash unit,
flags, budget) as scalars, as an engine with one Mamba group would.
Prints the median of several repeats and the ratio, measured side by side.
Run: ``make bench-kernels`` (``python -m benchmarks.bench_kernels``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import torch

from junction import core, kernels

BLOCK = 16
PER_REQUEST = (
    "num_computed_tokens",
    "num_new_tokens",
    "num_prompt_tokens",
    "num_tokens",
    "shared_prefix_boundary",
)
SWA = core.GroupSpec.sliding_window(BLOCK, 4 * BLOCK)
ALIGNMENT = 4 * BLOCK
INTERVAL = 8 * ALIGNMENT


def split_rows(count: int, rng: random.Random) -> list[dict[str, int | bool]]:
    rows: list[dict[str, int | bool]] = []
    for _ in range(count):
        prompt = rng.randint(1, 32_768)
        computed = rng.randint(0, prompt - 1)
        rows.append(
            dict(
                num_computed_tokens=computed,
                num_new_tokens=rng.randint(1, 8192),
                num_prompt_tokens=prompt,
                num_tokens=prompt,
                block_size=BLOCK,
                shared_prefix_boundary=rng.choice((0, rng.randint(0, prompt))),
                use_eagle=False,
                hash_block_size=BLOCK,
                partial_hits=False,
                max_prefill_tokens=8192,
            )
        )
    return rows


def mask_rows(count: int, rng: random.Random) -> list[tuple[int, int, list[int]]]:
    rows = []
    for _ in range(count):
        start = rng.randint(0, 1024)
        end = start + 64
        rows.append((start, end, [rng.randint(0, end * BLOCK), rng.randint(0, end * BLOCK)]))
    return rows


def split_loop(rows: list[dict[str, int | bool]]) -> Callable[[], list[int]]:
    return lambda: [core.mamba_block_aligned_split(**row) for row in rows]  # type: ignore[arg-type]


def split_batched(tensors: dict[str, object]) -> Callable[[], torch.Tensor]:
    return lambda: kernels.mamba_block_aligned_split(**tensors, backend="torch")


def mask_loop(masks: list[tuple[int, int, list[int]]]) -> Callable[[], list[list[bool] | None]]:
    return lambda: [
        core.reachable_block_mask(s, e, ALIGNMENT, SWA, False, INTERVAL, b) for s, e, b in masks
    ]


def mask_batched(
    start: torch.Tensor, end: torch.Tensor, boundaries: torch.Tensor
) -> Callable[[], torch.Tensor | None]:
    return lambda: kernels.reachable_block_mask(
        start, end, ALIGNMENT, SWA, False, INTERVAL, boundaries, backend="torch"
    )


def side_by_side(
    loop: Callable[[], object], batched: Callable[[], object], repeats: int
) -> tuple[float, float]:
    """Median seconds of each, timed alternately so both see the same machine state."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for call, samples in ((batched, times[1]), (loop, times[0])):
            started = time.perf_counter()
            call()
            samples.append(time.perf_counter() - started)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = random.Random(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median seconds per batch")
    print(f"{'decision':<8} {'requests':>9} {'core loop':>11} {'torch cpu':>11} {'speed-up':>9}")
    for size in (int(s) for s in args.sizes.split(",")):
        repeats = max(5, min(31, 1_000_000 // size))
        rows = split_rows(size, rng)
        tensors: dict[str, object] = {
            name: torch.tensor([row[name] for row in rows]) for name in PER_REQUEST
        }
        tensors.update({name: rows[0][name] for name in rows[0] if name not in PER_REQUEST})
        want = [core.mamba_block_aligned_split(**row) for row in rows]  # type: ignore[arg-type]
        assert split_batched(tensors)().tolist() == want
        loop, batched = side_by_side(split_loop(rows), split_batched(tensors), repeats)
        print(f"{'split':<8} {size:>9,} {loop:>11.5f} {batched:>11.5f} {loop / batched:>8.1f}x")

        masks = mask_rows(size, rng)
        start = torch.tensor([s for s, _, _ in masks])
        end = torch.tensor([e for _, e, _ in masks])
        boundaries = torch.tensor([b for _, _, b in masks])

        loop_call, batched_call = mask_loop(masks), mask_batched(start, end, boundaries)
        got = batched_call()
        assert got is not None and got.tolist() == loop_call()
        loop, batched = side_by_side(loop_call, batched_call, repeats)
        print(f"{'mask64':<8} {size:>9,} {loop:>11.5f} {batched:>11.5f} {loop / batched:>8.1f}x")


if __name__ == "__main__":
    main()
