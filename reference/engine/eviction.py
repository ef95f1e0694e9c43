"""Eviction policies: which free cached block the pool recycles when it must.

What is evictable is fixed by the pool: a cached block no request holds
(reference count 0), after every block with no hash. A policy only orders
those candidates, reading each one's recency, group, prefix end
(``Block.end``) and whether a cached block of its group continues it.
:class:`LeastRecentlyUsed` (the default) takes the front of the queue;
:class:`FlopAware`, after Marconi (arXiv 2411.19379), takes among the
``window`` least recently freed the lowest ``recency + alpha * efficiency``
(prefill FLOPs saved per block, under a :class:`FlopModel`), a full-attention
block only while nothing continues its chain; ``alpha`` adapts as the
workload runs (:class:`FlopAwareOrder`). Why a window and no heap:
docs/design/flop-aware-eviction.md.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Protocol

import attrs

from junction.core import GroupKind, GroupSpec, HybridGeometry, InvalidArgument
from junction.reference.errors import int_at_least

if TYPE_CHECKING:  # the pool imports this module; a block is only read here
    from junction.reference.engine.block_pool import Block

__all__ = [
    "EVICTION_POLICIES",
    "EvictionOrder",
    "EvictionPolicy",
    "FlopAware",
    "FlopAwareOrder",
    "FlopModel",
    "LayerCost",
    "LeastRecentlyUsed",
    "LruOrder",
    "eviction_policy",
]

_non_negative = int_at_least(0)
_positive = int_at_least(1)


class EvictionOrder(Protocol):
    """A pool's eviction order: stateful, one per pool.

    ``observes``: whether the pool must report cachings, evictions and hits
    on free blocks (:meth:`cached`, :meth:`evicted`, :meth:`revived`); an
    order that does not gets no calls, so LRU costs nothing extra.
    """

    observes: bool

    def victim(self, candidates: OrderedDict[int, Block]) -> Block:
        """The block to evict, one of ``candidates`` (non-empty, least recently freed first)."""
        ...

    def cached(self, block: Block) -> None: ...

    def evicted(self, block: Block) -> None: ...

    def revived(self, block: Block) -> None:
        """A hit took a free cached block back (it stops being a candidate)."""
        ...

    def problems(self, cached: Mapping[tuple[int, int], Block]) -> list[str]:
        """What of the order's own bookkeeping disagrees with the pool's cache map."""
        ...


class EvictionPolicy(Protocol):
    """An engine's choice of eviction (frozen, in ``EngineConfig``); ``order`` makes a pool's."""

    @property
    def name(self) -> str: ...

    def order(self, geometry: HybridGeometry) -> EvictionOrder: ...


class LruOrder:
    """The least recently freed candidate: the front of the pool's queue."""

    observes = False

    def victim(self, candidates: OrderedDict[int, Block]) -> Block:
        return next(iter(candidates.values()))

    def cached(self, block: Block) -> None:
        return None

    def evicted(self, block: Block) -> None:
        return None

    def revived(self, block: Block) -> None:
        return None

    def problems(self, cached: Mapping[tuple[int, int], Block]) -> list[str]:
        return []


@attrs.frozen
class LeastRecentlyUsed:
    """Evict the cached block freed longest ago (the default)."""

    @property
    def name(self) -> str:
        return "lru"

    def order(self, geometry: HybridGeometry) -> EvictionOrder:
        return LruOrder()


@attrs.frozen
class LayerCost:
    """The prefill cost of the layers of one kind, per token.

    ``linear_flops_per_token``: every layer of the kind together, for one
    token, whatever its context (projections, the MLP or active experts
    counted with the kind, a recurrent update): 2 FLOPs per multiply-add.
    ``attention_flops_per_pair``: per (query, key) pair the layers score
    and mix (``4 x heads x head_dim`` per layer), 0 for a recurrent kind.
    """

    linear_flops_per_token: int = attrs.field(validator=_non_negative)
    attention_flops_per_pair: int = attrs.field(default=0, validator=_non_negative)


def _pairs(end: int, window: int | None) -> int:
    """Query-key pairs of tokens ``[0, end)``: token ``t`` sees ``min(t + 1, W)`` keys."""
    if window is None or end <= window:
        return end * (end + 1) // 2
    return window * (window + 1) // 2 + (end - window) * window


