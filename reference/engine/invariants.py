"""The error every engine ``check()`` raises: :class:`InvariantViolation`.

Why not ``assert``: ``python -O`` strips asserts, and a stress test run that
way would then pass on a corrupted pool (``core/errors.py`` rejects them for
the same reason). Each violation names the invariant, what was found (the
numbers) and a dump of the state it was found in, so a failing step of a
Hypothesis run reads without a debugger.

It subclasses ``AssertionError`` on purpose: a broken invariant is a failed
assertion about the engine, and callers that already treat it so (pytest,
the conformance harness) keep catching it.
"""

from __future__ import annotations

from junction.core import JunctionError

__all__ = ["InvariantViolation", "MambaStateMissing"]


class InvariantViolation(JunctionError, AssertionError):
    """An engine invariant does not hold.

    Attributes:
        invariant: which invariant, in words, e.g. ``"free + held = usable"``.
        found: what was found instead, with the numbers.
        state: a dump of the relevant state ("" when none was attached).
    """

    def __init__(self, invariant: str, found: str, state: str = "") -> None:
        self.invariant = invariant
        self.found = found
        self.state = state
        message = f"{invariant}: {found}"
        super().__init__(f"{message}\n{state}" if state else message)

    def with_state(self, state: str) -> InvariantViolation:
        """The same violation, carrying ``state`` (a wider dump) instead."""
        return InvariantViolation(self.invariant, self.found, state)


class MambaStateMissing(InvariantViolation):
    """A hit would resume a Mamba group without the state saved exactly there."""
