"""``junction kernel-sweep``'s run (its options: ``cli.kernel_sweep_options``).

The batched paths (torch, Triton) against ``core`` on every split and mask
input up to the bound, batch by batch; needs the ``kernels`` extra.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable, Iterator

import torch

from junction import core
from junction.core import InvalidArgument
from junction.core import mamba_block_aligned_split as core_split
from junction.core import reachable_block_mask as core_mask
from junction.kernels.backend import resolve_backend
from junction.kernels.mask import reachable_block_mask
from junction.kernels.split import mamba_block_aligned_split
from junction.reference.cli.exhaustive import COUNTED_BOUND, MAX_SECONDS, WALK_RATES
from junction.reference.cli.terminal import progress
from junction.reference.oracle.exhaustive import (
    CheckpointGrid,
    MaskInput,
    count_inputs,
    mask_inputs,
    split_inputs,
)

SPLIT_BATCH = 65_536


def _split_batches(bound: int) -> Iterator[list[dict[str, object]]]:
    """Split inputs in batches that share ``max_prefill_tokens`` being None or not, and
    ``prefill_checkpoints`` (one engine's setting: core's ``PrefillCheckpoints``)."""
    inputs = (_with_core_checkpoints(row) for row in split_inputs(bound))
    while chunk := list(itertools.islice(inputs, SPLIT_BATCH)):
        for _, rows in itertools.groupby(
            chunk,
            key=lambda r: (r["max_prefill_tokens"] is None, r.get("prefill_checkpoints")),
        ):
            yield list(rows)


def _with_core_checkpoints(row: dict[str, object]) -> dict[str, object]:
    """Every option spelled out (the walk leaves them out where off), checkpoints as core's."""
    grid = row.get("prefill_checkpoints")
    assert grid is None or isinstance(grid, CheckpointGrid)
    checkpoints = grid and core.PrefillCheckpoints(
        grid.alignment, grid.unit, grid.keyed_on_prefill_end
    )
    return {
        "hash_lookahead_tokens": 0,
        "exact_junction_stop": False,
        **row,
        "prefill_checkpoints": checkpoints,
    }


def sweep_split(
    bound: int, device: torch.device, backend: str, on_batch: Callable[[int], None]
) -> tuple[int, int]:
    """Inputs checked and disagreements; ``on_batch`` hears each batch's size."""
    checked = failed = 0
    for rows in _split_batches(bound):
        tensors: dict[str, object] = {}
        for name in rows[0]:
            values = [row[name] for row in rows]
            if name == "prefill_checkpoints":
                tensors[name] = values[0]
            elif name == "max_prefill_tokens" and values[0] is None:
                tensors[name] = None
            else:
                dtype = torch.bool if isinstance(values[0], bool) else torch.int64
                tensors[name] = torch.tensor(values, dtype=dtype, device=device)
        got = mamba_block_aligned_split(**tensors, backend=backend).tolist()
        want = [core_split(**row) for row in rows]  # type: ignore[arg-type]
        checked += len(rows)
        failed += sum(g != w for g, w in zip(got, want, strict=True))
        on_batch(len(rows))
    return checked, failed


def _group_configuration(case: MaskInput) -> tuple[object, ...]:
    """What a batch shares: alignment, group, EAGLE and retention interval."""
    return (case.alignment_tokens, case.spec, case.use_eagle, case.retention_interval)


