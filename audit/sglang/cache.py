"""A real SGLang 0.5.23 ``UnifiedRadixCache`` fed prompts the way its scheduler feeds it.

SGLang's here: the cache itself (on the Python or the Rust tree core, with
its pools and allocators on CPU), its lookup, inserts and evictions, and
where a chunk tracks its Mamba state (SGLang's own method, on a stand-in
batch). Assumed of the scheduler, which cannot run without a model, each
checked against SGLang's code in ``tests/audit/sglang/test_driver.py``: one
request at a time, prompts only; a lookup bounded to ``N - 1`` tokens and
page-aligned; chunks of ``budget`` tokens; the Mamba ping-pong buffer on; a
sliding-window prompt in one chunk (:class:`Unsupported` otherwise). A prompt
whose slots cannot be found after eviction is skipped (:class:`PoolExhausted`).
Why a driver and not SGLang's scheduler: docs/design/sglang-driver.md.
"""

from __future__ import annotations

import enum
from array import array
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import attrs

from junction.core import GroupKind, HybridGeometry, InvalidArgument, JunctionError
from junction.reference.errors import PoolExhausted

from .env import publish_server_args, sglang

__all__ = [
    "Admission",
    "SglangCache",
    "SglangLayout",
    "TreeCore",
    "Unsupported",
    "layout_of",
]

_STATE_CHUNK = 64  # the model's own Mamba chunk size (hf_text_config.mamba_chunk_size)


class TreeCore(enum.Enum):
    """SGLang's two tree cores (``SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND``)."""

    PYTHON = "python"
    RUST = "rust"


class Unsupported(JunctionError, ValueError):
    """A geometry SGLang's unified cache cannot express (the message says why)."""


@attrs.frozen
class SglangLayout:
    """How a harness geometry maps onto SGLang: its page and its window."""

    page_size: int
    mamba: bool
    window: int | None


def layout_of(geometry: HybridGeometry) -> SglangLayout:
    """SGLang's layout for ``geometry``; :class:`Unsupported` naming the rule broken.

    SGLang's tree has one page ``P`` for every component (the full-attention
    block, also the hash unit): a Mamba state can sit at any node end, so the
    Mamba group's block is the page too (where SGLang *chooses* to track
    states, its checkpoint grid, is configuration: ``mamba_chunk``). A sliding
    window pages by one token (its allocator allocates only so). No EAGLE
    (SGLang's bigram keys are another tree) and no partial hits.
    """
    groups = geometry.groups
    kinds = tuple(g.kind for g in groups)
    if kinds not in ((GroupKind.FULL, GroupKind.MAMBA), (GroupKind.FULL, GroupKind.SLIDING_WINDOW)):
        raise Unsupported(f"groups={kinds}: SGLang audits full + Mamba or full + sliding window")
    page = groups[0].block_size
    if geometry.hash_block_size != page or groups[1].block_size != page:
        raise Unsupported(
            f"blocks {[g.block_size for g in groups]}, hash_block_size={geometry.hash_block_size}:"
            " SGLang's tree has one page for every component"
        )
    if geometry.use_eagle or geometry.partial_hits:
        raise Unsupported("use_eagle/partial_hits: not modelled for SGLang")
    if groups[1].kind is GroupKind.SLIDING_WINDOW and page != 1:
        raise Unsupported(f"page {page}: SGLang's sliding-window allocator pages by one token")
    return SglangLayout(page, groups[1].kind is GroupKind.MAMBA, groups[1].window)


@attrs.frozen
class Admission:
    """One lookup SGLang made: the tokens, its answer, and whether a state was written there."""

    tokens: tuple[int, ...]
    hit: int
    full_hit: int
    branching: int | None
    state_materialized: bool


@attrs.frozen
class PrefillRun:
    """One prompt SGLang prefilled: its admission, its chunks and where each tracked a state."""

    tokens: tuple[int, ...]
    admission: Admission
    chunks: tuple[tuple[int, int], ...]
    tracked: tuple[int, ...]
    stalled: bool


