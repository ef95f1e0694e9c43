"""One attention-only prefix cache of 512-token blocks under either side's semantics,
one switch per difference, for the cross-check with the peer (``test_peer.py``).

With every switch on the peer's side it is kvcache-simulator 0.1.3's replay
(``kvcache_sim.policies``), which has no outputs; with every switch on the
engine's side it is the fast replay of full attention on blocks of 512, each
request's output tokens (one by default), ``dense``, a pool of ``capacity + 1``
blocks (the null block). ``test_peer.py`` checks both ends on the conversation
trace's first requests, so there the two sides differ by the switches and nothing
else; each switch is one difference of docs/replay.md ("The peer").

A block is named by the hash ids up to it (a node of the peer's prefix tree); a
block the engine fills with output tokens by the ids up to the prompt's last whole
block, then one ``-1 - request`` per block past it (no prompt has them).
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Collection, Sequence

import attrs

from junction.core import InvalidArgument, cdiv

BLOCK = 512
CHUNK = 2048  # the engine's max_num_batched_tokens (the replay's default)
NEVER = 1 << 62
Trace = Sequence[tuple[int, Sequence[int]]]  # (input_length, hash_ids) per request
Node = tuple[int, ...]


@attrs.frozen
class Semantics:
    """The five differences, each ``True`` on the engine's side."""

    last_token_recomputed: bool  # 1: a hit covers at most P - 1 tokens
    whole_blocks_only: bool  # 2: a partial last block is never cached (nor hit)
    running_request_held: bool  # 3: the pool holds the running request's blocks too
    engine_eviction: bool  # 4: any free block; else leaves, the path protected, declining
    outputs_cached: bool  # 5: the output's full blocks are cached, under keys of their own

    def __attrs_post_init__(self) -> None:
        if self.running_request_held and not self.engine_eviction:
            raise InvalidArgument(
                "running_request_held", True, "the engine's pool needs engine_eviction"
            )
        if self.outputs_cached and not self.running_request_held:
            raise InvalidArgument(
                "outputs_cached", True, "outputs are in the pool only with running_request_held"
            )


PEER = Semantics(False, False, False, False, False)
ENGINE = Semantics(True, True, True, True, True)


@attrs.frozen
class Outcome:
    """Each request's hit tokens (0 when refused); the cache at the end; evictions."""

    hits: tuple[int, ...]
    cached: frozenset[Node]
    evictions: int
    refused: int

    def measured(self, start: int) -> int:
        return sum(self.hits[start:])


def _tokens(prompt: int, index: int) -> int:
    """The peer's tokens of block ``index`` (``kvcache_sim.trace.block_tokens``)."""
    return max(1, min(BLOCK, prompt - index * BLOCK))


