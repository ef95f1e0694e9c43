"""The promises of docs/domain.md ("The promises"), as one enum and one table.

:class:`Promise` is the key and :data:`_DESCRIPTORS` the one table, for the
harness and the vLLM audit alike, of what is static about each promise: its
number, its statement and the retention intervals its scenarios are drawn
from. The check itself is one function per promise in :mod:`.promises`,
dispatched by a ``match`` (exhaustive under mypy), not by a second table.
"""

from __future__ import annotations

import enum

import attrs

from junction.core import HybridGeometry
from junction.reference.errors import member

__all__ = ["Promise", "Retention"]


class Retention(enum.Enum):
    """The retention intervals a promise's scenarios draw (its scope)."""

    ANY = "any"  # None, 0 and multiples of L
    ZERO = "zero"  # R = 0 only (economy is stated for it)
    POSITIVE = "positive"  # R > 0 only (segments exist only there)


class Promise(enum.Enum):
    """A promise a retention policy keeps; the value is its name in JSON and on the CLI."""

    REPLAY = "replay"
    JUNCTION = "junction"
    SEGMENTS = "segments"
    ECONOMY = "economy"
    SPLIT = "split"
    RECONCILIATION = "reconciliation"
    SAFETY = "safety"
    TIER = "tier"
    NEXT_TURN = "next_turn"
    DECLARED_PREFIX = "declared_prefix"

    @classmethod
    def named(cls, name: str | Promise) -> Promise:
        """The promise called ``name``; ``ValueError`` naming the choices otherwise."""
        return member(cls, "promise", name)

    @property
    def number(self) -> int:
        return _DESCRIPTORS[self].number

    @property
    def statement(self) -> str:
        """``"<number>. <statement>"``, as the reports and docs/findings.md print it."""
        return f"{self.number}. {_DESCRIPTORS[self].statement}"

    @property
    def retention(self) -> Retention:
        return _DESCRIPTORS[self].retention

    @property
    def declaration(self) -> str | None:
        """The bool a policy declares to make this promise (``None``: every policy makes it)."""
        return _DECLARATIONS.get(self)

    def applies_to(self, policy: object) -> bool:
        """Whether ``policy`` makes this promise: the next turn by a policy that keeps
        decode checkpoints (``keeps_decode_checkpoints``), the declared prefix by one
        that keeps declared checkpoints (``keeps_declared_checkpoints``); every other
        promise by every policy."""
        declaration = self.declaration
        return declaration is None or getattr(policy, declaration, False) is True

    @property
    def eagle(self) -> bool:
        """Whether its scenarios may use EAGLE (segments are stated without it)."""
        return self is not Promise.SEGMENTS

    def out_of_scope(self, geometry: HybridGeometry) -> str | None:
        """Why a scenario on ``geometry`` is outside this promise's scope (what its
        scenarios are drawn from), or ``None``: a saved one from elsewhere is checked."""
        interval = geometry.retention_interval
        if self.retention is Retention.POSITIVE and not interval:
            return f"the {self.value} promise needs R > 0, got retention_interval {interval}"
        if self.retention is Retention.ZERO and interval != 0:
            return f"the {self.value} promise is stated for R = 0, got {interval}"
        if geometry.use_eagle and not self.eagle:
            return f"the {self.value} promise is stated without EAGLE"
        return None


@attrs.frozen
class _Descriptor:
    number: int
    statement: str
    retention: Retention = Retention.ANY


_DESCRIPTORS: dict[Promise, _Descriptor] = {
    Promise.REPLAY: _Descriptor(1, "a resend hits as far as full attention alone"),
    Promise.JUNCTION: _Descriptor(
        2, "after a shared prefix is seen twice, a third request hits it"
    ),
    Promise.SEGMENTS: _Descriptor(
        3, "R > 0: a sharing request hits the last materialised segment", Retention.POSITIVE
    ),
    Promise.ECONOMY: _Descriptor(
        4, "R = 0: every kept sparse block is needed by a promised position", Retention.ZERO
    ),
    Promise.SPLIT: _Descriptor(
        5, "chunk ends on the grid or promised, in budget, promised ones hit"
    ),
    Promise.RECONCILIATION: _Descriptor(6, "the lookup equals the first-principles oracle"),
    Promise.SAFETY: _Descriptor(
        7, "invariants hold under pressure; no Mamba resume without its state"
    ),
    Promise.TIER: _Descriptor(
        8, "another instance sharing the tier resumes as far as it holds the prefix"
    ),
    Promise.NEXT_TURN: _Descriptor(
        9, "the next turn (prompt + answer resent) resumes in full where its finish publishes"
    ),
    Promise.DECLARED_PREFIX: _Descriptor(
        10, "a sibling diverging at a declared checkpoint resumes in full"
    ),
}

# The promises a policy makes only by declaring them, and the bool it declares.
_DECLARATIONS: dict[Promise, str] = {
    Promise.NEXT_TURN: "keeps_decode_checkpoints",
    Promise.DECLARED_PREFIX: "keeps_declared_checkpoints",
}
