"""The core loop against the batched torch path on CPU (a benchmark, not a test).

For 1k, 100k and 1M requests: the stop point, and 64-block masks of a
sliding-window group with retention R > 0 and two boundaries per request.
"Core loop" calls ``core`` once per request over prebuilt arguments; "torch"
calls the batched entry once over prebuilt tensors (validation included),
passing what an engine shares across a batch (the Mamba block size, hash unit,
flags, budget) as scalars, as an engine with one Mamba group would. Each side
is timed through pyperf (``benchmarks.timing``), in one process (a worker
would spend most of its life importing torch and building the batches);
prints each side's median and the speed-up. Run: ``make bench-kernels``
(``python -m benchmarks.bench_kernels [--sizes 1000,100000]``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

import torch

from junction import core, kernels

from .timing import runner, side_by_side

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


def batches(
    sizes: list[int], rng: random.Random
) -> Iterator[tuple[str, Callable[[], object], Callable[[], object]]]:
    """Per size, the split's and the mask's two sides, each checked equal first."""
    for size in sizes:
        rows = split_rows(size, rng)
        tensors: dict[str, object] = {
            name: torch.tensor([row[name] for row in rows]) for name in PER_REQUEST
        }
        tensors.update({name: rows[0][name] for name in rows[0] if name not in PER_REQUEST})
        want = [core.mamba_block_aligned_split(**row) for row in rows]  # type: ignore[arg-type]
        assert split_batched(tensors)().tolist() == want
        yield f"split, {size:,} requests", split_loop(rows), split_batched(tensors)

        masks = mask_rows(size, rng)
        start = torch.tensor([s for s, _, _ in masks])
        end = torch.tensor([e for _, e, _ in masks])
        boundaries = torch.tensor([b for _, _, b in masks])
        loop_call, batched_call = mask_loop(masks), mask_batched(start, end, boundaries)
        got = batched_call()
        assert got is not None and got.tolist() == loop_call()
        yield f"mask64, {size:,} requests", loop_call, batched_call


def main() -> None:
    made = runner(__spec__.name, in_process=True, processes=3)
    made.argparser.add_argument("--sizes", default="1000,100000,1000000")
    made.argparser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = made.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    sizes = [int(s) for s in args.sizes.split(",")]
    # Wall time: torch's batched path runs on several threads.
    rows = batches(sizes, random.Random(0))
    side_by_side(made, ("core loop", "torch cpu"), rows, clock=time.perf_counter)


if __name__ == "__main__":
    main()