@attrs.frozen
class FlopModel:
    """Prefill FLOPs per group kind of one model, and the bytes of one pool block.

    Full attention costs ``linear + pair x (t + 1)`` for token ``t`` (growing
    with context), sliding window ``linear + pair x min(t + 1, W)`` and a
    recurrent (Mamba) kind ``linear`` (both linear in the prefix). One block
    of every group takes ``page_bytes`` (vLLM unifies the page size of a
    hybrid model's groups; the pool counts blocks), so FLOPs per block and
    FLOPs per byte order blocks alike. ``shared_flops_per_token``: the layers
    no cache group holds (MLP, active experts), which a hit skips too; a
    full-attention block counts them for its tokens (every hit needs the
    full-attention blocks of its whole prefix).
    """

    full: LayerCost
    sliding_window: LayerCost | None = None
    mamba: LayerCost | None = None
    shared_flops_per_token: int = attrs.field(default=0, validator=_non_negative)
    page_bytes: int = attrs.field(default=1, validator=_positive)

    def cost(self, kind: GroupKind) -> LayerCost:
        cost = {
            GroupKind.FULL: self.full,
            GroupKind.SLIDING_WINDOW: self.sliding_window,
            GroupKind.MAMBA: self.mamba,
        }[kind]
        if cost is None:
            raise InvalidArgument("kind", kind.value, "this FLOP model has no cost for it")
        return cost

    def flops(self, spec: GroupSpec, start: int, end: int) -> int:
        """FLOPs of ``spec``'s kind of layers computing tokens ``[start, end)``."""
        cost = self.cost(spec.kind)
        pairs = _pairs(end, spec.window) - _pairs(start, spec.window)
        return cost.linear_flops_per_token * (end - start) + cost.attention_flops_per_pair * pairs

    def prefix_flops(self, geometry: HybridGeometry, tokens: int) -> int:
        """FLOPs a hit of ``tokens`` tokens saves: every kind's layers over ``[0, tokens)``."""
        specs = {spec.kind: spec for spec in geometry.groups}
        layers = sum(self.flops(spec, 0, tokens) for spec in specs.values())
        return layers + self.shared_flops_per_token * tokens

    def block_flops(self, spec: GroupSpec, end: int) -> int:
        """FLOPs one cached block ending at ``end`` saves a hit that uses it.

        A sliding-window block: its own tokens' layers of its kind; a
        full-attention block those and the shared layers. A Mamba block: the
        recurrent layers of the whole prefix ``[0, end)``, which its one
        state stands for.
        """
        if spec.kind is GroupKind.MAMBA:
            return self.flops(spec, 0, end)
        start = max(end - spec.block_size, 0)
        shared = self.shared_flops_per_token * (end - start) if spec.kind is GroupKind.FULL else 0
        return self.flops(spec, start, end) + shared


@attrs.frozen
class FlopAware:
    """Marconi's utility: recency plus ``alpha`` times FLOPs saved per byte.

    ``window``: how many least recently freed candidates are scored per
    eviction. ``alpha`` starts at ``initial_alpha`` and moves by the factor
    ``step`` within ``[1 / alpha_bound, alpha_bound]``.
    """

    model: FlopModel
    window: int = attrs.field(default=64, validator=_positive)
    initial_alpha: float = 1.0
    step: float = 1.05
    alpha_bound: float = 64.0

    @property
    def name(self) -> str:
        return "flop-aware"

    def order(self, geometry: HybridGeometry) -> EvictionOrder:
        return FlopAwareOrder(self, geometry.groups)


