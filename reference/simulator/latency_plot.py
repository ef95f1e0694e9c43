"""The simulator's second figure: the distribution of time to first token, per policy.

One panel per geometry, one line per table row (dense, interval ``R``,
``R = 0`` unpinned, ``R = 0`` pinned): the share of requests (y) whose
modelled time to first token is at most x, drawn from the hundred
percentiles each run keeps (``result.Latency``), so the figure shows
nothing the JSON does not hold. The x axis is logarithmic: a trace's times
span milliseconds (a short prompt, mostly hit) to minutes (a long one behind
a queue), and the policies differ at both ends.

Rendered to bytes like the hit-rate plot (``plot``), matplotlib imported
inside. Rejected: a histogram (bins hide the tail, which is where retention
shows under memory pressure) and box plots (four numbers per policy).
With a tier run under several savings a row has a line per saving, the
``vllm-0.33`` one dotted.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from .geometries import GEOMETRIES
from .result import RunResult
from .variants import Variant

__all__ = ["render_ttft_plot"]

_STYLES = {"dense": "k-", "interval": "C1--", "junction": "C0-"}


def render_ttft_plot(
    geometries: Sequence[str], results: Sequence[RunResult], rows: Sequence[Variant]
) -> bytes:
    """The PNG of each row's TTFT distribution (modelled), one panel per geometry."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(
        1, len(geometries), figsize=(6 * len(geometries), 4.6), squeeze=False
    )
    shares = [k / 100 for k in range(1, 101)]
    for axis, name in zip(axes[0], geometries, strict=True):
        for variant in rows:
            for run in (r for r in results if r.geometry == name and r.variant == variant):
                seconds = [max(t / 1000, 1e-3) for t in run.ttft_ms.percentiles]
                style = _STYLES.get(variant.policy, "C3-.")
                if variant.policy == "interval" and variant.retention_interval:
                    style = "C2:"
                if run.tier is not None and run.tier.saving != "policy":
                    style = style.rstrip("-:") + ":"
                axis.step(seconds, shares, style, where="post", label=run.label)
        axis.set_xscale("log")
        axis.set_title(f"{name}\n{GEOMETRIES[name].description}", fontsize=9)
        axis.set_xlabel("time to first token, s (modelled)")
        axis.set_ylabel("share of requests")
        axis.set_ylim(0, 1.01)
        axis.grid(True, alpha=0.3, which="both")
        axis.legend(fontsize=8, loc="lower right")
    eviction = results[0].eviction if results else "lru"
    figure.suptitle(
        f"Time to first token per policy (modelled step times; eviction: {eviction})",
        fontsize=11,
    )
    figure.tight_layout()
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=110, metadata={"Software": None})
    plt.close(figure)
    return png.getvalue()
