"""The ways of driving an engine with a workload: open loop and closed loop.

* :func:`run_workload` (open loop): each arrival comes in its gap of engine
  steps after the previous one, whether or not earlier requests finished;
  the tests and the engine benchmark use it, optionally checking the
  engine's invariants after every step.
* :func:`run_sessions` (closed loop, like agents): ``concurrency`` sessions
  are open at a time, each sends its next turn once the previous one has
  finished, and a new session opens when one ends; the simulator uses it.

A closed loop can wait forever on a request the pool cannot hold (even
alone, or never admitted); :func:`run_sessions` detects that and raises
:class:`PoolTooSmall` with the request and the pool, instead of spinning.
Rejected: a step limit (any fixed limit is either too small for a long
trace or a long hang for a stuck one).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from junction.reference.engine.engine import Engine, Metrics
from junction.reference.engine.request import RequestStatus

from .sessions import Arrival

__all__ = ["PoolTooSmall", "run_sessions", "run_workload"]


class PoolTooSmall(Exception):
    """The engine's pool cannot hold a request, so a closed loop cannot finish.

    The message names the request, what it needs, and the pool's size.
    """


def run_workload(engine: Engine, arrivals: Sequence[Arrival], *, check: bool = False) -> Metrics:
    """Submit each arrival after its gap (stepping meanwhile), then run to completion."""
    for arrival in arrivals:
        for _ in range(arrival.steps_after_previous):
            if engine.idle:
                break
            engine.step()
            if check:
                engine.check()
        engine.submit(arrival.prompt, arrival.max_output_tokens)
    while not engine.idle:
        engine.step()
        if check:
            engine.check()
    return engine.metrics


def run_sessions(engine: Engine, sessions: Sequence[Sequence[Arrival]], concurrency: int) -> None:
    """Closed loop: ``concurrency`` sessions open; a turn is sent when the previous finished.

    Gaps (``steps_after_previous``) are not used. Raises :class:`PoolTooSmall`.
    """
    pending = deque(range(len(sessions)))
    active: dict[int, tuple[int, int]] = {}  # request id -> (session, turn)
    num_blocks = engine.config.num_blocks

    def send(session: int, turn: int) -> None:
        arrival = sessions[session][turn]
        try:
            request_id = engine.submit(arrival.prompt, arrival.max_output_tokens)
        except ValueError as error:  # it could never fit the pool, even alone
            raise PoolTooSmall(str(error)) from None
        active[request_id] = (session, turn)

    while pending and len(active) < concurrency:
        send(pending.popleft(), 0)
    idle_steps = 0
    alone_preemptions: dict[int, int] = {}
    while active:
        preemptions = engine.metrics.preemptions
        scheduled = engine.step()
        idle_steps = 0 if scheduled else idle_steps + 1
        stuck = None
        if idle_steps > 2:  # nothing runs and the next request cannot be admitted
            stuck = engine.waiting[0] if engine.waiting else engine.running[0]
        elif engine.metrics.preemptions > preemptions and not engine.running:
            # Preempted with nothing else running: it does not fit even alone.
            head = engine.waiting[0]
            alone_preemptions[head.request_id] = alone_preemptions.get(head.request_id, 0) + 1
            if alone_preemptions[head.request_id] >= 3:
                stuck = head
        if stuck is not None:
            raise PoolTooSmall(
                f"no progress: a pool of {num_blocks} blocks cannot hold request "
                f"{stuck.request_id} ({stuck.num_tokens} tokens)",
            )
        for request_id in [
            r for r in active if engine.requests[r].status is RequestStatus.FINISHED
        ]:
            session, turn = active.pop(request_id)
            if turn + 1 < len(sessions[session]):
                send(session, turn + 1)
            elif pending:
                send(pending.popleft(), 0)
