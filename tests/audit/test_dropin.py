"""The drop-in: the core swapped into vLLM 0.33.0's classes, and only the core.

* Installing replaces exactly the four class attributes, is idempotent, and
  uninstalling puts back the very objects it took (``is``, not ``==``).
* With it installed, a real vLLM KV-cache manager driven like its scheduler
  drives it decides everything through the core: every lookup is
  ``core.reconcile_hits``'s answer on the same pool, every mask and every
  split the core's answer to the same arguments, while vLLM's own decision
  code (the per-type lookups, the split's checkpoint rule) is wired to fail
  if anything reaches it.
* Every option the core cannot express raises :class:`UnsupportedOption`
  naming it; invalid input still raises the core's ``InvalidArgument``. The
  split's three options (lookahead hashes, the exact junction stop, internal
  prefill checkpoints) are the core's own and answer as vLLM does.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import inspect
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from junction import dropin
from junction.audit.vllm.engine import VllmEngine
from junction.audit.vllm.split import SchedulerStandIn, make_request
from junction.core import (
    GroupSpec,
    InvalidArgument,
    mamba_block_aligned_split,
    reachable_block_mask,
)
from junction.dropin import Decision, UnsupportedOption
from junction.upstream.vllm_0_33.env import vllm
from junction.upstream.vllm_0_33.specs import manager_class, vllm_geometry, vllm_spec

from .strategies import PromptRun, examples, prompt_runs


@pytest.fixture
def swapped() -> Iterator[None]:
    with dropin.swapped_in():
        yield


def _class_attributes() -> dict[tuple[type, str], Any]:
    return {(cls, name): cls.__dict__[name] for cls, name in dropin.decision_points()}


def test_install_is_idempotent_and_uninstall_restores_the_very_originals() -> None:
    originals = _class_attributes()
    assert len(originals) == 4
    try:
        dropin.install()
        adapters = _class_attributes()
        dropin.install()
        assert _class_attributes() == adapters  # a second install changed nothing
        for key, original in originals.items():
            assert adapters[key] is not original, key
    finally:
        dropin.uninstall()
    assert not dropin.installed()
    for key, original in _class_attributes().items():
        assert original is originals[key], key
    dropin.uninstall()  # uninstalling twice is harmless


def test_each_adapter_has_the_signature_of_what_it_replaces() -> None:
    # Parameter names included: vLLM's own tests call the split with self= by keyword.
    originals = _class_attributes()
    for key, adapter in dropin.decision_points().items():
        original = originals[key]
        if isinstance(original, classmethod):
            original, adapter = original.__func__, adapter.__func__
        ours, theirs = inspect.signature(adapter), inspect.signature(original)
        assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
            (p.name, p.kind, p.default) for p in theirs.parameters.values()
        ], key


def test_swapped_in_restores_and_leaves_an_outer_install_alone() -> None:
    originals = _class_attributes()
    with dropin.swapped_in():
        assert dropin.installed()
        with dropin.swapped_in():
            pass
        assert dropin.installed()  # the inner block did not own the installation
    assert _class_attributes() == originals
    with pytest.raises(KeyError), dropin.swapped_in():
        raise KeyError("the body's error propagates, and vLLM's code is back")
    assert not dropin.installed()


@contextlib.contextmanager
def _vllm_decisions_fail() -> Iterator[None]:
    """vLLM's own decision code raises if called (what the adapters must never fall back to)."""
    v = vllm()

    def tripwire(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("vLLM's own decision code was called with the core swapped in")

    managers = v.managers
    with pytest.MonkeyPatch.context() as patch:
        for cls in (managers.FullAttentionManager, managers.SlidingWindowManager):
            patch.setattr(cls, "find_longest_cache_hit", classmethod(tripwire))
        patch.setattr(managers.MambaManager, "find_longest_cache_hit", classmethod(tripwire))
        patch.setattr(managers.SlidingWindowManager, "_contiguous_blocks_for_hit", tripwire)
        patch.setattr(v.scheduler, "get_mamba_prefill_checkpoint_position", tripwire)
        yield


@settings(max_examples=examples(0.3))
@given(prompt_runs())
def test_a_vllm_engine_with_the_core_swapped_in_decides_exactly_as_the_core(
    run: PromptRun,
) -> None:
    geometry = run.geometry
    with dropin.swapped_in(), _vllm_decisions_fail():
        engine = run.on_vllm(lookups=True)
    for lookup in engine.lookups:
        core = lookup.core
        assert (lookup.hit_length, lookup.shared_prefix_boundary) == (
            core.hit_length,
            core.shared_prefix_boundary,
        ), lookup
    for call in engine.mask_calls:
        expected = reachable_block_mask(
            call.start_block,
            call.end_block,
            call.alignment_tokens,
            geometry.groups[call.group_id],
            call.use_eagle,
            call.retention_interval,
            [b for b in call.boundaries if b >= 0],
        )
        assert call.answer == (None if expected is None else tuple(expected)), call
    for split in engine.split_calls:
        state = split.request
        expected_split = mamba_block_aligned_split(
            num_computed_tokens=state.num_computed_tokens,
            num_new_tokens=split.num_new_tokens,
            num_prompt_tokens=state.num_prompt_tokens,
            num_tokens=state.num_tokens,
            block_size=geometry.mamba_block_size,
            shared_prefix_boundary=state.shared_prefix_boundary,
            use_eagle=geometry.use_eagle,
            hash_block_size=geometry.hash_block_size if geometry.partial_hits else None,
            partial_hits=geometry.partial_hits
            and geometry.hash_block_size < geometry.scheduler_block_size,
            max_prefill_tokens=split.max_num_scheduled_tokens,
            num_new_local_computed_tokens=split.num_new_local_computed_tokens,
        )
        assert split.answer == expected_split, split


# -- the split's engine options ----------------------------------------------------


def _stand_in(**settings: object) -> tuple[SchedulerStandIn, Any]:
    geometry = vllm_geometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
    stand_in = SchedulerStandIn(geometry, 64)
    for name, value in settings.items():
        setattr(stand_in, name, value)
    request = make_request(list(range(20)), 20)
    request.shared_prefix_boundary = 6
    return stand_in, request


_CHECKPOINTS = {
    "mamba_has_prefill_checkpoint_blocks": True,
    "mamba_prefill_checkpoint_alignment": 4,
}


@pytest.mark.parametrize(
    ("settings", "new_tokens", "junction", "answer"),
    [
        ({}, 16, 6, 4),  # the junction floors to the Mamba grid at 4
        # The chunk reaches the prefill's end (20), the backend writes the checkpoint at 16:
        # only the junction stops it.
        (_CHECKPOINTS, 20, 6, 4),
        (_CHECKPOINTS, 20, 0, 20),
        ({"mamba_has_prefill_checkpoint_blocks": True}, 20, 0, 16),  # no alignment: none written
        (_CHECKPOINTS, 16, 0, 16),  # the chunk stops short of the prefill's end
        ({"num_hash_lookahead_tokens": 1}, 20, 0, 16),  # one token, the one always recomputed
        ({"num_hash_lookahead_tokens": 5}, 20, 0, 12),  # the last cacheable position is 12
        ({"mamba_shared_prefix_checkpoint": True}, 16, 6, 6),  # the junction itself
        ({"mamba_shared_prefix_checkpoint": True}, 16, 8, 8),  # on the grid: exact = floored
    ],
    ids=[
        "none",
        "checkpoint-junction",
        "checkpoint",
        "checkpoint-no-alignment",
        "checkpoint-short",
        "lookahead-1",
        "lookahead-5",
        "exact",
        "exact-on-grid",
    ],
)
def test_the_split_options_are_the_cores_and_answer_as_vllm(
    settings: dict[str, object], new_tokens: int, junction: int, answer: int
) -> None:
    stand_in, request = _stand_in(**settings)
    request.shared_prefix_boundary = junction
    theirs = stand_in.split(request, new_tokens)
    with dropin.swapped_in():
        ours = stand_in.split(request, new_tokens)
    assert ours == theirs == answer


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("shared_prefix_boundary", -1),
        ("shared_prefix_boundary", 1.5),
        ("shared_prefix_boundary", True),
        ("num_computed_tokens", True),
        ("num_computed_tokens", "1"),
        ("num_new_local_computed_tokens", True),
        ("num_external_computed_tokens", True),
    ],
)
def test_a_decoding_split_refuses_what_the_core_refuses(argument: str, value: object) -> None:
    # A decoding chunk is answered before the engine's settings are read; its
    # arguments are still the core's to refuse.
    # The prompt is 20 tokens, all computed: the chunk starts at 20, in decode.
    stand_in, request = _stand_in()
    counts: dict[str, object] = {
        "num_new_local_computed_tokens": 0,
        "num_external_computed_tokens": 0,
    }
    if argument == "shared_prefix_boundary":
        request.num_computed_tokens = 20
        request.shared_prefix_boundary = value
    elif argument == "num_computed_tokens":
        request.num_computed_tokens = value
        counts["num_new_local_computed_tokens"] = 19
    else:
        request.num_computed_tokens = 19
        counts[argument] = value
    with dropin.swapped_in(), pytest.raises(InvalidArgument) as raised:
        stand_in.split(request, 1, **counts)
    assert (raised.value.argument, raised.value.value) == (argument, value)


