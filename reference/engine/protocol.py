"""The retention-policy protocol: every decision a policy makes for a request.

A policy answers four questions about one request in one geometry:
``checkpoint_positions`` (what it promises a later lookup can resume at),
``reachable_boundaries`` (the positions it hands one group's mask),
``block_mask`` (which newly full blocks of a group are hashed; ``None``: all)
and ``split`` (the tokens of a prefill chunk to schedule in align mode).
Optional, each declared by an attribute and otherwise never asked:
``prefill_checkpoint`` (``writes_prefill_checkpoints``: where the backend
writes a Mamba state inside a chunk), ``decode_checkpoints``
(``keeps_decode_checkpoints``: what a finished request promises its next
turn, published on the finishes it names in ``decode_checkpoint_finishes``,
``engine.finish``) and ``fixed_boundaries`` (boundaries asked once per
request; the engine's ``check()`` catches a false declaration). One more
declaration is a promise only: ``keeps_declared_checkpoints`` (the
request's declared checkpoints are kept; the harness checks it). Lookup is not a policy
decision: it is ``core.reconcile_hits``. Why a Protocol: engine authors
implement it without importing ours, and the engine calls it in its hot path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from junction.core import GroupSpec, HybridGeometry

__all__ = ["Policy", "RequestView"]


class RequestView(Protocol):
    """What a policy may read of a request (token counts and the junction ``J``).

    A request of the reference engine also carries ``declared_checkpoints``
    (positions its application declared; ``()`` when none), which a policy
    reads with ``getattr(request, "declared_checkpoints", ())``: it is not part
    of the protocol, so a view of another engine need not have it.
    """

    @property
    def num_prompt_tokens(self) -> int: ...
    @property
    def num_tokens(self) -> int: ...
    @property
    def num_computed_tokens(self) -> int: ...
    @property
    def shared_prefix_boundary(self) -> int: ...


@runtime_checkable
class Policy(Protocol):
    """A retention policy. ``name`` identifies it in reports and on the command line."""

    @property
    def name(self) -> str: ...

    def checkpoint_positions(self, geometry: HybridGeometry, request: RequestView) -> Sequence[int]:
        """Positions (> 0) a later request sharing the prefix is promised to resume at."""
        ...

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> Sequence[int]:
        """Token positions (>= 0) whose reachable blocks ``group``'s mask must keep."""
        ...

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> Sequence[bool] | None:
        """One bool per block of ``[start_block, end_block)``, or ``None`` (cache all)."""
        ...

    def split(
        self,
        geometry: HybridGeometry,
        request: RequestView,
        num_new_tokens: int,
        max_prefill_tokens: int,
    ) -> int:
        """Tokens to schedule from ``request.num_computed_tokens`` (``0 <= result <= n``)."""
        ...