def sweep_mask(
    bound: int, device: torch.device, backend: str, on_batch: Callable[[int], None]
) -> tuple[int, int]:
    """Inputs checked and disagreements; ``on_batch`` hears each batch's size."""
    checked = failed = 0
    for _, group in itertools.groupby(mask_inputs(core, bound), key=_group_configuration):
        cases: list[MaskInput] = list(group)
        width = max(len(case.reachable_boundaries) for case in cases)
        start = torch.tensor([c.start_block for c in cases], device=device)
        end = torch.tensor([c.end_block for c in cases], device=device)
        boundaries = torch.tensor(
            [
                [*c.reachable_boundaries, *[-1] * (width - len(c.reachable_boundaries))]
                for c in cases
            ],
            dtype=torch.int64,
            device=device,
        ).reshape(len(cases), width)
        finals = [
            -1 if c.final_segment_end_block is None else c.final_segment_end_block for c in cases
        ]
        first = cases[0]
        got = reachable_block_mask(
            start,
            end,
            first.alignment_tokens,
            first.spec,
            first.use_eagle,
            first.retention_interval,
            boundaries,
            final_segment_end_block=torch.tensor(finals, dtype=torch.int64, device=device),
            backend=backend,
        )
        rows = None if got is None else got.cpu().tolist()
        for index, case in enumerate(cases):
            want = core_mask(*case[:7], final_segment_end_block=case.final_segment_end_block)
            length = case.end_block - case.start_block
            if rows is None:
                failed += want is not None
            else:
                row = rows[index]
                failed += want is None or row[:length] != want or any(row[length:])
        checked += len(cases)
        on_batch(len(cases))
    return checked, failed


def available_device(text: str) -> torch.device:
    """A ``--device`` torch knows and this machine has; argparse exits 2 otherwise."""
    try:
        device = torch.device(text)
    except RuntimeError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a torch device (e.g. cpu, cuda, cuda:1)"
        ) from None
    here = ["cpu"]
    accelerator = torch.accelerator.current_accelerator()
    if accelerator is not None:
        here += [f"{accelerator.type}:{index}" for index in range(torch.accelerator.device_count())]
    if device.type != "cpu" and f"{device.type}:{device.index or 0}" not in here:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not available on this machine (available: {', '.join(here)})"
        )
    return device


def estimated_seconds(bound: int) -> int | None:
    """Seconds ``core`` takes on every split and mask input of bounds 1 to ``bound`` (the
    sweep's floor: each input is checked by core too), at ``exhaustive``'s measured
    rates; ``None`` past the bounds that are counted."""
    if bound > COUNTED_BOUND:
        return None
    milliseconds = 0
    for each in range(1, bound + 1):
        counts = count_inputs(each)
        for name in ("mamba_block_aligned_split", "reachable_block_mask"):
            milliseconds += 1000 * counts[name] // WALK_RATES[name]
    return milliseconds // 1000


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        default = "cuda" if torch.cuda.is_available() else "cpu"
        device = available_device(default if args.device is None else args.device)
    except argparse.ArgumentTypeError as error:
        parser.error(f"argument --device: {error}")
    seconds = estimated_seconds(args.bound)
    if seconds is None or seconds > MAX_SECONDS:
        estimate = "more" if seconds is None else f"about {seconds // 3600:,} hours"
        parser.error(
            f"--bound {args.bound}: core alone would take {estimate} to check the walk up to it "
            f"(at {WALK_RATES['reachable_block_mask']:,}-"
            f"{WALK_RATES['mamba_block_aligned_split']:,} inputs/s); the limit is "
            f"{MAX_SECONDS // 3600} hours"
        )
    try:
        resolve_backend(args.backend, device)  # e.g. triton on cpu without its interpreter
    except InvalidArgument as error:
        parser.error(str(error))
    started = time.perf_counter()
    total = failures = 0
    reached = 0
    with progress("kernel sweep", None) as advance:
        for bound in range(1, args.bound + 1):
            for name, sweep in (("split", sweep_split), ("mask", sweep_mask)):
                advance(0, status=f"bound {bound} {name}")
                checked, failed = sweep(bound, device, args.backend, advance)
                total += checked
                failures += failed
                print(
                    f"bound {bound} {name:<5} {checked:>10,} inputs, {failed} disagreements",
                    flush=True,
                )
            reached = bound
            if args.seconds is not None and time.perf_counter() - started > args.seconds:
                break
    elapsed = time.perf_counter() - started
    print(
        f"bound reached {reached} on {device} ({args.backend}): {total:,} inputs in "
        f"{elapsed:.1f} s, {total / elapsed:,.0f} inputs/s, {failures} disagreements"
    )
    return 1 if failures else 0