def _mask(group: GroupSpec, **overrides: Any) -> list[bool] | None:
    arguments: dict[str, Any] = dict(
        start_block=0,
        end_block=8,
        alignment_tokens=4,
        kv_cache_spec=vllm_spec(group),
        use_eagle=False,
        retention_interval=8,
        reachable_boundaries=[],
    )
    arguments.update(overrides)
    answer: list[bool] | None = manager_class(group).reachable_block_mask(**arguments)
    return answer


@pytest.mark.parametrize(
    ("group", "option", "value", "alignment"),
    [
        (GroupSpec.sliding_window(4, 5), "alignment_tokens", None, None),
        (GroupSpec.mamba(4), "alignment_tokens", None, None),
        # Off the grid of a Mamba group whose A (6) and B (4) do not divide one another.
        (GroupSpec.mamba(4), "retention_interval", 10, 6),
    ],
    ids=str,
)
def test_the_mask_refuses_what_the_core_cannot_express(
    swapped: None, group: GroupSpec, option: str, value: object, alignment: int | None
) -> None:
    with pytest.raises(UnsupportedOption) as raised:
        _mask(group, **{option: value, "alignment_tokens": alignment})
    assert (raised.value.decision, raised.value.option, raised.value.value) == (
        Decision.MASK,
        option,
        value,
    )


