"""docs/hbm.md's side-by-side of the engines' layouts, from ``junction hbm --json`` files
(a report, not a test).

Reads ``docs/hbm/layouts/MODEL-LAYOUT.json`` (or ``--folder``'s) for each model named and each of
``vllm``, ``sglang`` and ``per-request-slot`` (written by ``junction hbm
--model MODEL --layout LAYOUT --json ...`` at the same budgets) and prints,
per model, three Markdown tables: the pools each layout makes of a budget,
the LRU token hit rate of every variant, and the default policy's (R = 0
pinned) TTFT p50 / p90 and prefill tokens saved.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from junction.reference.simulator.variants import Variant

FOLDER = Path(__file__).resolve().parents[1] / "docs/hbm/layouts"
LAYOUTS = ("vllm", "sglang", "per-request-slot")


def _label(point: dict[str, Any]) -> str:
    return Variant(point["policy"], point["retention_interval"]).label


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _tables(folder: Path, model: str) -> list[str]:
    documents = {
        layout: json.loads((folder / f"{model}-{layout}.json").read_text(encoding="utf-8"))
        for layout in LAYOUTS
    }
    points: dict[str, list[dict[str, Any]]] = {
        layout: [p for p in doc["points"] if p["eviction"] == "lru"]
        for layout, doc in documents.items()
    }
    budgets = sorted({p["pool"] for p in points["vllm"]})
    if any(sorted({p["pool"] for p in found}) != budgets for found in points.values()):
        raise SystemExit(f"{model}: the layouts' files are not at the same budgets")
    columns = [*(f"{gib:g}" for gib in budgets[:-1]), f"{budgets[-1]:g} GiB"]
    head = [
        _row([f"{model}, {what}", *columns])
        for what in ("pools", "token hit rate, LRU", "R=0 pinned, LRU")
    ]
    rule = _row(["---", *["---:"] * len(budgets)])

    def by_pool(found: list[dict[str, Any]]) -> dict[float, dict[str, Any]]:
        return {p["pool"]: p for p in found}

    lines = [head[0], rule]
    for layout, found in points.items():
        first = by_pool(found)
        cells = []
        for gib in budgets:
            slots = first[gib].get("state_slots")
            blocks = first[gib]["pool_blocks"]
            cells.append(f"{blocks:,}" if slots is None else f"{blocks - 1:,} + {slots:,} slots")
        lines.append(_row([layout, *cells]))
    lines += ["", head[1], rule]
    for layout, found in points.items():
        for label in dict.fromkeys(_label(p) for p in found):
            rates = by_pool([p for p in found if _label(p) == label])
            cells = [f"{rates[gib]['token_hit_rate']:.4f}" for gib in budgets]
            lines.append(_row([f"{layout}: {label}", *cells]))
    lines += ["", head[2], rule]
    for layout, found in points.items():
        pinned = by_pool([p for p in found if _label(p) == "R=0 pinned"])
        ttft = [pinned[gib]["ttft_ms"] for gib in budgets]
        times = [f"{t['p50']:,.0f} / {t['p90']:,.0f}" for t in ttft]
        lines.append(_row([f"{layout}: TTFT p50 / p90 ms", *times]))
        saved = [pinned[gib]["prefill_tokens_saved"] for gib in budgets]
        lines.append(_row([f"{layout}: prefill tokens saved", *(f"{s:.3g}" for s in saved)]))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("models", nargs="+", help="catalog models with a file per layout")
    parser.add_argument("--folder", type=Path, default=FOLDER, help="where the files are")
    args = parser.parse_args()
    for model in args.models:
        print("\n".join(_tables(args.folder, model)), end="\n\n")


if __name__ == "__main__":
    main()
