"""The reference engine: a deterministic hybrid prefix-cache simulator.

No model runs; the KV-cache management of a serving engine is simulated
exactly: admission with prefix-cache lookup, a token budget per step,
chunked prefill with core's align-mode stop, decode (one token a step, or
speculative steps: ``speculative.py``), preemption and freeing.
Every retention decision comes from ``core`` through the caller's policy;
this module only schedules. The same config and submissions give the same
run, step for step, in any process. ``check()`` verifies every invariant
(:class:`InvariantViolation`, never a bare ``assert``). A finished request's
tokens are released at the next :meth:`step`; its counts, junction and hash
chain stay. Sweeps over a whole trace are the fast replay's job
(``reference.replay``, proven equal on sequential arrivals); this engine
stays plain.
"""

from __future__ import annotations

from collections import deque

from junction.core import CrossedGridPoints, GroupKind, GroupSpec, JunctionError, cdiv
from junction.reference.engine.block_pool import BlockPool, NoFreeBlocks
from junction.reference.engine.config import EngineConfig, Metrics
from junction.reference.engine.coordinator import Coordinator
from junction.reference.engine.finish import DEFAULT_FINISH, FinishReason
from junction.reference.engine.group_managers import MambaManager
from junction.reference.engine.invariants import InvariantViolation
from junction.reference.engine.policy import CheckedPolicy
from junction.reference.engine.request import Request, RequestStatus
from junction.reference.engine.tier import TierConnector

# EngineConfig and Metrics (config.py) are re-exported: they come with the engine.
__all__ = ["Engine", "EngineConfig", "Metrics", "RequestTooLarge"]


class RequestTooLarge(JunctionError, ValueError):
    """A request the pool could never hold, even alone; the message names the request,
    the blocks it needs and the pool's size."""