def test_the_final_segment_end_is_the_cores_option(swapped: None) -> None:
    # vLLM's own example (test_swa_reachable_block_mask_final_partial_segment).
    window = GroupSpec.sliding_window(4, 16)
    for final, eagle in ((300, False), (250, False), (300, True), (250, True)):
        answer = _mask(
            window,
            start_block=243,
            end_block=250,
            alignment_tokens=36,
            use_eagle=eagle,
            retention_interval=None,
            final_segment_end_block=final,
        )
        assert answer == reachable_block_mask(
            243, 250, 36, window, eagle, None, [], final_segment_end_block=final
        )
    assert answer is not None and [243 + i for i, kept in enumerate(answer) if kept] == [
        243,
        248,
        249,
    ]


@pytest.mark.parametrize("group", [GroupSpec.sliding_window(4, 5), GroupSpec.mamba(4)], ids=str)
def test_an_off_grid_interval_is_the_cores_segment_ends(swapped: None, group: GroupSpec) -> None:
    # R = 6 is off the block (4): the core keeps floor_A(6k) (A = 2), not vLLM's R // B.
    assert _mask(group, alignment_tokens=2, retention_interval=6, end_block=12) == (
        reachable_block_mask(0, 12, 2, group, False, 6, [])
    )


@pytest.mark.parametrize("group", [GroupSpec.sliding_window(4, 5), GroupSpec.mamba(4)], ids=str)
def test_the_mask_is_the_core_mask_and_bad_input_is_the_cores_error(
    swapped: None, group: GroupSpec
) -> None:
    # A negative boundary (vLLM's J - B when J < B) marks nothing in vLLM; it is left out.
    assert _mask(group, reachable_boundaries=[12, -4]) == reachable_block_mask(
        0, 8, 4, group, False, 8, [12]
    )
    with pytest.raises(InvalidArgument) as raised:
        _mask(group, start_block=5, end_block=3)
    assert raised.value.argument == "end_block"
    # Left out, a negative boundary hides no other error: of the range, or of a boundary.
    with pytest.raises(InvalidArgument) as raised:
        _mask(group, start_block=5, end_block=3, reachable_boundaries=[-4])
    assert raised.value.argument == "end_block"
    with pytest.raises(InvalidArgument) as raised:
        _mask(group, reachable_boundaries=[-4, "12"])
    assert raised.value.argument.startswith("reachable_boundaries[")
    assert raised.value.value == "12"


