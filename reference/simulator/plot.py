"""The simulator's plot: hit rate against sparse blocks retained, over a sweep of ``R``.

One panel per geometry; the pinned and unpinned policies are one line each
through their retention intervals (a line per tier saving when there are
several), dense is a star, and coinciding points share one label. The plot
is rendered to bytes, so the command writes it with the table and the JSON
as one set (``cli.outputs``). matplotlib (the demo extra) is imported only
in :func:`render_plot`, and the PNG carries no ``Software`` metadata, so it
changes only when matplotlib's rendering does.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from .geometries import GEOMETRIES
from .result import RunResult

__all__ = ["render_plot"]

# policy -> (legend label, line style); annotations sit below dashed lines, above solid.
_LINES = (
    ("junction", "junction pinned (default)", "o-"),
    ("interval", "unpinned (before #47782)", "s--"),
)


def render_plot(geometries: Sequence[str], results: Sequence[RunResult]) -> bytes:
    """The PNG of hit rate against sparse blocks retained (peak), one panel per geometry."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    figure, axes = plt.subplots(
        1, len(geometries), figsize=(6 * len(geometries), 4.6), squeeze=False
    )
    for axis, name in zip(axes[0], geometries, strict=True):
        runs = [r for r in results if r.geometry == name]
        # With a tier run under several savings: a line per policy and saving.
        savings: list[str | None] = [None]
        savings = [*sorted({r.tier.saving for r in runs if r.tier is not None})] or savings
        lines = [
            (policy, label, style, saving) for saving in savings for policy, label, style in _LINES
        ]
        for policy, label, style, saving in lines:
            if saving is not None:
                label = f"{label}, {saving} saving"
                style = style if saving == "policy" else style.rstrip("-") + ":"
            points = sorted(
                (
                    r
                    for r in runs
                    if r.variant.policy == policy and (r.tier is None or r.tier.saving == saving)
                ),
                key=lambda r: r.sparse_retained_peak,
            )
            xs = [r.sparse_retained_peak for r in points]
            ys = [r.token_hit_rate for r in points]
            (line,) = axis.plot(xs, ys, style, label=label)
            labels: dict[tuple[int, float], list[str]] = {}
            for r in points:  # points that coincide share one label
                key = (r.sparse_retained_peak, round(r.token_hit_rate, 4))
                labels.setdefault(key, []).append(str(r.variant.retention_interval))
            below = policy == "interval"
            for (x, y), intervals in labels.items():
                axis.annotate(
                    "R=" + ",".join(intervals),
                    (x, y),
                    textcoords="offset points",
                    xytext=(3, -6) if below else (2, 5),
                    rotation=-40 if below else 40,
                    rotation_mode="anchor",
                    va="top" if below else "bottom",
                    fontsize=7,
                    color=line.get_color(),
                )
        dense = [r for r in runs if r.variant.policy == "dense"]
        for index, r in enumerate(dense):
            label = "dense" if index == 0 else "_nolegend_"  # one entry, whatever the savings
            point = ([r.sparse_retained_peak], [r.token_hit_rate])
            axis.plot(*point, "k*", markersize=11, label=label)
        axis.set_title(f"{name}\n{GEOMETRIES[name].description}", fontsize=9)
        axis.set_xlabel("sparse-group blocks retained (peak)")
        axis.set_ylabel("token hit rate")
        axis.set_xlim(left=0)
        axis.margins(x=0.1, y=0.15)
        axis.xaxis.set_major_formatter(ticker.StrMethodFormatter("{x:,.0f}"))
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8, loc="lower right")
    eviction = results[0].eviction if results else "lru"
    figure.suptitle(
        f"Retention interval sweep: hit rate vs memory (eviction: {eviction})", fontsize=11
    )
    figure.tight_layout()
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=110, metadata={"Software": None})
    plt.close(figure)
    return png.getvalue()
