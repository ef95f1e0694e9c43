"""Stateful stress test: submit, abort and step requests; check every invariant after each.

Hypothesis drives an engine over random geometries (every group kind, EAGLE,
retention None / 0 / > 0, partial hits), each eviction policy (LRU and
FLOP-aware with a small window), pool sizes that force eviction and
preemption, and prompts that share prefixes. After every rule ``check()``
verifies reference counts against holders, free + held = total, no block both
free and held, every cached block's hash against its tokens, no leak once all
requests finish; admission itself refuses a Mamba hit without its exact state.
Half the configurations keep decode checkpoints (pinned Mamba states and held
windows, published on the finishes the policy declares, drawn, given back
otherwise and on preemption), two thirds of those retire them under a
budget of one or two turns per path, two thirds keep a second one below a
margin, two thirds retire those no request resumed from within 1 or 3 later
requests (a time to live), half of those leaving an expiring turn's path its
last state, walked by next turns that resend a request's tokens; every request
ends stopped, length-capped or aborted (drawn), besides the aborts the
machine makes. Half decode in
speculative steps (1 to 4 drafts, accepted counts drawn, a passed Mamba block
end captured or left uncached: a spare Mamba block per step, states pinned
below the lag, a window's blocks kept there). Half share an external tier
(a few blocks to plenty) with a second instance, half of those tiers taking
decode checkpoints: both instances save to it and load from it, and next
turns run on the second too.
On failure Hypothesis prints the shrunk step sequence.
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    precondition,
    rule,
)

from junction.core import CrossedGridPoints, GroupKind, GroupSpec, HybridGeometry, cdiv
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.eviction import FlopAware, FlopModel, LayerCost, LeastRecentlyUsed
from junction.reference.engine.finish import FinishReason
from junction.reference.engine.request import RequestStatus
from junction.reference.engine.speculative import SpeculativeDecoding
from junction.reference.engine.tier import ExternalTier
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.options import JunctionOptions

MAX_PROMPT = 48
MAX_OUTPUT = 12
# Every kind costed, attention growing with context: the FLOP term reorders candidates.
FLOPS = FlopModel(full=LayerCost(100, 10), sliding_window=LayerCost(100, 10), mamba=LayerCost(400))


@st.composite
def engine_configs(draw: st.DrawFn) -> EngineConfig:
    block_sizes = st.sampled_from([2, 4, 8])
    groups = [GroupSpec.full(draw(block_sizes))]
    for kind in draw(st.lists(st.sampled_from(["sliding_window", "mamba"]), max_size=2)):
        block = draw(block_sizes)
        if kind == "sliding_window":
            groups.append(GroupSpec.sliding_window(block, draw(st.integers(1, 20))))
        else:
            groups.append(GroupSpec.mamba(block))
    hash_unit = draw(
        st.sampled_from([h for h in (1, 2) if all(g.block_size % h == 0 for g in groups)])
    )
    probe = HybridGeometry(groups, hash_unit)
    interval = draw(
        st.sampled_from([None, 0, probe.scheduler_block_size, 2 * probe.scheduler_block_size])
    )
    geometry = HybridGeometry(
        groups,
        hash_unit,
        partial_hits=draw(st.booleans()),
        use_eagle=draw(st.booleans()),
        retention_interval=interval,
    )
    # Enough blocks for the largest request alone, times a small factor: tight pools
    # force eviction and preemption.
    per_request = sum(
        2 if g.kind is GroupKind.MAMBA else cdiv(MAX_PROMPT + MAX_OUTPUT, g.block_size)
        for g in groups
    )
    factor = draw(st.integers(1, 4))
    config = EngineConfig(
        geometry,
        num_blocks=per_request * factor + 1,
        max_num_batched_tokens=draw(st.integers(8, 64)),
        long_prefill_token_threshold=draw(st.sampled_from([0, 8, 24])),
        seed=draw(st.integers(0, 3)),
        policy=JunctionPolicy(),
        eviction=draw(
            st.one_of(
                st.just(LeastRecentlyUsed()),
                st.builds(FlopAware, st.just(FLOPS), window=st.sampled_from([2, 8, 64])),
            )
        ),
    )
    # Speculative decode steps in half the configurations, under either rule for a
    # passed Mamba block end, accepted counts drawn from the seed.
    if draw(st.booleans()):
        speculative = SpeculativeDecoding(
            draw(st.integers(1, 4)),
            draw(st.sampled_from(list(CrossedGridPoints))),
            acceptance_rate=draw(st.sampled_from([0.0, 0.5, 0.9, 1.0])),
        )
        config = attrs.evolve(config, speculative=speculative)
    policy = JunctionPolicy()
    if draw(st.booleans()):
        # Decode checkpoints on: pinned states and held windows count in the peak.
        finishes = draw(st.sets(st.sampled_from(list(FinishReason))))
        budget = draw(st.sampled_from([None, 1, 2]))  # retirement: a budget of turns a path
        policy = JunctionPolicy(
            JunctionOptions(
                decode_checkpoints=True,
                decode_checkpoint_finishes=finishes,
                decode_checkpoint_budget=budget,
                decode_checkpoint_margin=draw(st.sampled_from([None, 1, 3])),  # two checkpoints
                # A time to live of a few requests: expiry happens within a walk.
                decode_checkpoint_ttl=draw(st.sampled_from([None, 1, 3])),
                # An expiring turn leaving its path's last state to the pool.
                decode_checkpoint_keep_path=draw(st.booleans()),
            )
        )
    if draw(st.booleans()):  # a shared tier, taking decode checkpoints or not
        tier = ExternalTier(
            draw(st.sampled_from([4, 64, 1000])), decode_checkpoints=draw(st.booleans())
        )
        config = attrs.evolve(config, tier=tier)
    peak = Engine(attrs.evolve(config, policy=policy)).blocks_at_peak(MAX_PROMPT + MAX_OUTPUT)
    return attrs.evolve(config, policy=policy, num_blocks=max(per_request, peak) * factor + 1)


class EngineMachine(RuleBasedStateMachine):
    requests = Bundle("requests")

    @initialize(
        config=engine_configs(),
        prefix=st.lists(st.integers(0, 9), min_size=MAX_PROMPT, max_size=MAX_PROMPT),
    )
    def start(self, config: EngineConfig, prefix: list[int]) -> None:
        self.engine = Engine(config)
        self.prefix = tuple(prefix)
        # A second instance sharing the tier (none without one).
        self.other = None if config.tier is None else Engine(config)

    @rule(
        target=requests,
        shared=st.integers(0, MAX_PROMPT),
        suffix=st.lists(st.integers(0, 9), max_size=24),
        max_output=st.integers(1, MAX_OUTPUT),
        finish=st.sampled_from(list(FinishReason)),
    )
    def submit(self, shared: int, suffix: list[int], max_output: int, finish: FinishReason) -> int:
        prompt = (self.prefix[:shared] + tuple(suffix))[:MAX_PROMPT] or (1,)
        return self.engine.submit(prompt, max_output, finish=finish)

    @rule(target=requests, request_id=requests, suffix=st.lists(st.integers(0, 9), max_size=8))
    def next_turn(self, request_id: int, suffix: list[int]) -> int:
        """A conversation's next turn, once every running request is done (the client
        waits for the answer): the request's prompt and answer resent."""
        self.drain()
        tokens = tuple(self.engine.requests[request_id].tokens)
        prompt = (tokens + tuple(suffix))[:MAX_PROMPT] or (1,)
        return self.engine.submit(prompt, MAX_OUTPUT // 2 + 1)

    @precondition(lambda self: self.other is not None)
    @rule(request_id=requests, suffix=st.lists(st.integers(0, 9), max_size=8))
    def next_turn_elsewhere(self, request_id: int, suffix: list[int]) -> None:
        """A next turn routed to the second instance, which loads what the tier holds."""
        self.drain()
        other = self.other
        assert other is not None
        tokens = tuple(self.engine.requests[request_id].tokens)
        other.submit((tokens + tuple(suffix))[:MAX_PROMPT] or (1,), MAX_OUTPUT // 2 + 1)
        for _ in range(10_000):
            if other.idle:
                break
            other.step()
            other.check()
        assert other.idle, f"no progress:\n{other.dump()}"

    @rule(request_id=consumes(requests))
    def abort(self, request_id: int) -> None:
        if self.engine.requests[request_id].status in (
            RequestStatus.WAITING,
            RequestStatus.RUNNING,
        ):
            self.engine.abort(request_id)

    @rule(steps=st.integers(1, 8))
    def step(self, steps: int) -> None:
        for _ in range(steps):
            self.engine.step()
            self.engine.check()

    @rule()
    def drain(self) -> None:
        for _ in range(10_000):
            if self.engine.idle:
                break
            self.engine.step()
            self.engine.check()
        assert self.engine.idle, f"no progress:\n{self.engine.dump()}"

    @invariant()
    def invariants_hold(self) -> None:
        if hasattr(self, "engine"):
            self.engine.check()
            if self.other is not None:
                self.other.check()


TestEngineMachine = EngineMachine.TestCase