@pytest.mark.parametrize("retention_interval", [None, 0, 8])
def test_a_dense_or_sparse_mamba_mask_checks_its_input(
    swapped: None, retention_interval: int | None
) -> None:
    # vLLM answers a dense Mamba group without reading its input; the core reads it.
    group = GroupSpec.mamba(4)
    with pytest.raises(InvalidArgument) as raised:
        _mask(group, retention_interval=retention_interval, reachable_boundaries=[8, 1.5])
    assert (raised.value.argument, raised.value.value) == ("reachable_boundaries[1]", 1.5)


def test_the_lookup_takes_eagle_per_group_as_vllm_marks_it() -> None:
    """Only the draft model's window is an EAGLE group: vLLM's own lookup and the
    core swapped in find the same hits, with no refusal, and the core's groups
    carry vLLM's marks."""
    groups = [GroupSpec.full(4, eagle_group=False), GroupSpec.sliding_window(4, 5)]
    geometry = vllm_geometry(groups, 4, use_eagle=True)
    assert [g.eagle_group for g in geometry.groups] == [False, True]
    base = tuple(range(40))
    prompts = [base, base[:16] + (99,) * 9, base, base[:17]]

    def hits() -> list[tuple[int, int]]:
        engine = VllmEngine(geometry)
        for prompt in prompts[:2]:
            engine.prefill(prompt, 64)
        found = [engine.lookup(prompt) for prompt in prompts]
        return [(lookup.hit_length, lookup.shared_prefix_boundary) for lookup in found]

    with dropin.swapped_in(), _vllm_decisions_fail():
        swapped_hits = hits()
    assert swapped_hits == hits()
    assert any(hit for hit, _ in swapped_hits)


# -- the vLLM suite's bookkeeping (make vllm-suite) ------------------------------------


def test_the_plugin_finds_a_refusal_anywhere_in_the_exception_chain() -> None:
    from junction.audit.vllm.suite.plugin import _unsupported

    try:
        try:
            raise UnsupportedOption(Decision.MASK, "dcp_world_size", 2)
        except UnsupportedOption as refusal:
            raise RuntimeError("vLLM wrapped it") from refusal
    except RuntimeError as wrapped:
        assert _unsupported(wrapped) == ("dcp_world_size", "2")
    assert _unsupported(RuntimeError("no refusal")) is None


def test_under_decode_context_parallelism_a_window_block_is_sharded_a_state_is_not(
    swapped: None,
) -> None:
    window = GroupSpec.sliding_window(4, 5)
    # 2 ranks: each holds half of a block's KV, so a block covers 8 tokens.
    assert _mask(window, alignment_tokens=8, retention_interval=16, dcp_world_size=2) == (
        reachable_block_mask(0, 8, 8, GroupSpec.sliding_window(8, 5), False, 16, [])
    )
    state = GroupSpec.mamba(4)
    assert _mask(state, dcp_world_size=2) == reachable_block_mask(0, 8, 4, state, False, 8, [])