class SglangCache:
    """A fresh SGLang cache for ``geometry`` on one tree core, with a pool of
    ``num_pages`` pages and Mamba states tracked every ``mamba_chunk`` tokens
    (``mamba_cache_chunk_size``, a multiple of the page), at most
    ``max_states_per_path`` per path (``mamba_max_states_per_path``; -1, the
    default, is no cap)."""

    def __init__(
        self,
        geometry: HybridGeometry,
        core: TreeCore,
        num_pages: int,
        mamba_chunk: int,
        max_states_per_path: int = -1,
    ) -> None:
        self.geometry = geometry
        self.layout = layout = layout_of(geometry)
        page = layout.page_size
        if mamba_chunk < 1 or mamba_chunk % page:
            raise InvalidArgument(
                "mamba_chunk", mamba_chunk, f"must be a positive multiple of the page {page}"
            )
        self.core = core
        self.modules = m = sglang()
        publish_server_args(page, mamba_chunk, max_states_per_path)
        torch = m.torch
        tokens = max(num_pages, 2) * page
        components = [m.ComponentType.FULL]
        dtype = torch.bfloat16
        requests = 4
        layers = [0]
        if layout.mamba:
            components.append(m.ComponentType.MAMBA)
            with m.envs.SGLANG_MAMBA_SSM_DTYPE.override("bfloat16"):
                shape = m.Mamba2StateShape.create(
                    tp_world_size=1,
                    intermediate_size=8,
                    n_groups=1,
                    num_heads=1,
                    head_dim=8,
                    state_size=2,
                    conv_kernel=2,
                )
                params = m.Mamba2CacheParams(shape=shape, layers=[1])
            self.req_pool = m.HybridReqToTokenPool(
                size=requests,
                mamba_size=max(num_pages, 2) + 3 * requests,
                mamba_spec_state_size=requests,
                max_context_len=tokens + 1,
                device="cpu",
                enable_memory_saver=False,
                cache_params=params,
                mamba_layer_ids=[1],
                enable_mamba_extra_buffer=True,
                speculative_num_draft_tokens=3,
            )
            kv_pool = m.HybridLinearKVPool(
                size=tokens,
                dtype=dtype,
                page_size=page,
                head_num=1,
                head_dim=4,
                full_attention_layer_ids=layers,
                device="cpu",
                enable_memory_saver=False,
                mamba_pool=self.req_pool.mamba_pool,
            )
            self.allocator = m.TokenToKVPoolAllocator(
                size=tokens, dtype=dtype, device="cpu", kvcache=kv_pool, need_sort=False
            )
        else:
            components.append(m.ComponentType.SWA)
            self.req_pool = m.ReqToTokenPool(
                size=requests, max_context_len=tokens + 1, device="cpu", enable_memory_saver=False
            )
            kv_pool = m.SWAKVPool(
                size=tokens,
                size_swa=tokens,
                page_size=page,
                dtype=dtype,
                head_num=1,
                head_dim=4,
                swa_attention_layer_ids=[1],
                full_attention_layer_ids=layers,
                device="cpu",
            )
            self.allocator = m.SWATokenToKVPoolAllocator(
                size=tokens,
                size_swa=tokens,
                page_size=page,
                dtype=dtype,
                device="cpu",
                kvcache=kv_pool,
                need_sort=False,
            )
        params = m.CacheInitParams(
            req_to_token_pool=self.req_pool,
            token_to_kv_pool_allocator=self.allocator,
            page_size=page,
            disable=False,
            sliding_window_size=layout.window,
            tree_components=tuple(components),
            enable_mamba_extra_buffer=layout.mamba,
        )
        with m.envs.SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND.override(core.value):
            self.cache: Any = m.UnifiedRadixCache(params=params)
        if self.cache._tree_core_backend != core.value:
            raise RuntimeError(
                f"asked for the {core.value} tree core, got {self.cache._tree_core_backend}"
            )
        self.prefills: list[PrefillRun] = []
        self.admissions: list[Admission] = []
        self._states: set[tuple[int, ...]] = set()  # prefixes a tracked state was written for
        # The stand-in batch ``prepare_for_extend`` reads (its model, tree and pool).
        self._batch = SimpleNamespace(
            model_config=SimpleNamespace(
                hf_text_config=SimpleNamespace(mamba_chunk_size=_STATE_CHUNK)
            ),
            tree_cache=SimpleNamespace(page_size=page),
            req_to_token_pool=self.req_pool,
        )

    # Lookups.

    def match(self, tokens: Sequence[int]) -> Any:
        """SGLang's ``match_prefix`` on exactly ``tokens`` (its ``MatchResult``)."""
        m = self.modules
        return self.cache.match_prefix(m.MatchPrefixParams(key=m.RadixKey(array("q", tokens))))

    def admit(self, tokens: Sequence[int]) -> Admission:
        """The scheduler's admission lookup: bounded to ``N - 1`` tokens, page-aligned."""
        prompt = tuple(tokens)
        page = self.layout.page_size
        bound = max(len(prompt) - 1, 0) // page * page
        result = self.match(prompt[:bound])
        hit = int(result.device_prefix_len)
        materialized = hit == 0 or not self.layout.mamba or prompt[:hit] in self._states
        admission = Admission(
            prompt,
            hit,
            int(result.full_kv_hit_length),
            None if result.mamba_branching_seqlen is None else int(result.mamba_branching_seqlen),
            materialized,
        )
        self.admissions.append(admission)
        return admission

    # Prefill.

    def _alloc(self, count: int) -> Any:
        m = self.modules
        if count == 0:
            return m.torch.empty(0, dtype=m.torch.int64)
        indices = self.allocator.alloc(count)
        if indices is None:
            self.cache.evict(m.EvictParams(num_tokens=count))
            indices = self.allocator.alloc(count)
        if indices is None:
            raise PoolExhausted(f"{count} KV slots")
        return indices

    def _alloc_state(self) -> Any:
        m = self.modules
        slot = self.req_pool.mamba_allocator.alloc(1)
        if slot is None:
            self.cache.evict(m.EvictParams(mamba_num=1))
            slot = self.req_pool.mamba_allocator.alloc(1)
        if slot is None:
            raise PoolExhausted("a Mamba state slot")
        return slot

    def prefill(self, tokens: Sequence[int], budget: int) -> PrefillRun:
        """Admit and prefill ``tokens`` in chunks of ``budget`` (the module's assumptions)."""
        m = self.modules
        torch = m.torch
        prompt = tuple(tokens)
        admission = self.admit(prompt)
        if not self.layout.mamba and len(prompt) - admission.hit > budget:
            raise Unsupported(
                f"budget={budget} chunks a {len(prompt)}-token sliding-window prompt "
                f"from {admission.hit}: SGLang frees a chunked request's out-of-window "
                "slots, which the driver does not model"
            )
        start = admission.hit
        node = self.match(prompt[:start]).last_device_node
        lock = self.cache.lock(node)
        row = self.cache.path_device_indices(node)[:start].to(torch.int64)
        protected = start
        chunks: list[tuple[int, int]] = []
        tracked: list[int] = []
        req = _Request(admission.branching)
        stalled = False
        try:
            while start < len(prompt):
                end = self.chunk_end(start, len(prompt), budget)
                if end <= start:
                    stalled = True
                    break
                row = torch.cat([row, self._alloc(end - start).to(torch.int64)])
                chunks.append((start, end))
                if self.layout.mamba:
                    req.extend(start, end)
                    m.track_entry(self._batch, req)
                    cache_len = req.kv.mamba_last_track_seqlen
                    if cache_len is not None:
                        tracked.append(cache_len)
                        self._states.add(prompt[:cache_len])
                    # An unfinished request's insert clears its tracked length
                    # (MambaComponent.cleanup_after_caching_req).
                    req.kv.mamba_last_track_seqlen = None
                else:
                    cache_len = end
                start = end
                if cache_len:
                    lock, row, protected = self._insert(prompt, cache_len, row, protected, lock)
        finally:
            self.cache.unlock(lock)
            if len(row) > protected:
                self.allocator.free(row[protected:])
        run = PrefillRun(prompt, admission, tuple(chunks), tuple(tracked), stalled)
        self.prefills.append(run)
        return run

    def chunk_end(self, start: int, prompt: int, budget: int) -> int:
        """``PrefillAdder``'s chunk: the rest when it fits the budget, else the budget
        floored to the page (and to the Mamba grid where SGLang's own
        ``floor_chunked_tokens`` rounds it), ending on a page (``start`` itself:
        SGLang never schedules it)."""
        if prompt - start <= budget:
            return prompt
        m = self.modules
        page = self.layout.page_size
        adder = SimpleNamespace(mamba_chunk_grid=m.prefill_chunk_grid())
        cut = int(m.floor_chunked_tokens(adder, budget // page * page, prompt - start))
        return (start + cut) // page * page

    def _insert(
        self, prompt: tuple[int, ...], cache_len: int, row: Any, protected: int, lock: Any
    ) -> tuple[Any, Any, int]:
        """``checkpoint_into_tree``: insert ``prompt[:cache_len]`` (with its state) and
        take the tree's indices for the request's row, as SGLang rewrites ``req_to_token``."""
        m = self.modules
        page = self.layout.page_size
        length = cache_len // page * page
        if length <= protected:
            return lock, row, protected
        params = m.InsertParams(
            key=m.RadixKey(array("q", prompt[:length])),
            value=row[:length].clone(),
            prev_prefix_len=protected,
        )
        if self.layout.mamba:
            params.mamba_value = self._alloc_state()
        result = self.cache.insert(params)
        if self.layout.mamba and result.mamba_exist:
            self.req_pool.mamba_allocator.free(params.mamba_value)
        node = result.last_device_node
        path = self.cache.path_device_indices(node).to(m.torch.int64)
        row = m.torch.cat([path, row[len(path) :]])
        self.cache.unlock(lock)
        return self.cache.lock(node), row, len(path)

    def check(self) -> None:
        """SGLang's own accounting: nothing is locked once every request finished."""
        protected = self.cache.tree_core.protected_size()
        if protected:
            raise AssertionError(f"SGLang's tree still protects {protected} tokens with no request")


class _Request(SimpleNamespace):
    """The fields of a ``Req`` that ``prepare_for_extend``'s tracking reads and writes."""

    def __init__(self, branching: int | None) -> None:
        super().__init__(
            mamba_branching_seqlen=branching,
            prefix_len=0,
            extend_end=0,
            extend_len=0,
            kv=SimpleNamespace(
                mamba_next_track_idx=0, mamba_last_track_idx=None, mamba_last_track_seqlen=None
            ),
        )

    def extend(self, start: int, end: int) -> None:
        self.prefix_len, self.extend_end, self.extend_len = start, end, end - start
