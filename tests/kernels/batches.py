"""Batches of requests for the batched paths, built from the core strategies.

A batch is a list of rows drawn with ``tests.properties.strategies`` (so it
covers the same space as the core properties: every group kind, EAGLE,
retention None / 0 / > 0, partial hits, mid-block starts, small budgets),
plus ragged block ranges and empty batches.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from hypothesis import strategies as st

from junction import kernels
from junction.core import mamba_block_aligned_split, reachable_block_mask

from ..properties.strategies import mask_inputs, split_inputs

FLAGS = ("use_eagle", "partial_hits", "exact_junction_stop")
# ``last_cacheable`` is a compatibility policy's override, not part of the batched API;
# ``prefill_checkpoints`` is one engine's setting, passed once for the whole batch.
SPLIT_ARGUMENTS = tuple(
    name
    for name in inspect.signature(mamba_block_aligned_split).parameters
    if name not in ("last_cacheable", "prefill_checkpoints")
)
# What a row that leaves an option out means (the int64 rows do).
OPTION_DEFAULTS: dict[str, Any] = {"hash_lookahead_tokens": 0, "exact_junction_stop": False}


@st.composite
def split_batches(draw: st.DrawFn, max_rows: int = 24) -> list[dict[str, Any]]:
    """Rows of split arguments; ``max_prefill_tokens`` is None for all rows or none,
    and every row has the first row's ``prefill_checkpoints`` where it fits them all."""
    rows = draw(st.lists(split_inputs(), max_size=max_rows))
    if rows and draw(st.booleans()):
        # An engine's batch: one Mamba block size, hash unit and set of flags.
        shared = ("block_size", "hash_block_size", "use_eagle", "partial_hits")
        rows = [{**row, **{name: rows[0][name] for name in shared}} for row in rows]
    if rows:
        checkpoints = rows[0]["prefill_checkpoints"]
        if checkpoints is not None and any(
            checkpoints.unit % row["hash_block_size"] for row in rows
        ):
            checkpoints = None
        rows = [{**row, "prefill_checkpoints": checkpoints} for row in rows]
    if any(row["max_prefill_tokens"] is not None for row in rows):
        # A tensor has no None: "no limit" rows get a limit no block reaches.
        rows = [{**row, "max_prefill_tokens": row["max_prefill_tokens"] or 10**9} for row in rows]
    return rows


def split_tensors(
    rows: list[dict[str, Any]], device: str = "cpu", shared_as_scalars: bool = False
) -> dict[str, Any]:
    """One tensor per argument; with ``shared_as_scalars``, a value every row shares
    is passed as a Python scalar (as an engine passes its one Mamba block size)."""
    tensors: dict[str, Any] = {
        "prefill_checkpoints": rows[0].get("prefill_checkpoints") if rows else None
    }
    for name in SPLIT_ARGUMENTS:
        values = [row.get(name, OPTION_DEFAULTS.get(name)) for row in rows]
        if name == "max_prefill_tokens" and (not rows or values[0] is None):
            tensors[name] = None
        elif shared_as_scalars and rows and len(set(values)) == 1:
            tensors[name] = values[0]
        elif name in FLAGS:
            tensors[name] = torch.tensor(values, dtype=torch.bool, device=device)
        else:
            tensors[name] = torch.tensor(values, dtype=torch.int64, device=device)
    return tensors


def core_splits(rows: list[dict[str, Any]]) -> list[int]:
    return [mamba_block_aligned_split(**row) for row in rows]


@st.composite
def mask_batches(
    draw: st.DrawFn, max_rows: int = 12
) -> tuple[dict[str, Any], list[tuple[int, int, list[int]]]]:
    """One group configuration and ragged rows ``(start, end, boundaries)``."""
    config = draw(mask_inputs())
    rows = [(config["start_block"], config["end_block"], list(config["reachable_boundaries"]))]
    # Ragged ranges, or ranges one block apart (the shape of an engine's step).
    base = draw(st.one_of(st.none(), st.integers(1, 80)))
    for _ in range(draw(st.integers(0, max_rows))):
        start = draw(st.integers(0, 60))
        if base is None:
            end = draw(st.integers(start, start + 80))
        else:
            end = start + base - draw(st.integers(0, 1))
        bound = (end + 4) * config["spec"].block_size + 2 * config["alignment_tokens"]
        rows.append((start, end, draw(st.lists(st.integers(0, bound), max_size=3))))
    if draw(st.booleans()) and draw(st.booleans()):
        rows = []  # an empty batch
    # Per-row final segment ends (-1: none), or none at all.
    if draw(st.booleans()):
        finals = [draw(st.integers(-1, end + 8)) for _, end, _ in rows]
        config = {**config, "final_segment_end_blocks": finals}
    return config, rows


def mask_tensors(
    rows: list[tuple[int, int, list[int]]], device: str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    width = max((len(b) for _, _, b in rows), default=0)
    padded = [b + [-1] * (width - len(b)) for _, _, b in rows]
    return (
        torch.tensor([s for s, _, _ in rows], dtype=torch.int64, device=device),
        torch.tensor([e for _, e, _ in rows], dtype=torch.int64, device=device),
        torch.tensor(padded, dtype=torch.int64, device=device).reshape(len(rows), width),
    )


def group_arguments(config: dict[str, Any]) -> tuple[Any, ...]:
    """What every row of a mask batch shares: alignment, group, EAGLE, interval."""
    return (
        config["alignment_tokens"],
        config["spec"],
        config["use_eagle"],
        config["retention_interval"],
    )


def batched_mask(
    config: dict[str, Any],
    rows: list[tuple[int, int, list[int]]],
    backend: str,
    device: str = "cpu",
) -> torch.Tensor | None:
    start, end, boundaries = mask_tensors(rows, device)
    finals = config.get("final_segment_end_blocks")
    got = kernels.reachable_block_mask(
        start,
        end,
        *group_arguments(config),
        boundaries,
        final_segment_end_block=(
            None if finals is None else torch.tensor(finals, dtype=torch.int64, device=device)
        ),
        backend=backend,
    )
    return None if got is None else got.cpu()


def assert_mask_matches_core(
    got: torch.Tensor | None, config: dict[str, Any], rows: list[tuple[int, int, list[int]]]
) -> None:
    finals = config.get("final_segment_end_blocks") or [-1] * len(rows)
    wants = [
        reachable_block_mask(
            start,
            end,
            *group_arguments(config),
            boundaries,
            final_segment_end_block=None if final < 0 else final,
        )
        for (start, end, boundaries), final in zip(rows, finals, strict=True)
    ]
    if got is None:
        assert all(want is None for want in wants), f"batched dense, core sparse: {wants}"
        return
    width = max((end - start for start, end, _ in rows), default=0)
    assert tuple(got.shape) == (len(rows), width)
    assert got.dtype is torch.bool
    for row, ((start, end, _), want) in enumerate(zip(rows, wants, strict=True)):
        assert want is not None, f"row {row}: core dense, batched sparse"
        assert got[row, : end - start].tolist() == want, f"row {row}: {rows[row]}"
        assert not got[row, end - start :].any(), f"row {row}: marks past its range"
