"""A KV connector's external hits in vLLM 0.33.0's real ``Scheduler``, on CPU.

vLLM's shipped connectors need their worker side before they report a hit,
so the differential run brings the smallest scheduler-side connector vLLM
builds from a ``KVTransferConfig`` (:func:`transfer_config`):
:class:`StoreConnector` over an :class:`ExternalStore`, token prefixes on the
scheduler's block grid that "another instance" computed (:func:`seed`) plus
what this instance's finished requests computed. It answers the tier's prefix
beyond the local hit vLLM presents, loaded synchronously, asynchronously
(:func:`finished_loads`) or restoring a lagging group (:class:`Connector`).
It subclasses ``SupportsHMA`` because vLLM 0.33.0 turns the hybrid manager
off for any other connector (docs/dropin.md, "A KV connector's external
hits"). vLLM is imported only on use, so the audit imports without vLLM.
"""

from __future__ import annotations

import enum
import functools
import random
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

__all__ = [
    "CONNECTOR",
    "Connector",
    "ExternalStore",
    "Loads",
    "VllmFailure",
    "external_answers",
    "finished_loads",
    "seed",
    "transfer_config",
    "vllm_failure",
]

CONNECTOR = "StoreConnector"
_REMOTE_SHARE = 0.3  # requests whose prompt prefix another instance computed


class Loads(enum.Enum):
    """How the connector loads its external tokens."""

    SYNC = "sync"  # within the step that schedules the request
    ASYNC = "async"  # the request waits for its KV (WAITING_FOR_REMOTE_KVS)


@attrs.frozen
class Connector:
    """A layout's connector: how it loads, and whether it restores a lagging
    group's state (``supports_divergent_local_hybrid_hits``, as vLLM's NIXL
    and MoRIIO connectors do: vLLM then presents full attention's own hit,
    ``find_longest_cache_hit_per_group``, and reconciles with the hybrid
    lookup only when the groups disagree the other way or nothing external
    comes)."""

    loads: Loads
    restores_lagging_state: bool = False


@attrs.define
class ExternalStore:
    """Token prefixes held on a grid of ``grid`` tokens: every grid-aligned
    prefix of whatever was saved (a prefix-closed set, as a chunked store is)."""

    grid: int
    held: set[tuple[int, ...]] = attrs.field(factory=set)

    def save(self, tokens: Sequence[int]) -> None:
        """Hold every grid-aligned prefix of ``tokens``."""
        for end in range(self.grid, len(tokens) + 1, self.grid):
            self.held.add(tuple(tokens[:end]))

    def longest(self, tokens: Sequence[int], limit: int) -> int:
        """The longest held prefix of ``tokens`` no longer than ``limit``."""
        found = 0
        for end in range(self.grid, limit + 1, self.grid):
            if tuple(tokens[:end]) not in self.held:
                break
            found = end
        return found


class VllmFailure(enum.Enum):
    """vLLM 0.33.0's own failures on its connector paths, with or without the
    drop-in (docs/dropin.md, "A KV connector's external hits")."""

    # allocate_slots admits a Mamba group's external hit counting one new
    # block (physical_block_cap) and then takes more, the hit's state block
    # and the running one: a pool short by what was not counted raises.
    MAMBA_EXTERNAL_UNDERCOUNT = "mamba-external-undercount"
    # A connector restoring lagging state is shown full attention's own hit
    # off the scheduler grid; a longer external hit truncates every group to
    # the grid, asserting that a lagging sliding window covers it.
    LAGGING_WINDOW_TRUNCATED = "lagging-window-truncated"


def vllm_failure(error: BaseException) -> VllmFailure | None:
    """The documented vLLM failure ``error`` is, judged by where vLLM raised
    it and on what, or ``None``."""
    frames: dict[str, dict[str, Any]] = {}
    trace = error.__traceback__
    while trace is not None:
        frames[trace.tb_frame.f_code.co_name] = trace.tb_frame.f_locals
        trace = trace.tb_next
    from vllm.v1.core.single_type_kv_cache_manager import MambaManager
    from vllm.v1.kv_cache_interface import SlidingWindowSpec

    slots = frames.get("allocate_slots", {})
    allocating = frames.get("allocate_new_blocks", {}).get("self")
    if (
        isinstance(error, ValueError)
        and str(error).startswith("Cannot get ")
        and isinstance(allocating, MambaManager)
        and slots.get("num_external_computed_tokens", 0) > 0
    ):
        return VllmFailure.MAMBA_EXTERNAL_UNDERCOUNT
    group = frames.get("truncate_computed_blocks", {}).get("group")
    if isinstance(error, AssertionError) and isinstance(
        getattr(group, "kv_cache_spec", None), SlidingWindowSpec
    ):
        return VllmFailure.LAGGING_WINDOW_TRUNCATED
    return None


