"""The retention-policy protocol: every decision a policy makes for a request.

A policy answers four questions, always about one request in one geometry:

* ``checkpoint_positions``: the positions it promises a later lookup can
  resume at (the harness checks the split and the mask against them);
* ``reachable_boundaries``: the positions it hands the mask of one group;
* ``block_mask``: which newly full blocks of one group are hashed (``None``:
  all of them);
* ``split``: how many tokens of a prefill chunk to schedule in align mode.

One more question is optional, for a policy whose split relies on the
backend writing the prefill's checkpoint state inside a chunk (an internal
prefill checkpoint, ``core.PrefillCheckpoints``): it says so with
``writes_prefill_checkpoints = True`` and answers ``prefill_checkpoint``,
the position inside a chunk where that state is written (0: none). The
engine's backend writes a Mamba state there and offers it to the mask, as
vLLM's backend writes into the checkpoint block its scheduler allocated. A
policy without the attribute gets none, and the engine asks nothing.

A third is optional, for a policy that keeps the next turn (docs/domain.md,
"The next turn"): it says so with ``keeps_decode_checkpoints = True`` and
answers ``decode_checkpoints``, the positions a request that finished now
(its ``num_tokens`` final, all but the last computed) promises its next turn.
The engine then keeps a private copy of the Mamba state at every grid point
a decoding request reaches that such a position may still need (and the
window blocks a sliding window reads there), and publishes what the mask
marks when the request finishes (vLLM PR #50551's model). A policy without
the attribute is asked nothing, and the engine pins nothing.

One declaration is optional too: a policy whose ``reachable_boundaries``
depends on the request only through ``num_prompt_tokens`` and
``shared_prefix_boundary`` (every built-in policy's: the promised positions
are the prompt's and the junction's) says so with ``fixed_boundaries =
True``. The engine then asks once per request, group and junction and hands
that answer to the request's later masks, instead of asking on every mask
of every chunk. A policy without the attribute is asked on every mask, as
before. A false declaration is found, not trusted: the engine's ``check()``
(run after every step of a conformance run) asks again and raises
:class:`PolicyError` naming ``fixed_boundaries`` when an answer changed.

Lookup (the finders and reconciliation) is not a policy decision: it is
exact by first principles (``core.reconcile_hits``) and every policy is
judged by what that lookup finds in the cache the policy left.

Why a Protocol and plain method calls: engine authors implement it on their
own classes without importing ours, and the engine calls a policy in its hot
path. The engine hands the live request (anything with the four attributes
of :class:`RequestView`), not a copy.
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
