"""``junction hbm``'s options: the trace, the pools or a model's budgets, dtypes and engine
layout, the evictions, how answers are keyed, and the outputs; the model's layout they
ask for, or why they cannot go together (the command itself: ``cli.hbm``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from junction.reference.replay import EVICTIONS
from junction.reference.replay.dtypes import KV_DTYPES, STATE_DTYPES
from junction.reference.replay.layouts import (
    LAYOUTS,
    MAX_NUM_SEQS,
    SGLANG_RATIO,
    Layout,
    layout_of,
)
from junction.reference.replay.models import CATALOG, catalog_fields, file_fields, memory_model
from junction.reference.simulator.geometries import PRESETS

from . import options
from .arguments import int_at_least

__all__ = [
    "ANSWERS",
    "DEFAULT_GIB",
    "MAX_GIB",
    "TRACE",
    "declare_options",
    "layout_refusal",
    "model_layout",
]

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


def _ratio(text: str) -> float:
    try:
        ratio = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number") from None
    if not 0 < ratio <= 1000:  # nan compares false
        raise argparse.ArgumentTypeError(f"{text!r}: must be above 0, at most 1,000")
    return ratio


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
        "--layout",
        choices=LAYOUTS,
        default="vllm",
        help="with a hybrid model: where the engine keeps states (reference.replay.layouts): "
        "vllm (default: blocks of one shared pool), sglang (SGLang 0.5.23: a state pool of "
        "its own sized by --mamba-full-memory-ratio, KV pages of 1 token; lru only) or "
        "per-request-slot (tpu-inference before #3422, or with speculative decoding: a state "
        "slot per running request, no prefix caching)",
    )
    parser.add_argument(
        "--mamba-full-memory-ratio",
        type=_ratio,
        metavar="R",
        help="with --layout sglang: SGLang's ratio of state memory to KV memory "
        f"(default {SGLANG_RATIO:g}, SGLang's)",
    )
    parser.add_argument(
        "--max-num-seqs",
        type=int_at_least(1),
        metavar="N",
        help="with --layout per-request-slot: the running requests a state slot is kept "
        f"for, one more for padding (default {MAX_NUM_SEQS}, vLLM's below 70 GiB a device; "
        "vLLM takes 1024 on H100, H200 and B200)",
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


def model_layout(args: argparse.Namespace) -> Layout | None:
    """The model's layout under ``--layout``, or ``None`` without a model."""
    if args.model is not None:
        name, fields = args.model, catalog_fields(args.model)
    elif args.model_config is not None:
        name, fields = str(args.model_config), file_fields(args.model_config)
    else:
        return None
    model = memory_model(name, fields, args.kv_dtype, args.state_dtype)
    ratio, seqs = args.mamba_full_memory_ratio, args.max_num_seqs
    return layout_of(
        args.layout,
        model,
        fields,
        ratio=SGLANG_RATIO if ratio is None else ratio,
        max_num_seqs=MAX_NUM_SEQS if seqs is None else seqs,
    )


def layout_refusal(args: argparse.Namespace) -> str | None:
    """Why ``--layout`` and its options cannot go with the rest (one line), if they cannot."""
    if args.layout != "sglang" and args.mamba_full_memory_ratio is not None:
        return "--mamba-full-memory-ratio needs --layout sglang"
    if args.layout != "per-request-slot" and args.max_num_seqs is not None:
        return "--max-num-seqs needs --layout per-request-slot"
    if args.layout == "vllm":
        return None
    if args.model is None and args.model_config is None:
        return f"--layout {args.layout} needs --model or --model-config"
    if args.layout == "sglang" and args.evictions != ["lru"]:
        return "--layout sglang: lru eviction only (SGLang evicts KV and states by LRU)"
    if args.layout == "sglang" and args.state_dtype != "auto":
        return "--layout sglang: --state-dtype is vLLM's; SGLang's state dtypes are its own"
    return None
