"""Batched paths on a CUDA GPU: torch and Triton throughput, mask bandwidth.

For the split and the mask, times the torch and Triton backends on CUDA
tensors with CUDA events (median of repeats, after a warm-up), and reports
the mask kernel's achieved memory bandwidth: bytes it must move (the
``rows x width`` output plus its per-row inputs) over time, as a fraction of
the device's peak (``--peak-gbs``; by default read from a small table of
known parts, else the bandwidth of a large ``copy_`` measured here).
Run on a GPU machine: ``python -m benchmarks.bench_gpu``.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
from collections.abc import Callable

import torch

from junction import core, kernels
from junction.kernels.mask import mask_torch
from junction.kernels.mask_batch import MaskBatch
from junction.kernels.triton_kernels import mask_triton

PEAK_GBS = {"H100": 3350.0, "H200": 4800.0, "A100": 2039.0}


def cuda_median_ms(call: Callable[[], object], repeats: int = 21) -> float:
    for _ in range(3):
        call()
    times = []
    for _ in range(repeats):
        begin = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        begin.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end))
    return float(statistics.median(times))


def copy_bandwidth_gbs() -> float:
    source = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    ms = cuda_median_ms(lambda: target.copy_(source))
    return 2 * source.numel() / ms / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1 << 20)
    parser.add_argument("--width", type=int, default=128, help="mask blocks per request")
    parser.add_argument("--peak-gbs", type=float, default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure")
        return 0
    name = torch.cuda.get_device_name()
    peak = args.peak_gbs or next(
        (gbs for part, gbs in PEAK_GBS.items() if part in name), copy_bandwidth_gbs()
    )
    print(f"{name}, torch {torch.__version__}, peak {peak:,.0f} GB/s")
    rows = args.rows
    generator = torch.Generator(device="cuda").manual_seed(0)
    prompt = torch.randint(1, 32_768, (rows,), device="cuda", generator=generator)
    computed = (torch.rand(rows, device="cuda", generator=generator) * prompt).long()
    split_args = dict(
        num_computed_tokens=computed,
        num_new_tokens=torch.randint(1, 8192, (rows,), device="cuda", generator=generator),
        num_prompt_tokens=prompt,
        num_tokens=prompt,
        block_size=16,
        shared_prefix_boundary=(
            torch.rand(rows, device="cuda", generator=generator) * prompt
        ).long(),
        max_prefill_tokens=8192,
    )
    for backend in ("torch", "triton"):
        ms = cuda_median_ms(
            functools.partial(kernels.mamba_block_aligned_split, **split_args, backend=backend)
        )
        print(
            f"split  {backend:<6} {rows:>10,} rows {ms:8.3f} ms  {rows / ms / 1e3:10.1f} M rows/s"
        )

    spec = core.GroupSpec.sliding_window(16, 64)
    start = torch.randint(0, 1024, (rows,), device="cuda", generator=generator)
    end = start + args.width
    boundaries = torch.randint(
        0, (1024 + args.width) * 16, (rows, 2), device="cuda", generator=generator
    )
    moved = rows * args.width + rows * (8 + 8 + 2 * 8)  # output bytes + per-row inputs
    plan = core.mask_plan(64, spec, False, 512)
    assert plan is not None
    batch = MaskBatch(start, end, boundaries)
    for backend, kernel in (("torch", mask_torch), ("triton", mask_triton)):
        entry_ms = cuda_median_ms(
            functools.partial(
                kernels.reachable_block_mask,
                start,
                end,
                64,
                spec,
                False,
                512,
                boundaries,
                backend=backend,
            )
        )
        ms = cuda_median_ms(functools.partial(kernel, batch, plan))
        gbs = moved / ms / 1e6
        print(
            f"mask   {backend:<6} {rows:>10,} x {args.width} {entry_ms:8.3f} ms per call "
            f"(validation included), {ms:8.3f} ms computing: {gbs:8.1f} GB/s, "
            f"{gbs / peak:.0%} of peak; output {rows * args.width / 2**20:,.0f} MiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
