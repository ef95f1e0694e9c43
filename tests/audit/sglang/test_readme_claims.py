"""The SGLang audit's figures in docs/results.md, recomputed from the side-by-side runs.

Each figure docs/results.md prints about vLLM, SGLang and the ``junction``
policy is a cell of the side-by-side (``audit.sglang.findings.side_by_side``,
which docs/findings.md prints): the sentence must be there and its numbers
must be what the engines decide now.
"""

from __future__ import annotations

from pathlib import Path

from junction.audit.sglang.findings import COMPARED, Side, side_by_side

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results.md"


def _sides(title: str) -> tuple[Side, Side, Side]:
    return side_by_side(dict(COMPARED)[title])


def _said(text: str) -> None:
    prose = " ".join(RESULTS.read_text(encoding="utf-8").split())
    assert text in prose, f"docs/results.md no longer says {text!r}"


def test_a_resend_of_a_grid_long_prompt() -> None:
    vllm, sglang, policy = _sides("resend of a 16-token prompt (budget 16)")
    _said(
        f"a 16-token prompt sent twice: vLLM hits {vllm.hit}, the `junction` policy "
        f"{policy.hit}, SGLang {sglang.hit})"
    )


def test_a_chunk_cut_off_the_grid() -> None:
    vllm, sglang, policy = _sides("third request after two sharing 13 tokens, in 6-token chunks")
    assert vllm.hit == policy.hit
    _said(
        f"two prompts sharing 13 tokens in 6-token chunks: SGLang hits {sglang.hit} keeping "
        f"{sglang.states} states, vLLM and the `junction` policy {policy.hit}, keeping "
        f"{vllm.states} and {policy.states}"
    )


def test_a_state_per_chunk() -> None:
    _, sglang, policy = _sides("resend of a 15-token prompt (budget 4)")
    _said(
        f"a 15-token prompt in 4-token chunks keeps {sglang.states} states where the "
        f"`junction` policy keeps {policy.states}"
    )


def test_a_shared_prefix_that_fits_a_chunk() -> None:
    vllm, sglang, policy = _sides("third request after two sharing 12 tokens")
    assert (sglang.hit, sglang.states) == (policy.hit, policy.states)
    _said(
        f"a prefix shared over 12 tokens: SGLang and the policy hit {sglang.hit} keeping "
        f"{sglang.states} state, vLLM {vllm.hit} keeping {vllm.states}"
    )
