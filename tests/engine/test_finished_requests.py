"""What a finished request keeps, and what the engine asks a policy during decode.

A replay of a whole trace must not hold every prompt: a finished request's
tokens are released at the next step (until then the caller can read what
the finishing step computed), while its counts, ``hit_length`` and hash
chain stay for the harness, the simulator and the workloads. A decode step
computes one token, which no split may cut, so the policy's split is asked
only for prefill chunks (as vLLM asks its own).
"""

from __future__ import annotations

from collections.abc import Sequence

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.hash_chain import HashChain
from junction.reference.engine.policy import RequestView
from junction.reference.engine.request import RequestStatus
from junction.reference.policies.builtin import JunctionPolicy

GEOMETRY = HybridGeometry(
    [GroupSpec.full(4), GroupSpec.sliding_window(4, 6), GroupSpec.mamba(4)],
    4,
    retention_interval=0,
)


def test_a_finished_request_keeps_its_counts_and_chain_and_releases_its_tokens() -> None:
    engine = Engine(EngineConfig(GEOMETRY, num_blocks=64, policy=JunctionPolicy()))
    prompt = tuple(range(21))
    first = engine.submit(prompt, 3)
    while engine.requests[first].status is not RequestStatus.FINISHED:
        engine.step()
    done = engine.requests[first]
    # Readable after the step that finished it: the prompt and 3 outputs.
    tokens = tuple(done.tokens)
    assert tokens[:21] == prompt and len(tokens) == 24 == done.num_tokens
    expected = HashChain(4)
    expected.extend(tokens)
    second = engine.submit(prompt, 1)  # reuses the first one's cache
    engine.run()
    assert done.tokens == []
    assert len(engine.requests[second].tokens) == 22  # finished in the last step: still there
    assert (done.num_prompt_tokens, done.num_tokens, done.num_output_tokens) == (21, 24, 3)
    assert done.chain.hashes == expected.hashes  # the harness reads a finished chain
    assert engine.requests[second].hit_length == 20 and engine.metrics.hit_tokens == 20
    engine.check()


class RecordingPolicy(JunctionPolicy):
    """Records the request state of every split the engine asks for."""

    name = "recording"

    def __init__(self) -> None:
        self.splits: list[tuple[int, int, int]] = []

    def split(
        self,
        geometry: HybridGeometry,
        request: RequestView,
        num_new_tokens: int,
        max_prefill_tokens: int,
    ) -> int:
        self.splits.append(
            (request.num_computed_tokens, request.num_prompt_tokens, request.num_tokens)
        )
        return super().split(geometry, request, num_new_tokens, max_prefill_tokens)


def test_the_split_is_asked_only_during_prefill() -> None:
    policy = RecordingPolicy()
    engine = Engine(EngineConfig(GEOMETRY, num_blocks=64, max_num_batched_tokens=8, policy=policy))
    prompts: Sequence[tuple[int, ...]] = [tuple(range(13)), tuple(range(9)) + (7,) * 6]
    for prompt in prompts:
        engine.submit(prompt, 5)
    engine.run()
    # 13 and 15 prompt tokens in chunks of at most 8 (fewer after the hit), 5 outputs each.
    assert len(policy.splits) >= 3
    assert all(start < max(prompt, tokens - 1) for start, prompt, tokens in policy.splits)
    assert engine.metrics.finished == 2
