"""The ways of driving an engine with a workload, on a modelled clock.

* :func:`run_workload`: open loop in engine steps (the tests, the engine
  benchmark);
* :func:`run_sessions`: closed loop, ``concurrency`` sessions open at once,
  each sending its next turn when the previous one finished;
* :func:`run_trace`: open loop in time, each request at its timestamp;
* :func:`run_sequential`: one request at a time, the upper bound of reuse.

The last three step the engine through :class:`Timeline`, which advances a
clock by ``step_time.StepTimeModel`` and records each request's queueing and
time to first token from the chunks ``engine.step()`` returns. A request the
pool can never hold raises :class:`PoolTooSmall` instead of waiting forever.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import attrs

from junction.core import InvalidArgument, JunctionError
from junction.reference.engine.engine import Engine, Metrics
from junction.reference.engine.request import RequestStatus

from .finishes import ALL_STOPPED, FinishMix
from .resends import EXACT, ResendMix
from .sessions import Arrival, Turn
from .step_time import StepTimeModel

__all__ = [
    "PoolTooSmall",
    "Replay",
    "RequestTiming",
    "Timeline",
    "run_sequential",
    "run_sessions",
    "run_trace",
    "run_workload",
]


class PoolTooSmall(JunctionError):
    """The engine's pool cannot hold a request, so a replay cannot finish.

    The message names the request, what it needs, and the pool's size.
    """


def run_workload(
    engine: Engine,
    arrivals: Sequence[Arrival],
    *,
    check: bool = False,
    finishes: FinishMix = ALL_STOPPED,
    resends: ResendMix = EXACT,
) -> Metrics:
    """Submit each arrival after its gap (stepping meanwhile), then run to completion;
    the ``i``-th ends as ``finishes.reason(i, its outputs)`` says, and emits its
    scripted answer as ``resends.emitted(i, answer)`` says."""
    for index, arrival in enumerate(arrivals):
        for _ in range(arrival.steps_after_previous):
            if engine.idle:
                break
            engine.step()
            if check:
                engine.check()
        engine.submit(
            arrival.prompt,
            arrival.max_output_tokens,
            answer=resends.emitted(index, arrival.answer),
            finish=finishes.reason(index, arrival.max_output_tokens),
        )
    while not engine.idle:
        engine.step()
        if check:
            engine.check()
    return engine.metrics


@attrs.frozen
class RequestTiming:
    """One request's modelled times, in milliseconds on the engine's clock."""

    arrival_ms: float
    queue_ms: float  # arrival to the start of the first step that scheduled any of it
    ttft_ms: float  # arrival to the end of the step that computed its last prompt token


@attrs.frozen
class Replay:
    """What a timed replay measured: each request's times, and the clock when all had finished."""

    timings: tuple[RequestTiming, ...]
    clock_ms: float


class Timeline:
    """Steps an engine on a modelled clock and records each request's times.

    ``on_finished(n)`` hears of ``n`` requests finished after each step (for
    a progress line). ``finishes``: how each submitted request ends, by its
    submission order (every one stopped by default); ``resends``: how far its
    next turn carries its scripted answer (all of it by default).
    """

    def __init__(
        self,
        engine: Engine,
        model: StepTimeModel,
        on_finished: Callable[[int], None] | None = None,
        finishes: FinishMix = ALL_STOPPED,
        resends: ResendMix = EXACT,
    ) -> None:
        self.engine = engine
        self.finishes, self.resends = finishes, resends
        self.model = model
        self.now = 0.0
        self._on_finished = on_finished
        self._finished = engine.metrics.finished
        self._prompt_length: dict[int, int] = {}
        self._arrival: dict[int, float] = {}
        self._queue: dict[int, float] = {}
        self._ttft: dict[int, float] = {}
        self._idle_steps = 0
        self._alone_preemptions: dict[int, int] = {}

    def submit(self, turn: Turn, arrival_ms: float) -> int:
        """Submit ``turn``, arrived at ``arrival_ms``; its prompt is built here."""
        try:
            # A scripted answer (a turn the next one resends), where the workload has one.
            index = len(self._arrival)
            answer = self.resends.emitted(index, getattr(turn, "answer", ()))
            finish = self.finishes.reason(index, turn.max_output_tokens)
            request_id = self.engine.submit(
                turn.prompt, turn.max_output_tokens, answer=answer, finish=finish
            )
        except ValueError as error:  # it could never fit the pool, even alone
            raise PoolTooSmall(str(error)) from None
        self._prompt_length[request_id] = turn.prompt_length
        self._arrival[request_id] = arrival_ms
        return request_id

    def step(self) -> None:
        """One engine step, the clock advanced by its modelled time (:class:`PoolTooSmall`)."""
        engine = self.engine
        preemptions = engine.metrics.preemptions
        began = self.now
        scheduled = engine.step()
        prefill: list[tuple[int, int]] = []
        decode_rows = 0
        first_tokens = []
        for request_id, start, tokens in scheduled:
            prompt = self._prompt_length[request_id]
            if start >= prompt and tokens == 1:
                decode_rows += 1
            else:
                prefill.append((start, tokens))
            if request_id not in self._queue:
                self._queue[request_id] = began - self._arrival[request_id]
            if start < prompt <= start + tokens and request_id not in self._ttft:
                first_tokens.append(request_id)
        self.now += self.model.step_time_ms(prefill, decode_rows)
        for request_id in first_tokens:
            self._ttft[request_id] = self.now - self._arrival[request_id]
        self._check_progress(bool(scheduled), preemptions)
        if self._on_finished is not None and engine.metrics.finished > self._finished:
            self._on_finished(engine.metrics.finished - self._finished)
        self._finished = engine.metrics.finished

    def _check_progress(self, scheduled: bool, preemptions: int) -> None:
        engine = self.engine
        self._idle_steps = 0 if scheduled else self._idle_steps + 1
        stuck = None
        if self._idle_steps > 2:  # nothing runs and the next request cannot be admitted
            stuck = engine.waiting[0] if engine.waiting else engine.running[0]
        elif engine.metrics.preemptions > preemptions and not engine.running:
            # Preempted with nothing else running: it does not fit even alone.
            head = engine.waiting[0]
            count = self._alone_preemptions.get(head.request_id, 0) + 1
            self._alone_preemptions[head.request_id] = count
            if count >= 3:
                stuck = head
        if stuck is not None:
            raise PoolTooSmall(
                f"no progress: a pool of {engine.config.num_blocks} blocks cannot hold request "
                f"{stuck.request_id} ({stuck.num_tokens} tokens)",
            )

    def replay(self) -> Replay:
        """Every submitted request's times, in submission order (once all have finished)."""
        timings = tuple(
            RequestTiming(arrival, self._queue[request_id], self._ttft[request_id])
            for request_id, arrival in self._arrival.items()
        )
        return Replay(timings, self.now)