class Cache:
    """The model: ``run`` a trace under ``semantics`` with ``capacity`` blocks of cache
    and ``eviction`` one of ``lru``, ``fifo``, ``optimal`` (the engine's ``belady``);
    ``outputs``: each request's output tokens (one each by default)."""

    def __init__(
        self,
        trace: Trace,
        capacity: int,
        eviction: str,
        semantics: Semantics,
        outputs: Sequence[int] = (),
    ) -> None:
        self.trace, self.capacity, self.eviction, self.sem = trace, capacity, eviction, semantics
        self.outputs = list(outputs) or [1] * len(trace)
        self.paths = [[tuple(ids[: j + 1]) for j in range(len(ids))] for _, ids in trace]
        self.order: dict[Node, int] = {}  # the peer's node numbers: by first appearance
        self.uses: dict[Node, list[int]] = {}  # the peer's: every block of the prompt
        # The engine's Belady: the blocks a served request's lookup can match.
        self.reached: dict[Node, list[int]] = {}
        for index, (path, (prompt, _)) in enumerate(zip(self.paths, trace, strict=True)):
            for node in path:
                self.order.setdefault(node, len(self.order))
                self.uses.setdefault(node, []).append(index)
            if not self._refuses(prompt, self.outputs[index]):
                for node in path[: (prompt - 1) // BLOCK]:
                    self.reached.setdefault(node, []).append(index)
        self.cached: dict[Node, int] = {}  # node -> its order key (see _stamp)
        # LRU and FIFO take the smallest key (_oldest): every key as it was set, and
        # how many cached nodes each node has under it (a leaf has none).
        self.queue: list[tuple[int, Node]] = []
        self.children: dict[Node, int] = {}
        self.next_use: dict[Node, int] = {}  # the peer's optimal: set when touched
        self.clock = self.evictions = self.refused = 0
        self.now = 0

    # -- shared ---------------------------------------------------------------
    def _next(self, node: Node, uses: dict[Node, list[int]] | None = None) -> int:
        """The first request after the current one that uses ``node`` (by default:
        whose prompt contains it)."""
        found = (self.uses if uses is None else uses).get(node, [])
        at = bisect_right(found, self.now)
        return found[at] if at < len(found) else NEVER

    def _refuses(self, prompt: int, outputs: int) -> bool:
        """The engine's pool refuses a request it could never hold alone: its blocks
        when its last token is computed (``P + outputs - 1`` tokens)."""
        held = cdiv(prompt + outputs - 1, BLOCK)
        return self.sem.running_request_held and held > self.capacity

    def _stamp(self, node: Node) -> None:
        if node not in self.cached:
            self._added(node)
        self.clock += 1
        self.cached[node] = self.clock
        heapq.heappush(self.queue, (self.clock, node))

    def _added(self, node: Node) -> None:
        self.children[node[:-1]] = self.children.get(node[:-1], 0) + 1

    def _oldest(self, kept: Collection[Node], leaves: bool) -> Node | None:
        """``min`` by order key of the cached nodes outside ``kept`` (with ``leaves``:
        of the leaves), or ``None``. An entry whose node's key changed since is dropped,
        as is a node's that is no leaf when ``leaves`` asks (``_remove`` queues a node
        again when its last child goes)."""
        aside, found = [], None
        while self.queue:
            entry = heapq.heappop(self.queue)
            key, node = entry
            if self.cached.get(node) != key or (leaves and self.children.get(node)):
                continue
            if node in kept:
                aside.append(entry)
                continue
            found = node
            break
        for entry in aside:
            heapq.heappush(self.queue, entry)
        return found

    def _cacheable(self, prompt: int, path: list[Node]) -> list[Node]:
        if self.sem.whole_blocks_only:
            return path[: prompt // BLOCK]
        return path

    def _hit(self, prompt: int, cacheable: list[Node]) -> int:
        """The hit in blocks: the cached blocks from the first on."""
        limit = (prompt - 1) // BLOCK if self.sem.last_token_recomputed else len(cacheable)
        hit = 0
        while hit < min(limit, len(cacheable)) and cacheable[hit] in self.cached:
            hit += 1
        return hit

    def _remove(self, node: Node) -> None:
        del self.cached[node]
        self.evictions += 1
        parent = node[:-1]
        self.children[parent] -= 1
        if not self.children[parent] and parent in self.cached:
            heapq.heappush(self.queue, (self.cached[parent], parent))

    def run(self) -> Outcome:
        hits = []
        for now, ((prompt, _), path) in enumerate(zip(self.trace, self.paths, strict=True)):
            self.now = now
            cacheable = self._cacheable(prompt, path)
            if self.sem.engine_eviction:
                hit = self._engine_request(prompt, cacheable)
            else:
                hit = self._peer_request(cacheable)
            hits.append(sum(_tokens(prompt, j) for j in range(hit)))
        return Outcome(tuple(hits), frozenset(self.cached), self.evictions, self.refused)

    # -- the peer: kvcache_sim.policies ----------------------------------------
    def _peer_request(self, cacheable: list[Node]) -> int:
        hit = self._hit(self.trace[self.now][0], cacheable)
        if self.eviction == "fifo":  # a queue of every node: no tree, nothing protected
            for node in cacheable:
                if node in self.cached:
                    continue
                if len(self.cached) >= self.capacity:
                    oldest = self._oldest((), leaves=False)
                    assert oldest is not None, "an empty cache is not full"
                    self._remove(oldest)
                self._stamp(node)
            return hit
        for node in cacheable[:hit]:  # touched: LRU's clock, optimal's next use
            self._touch(node)
        protected = {node for node in cacheable if node in self.cached}
        for index, node in enumerate(cacheable):
            if node in self.cached:
                continue
            if len(self.cached) >= self.capacity and not self._evict_leaf(node, protected):
                break
            if index and cacheable[index - 1] not in self.cached:
                break
            self._touch(node)
        return hit

    def _touch(self, node: Node) -> None:
        self._stamp(node)
        self.next_use[node] = self._next(node)

    def _evict_leaf(self, candidate: Node, protected: set[Node]) -> bool:
        """A leaf off the protected path: LRU the least recently touched, optimal the
        one used furthest ahead (ties: the newest node), unless the candidate is
        used no sooner than it (then nothing is evicted and nothing cached)."""
        if self.eviction == "lru":
            oldest = self._oldest(protected, leaves=True)
            if oldest is None:
                return False
            self._remove(oldest)
            return True
        parents = {node[:-1] for node in self.cached}
        leaves = [n for n in self.cached if n not in parents and n not in protected]
        if not leaves:
            return False
        victim = max(leaves, key=lambda n: (self.next_use[n], self.order[n]))
        if self.next_use[victim] <= self._next(candidate):
            return False
        self._remove(victim)
        return True

    # -- the engine: reference/replay/pool.py ----------------------------------
    def _engine_request(self, prompt: int, cacheable: list[Node]) -> int:
        """The request's blocks are held from its admission to its finish; a free
        cached block is evicted when a block is needed and none is unhashed."""
        sem, capacity = self.sem, self.capacity
        whole = cacheable[: prompt // BLOCK]
        outputs = self.outputs[self.now]
        if self._refuses(prompt, outputs):
            self.refused += 1
            return 0
        hit = self._hit(prompt, cacheable)
        held = cacheable[:hit]
        self._refresh(whole[hit:])
        if sem.running_request_held:  # step by step: allocate, then cache the full blocks
            private, computed, offered = 0, hit * BLOCK, hit
            while computed < prompt + outputs - 1:  # a prefill chunk, or one decode token
                end = min(computed + CHUNK, prompt) if computed < prompt else computed + 1
                more = cdiv(end, BLOCK) - cdiv(computed, BLOCK)
                unhashed = capacity - len(self.cached) - private
                for _ in range(more - unhashed):
                    self._remove(self._free_victim(held))
                private += more
                while offered < len(cacheable) and min((offered + 1) * BLOCK, prompt) <= end:
                    node = cacheable[offered]
                    if node not in self.cached:
                        self._engine_cache(node, held)
                        private -= 1
                    offered += 1
                while sem.outputs_cached and (offered + 1) * BLOCK <= end:
                    past = offered + 1 - len(cacheable)  # blocks past the prompt's
                    ids = cacheable[-1] if cacheable else ()
                    self._engine_cache((*ids, *[-1 - self.now] * past), held)
                    private -= 1
                    offered += 1
                computed = end
        else:  # the cached blocks alone fill the pool
            for node in cacheable[hit:]:
                if node in self.cached:
                    continue
                if len(self.cached) >= capacity:
                    if len(held) == len(self.cached):
                        break
                    self._remove(self._free_victim(held))
                self._engine_cache(node, held)
        for node in reversed(held):  # freed tail first, each to the back of the queue
            if self.eviction != "fifo":
                self._stamp(node)
        return hit

    def _engine_cache(self, node: Node, held: list[Node]) -> None:
        held.append(node)
        self._added(node)
        self.cached[node] = 0
        if self.eviction == "fifo":
            self._stamp(node)

    def _refresh(self, nodes: Sequence[Node]) -> None:
        """``belady``: free cached blocks the prompt contains join the queue anew."""
        if self.eviction == "optimal":
            for node in nodes:
                if node in self.cached:
                    self._stamp(node)

    def _free_victim(self, held: list[Node]) -> Node:
        """LRU: freed longest ago; FIFO: cached longest ago; Belady: used furthest
        ahead by a request it serves whose lookup can match it (ties: the deepest,
        then queued longest ago); any block the request does not hold."""
        holding = set(held)
        if self.eviction != "optimal":
            oldest = self._oldest(holding, leaves=False)
            assert oldest is not None, "no free block"
            return oldest
        free = [n for n in self.cached if n not in holding]
        reached = self.reached
        return min(free, key=lambda n: (-self._next(n, reached), -len(n), self.cached[n]))
