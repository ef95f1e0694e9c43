"""Two facts about vLLM 0.33.0's split options the core does not copy, re-run on vLLM.

* The scheduler decides whether the backend writes the internal prefill
  checkpoint at the checkpoint of the *prefill's* end, while the backend
  (``compute_mamba_prefill_checkpoints``) and ``MambaManager`` key it on the
  *chunk's* end. For a resumed request whose last chunk also takes the last
  token the two are one hash unit apart, and the backend's tiles can fit one
  and not the other: the scheduler then drops the replay stop for a
  checkpoint the backend never writes, and the prefill leaves no Mamba state
  where a resend lands. The core keys the checkpoint on the chunk's end,
  where the backend writes it; vLLM's scheduler form is the compatibility
  flag ``PrefillCheckpoints(keyed_on_prefill_end=True)``, which the
  ``vllm-0.33`` policy and the drop-in use. The counterexample is re-run
  here against the installed vLLM, and the core's two answers beside it; it
  is the recorded finding ``checkpoint-keyed-on-prefill-end``
  (``audit/vllm/split_findings.py``), re-run below as docs/findings.md shows it.
* ``get_mamba_prefill_checkpoint_position`` ignores the lookahead tokens
  under the EAGLE drop, but the scheduler turns the drop off whenever
  lookahead hashes are on, so no call combines them; the core's
  ``last_cacheable_position`` answers the combination by first principles.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from junction.audit.vllm.split import SchedulerStandIn, make_request
from junction.audit.vllm.split_findings import SPLIT_FINDINGS, SplitFinding
from junction.core import (
    GroupSpec,
    PrefillCheckpoints,
    last_cacheable_position,
    mamba_block_aligned_split,
)
from junction.upstream.vllm_0_33.env import vllm
from junction.upstream.vllm_0_33.scheduler import VllmSplitOptions
from junction.upstream.vllm_0_33.specs import vllm_geometry

# b = H = L = 4, backend tiles of 8; P = 21 and 8 accepted output tokens (N = 29).
GEOMETRY = vllm_geometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
TILES = VllmSplitOptions(prefill_checkpoint_alignment=8)


def _written(chunk_end: int, chunk_start: int = 0) -> tuple[list[int], list[int]]:
    checkpoint = importlib.import_module("vllm.model_executor.layers.mamba.checkpoint")
    return checkpoint.compute_mamba_prefill_checkpoints(  # type: ignore[no-any-return]
        [chunk_end], [chunk_end - chunk_start], 4, 4, 8, False, 4
    )


def test_the_scheduler_drops_the_replay_stop_for_a_checkpoint_the_backend_does_not_write() -> None:
    request = make_request(list(range(29)), 21)
    # The scheduler: the prefill ends at 28, its checkpoint floor_4(27) = 24 fits the tiles,
    # so the whole rest, [0, 29), is one chunk.
    assert SchedulerStandIn(GEOMETRY, 64, 0, TILES).split(request, 29) == 29
    # The backend keys on that chunk's end: floor_4(28) = 28, off the tiles: nothing written.
    assert _written(29) == ([0], [-1])
    # Without checkpoint blocks the chunk stops at 28, the state a resend of 29 tokens uses.
    assert SchedulerStandIn(GEOMETRY, 64).split(request, 29) == 28
    # Where the chunk ends at the prefill's end the two keys agree, and the state is written.
    assert _written(28) == ([24], [5])
    # The core: keyed on the chunk's end it stops at 28; in vLLM's form it answers 29.
    resumed = dict(num_computed_tokens=0, num_new_tokens=29, num_prompt_tokens=21, num_tokens=29)
    for keyed, answer in ((False, 28), (True, 29)):
        checkpoints = PrefillCheckpoints(8, 4, keyed_on_prefill_end=keyed)
        assert mamba_block_aligned_split(
            **resumed, block_size=4, prefill_checkpoints=checkpoints
        ) == (answer)


def test_the_checkpoint_helper_ignores_lookahead_under_the_eagle_drop() -> None:
    position = vllm().interface.get_mamba_prefill_checkpoint_position
    assert position(12, 4, True, num_hash_lookahead_tokens=4) == 8
    assert last_cacheable_position(12, 4, True, 4) == 4  # [4, 8) must be hashed: 8 + 4 <= 12
    # Unreachable from the scheduler: its constructor turns the EAGLE block drop off
    # whenever lookahead hashes are on (read in its source: no engine runs on CPU here).
    source = inspect.getsource(vllm().scheduler.Scheduler.__init__)
    guard = source.index("if self.num_hash_lookahead_tokens:")
    assert source.index("self.use_eagle_block_drop = False", guard) - guard < 200


@pytest.mark.parametrize("finding", SPLIT_FINDINGS, ids=lambda f: f.key)
def test_split_findings_still_reproduce(finding: SplitFinding) -> None:
    seen = finding.observe()
    assert seen.core_serves, f"{finding.key}: the core's chunk no longer leaves the landing's state"
    assert not seen.vllm_serves, f"{finding.key}: vLLM's chunk now leaves the landing's state"
    assert seen.compatibility_chunk == seen.vllm_chunk, f"{finding.key}: vLLM's form departs"