@pytest.fixture
def local_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A PEP 503 (HTML) package index on localhost, named by PIP_INDEX_URL."""
    root = tmp_path / "index"
    (root / "vllm").mkdir(parents=True)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{server.server_address[1]}/")
    try:
        yield root
    finally:
        server.shutdown()


def _list_sdist(root: Path, sha256: str) -> None:
    (root / "vllm" / "vllm-0.33.0.tar.gz").write_bytes(b"not vLLM")
    (root / "vllm" / "index.html").write_text(
        f'<a href="vllm-0.33.0.tar.gz#sha256={sha256}">vllm-0.33.0.tar.gz</a>', encoding="utf-8"
    )


def test_the_sdist_is_refused_when_the_index_lists_another_hash(
    local_index: Path, tmp_path: Path
) -> None:
    from junction.audit.vllm.suite import workspace

    _list_sdist(local_index, "0" * 64)
    with pytest.raises(RuntimeError, match=r"lists vllm-0\.33\.0\.tar\.gz with sha256 0000"):
        workspace.prepare(tmp_path / "cache")
    assert not (tmp_path / "cache" / "vllm-0.33.0.tar.gz").exists()


def test_the_sdist_is_refused_when_its_bytes_are_not_the_pinned_ones(
    local_index: Path, tmp_path: Path
) -> None:
    from junction.audit.vllm.suite import workspace

    _list_sdist(local_index, workspace.SDIST_SHA256)  # the index claims the right hash
    with pytest.raises(RuntimeError, match=r"downloaded vllm-0\.33\.0\.tar\.gz has sha256"):
        workspace.prepare(tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []  # nothing half-written stays


def test_bindings_are_found_by_the_identity_of_what_they_were_built_from() -> None:
    from junction.dropin.bindings import IdentityCache

    cache: IdentityCache[str] = IdentityCache(limit=2)
    spec, twin = [1, 2], [1, 2]  # equal, not the same object
    assert cache.keep((id(spec), "A"), (spec,), "bound") == "bound"
    assert cache.find((id(spec), "A")) == "bound"
    assert cache.find((id(twin), "A")) is None
    assert cache.find((id(spec), "B")) is None
    cache.keep((id(twin), "A"), (twin,), "twin")
    cache.keep((id(spec), "B"), (spec,), "third")  # full: cleared before keeping
    assert cache.find((id(spec), "A")) is None
    assert cache.find((id(spec), "B")) == "third"


def test_a_value_kept_beside_its_owner_goes_with_it() -> None:
    import gc

    from junction.dropin.bindings import OwnerCache, forget

    class Owner:
        pass

    cache: OwnerCache[str] = OwnerCache()
    owner, config = Owner(), object()
    assert cache.find(id(owner)) is None
    assert cache.keep(owner, (config, 16), "bound") == "bound"
    kept = cache.find(id(owner))
    assert kept is not None and kept.owner() is owner and kept.value == "bound"
    assert kept.sources == (config, 16) and kept.sources != (object(), 16)
    cache.keep(owner, (config, 32), "rebound")  # a changed source: the caller rebinds
    assert cache.find(id(owner)) == (kept.owner, (config, 32), "rebound")
    key = id(owner)
    del owner, kept
    gc.collect()
    assert cache.find(key) is None  # dropped with its owner: a later object's id reads nothing
    other = Owner()
    cache.keep(other, (config,), "bound")
    forget()
    assert cache.find(id(other)) is None


def _hisparse_manager(block: int, *, source_first: bool = True) -> Any:
    """A KV-cache manager laid out as vLLM's HiSparse tests lay it out: the host
    source group (``HiSparseSourceManager``, its own pool), a device indexer
    group of the same spec, and the resident and hot groups (not cacheable)."""
    import importlib

    import torch

    interface = vllm().interface
    hisparse = importlib.import_module("vllm.v1.hisparse.coordinator")
    spec = interface.FullAttentionSpec(
        block_size=block, num_kv_heads=1, head_size=1, dtype=torch.float32
    )
    page = {"block_size": block, "page_size": 4 * block}
    attention = [
        interface.KVCacheGroupSpec(
            ["source"], spec, role=interface.KVCacheGroupRole.HISPARSE_SOURCE, host_resident=True
        ),
        interface.KVCacheGroupSpec(
            ["indexer"], spec, role=interface.KVCacheGroupRole.HISPARSE_INDEXER
        ),
    ]
    groups = [
        *(attention if source_first else attention[::-1]),
        interface.KVCacheGroupSpec(["resident"], interface.HiSparseResidentSpec(**page)),
        interface.KVCacheGroupSpec(
            ["hot"], interface.HiSparseHotSpec(**page, blocks_per_request=2)
        ),
    ]
    config = interface.KVCacheConfig(
        num_blocks=32, hisparse_host_num_blocks=16, kv_cache_tensors=[], kv_cache_groups=groups
    )
    manager = vllm().manager.KVCacheManager(
        config,
        max_model_len=128,
        enable_caching=True,
        hash_block_size=block,
        scheduler_block_size=block,
    )
    hisparse.get_hisparse_coordinator(manager)  # binds the source group's host pool
    return manager, hisparse.get_hisparse_coordinator


def test_hisparse_host_tier_is_full_attention_that_keeps_its_longer_hit() -> None:
    # The host group holds 3 blocks of a 4-block prompt, the device indexer 2
    # (its third evicted): the hit is 2 blocks, and vLLM hands back the host
    # group's 3 (``retains_longer_hit``). The core decides h = 2 blocks and
    # ℓ = 3; the adapter returns the same blocks as vLLM's own lookup.
    block = 16
    manager, coordinator_of = _hisparse_manager(block)
    managers = vllm().managers
    assert type(manager.coordinator.single_type_managers[0]) is managers.HiSparseSourceManager
    tokens = list(range(4 * block))
    original = make_request(tokens, len(tokens), hash_block_size=block)
    assert manager.allocate_slots(original, len(tokens)) is not None
    coordinator = coordinator_of(manager)
    coordinator.advance_scheduled([(original.request_id, len(tokens))])
    counts = {t.transfer_id: 1 for t in coordinator.build_offload_command().page_transfers}
    coordinator.update_spills(counts, counts)  # host pages acknowledged: published
    indexer_blocks = manager.get_blocks(original.request_id).blocks[1]
    manager.free(original)
    manager.block_pool.evict_blocks({indexer_blocks[2].block_id})
    probe = make_request(tokens, len(tokens), hash_block_size=block)

    def lookup() -> tuple[list[list[int]], int, int]:
        blocks, hit, uncached = manager.coordinator.find_longest_cache_hit(
            probe.block_hashes, len(tokens) - 1
        )
        return [[b.block_id for b in group] for group in blocks], hit, uncached

    theirs = lookup()
    with dropin.swapped_in(), _vllm_decisions_fail():
        ours = lookup()
    assert ours == theirs
    assert [len(group) for group in ours[0]] == [3, 2, 0, 0] and ours[1:] == (2 * block, block)


def test_a_host_tier_after_another_full_attention_group_is_refused() -> None:
    # Its own hit would then be asked at the first group's hit, not at M:
    # no length the core reports (h, ℓ) is that.
    manager, _ = _hisparse_manager(16, source_first=False)
    probe = make_request(list(range(64)), 64, hash_block_size=16)
    with dropin.swapped_in(), pytest.raises(UnsupportedOption) as raised:
        manager.coordinator.find_longest_cache_hit(probe.block_hashes, 63)
    assert (raised.value.option, raised.value.value) == (
        "retains_longer_hit",
        "HiSparseSourceManager",
    )