_ENDED = (RequestStatus.FINISHED, RequestStatus.ABORTED)


def run_sessions(
    engine: Engine,
    sessions: Sequence[Sequence[Turn]],
    concurrency: int,
    model: StepTimeModel | None = None,
    on_finished: Callable[[int], None] | None = None,
    finishes: FinishMix = ALL_STOPPED,
    resends: ResendMix = EXACT,
) -> Replay:
    """Closed loop: ``concurrency`` sessions open; a turn is sent when the previous finished.

    A turn arrives when it is sent, and the next is sent however it ended
    (``finishes``: aborted ones too). Raises :class:`PoolTooSmall`.
    """
    timeline = Timeline(engine, model or StepTimeModel(), on_finished, finishes, resends)
    pending = deque(range(len(sessions)))
    active: dict[int, tuple[int, int]] = {}  # request id -> (session, turn)

    def send(session: int, turn: int) -> None:
        active[timeline.submit(sessions[session][turn], timeline.now)] = (session, turn)

    while pending and len(active) < concurrency:
        send(pending.popleft(), 0)
    while active:
        timeline.step()
        for request_id in [r for r in active if engine.requests[r].status in _ENDED]:
            session, turn = active.pop(request_id)
            if turn + 1 < len(sessions[session]):
                send(session, turn + 1)
            elif pending:
                send(pending.popleft(), 0)
    return timeline.replay()


def run_trace(
    engine: Engine,
    turns: Sequence[Turn],
    model: StepTimeModel,
    on_finished: Callable[[int], None] | None = None,
    finishes: FinishMix = ALL_STOPPED,
    resends: ResendMix = EXACT,
) -> Replay:
    """Open loop: each turn is submitted once the clock reaches its ``arrival_ms``.

    ``turns`` must be in arrival order, each with an ``arrival_ms``; the
    clock (and every time reported) counts from the first arrival. A
    request that arrives during a step is submitted when the step ends (the
    scheduler sees it at the next one), its queueing counted from its
    arrival. An idle engine's clock jumps to the next arrival. Raises
    :class:`PoolTooSmall`, and ``ValueError`` naming a turn without a time or
    out of order.
    """
    times: list[int] = []
    for index, turn in enumerate(turns):
        arrival = turn.arrival_ms
        if arrival is None or arrival < (times[-1] if times else 0):
            earliest = times[-1] if times else 0
            raise InvalidArgument(
                f"turns[{index}].arrival_ms",
                arrival,
                f"must be an int >= {earliest} (arrival order)",
            )
        times.append(arrival)
    # The clock starts at the first arrival: a trace's timestamps may be epoch-scale
    # integers (nanoseconds since 1970 are accepted), where a float clock has no room
    # left for a step's milliseconds. Differences are taken in ints, then made floats.
    first = times[0] if times else 0
    times = [time - first for time in times]
    timeline = Timeline(engine, model, on_finished, finishes, resends)
    following = 0
    while following < len(turns) or not engine.idle:
        if engine.idle:
            timeline.now = max(timeline.now, float(times[following]))
        while following < len(turns) and times[following] <= timeline.now:
            timeline.submit(turns[following], float(times[following]))
            following += 1
        timeline.step()
    return timeline.replay()


def run_sequential(
    engine: Engine,
    turns: Sequence[Turn],
    model: StepTimeModel,
    on_finished: Callable[[int], None] | None = None,
    finishes: FinishMix = ALL_STOPPED,
    resends: ResendMix = EXACT,
) -> Replay:
    """One turn at a time, each sent when the engine is idle again. Raises :class:`PoolTooSmall`."""
    timeline = Timeline(engine, model, on_finished, finishes, resends)
    for turn in turns:
        timeline.submit(turn, timeline.now)
        while not engine.idle:
            timeline.step()
    return timeline.replay()
