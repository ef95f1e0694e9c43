"""``junction hbm``'s options: the trace, the pools or a model's budgets and dtypes, the
evictions, how answers are keyed, and the outputs (the command itself: ``cli.hbm``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from junction.reference.replay import EVICTIONS
from junction.reference.replay.dtypes import KV_DTYPES, STATE_DTYPES
from junction.reference.replay.models import CATALOG
from junction.reference.simulator.geometries import PRESETS

from . import options

__all__ = ["ANSWERS", "DEFAULT_GIB", "MAX_GIB", "TRACE", "declare_options"]

DEFAULT_GIB: list[float] = [8, 16, 32, 64, 128, 256, 512, 1024]
MAX_GIB = 2**30  # an exbibyte of HBM: a larger budget is a typo
TRACE = Path(__file__).resolve().parents[2] / "examples/traces/mooncake-conversation.jsonl.gz"
ANSWERS = ("fresh", "continuations")


def _sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected integers, comma-separated") from None
    if not sizes or sizes[0] < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: every pool needs at least 2 blocks")
    return sizes


def _gib(text: str) -> list[float]:
    try:
        sizes = [float(part) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected GiB, comma-separated") from None
    if not sizes or not all(0 < size <= MAX_GIB for size in sizes):  # nan compares false
        raise argparse.ArgumentTypeError(
            f"{text!r}: every budget must be a number of GiB above 0, at most {MAX_GIB:,}"
        )
    return sizes


def _evictions(text: str) -> list[str]:
    names = [part for part in text.split(",") if part]
    unknown = [name for name in names if name not in EVICTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected some of {', '.join(EVICTIONS)}, comma-separated"
        )
    return names


def declare_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``hbm``'s options on its parser."""
    options.add_trace(
        parser,
        hash_only=True,
        default=str(TRACE),
        note=" (default: the Mooncake conversation trace, "
        "examples/traces/mooncake-conversation.jsonl.gz)",
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="qwen3-next")
    parser.add_argument(
        "--pools",
        type=_sizes,
        default=[2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000],
        help="pool sizes in blocks, comma-separated",
    )
    model = parser.add_mutually_exclusive_group()
    model.add_argument("--model", choices=CATALOG, help="a model of the catalog (pools in GiB)")
    model.add_argument(
        "--model-config", type=Path, metavar="FILE", help="a model's config.json (pools in GiB)"
    )
    parser.add_argument(
        "--kv-dtype",
        choices=KV_DTYPES,
        default="auto",
        help="with a model: the KV cache's dtype, as vLLM's --kv-cache-dtype (auto: the weights')",
    )
    parser.add_argument(
        "--state-dtype",
        choices=STATE_DTYPES,
        default="auto",
        help="with a model: a Mamba or Gated DeltaNet state's dtype, as vLLM's "
        "--mamba-cache-dtype and --mamba-ssm-cache-dtype together (auto: vLLM's choice "
        "for the model)",
    )
    parser.add_argument(
        "--hbm",
        type=_gib,
        action="append",
        metavar="GIB",
        help="with a model: KV-cache budgets in GiB, repeatable or comma-separated "
        f"(default {','.join(map(str, DEFAULT_GIB))})",
    )
    parser.add_argument(
        "--evictions", type=_evictions, default=["lru"], help=f"some of {', '.join(EVICTIONS)}"
    )
    parser.add_argument(
        "--answers",
        choices=ANSWERS,
        default="fresh",
        help="how a finished request's output is keyed: fresh (default: under keys no "
        "later prompt has, as the engine makes up its own tokens) or continuations (as "
        "the later request continuing its prompt resends it, where the trace has one; "
        "workloads.answers, an upper bound: two users of one system prompt can look "
        "like a conversation)",
    )
    options.add_interval(parser, default=None, default_text="4 L")
    options.add_step(parser, chunk=0)
    options.add_jobs(
        parser, default=1, note="; the points are shared among them, the trace read once"
    )
    options.add_json(parser, what="every point")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="draw the curve (PNG, SVG)")
