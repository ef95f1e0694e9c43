"""The simulator's text tables: per geometry, one line per variant, then the modelled times.

Fixed-width plain text, because the table is a committed artefact: the
README quotes ``docs/demo/simulate.txt`` and a test checks that it does, so
the bytes must not depend on the terminal's width or colour support.
Rejected: a rich table (the terminal layer's), whose box drawing and column
widths follow the console it is printed on.
"""

from __future__ import annotations

from collections.abc import Sequence

from .geometries import GEOMETRIES
from .result import RunResult

__all__ = ["format_table", "format_tier", "format_times"]

# (name, width): the first column is left-aligned, the others right-aligned.
_COLUMNS = (
    ("policy", 15),
    ("hit rate", 9),
    ("sys-prompt", 10),
    ("prefill tok", 12),
    ("saved", 6),
    ("steps", 7),
    ("sparse peak", 12),
    ("sparse final", 12),
    ("evictions", 10),
    ("FLOPs saved", 11),
)


# The times table: time to first token and queueing, in milliseconds of the modelled clock.
_TIME_COLUMNS = (
    ("policy", 15),
    ("TTFT p50", 9),
    ("p90", 9),
    ("p99", 9),
    ("queue p50", 9),
    ("p90", 9),
    ("p99", 9),
    ("makespan", 10),
)


# With several instances or a tier: each instance's hit rate, and the tier's use.
_TIER_COLUMNS = (
    ("policy", 15),
    ("instances", 9),
    ("route", 11),
    ("hit rate per instance", 21),
    ("loaded tok", 12),
    ("tier blocks", 11),
    ("occ. peak", 9),
    ("occ. final", 10),
    ("tier evictions", 14),
)


def _widened(
    columns: Sequence[tuple[str, int]], rows: Sequence[RunResult]
) -> list[tuple[str, int]]:
    """The columns, the first as wide as the longest row label (a tier's adds its saving)."""
    name, width = columns[0]
    return [(name, max([width, *(len(row.label) for row in rows)])), *columns[1:]]


def _line(cells: Sequence[str], columns: Sequence[tuple[str, int]] = _COLUMNS) -> str:
    return "  ".join(
        f"{cell:<{width}}" if i == 0 else f"{cell:>{width}}"
        for i, (cell, (_, width)) in enumerate(zip(cells, columns, strict=True))
    )


def format_table(geometry: str, rows: Sequence[RunResult]) -> str:
    """One geometry's table: a header line, the column names, one line per run."""
    columns = _widened(_COLUMNS, rows)
    header = _line([n for n, _ in columns], columns)
    lines = [f"{geometry}: {GEOMETRIES[geometry].description}", header]
    for row in rows:
        system_prompt = row.system_prompt_hit_rate
        lines.append(
            _line(
                (
                    row.label,
                    f"{row.token_hit_rate:.3f}",
                    "-" if system_prompt is None else f"{system_prompt:.3f}",
                    f"{row.prefill_tokens_computed:,}",
                    f"{row.prefill_saved_share:.0%}",
                    f"{row.steps:,}",
                    f"{row.sparse_retained_peak:,}",
                    f"{row.sparse_retained_final:,}",
                    f"{row.evictions:,}",
                    f"{row.prefill_flops_saved:.2e}",
                ),
                columns,
            )
        )
    return "\n".join(lines)


def _ms(milliseconds: float) -> str:
    return f"{milliseconds:,.0f}"


def format_times(geometry: str, rows: Sequence[RunResult]) -> str:
    """One geometry's modelled times: TTFT and queueing percentiles, and the makespan."""
    columns = _widened(_TIME_COLUMNS, rows)
    header = _line([n for n, _ in columns], columns)
    lines = [f"{geometry}: modelled times, ms", header]
    for row in rows:
        ttft, queue = row.ttft_ms, row.queue_ms
        cells = [row.label]
        cells += [_ms(t) for t in (ttft.p50, ttft.p90, ttft.p99)]
        cells += [_ms(t) for t in (queue.p50, queue.p90, queue.p99)]
        cells.append(_ms(row.makespan_ms))
        lines.append(_line(cells, columns))
    return "\n".join(lines)


def format_tier(geometry: str, rows: Sequence[RunResult]) -> str:
    """One geometry's instances and tier: hit rate per instance, tokens loaded, occupancy."""
    columns = _widened(_TIER_COLUMNS, rows)
    lines = [f"{geometry}: instances and external tier", _line([n for n, _ in columns], columns)]
    for row in rows:
        tier = row.tier
        if tier is None:
            continue
        rates = " / ".join(f"{rate:.3f}" for rate in tier.instance_hit_rates)
        cells = [row.label, str(tier.instances), tier.route, rates]
        cells += [f"{tier.external_hit_tokens:,}", f"{tier.capacity:,}"]
        cells += [f"{tier.occupancy_peak:.0%}", f"{tier.occupancy_final:.0%}"]
        cells.append(f"{tier.evictions:,}")
        lines.append(_line(cells, columns))
    return "\n".join(lines)
