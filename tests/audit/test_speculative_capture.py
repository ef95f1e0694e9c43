"""Which Mamba state vLLM 0.33.0 keeps when a decode step accepts several tokens.

Under speculative decoding a step computes the sampled token and ``a``
accepted drafts, and the model writes the state after each of them into
consecutive speculative columns. After the step vLLM's worker runs
``postprocess_mamba_fused_kernel`` (``vllm/v1/worker/mamba_utils.py``), which
copies one of them into the block of the deepest Mamba block end the step
reached, ``floor_B(new computed)``, when that lies past the step's start:
a block end the step passes without ending there is captured (the
``CAPTURED`` rule of ``core.CrossedGridPoints``), and of two it passes only
the deeper. The kernel is Triton; it runs here in Triton's interpreter on CPU
tensors (vLLM sees no GPU, so its ``triton.jit`` is a placeholder: the test
jits vLLM's own function bodies), each state block holding its column's
number, so the copy shows which column reached which block. This pins the
worker's half; that the scheduler then registers the block
(``cache_blocks``) is read in vLLM's code (docs/design/storage-rule.md).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import pytest

from junction.core import CrossedGridPoints, GroupSpec, HybridGeometry, decode_step_state

BLOCK, COLUMNS = 4, 16


@pytest.fixture(scope="module")
def postprocess() -> Callable[..., Any]:
    """vLLM's kernel and the two device functions it calls, jitted for the interpreter."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    import triton
    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction
    from vllm.v1.worker import mamba_utils

    # Triton's own jitted helpers (tl.cdiv ...) were compiled-mode if Triton was
    # imported before the variable was set (another test's vLLM import): interpreted
    # copies while the kernel runs here.
    for name in dir(tl):
        helper = getattr(tl, name)
        if isinstance(helper, JITFunction):
            monkeypatch.setattr(tl, name, InterpretedFunction(helper.fn))

    def jit(function: Any, **names: Any) -> Any:
        namespace = {**function.__globals__, "tl": tl, "triton": triton, **names}
        body = types.FunctionType(function.__code__, namespace, function.__name__)
        body.__annotations__ = dict(function.__annotations__)
        body.__defaults__, body.__kwdefaults__ = function.__defaults__, function.__kwdefaults__
        body.__module__, body.__qualname__ = function.__module__, function.__qualname__
        return triton.jit(body)

    memcpy = jit(mamba_utils._memcpy_u64_tiled)
    copy = jit(mamba_utils._copy_mamba_state_block, _memcpy_u64_tiled=memcpy)
    kernel = jit(mamba_utils.postprocess_mamba_fused_kernel, _copy_mamba_state_block=copy)
    yield kernel
    monkeypatch.undo()


def _written(kernel: Any, start: int, drafts: int, accepted: int) -> dict[int, int]:
    """Run a step from ``start`` computed tokens scheduling the sampled token and
    ``drafts`` drafts, ``accepted`` of them accepted: ``{block end: tokens of the state
    copied there}`` (vLLM's preprocess puts the running state in the block column
    ``cdiv(start + scheduled, B) - 1``; its column ``j`` past that holds the state
    after ``start + 1 + j`` tokens)."""
    import torch

    states = torch.arange(COLUMNS, dtype=torch.float32).repeat(8, 1).T.contiguous()
    table = torch.arange(COLUMNS, dtype=torch.int32).reshape(1, COLUMNS)
    scheduled = 1 + drafts
    running = -(-(start + scheduled) // BLOCK) - 1

    def ints(*values: int, kind: Any = torch.int64) -> Any:
        return torch.tensor(values, dtype=kind)

    kernel[(1, 1, 1)](
        ints(accepted + 1, kind=torch.int32),  # vLLM counts the sampled token
        ints(running, kind=torch.int32),
        ints(scheduled, kind=torch.int32),
        ints(start, kind=torch.int32),
        ints(drafts, kind=torch.int32),
        ints(table.data_ptr()),
        table.stride(0),
        ints(states.data_ptr()),
        ints(states.stride(0) * states.element_size()),
        ints(states.element_size()),
        ints(states.shape[1]),
        ints(0),  # a temporal state (no conv window)
        ints(0),
        ints(0),
        ints(0),
        ints(accepted + 1, kind=torch.int32),
        ints(0),
        1,
        block_size=BLOCK,
        COPY_BLOCK_SIZE=64,
        CONV_STATE_DIM_FIRST=False,
    )
    copied = {}
    for block in range(COLUMNS):
        column = int(states[block][0])
        if column != block:
            copied[(block + 1) * BLOCK] = start + 1 + column - running
    return copied


# (start, drafts, accepted): the step computes 1 + accepted tokens.
CASES = [
    (5, 3, 3, {8: 8}),  # 5 -> 9 passes 8: the state after 8 tokens, in 8's block
    (5, 3, 2, {8: 8}),  # 5 -> 8 ends on it
    (5, 3, 1, {}),  # 5 -> 7: no block end reached
    (6, 3, 0, {}),  # 6 -> 7: every draft rejected
    (3, 3, 3, {4: 4}),  # 3 -> 7 passes 4
    (5, 7, 7, {12: 12}),  # 5 -> 13 passes 8 and 12: only the deeper is kept
]


@pytest.mark.parametrize(("start", "drafts", "accepted", "copied"), CASES)
def test_vllm_keeps_the_deepest_block_end_a_step_reaches(
    postprocess: Any, start: int, drafts: int, accepted: int, copied: dict[int, int]
) -> None:
    assert _written(postprocess, start, drafts, accepted) == copied
    # The core's rule names the same block end (a step's own end included).
    geometry = HybridGeometry([GroupSpec.full(BLOCK), GroupSpec.mamba(BLOCK)], BLOCK)
    end = start + 1 + accepted
    left = decode_step_state(geometry, start, end, CrossedGridPoints.CAPTURED)
    assert left == (end // BLOCK * BLOCK if end // BLOCK * BLOCK > start else 0)