class FlopAwareOrder:
    """Marconi's eviction for one pool, with ``alpha`` tuned by ghost feedback.

    When the block it evicts is not the LRU front, the order remembers both
    keys (a bounded ghost list each): the block it kept and the block it
    evicted instead. A later hit on a kept block says weighing FLOPs paid
    (``alpha`` grows by ``step``); the evicted key being cached again (a
    request needed that prefix and computed it anew) says it cost
    (``alpha`` shrinks). ``alpha`` near 0 is LRU again: within the window
    the least recent candidate has recency 0.
    """

    observes = True

    def __init__(self, policy: FlopAware, groups: Sequence[GroupSpec]) -> None:
        self.policy = policy
        self.groups = tuple(groups)
        self.alpha = policy.initial_alpha
        self.adjustments = 0
        # Cached blocks continuing each cached full-attention key (group id, hash).
        self.children: dict[tuple[int, int], int] = {}
        self._kept: OrderedDict[tuple[int, int], None] = OrderedDict()
        self._dropped: OrderedDict[tuple[int, int], None] = OrderedDict()
        self._value: dict[tuple[int, int], int] = {}

    def _efficiency(self, block: Block, group_id: int) -> int:
        key = (group_id, block.end)
        value = self._value.get(key)
        if value is None:
            value = self._value[key] = self.policy.model.block_flops(
                self.groups[group_id], block.end
            )
        return value

    def _evictable(self, block: Block, group_id: int) -> bool:
        if self.groups[group_id].kind is not GroupKind.FULL:
            return True
        return not self.children.get((group_id, block.key[1] if block.key else 0))

    def victim(self, candidates: OrderedDict[int, Block]) -> Block:
        window = list(islice(candidates.values(), self.policy.window))
        front = window[0]
        scored = [
            (rank, block, self._efficiency(block, block.key[0]))
            for rank, block in enumerate(window)
            if block.key is not None and self._evictable(block, block.key[0])
        ]
        if not scored:
            return front
        low = min(value for _, _, value in scored)
        spread = max(value for _, _, value in scored) - low
        last = max(len(window) - 1, 1)
        alpha = self.alpha

        def utility(entry: tuple[int, Block, int]) -> float:
            rank, _, value = entry
            efficiency = (value - low) / spread if spread else 0.0
            return rank / last + alpha * efficiency

        chosen = min(scored, key=utility)[1]
        if chosen is not front and chosen.key is not None and front.key is not None:
            self._remember(self._kept, front.key)
            self._remember(self._dropped, chosen.key)
        return chosen

    def _remember(self, ghosts: OrderedDict[tuple[int, int], None], key: tuple[int, int]) -> None:
        ghosts[key] = None
        ghosts.move_to_end(key)
        if len(ghosts) > 4 * self.policy.window:
            ghosts.popitem(last=False)

    def _adjust(self, factor: float) -> None:
        bound = self.policy.alpha_bound
        self.alpha = min(max(self.alpha * factor, 1 / bound), bound)
        self.adjustments += 1

    def cached(self, block: Block) -> None:
        key = block.key
        if key is None:
            return
        if self.groups[key[0]].kind is GroupKind.FULL:
            parent = (key[0], block.parent)
            self.children[parent] = self.children.get(parent, 0) + 1
        if key in self._dropped:
            del self._dropped[key]
            self._adjust(1 / self.policy.step)

    def evicted(self, block: Block) -> None:
        key = block.key
        if key is None or self.groups[key[0]].kind is not GroupKind.FULL:
            return
        parent = (key[0], block.parent)
        left = self.children[parent] - 1
        if left:
            self.children[parent] = left
        else:
            del self.children[parent]

    def problems(self, cached: Mapping[tuple[int, int], Block]) -> list[str]:
        children: dict[tuple[int, int], int] = {}
        for (group_id, _), block in cached.items():
            if self.groups[group_id].kind is GroupKind.FULL:
                parent = (group_id, block.parent)
                children[parent] = children.get(parent, 0) + 1
        if children != self.children:
            return [f"flop-aware child counts {self.children} != {children} from the cache map"]
        return []

    def revived(self, block: Block) -> None:
        key = block.key
        if key is not None and key in self._kept:
            del self._kept[key]
            self._adjust(self.policy.step)


EVICTION_POLICIES = ("lru", "flop-aware")


def eviction_policy(name: str, model: FlopModel) -> EvictionPolicy:
    """The eviction policy called ``name`` (one of :data:`EVICTION_POLICIES`)."""
    if name == "lru":
        return LeastRecentlyUsed()
    if name == "flop-aware":
        return FlopAware(model)
    raise InvalidArgument("eviction", name, f"expected one of {', '.join(EVICTION_POLICIES)}")