def transfer_config(grid: int, connector: Connector) -> Any:
    """vLLM's ``KVTransferConfig`` for :class:`StoreConnector` on ``grid``
    (the scheduler's block size), behaving as ``connector`` says."""
    from vllm.config.kv_transfer import KVTransferConfig

    return KVTransferConfig(
        kv_connector=CONNECTOR,
        kv_connector_module_path=__name__,
        kv_role="kv_both",
        kv_connector_extra_config={
            "grid": grid,
            "load_async": connector.loads is Loads.ASYNC,
            "divergent": connector.restores_lagging_state,
        },
    )


def seed(connector: Any, prompts: Iterable[Sequence[int]], rng: random.Random) -> None:
    """Fill ``connector``'s tier with what another instance computed: for
    about one prompt in three, a prefix of it cut at a random length."""
    store: ExternalStore = connector.store
    for prompt in prompts:
        if rng.random() < _REMOTE_SHARE:
            store.save(prompt[: rng.randint(1, len(prompt))])


def external_answers(connector: Any) -> list[tuple[str, int, int]]:
    """The connector's answers since the last call: (request, the local hit
    vLLM presented, the external tokens answered)."""
    answers: list[tuple[str, int, int]] = connector.answers
    taken = list(answers)
    answers.clear()
    return taken


def finished_loads(scheduler_output: Any) -> Any:
    """The worker side's report for a step: every asynchronous load the
    step's connector metadata started is done (``None`` when there is none)."""
    meta = scheduler_output.kv_connector_metadata
    if meta is None or not meta.loads:
        return None
    from vllm.v1.outputs import KVConnectorOutput

    return KVConnectorOutput(finished_recving=set(meta.loads))


@functools.cache
def _connector_class() -> type:
    from vllm.distributed.kv_transfer.kv_connector.v1.base import (
        KVConnectorBase_V1,
        KVConnectorMetadata,
        SupportsHMA,
    )

    @attrs.define
    class StoreMetadata(KVConnectorMetadata):  # type: ignore[misc]
        loads: frozenset[str]

    class StoreConnector(KVConnectorBase_V1, SupportsHMA):  # type: ignore[misc]
        """The scheduler side of a connector over an :class:`ExternalStore`."""

        def __init__(self, vllm_config: Any, role: Any, kv_cache_config: Any) -> None:
            super().__init__(vllm_config, role, kv_cache_config)
            extra = self._kv_transfer_config.kv_connector_extra_config
            self.store = ExternalStore(int(extra["grid"]))
            self.load_async = bool(extra["load_async"])
            self.divergent = bool(extra["divergent"])
            self.answers: list[tuple[str, int, int]] = []
            self._loading: set[str] = set()

        @property
        def supports_divergent_local_hybrid_hits(self) -> bool:
            return self.divergent

        @property
        def requires_kv_delivery(self) -> bool:
            return False  # a best-effort tier, as vLLM's offloading connector

        def get_num_new_matched_tokens(
            self, request: Any, num_computed_tokens: int
        ) -> tuple[int, bool]:
            tokens = request.all_token_ids
            held = self.store.longest(tokens, len(tokens) - 1)
            external = max(held - num_computed_tokens, 0)
            self.answers.append((request.request_id, num_computed_tokens, external))
            return external, self.load_async and external > 0

        def update_state_after_alloc(
            self, request: Any, blocks: Any, num_external_tokens: int
        ) -> None:
            if self.load_async and num_external_tokens:
                self._loading.add(request.request_id)

        def build_connector_meta(self, scheduler_output: Any) -> Any:
            meta = StoreMetadata(frozenset(self._loading))
            self._loading.clear()
            return meta

        def request_finished_all_groups(
            self, request: Any, block_ids: tuple[list[int], ...]
        ) -> tuple[bool, dict[str, Any] | None]:
            self.store.save(request.all_token_ids[: request.num_computed_tokens])
            return False, None

        # The worker side never runs: the scheduler is driven without a model.
        def start_load_kv(self, forward_context: Any, **kwargs: Any) -> None:
            raise NotImplementedError

        def wait_for_layer_load(self, layer_name: str) -> None:
            raise NotImplementedError

        def save_kv_layer(
            self, layer_name: str, kv_layer: Any, attn_metadata: Any, **kwargs: Any
        ) -> None:
            raise NotImplementedError

        def wait_for_save(self) -> None:
            raise NotImplementedError

    return StoreConnector


def __getattr__(name: str) -> Any:
    if name == CONNECTOR:
        return _connector_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