class Engine:
    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.geometry = config.geometry
        self.pool = BlockPool(config.num_blocks, config.eviction.order(config.geometry))
        self.policy = CheckedPolicy(config.policy)
        self.speculative = config.speculative
        crossed = None if config.speculative is None else config.speculative.crossed
        self.coordinator = Coordinator(self.geometry, self.pool, self.policy, crossed)
        self.connector = (
            None
            if config.tier is None
            else TierConnector(
                config.tier,
                config.tier_saving,
                self.geometry,
                self.pool,
                self.coordinator,
                self.policy,
            )
        )
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.requests: dict[int, Request] = {}
        self.metrics = Metrics()
        # Align mode: only a Mamba group makes where a chunk stops matter.
        self.align_mode = any(g.kind is GroupKind.MAMBA for g in self.geometry.groups)
        self._next_id = 0
        # Finished in the last step: their tokens are released at the next one
        # (request.py: what a finished request keeps).
        self._finished: list[Request] = []
        # How far below the computed tokens a pinned state or held window may lie.
        self._decode_lag = self.coordinator.decode_lag
        # What submit refuses, bound once: the peak is a function of the length alone.
        self._longest_fitting = self._longest_fitting_request()

    # -- requests -------------------------------------------------------------
    def submit(
        self,
        prompt: tuple[int, ...],
        max_output_tokens: int,
        declared_checkpoints: tuple[int, ...] = (),
        answer: tuple[int, ...] = (),
        finish: FinishReason = DEFAULT_FINISH,
    ) -> int:
        """Queue a request; raises ``ValueError`` if it could never make progress alone.

        ``declared_checkpoints``: prompt positions its application declares
        (``ValueError`` for one outside ``[0, len(prompt)]``); a policy reads
        them from the request (docs/domain.md, "The next turn"). ``answer``: the
        output tokens a workload scripts (a conversation's reply, which its next
        turn resends), emitted first; the engine's own follow (none by default).
        ``finish``: how the request ends once it has ``max_output_tokens``
        outputs: stopped (the default), length-capped or aborted
        (``finish.FinishReason``); its decode checkpoints are published only
        on a reason the policy declares (``decode_checkpoint_finishes``).

        A request that needs more blocks at once than the pool has would be
        admitted, fill the pool, preempt itself and start over forever, so it
        is refused up front, with the count (:meth:`blocks_at_peak`).
        """
        request = Request(
            self._next_id,
            prompt,
            max_output_tokens,
            self.geometry.hash_block_size,
            declared_checkpoints,
            answer,
            finish,
        )
        num_tokens = len(prompt) + max_output_tokens - 1
        longest = self._longest_fitting
        if longest is not None and num_tokens > longest:
            needed = self.blocks_at_peak(num_tokens)
            per_group = " + ".join(
                str(self._group_peak(g, num_tokens)) for g in self.geometry.groups
            )
            raise RequestTooLarge(
                f"request {request.request_id} ({len(prompt)} prompt + {max_output_tokens} output "
                f"tokens) needs at least {needed} blocks ({per_group}, one term per group); "
                f"the pool has {self.pool.num_usable}"
            )
        self._next_id += 1
        self.requests[request.request_id] = request
        self.waiting.append(request)
        return request.request_id

    def blocks_at_peak(self, num_tokens: int) -> int:
        """Blocks one request computing ``num_tokens`` tokens may hold at once, all groups.

        Each group's peak (:meth:`_group_peak`) can coincide with the others':
        a chunk of the longest length may end at the last computed token,
        where full attention holds the most. So a pool of at least this many
        blocks lets the request, alone, allocate every chunk and finish.
        """
        return sum(self._group_peak(group, num_tokens) for group in self.geometry.groups)

    def _longest_fitting_request(self) -> int | None:
        """The most tokens a request may compute with :meth:`blocks_at_peak` within the
        pool (0: none; None: any), so :meth:`submit` compares a length, once per request.

        Each group's peak never decreases as the tokens grow (a count of
        blocks, capped or constant), so the requests that fit are exactly those
        up to this length, found by bisection. Past ``usable * B_max`` tokens
        a full-attention group alone needs more than the pool and a window's
        count has reached its cap: if the peak there still fits, every length
        fits.
        """
        usable = self.pool.num_usable
        high = usable * max(group.block_size for group in self.geometry.groups) + 1
        if self.blocks_at_peak(high) <= usable:
            return None
        low = 0  # fits (or 0: nothing does); high does not
        while high - low > 1:
            middle = (low + high) // 2
            if self.blocks_at_peak(middle) <= usable:
                low = middle
            else:
                high = middle
        return low

    def _group_peak(self, group: GroupSpec, num_tokens: int) -> int:
        """The most blocks ``group`` holds for a request computing ``num_tokens`` tokens.

        Full attention: a block per ``B`` tokens, ``cdiv(N, B)``, held to the
        end. Sliding window: before a chunk of up to ``C`` tokens (the chunk
        limit) runs, the blocks of the window ``[s - W + 1, s)`` are still
        held and the chunk's are added; they are released only after the
        step. Those ``W - 1 + C`` tokens touch at most ``cdiv(W - 1 + C + B - 1, B)``
        blocks, and never more than ``cdiv(N, B)``. Mamba: the running state
        and the latest one, which stays held (copied, not overwritten) when it
        is cached: 2; 3 when the policy's chunks write an internal prefill
        checkpoint (its block is held during the step). With decode checkpoints
        kept, a Mamba group also pins a state at each hit-grid point within the
        lag below the computed tokens (:meth:`decode_pins`), and a sliding window
        holds its window that much further back. Under speculative steps a
        decode step's drafts are within the chunk limit; a Mamba group takes one
        more block for a passed block end's state when it captures them, and the
        decode checkpoint may lie below the lag (the deepest state the steps
        left): one pin more, and a window keeps the blocks it reads there.
        """
        size = group.block_size
        speculative = self.speculative
        if group.kind is GroupKind.MAMBA:
            captures = speculative is not None and speculative.crossed is CrossedGridPoints.CAPTURED
            base = 3 if self.policy.writes_prefill_checkpoints or captures else 2
            return base + self.decode_pins
        every_block = cdiv(num_tokens, size)
        if group.window is None:
            return every_block
        reach = group.window - 1 + self._chunk_limit + size - 1 + self._decode_lag
        held = cdiv(reach, size)
        if speculative is not None and self._decode_lag:
            held += group.blocks_for_hit(self.geometry.use_eagle)
        return min(every_block, held)

    @property
    def decode_pins(self) -> int:
        """The most Mamba states a decoding request pins at once (0 without decode
        checkpoints): the hit-grid points within ``coordinator.decode_lag``."""
        if not self.policy.keeps_decode_checkpoints:
            return 0
        below = 0 if self.speculative is None else 1  # the deepest state below the lag
        return self._decode_lag // self.geometry.hit_grid_tokens + 1 + below

    @property
    def _chunk_limit(self) -> int:
        """``C``: the most tokens one request computes in a step."""
        config = self.config
        threshold = config.long_prefill_token_threshold
        return min(config.max_num_batched_tokens, threshold or config.max_num_batched_tokens)

    def abort(self, request_id: int) -> None:
        """Cancel a request; a running one publishes its decode checkpoints only if the
        policy declares it publishes on an abort."""
        request = self.requests[request_id]
        if request.status is RequestStatus.RUNNING:
            self.running.remove(request)
            publishes = FinishReason.ABORTED in self.policy.decode_checkpoint_finishes
            published = self.coordinator.publish(request) if publishes else ()
            if self.connector is not None:  # vLLM's request_finished: blocks still held
                self.connector.request_finished(request, published)
            self.coordinator.free(request)
        elif request.status is RequestStatus.WAITING:
            self.waiting.remove(request)
        if self.connector is not None:
            self.connector.forget(request)
        request.status = RequestStatus.ABORTED

    @property
    def idle(self) -> bool:
        return not self.waiting and not self.running

    # -- one step -------------------------------------------------------------
    def _tokens_for(self, request: Request, budget: int) -> int:
        """Tokens to compute for ``request`` this step, within ``budget`` (> 0)."""
        if request.num_computed_tokens >= request.prefill_end:
            return self._decode_tokens(request, budget)
        return self._prefill_tokens(request, budget)

    def _decode_tokens(self, request: Request, budget: int) -> int:
        """A decode step: the token after the computed ones, which neither the cap nor
        a split may cut (vLLM asks its split only during prefill, core's returns n),
        and under speculative decoding its drafts: at most ``k``, the outputs left
        but the one the step samples, and what the budget and the cap leave."""
        speculative = self.speculative
        if speculative is None:
            return 1
        left = request.max_output_tokens - request.num_output_tokens - 1
        drafts = min(speculative.num_tokens, left, budget - 1, self._chunk_limit - 1)
        return 1 + max(drafts, 0)

    def _prefill_tokens(self, request: Request, budget: int) -> int:
        """A prefill chunk: the budget, the long-prefill cap, then the policy's split."""
        start = request.num_computed_tokens
        wanted = min(request.num_tokens - start, budget)
        threshold = self.config.long_prefill_token_threshold
        if threshold:
            wanted = min(wanted, threshold)
        if not self.align_mode:
            return wanted
        return self.policy.split(self.geometry, request, wanted, self._chunk_limit)

    def _release(self, request: Request) -> None:
        """Give back every block; the request starts over at its next admission."""
        self.coordinator.free(request)
        request.num_computed_tokens = 0
        request.shared_prefix_boundary = 0
        request.decode_states_from = None
        request.decode_states.clear()

    def _preempt(self, request: Request) -> None:
        self._release(request)
        request.status = RequestStatus.WAITING
        self.waiting.appendleft(request)
        self.metrics.preemptions += 1

    def step(self) -> list[tuple[int, int, int]]:
        """Schedule and execute one step; returns ``(request_id, start, tokens computed)``
        per chunk."""
        budget = self.config.max_num_batched_tokens
        scheduled: list[tuple[Request, int, int]] = []
        preempted = False
        index = 0
        running, coordinator = self.running, self.coordinator
        while index < len(running) and budget > 0:
            request = running[index]
            start = request.num_computed_tokens
            if start >= request.prefill_end:
                tokens = self._decode_tokens(request, budget)
            else:
                tokens = self._prefill_tokens(request, budget)
                if tokens == 0:
                    index += 1
                    continue
            try:
                coordinator.allocate(request, start + tokens)
            except NoFreeBlocks:
                victim = running.pop()
                self._preempt(victim)
                preempted = True
                if victim is request:
                    break
                continue
            scheduled.append((request, start, tokens))
            budget -= tokens
            index += 1
        while self.waiting and budget > 0 and not preempted:
            request = self.waiting[0]
            external = self.connector.load(request) if self.connector is not None else 0
            hits = coordinator.admit(request)
            tokens = self._tokens_for(request, budget)
            try:
                coordinator.allocate(request, request.num_computed_tokens + tokens)
            except NoFreeBlocks:
                self._release(request)
                break
            self.waiting.popleft()
            request.status = RequestStatus.RUNNING
            running.append(request)
            self.metrics.admissions += 1
            self.metrics.lookup_tokens += request.num_tokens
            self.metrics.hit_tokens += hits.hit_length if hits else 0
            self.metrics.external_hit_tokens += external
            if tokens:
                scheduled.append((request, request.num_computed_tokens, tokens))
                budget -= tokens
        return self._execute(scheduled)

    def _execute(self, scheduled: list[tuple[Request, int, int]]) -> list[tuple[int, int, int]]:
        """Run the scheduled chunks; returns ``(request_id, start, tokens computed)`` each
        (a speculative step computes its sampled token and the drafts it accepted)."""
        metrics, after_step = self.metrics, self.coordinator.after_step
        metrics.steps += 1
        for request in self._finished:
            request.release_tokens()
        self._finished.clear()
        connector = self.connector
        computed = []
        for request, start, tokens in scheduled:
            prefill = start < request.prefill_end
            if prefill:
                metrics.chunks += 1
                metrics.prefill_tokens_computed += tokens
                end = start + tokens
                if end >= request.prefill_end and self.speculative is not None:
                    request.decode_states_from = end  # decode begins here
                    request.decode_states.clear()
            else:
                end = start + 1 + self._accept(request, start, tokens - 1)
            request.step_start = start
            request.num_computed_tokens = end
            after_step(request)
            if prefill and connector is not None:
                connector.save(request)
            if end == request.num_tokens:
                self._emit(request)
                if request.num_tokens - request.num_prompt_tokens >= request.max_output_tokens:
                    self._finish(request)
            computed.append((request.request_id, start, end - start))
        metrics.evictions = self.pool.evictions
        retained = self.pool.cached_blocks_per_group()
        metrics.retained_final = retained
        peak = metrics.retained_peak
        for group_id, count in retained.items():
            if count > peak.get(group_id, 0):
                peak[group_id] = count
        return computed

    def _accept(self, request: Request, start: int, drafts: int) -> int:
        """How many of a decode step's ``drafts`` are accepted (``speculative.py``); each
        becomes an output token, emitted before the step's own sampled one."""
        speculative = self.speculative
        if speculative is None or not drafts:
            return 0
        step = request.decode_steps
        request.decode_steps += 1
        seed = self.config.seed
        accepted = speculative.accepted_count(seed, request.request_id, start, step, drafts)
        for _ in range(accepted):
            self._emit(request)
        return accepted

    def _emit(self, request: Request) -> None:
        """Append the request's next output token: the scripted answer's first, then the
        engine's own (a function of the seed, the request and the position)."""
        position = request.num_tokens
        emitted, answer = position - request.num_prompt_tokens, request.answer
        if emitted < len(answer):
            request.append_output(answer[emitted])
        else:
            token = hash((self.config.seed, request.request_id, position))
            request.append_output(token % self.config.vocab_size)

    def _finish(self, request: Request) -> None:
        """The request ends after its last output, for its scripted reason: the decode
        checkpoints are published only on a reason the policy declares. ``finished``
        counts every request that ended so, aborted ones included."""
        self.running.remove(request)
        reason = request.finish_reason
        publishes = reason in self.policy.decode_checkpoint_finishes
        published = self.coordinator.publish(request) if publishes else ()
        if self.connector is not None:  # vLLM's request_finished: blocks still held
            self.connector.request_finished(request, published)
        self.coordinator.free(request)
        aborted = reason is FinishReason.ABORTED
        request.status = RequestStatus.ABORTED if aborted else RequestStatus.FINISHED
        self._finished.append(request)
        self.metrics.finished += 1

    def run(self, max_steps: int = 1_000_000) -> Metrics:
        """Step until every request has finished (or ``max_steps``)."""
        for _ in range(max_steps):
            if self.idle:
                break
            self.step()
        return self.metrics

    # -- invariants -----------------------------------------------------------
    def check(self) -> None:
        """Every engine invariant, from scratch.

        Raises :class:`InvariantViolation` naming the invariant and the numbers,
        carrying :meth:`dump` (the pool's and every queued request), and
        :class:`PolicyError` when a policy declaring ``fixed_boundaries``
        now answers a running request's boundaries otherwise than the ones
        the engine reuses.
        """
        try:
            self._check()
        except InvariantViolation as error:
            raise error.with_state(self.dump()) from None

    def _check(self) -> None:
        running_ids = [r.request_id for r in self.running]
        self.pool.check(self.coordinator.holders(running_ids))
        if self.config.tier is not None:
            self.config.tier.check()
        for request in self.waiting:
            if request.status is not RequestStatus.WAITING:
                raise InvariantViolation(
                    "a queued request is WAITING", f"{request}: status {request.status.name}"
                )
            for manager in self.coordinator.managers:
                held = manager.held(request.request_id)
                if held:
                    raise InvariantViolation(
                        "a waiting request holds no blocks",
                        f"{request} holds {held} in group {manager.group_id}",
                    )
        for request in self.running:
            if request.status is not RequestStatus.RUNNING:
                raise InvariantViolation(
                    "a scheduled request is RUNNING", f"{request}: status {request.status.name}"
                )
            if not 0 <= request.num_computed_tokens < request.num_tokens:
                raise InvariantViolation(
                    "a running request has 0 <= computed < tokens",
                    f"{request}: computed {request.num_computed_tokens}, "
                    f"tokens {request.num_tokens}",
                )
            for manager in self.coordinator.managers:  # the policy's declaration holds
                manager.check_boundaries(request)
            for manager in self.coordinator.managers:
                if not isinstance(manager, MambaManager):
                    # Every computed token has its slot (the quiet steps skip allocation).
                    slots = manager.slot_tokens(request.request_id)
                    if slots < request.num_computed_tokens:
                        raise InvariantViolation(
                            "a running request has a slot for every computed token",
                            f"{request}: group {manager.group_id} has slots for {slots}",
                        )
                    continue
                manager.check_pins(request, self.decode_pins)
                # A Mamba group resumes from the state after exactly the computed tokens.
                state = manager.state(request.request_id)
                at = request.num_computed_tokens
                if state != (at or None):
                    raise InvariantViolation(
                        "the Mamba state sits at the computed tokens",
                        f"{request}: group {manager.group_id} state at {state}, not {at}",
                    )
        if self.coordinator.ledger is not None:
            self.coordinator.ledger.check()
        if self.idle and self.pool.num_free != self.pool.num_usable:
            raise InvariantViolation(
                "no block is held once every request is done",
                f"{self.pool.num_usable - self.pool.num_free} of {self.pool.num_usable} "
                "blocks still held",
            )

    def dump(self) -> str:
        """The pool (counts, held and cached blocks) and every queued request."""
        lines = [self.pool.dump()]
        lines += [f"running: {r}" for r in self.running]
        lines += [f"waiting: {r}" for r in self.waiting]
        return "\n".join(lines)
