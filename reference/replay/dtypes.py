"""The dtypes of a model's caches as vLLM 0.33.0 chooses them, and a user's choice of them.

vLLM runs a model in its config's dtype (``--dtype auto``, on a CUDA GPU with
bf16, compute capability 8.0 on; ``config/model.py``'s ``_resolve_auto_dtype``)
except that float32 weights run in bfloat16, and float16 ones too in the
families that refuse float16 (gemma2, gemma3, gemma3_text, glm4). The KV
cache is in ``--kv-cache-dtype``, ``auto`` the model's dtype; an explicit
bfloat16 or float16 must be the model's (``VllmConfig._reject_mismatched_float_kv_cache``).
A Mamba or Gated DeltaNet state has a conv part in ``--mamba-cache-dtype``
(``auto``: the model's dtype) and a temporal part in ``--mamba-ssm-cache-dtype``
(``MambaStateDtypeCalculator``); left ``auto``, the latter is what the model's
own config asks for where its vLLM config hook reads one
(``model_executor/models/config.py``: Nemotron-H its ``mamba_ssm_cache_dtype``,
float32 unless given; Qwen3.5 its ``mamba_ssm_dtype``), else the conv part's.
``tests/audit/test_cache_dtypes.py`` checks every catalog model against vLLM's
own resolution and page sizes.
"""

from __future__ import annotations

import attrs

from .configs import ModelConfigError, ModelShape

__all__ = ["BYTES", "KV_DTYPES", "STATE_DTYPES", "CacheDtypes", "cache_dtypes"]

# vLLM's names (CacheDType, MambaDType) for caches of plain elements: the fp8
# ones store one byte an element and no scales (KVQuantMode.FP8_PER_TENSOR).
KV_DTYPES = ("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2")
STATE_DTYPES = ("auto", "bfloat16", "float16", "float32")
BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
# config/model.py's _FLOAT16_NOT_SUPPORTED_MODELS.
_NO_FLOAT16 = ("gemma2", "gemma3", "gemma3_text", "glm4")
_CANONICAL = {"half": "float16", "float": "float32"}


@attrs.frozen
class CacheDtypes:
    """The dtype of the weights vLLM runs, of the KV cache and of a state's two parts."""

    model: str
    kv: str
    conv: str  # a state's conv part (Mamba-2's and Gated DeltaNet's conv window)
    ssm: str  # its temporal part (the SSM or recurrent state)

    def describe(self, stateful: bool) -> str:
        """The cache dtypes in words (the state's only where the model keeps one)."""
        state = f", state conv {self.conv} + SSM {self.ssm}" if stateful else ""
        return f"KV cache {self.kv}{state}"


def _model_dtype(shape: ModelShape) -> str:
    dtype = _CANONICAL.get(shape.dtype, shape.dtype)
    if dtype == "float32" or (dtype == "float16" and shape.model_type in _NO_FLOAT16):
        return "bfloat16"
    return dtype


def cache_dtypes(
    source: str, shape: ModelShape, kv_dtype: str = "auto", state_dtype: str = "auto"
) -> CacheDtypes:
    """The cache dtypes vLLM runs ``shape`` with under ``--kv-cache-dtype kv_dtype``
    and ``--mamba-cache-dtype state_dtype --mamba-ssm-cache-dtype state_dtype``;
    a choice vLLM refuses raises :class:`ModelConfigError` naming the option."""
    if kv_dtype not in KV_DTYPES:
        raise ModelConfigError(
            source, "--kv-dtype", kv_dtype, f"must be one of {', '.join(KV_DTYPES)}"
        )
    if state_dtype not in STATE_DTYPES:
        rule = f"must be one of {', '.join(STATE_DTYPES)}"
        raise ModelConfigError(source, "--state-dtype", state_dtype, rule)
    model = _model_dtype(shape)
    if kv_dtype in ("bfloat16", "float16") and kv_dtype != model:
        rule = f"must be auto or {model}, the dtype vLLM runs the model in"
        raise ModelConfigError(source, "--kv-dtype", kv_dtype, rule)
    conv = model if state_dtype == "auto" else state_dtype
    ssm = state_dtype
    if ssm == "auto" and shape.ssm_dtype is not None:
        ssm = shape.ssm_dtype
    return CacheDtypes(
        model=model,
        kv=model if kv_dtype == "auto" else kv_dtype,
        conv=conv,
        ssm=conv if ssm == "auto" else ssm,
    )
