"""``check()`` raises :class:`InvariantViolation` on a corrupted state, also under ``python -O``.

Each test runs a small workload to a state with running requests, cached
blocks and Mamba states, corrupts one thing the way a bug would, and expects
the violation naming that invariant, the numbers and a dump. The ``-O`` test
runs the same corruption in a subprocess where ``assert`` statements are
stripped: a check written with them would pass there.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.group_managers import MambaManager
from junction.reference.engine.invariants import InvariantViolation
from junction.reference.policies.builtin import JunctionPolicy


def busy_engine() -> Engine:
    """Two requests sharing a prefix, stepped until both run with Mamba states."""
    geometry = HybridGeometry(
        [GroupSpec.full(4), GroupSpec.sliding_window(4, 6), GroupSpec.mamba(4)],
        4,
        retention_interval=0,
    )
    engine = Engine(
        EngineConfig(geometry, num_blocks=64, max_num_batched_tokens=12, policy=JunctionPolicy())
    )
    engine.submit(tuple(range(30)), 4)
    engine.submit(tuple(range(20)) + (99,) * 10, 4)
    for _ in range(3):
        engine.step()
    engine.check()
    assert len(engine.running) == 2 and engine.pool.cached
    return engine


def _leak_a_reference(engine: Engine) -> None:
    held = next(b for b in engine.pool.blocks[1:] if b.ref_count)
    held.ref_count += 1


def _compute_every_token(engine: Engine) -> None:
    request = engine.running[0]
    request.num_computed_tokens = request.num_tokens


def _compute_past_the_slots(engine: Engine) -> None:
    request = engine.running[0]
    request.num_computed_tokens = request.num_tokens - 1


def _move_a_mamba_state(engine: Engine) -> None:
    manager = next(m for m in engine.coordinator.managers if isinstance(m, MambaManager))
    state = manager.latest[engine.running[0].request_id]
    state.state_position = (state.state_position or 0) + 1


def _requeue_as_running(engine: Engine) -> None:
    request = engine.running.pop()
    engine.coordinator.free(request)
    engine.waiting.append(request)  # its status still says RUNNING


CORRUPTIONS: list[tuple[Callable[[Engine], None], str, str]] = [
    (_leak_a_reference, "block pool invariants", r"ref_count != \d+ holders"),
    (
        _compute_every_token,
        "a running request has 0 <= computed < tokens",
        r"computed (\d+), tokens \1",
    ),
    (
        _compute_past_the_slots,
        "a running request has a slot for every computed token",
        r"group 0 has slots for \d+",
    ),
    (
        _move_a_mamba_state,
        "the Mamba state sits at the computed tokens",
        r"state at (\d+), not \d+",
    ),
    (_requeue_as_running, "a queued request is WAITING", r"status RUNNING$"),
]


@pytest.mark.parametrize(
    ("corrupt", "invariant", "found"), CORRUPTIONS, ids=[c[0].__name__ for c in CORRUPTIONS]
)
def test_check_names_the_broken_invariant_with_numbers_and_a_dump(
    corrupt: Callable[[Engine], None], invariant: str, found: str
) -> None:
    engine = busy_engine()
    corrupt(engine)
    with pytest.raises(InvariantViolation) as info:
        engine.check()
    error = info.value
    assert error.invariant == invariant
    assert re.search(found, error.found), error.found
    assert error.state == engine.dump() and "pool:" in error.state and "running:" in error.state
    assert str(error) == f"{invariant}: {error.found}\n{error.state}"


def test_a_leak_after_every_request_finished_is_named() -> None:
    engine = busy_engine()
    engine.run()
    engine.check()
    engine.pool.allocate(1)  # held by nobody: leaked
    with pytest.raises(InvariantViolation, match="neither free nor held"):
        engine.check()


SCRIPT = textwrap.dedent(
    """
    import sys
    if __debug__:
        sys.exit("run me with python -O")
    from tests.engine.test_check import CORRUPTIONS, busy_engine
    from junction.reference.engine.invariants import InvariantViolation
    for corrupt, invariant, _ in CORRUPTIONS:
        engine = busy_engine()
        corrupt(engine)
        try:
            engine.check()
        except InvariantViolation as error:
            print(error.invariant)
        else:
            print("check() passed on a corrupted engine:", invariant)
    """
)


def test_check_raises_under_python_dash_o() -> None:
    done = subprocess.run(
        [sys.executable, "-O", "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [invariant for _, invariant, _ in CORRUPTIONS]
