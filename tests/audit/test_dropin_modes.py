"""The drop-in's two modes.

* ``identical``: vLLM's real KV-cache manager, driven like its scheduler
  drives it, decides exactly as vLLM 0.33.0 as shipped on the same prompts:
  every lookup's hit and junction, every chunk end, every hash each group
  caches, and the very blocks each lookup hands back (by the hashes they
  hold), while vLLM's own decision code is wired to fail.
* ``corrected`` (the default) is the core's lookup (tests/audit/test_dropin.py).
* A mode that is neither is an ``InvalidArgument`` naming the argument, the
  value and the rule; installing another mode switches, and ``swapped_in``
  puts back what was installed before.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from junction import dropin
from junction.audit.vllm.engine import VllmEngine
from junction.core import InvalidArgument
from junction.dropin import Mode

from .strategies import PromptRun, examples, prompt_runs
from .test_dropin import _vllm_decisions_fail


class _HandedBlocks:
    """Records, per lookup, the hashes of the blocks ``get_computed_blocks`` hands back."""

    def __init__(self, engine: VllmEngine) -> None:
        self.calls: list[tuple[tuple[object, ...], ...]] = []
        manager = engine.manager
        original = manager.get_computed_blocks

        def get_computed_blocks(request: Any) -> Any:
            answer = original(request)
            blocks = answer[0]
            self.calls.append(
                tuple(tuple(block.block_hash for block in group) for group in blocks.blocks)
            )
            return answer

        manager.get_computed_blocks = get_computed_blocks


def _run(run: PromptRun) -> tuple[VllmEngine, _HandedBlocks]:
    engine = VllmEngine(run.geometry)
    handed = _HandedBlocks(engine)
    for prompt in run.prompts:
        engine.prefill(prompt, run.budget)
    for prompt in run.prompts:
        engine.lookup(prompt)
    return engine, handed


def _cached(engine: VllmEngine) -> dict[object, int]:
    """Each cached (hash, group) key and how many blocks hold it."""
    cache = engine.block_pool.cached_block_hash_to_block._cache
    return {key: 1 if not isinstance(held, dict) else len(held) for key, held in cache.items()}


@settings(max_examples=examples(0.3))
@given(prompt_runs())
def test_identical_mode_decides_exactly_as_vllm_as_shipped(run: PromptRun) -> None:
    shipped, shipped_blocks = _run(run)
    with dropin.swapped_in("identical"), _vllm_decisions_fail():
        ours, our_blocks = _run(run)
    assert [(x.hit_length, x.shared_prefix_boundary) for x in ours.lookups] == [
        (x.hit_length, x.shared_prefix_boundary) for x in shipped.lookups
    ]
    assert our_blocks.calls == shipped_blocks.calls
    assert [p.chunk_ends for p in ours.prefills] == [p.chunk_ends for p in shipped.prefills]
    assert _cached(ours) == _cached(shipped)


@pytest.mark.parametrize("mode", ["Corrected", "exact", "", None, 1, b"identical"])
def test_a_mode_that_is_neither_is_rejected_with_its_rule(mode: object) -> None:
    with pytest.raises(InvalidArgument) as error:
        dropin.install(mode)  # type: ignore[arg-type]
    assert (error.value.argument, error.value.value) == ("mode", mode)
    assert error.value.rule == "must be one of 'corrected', 'identical'"
    assert not dropin.installed()


def test_installing_another_mode_switches_and_swapped_in_restores_it() -> None:
    try:
        dropin.install()
        assert dropin.installed_mode() is Mode.CORRECTED
        with dropin.swapped_in("identical"):
            assert dropin.installed_mode() is Mode.IDENTICAL
            points = dropin.decision_points(Mode.IDENTICAL)
            assert all(cls.__dict__[name] is fn for (cls, name), fn in points.items())
        assert dropin.installed_mode() is Mode.CORRECTED
        dropin.install(Mode.IDENTICAL)
        assert dropin.installed_mode() is Mode.IDENTICAL
    finally:
        dropin.uninstall()
    assert dropin.installed_mode() is None
