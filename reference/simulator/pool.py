"""The pool size of a run: given in blocks, in tokens, as a share of the working set, or unbounded.

Memory pressure reads naturally in tokens or as a share of what the workload
could reuse, not in blocks, whose meaning changes with each geometry.
:class:`PoolSize` is what the command line asked for; :meth:`PoolSize.blocks`
turns it into the engine's one pool of blocks for a geometry and workload:
``blocks N`` as given; ``tokens N``, room for ``N`` tokens in every group;
``fraction F``, ``F`` of the working set (:func:`working_set`, every distinct
full prompt block); ``unbounded``, every block any request could take, so
nothing is ever evicted (a computed pool, not an engine switch, so the
memory guard sees its size first).
"""

from __future__ import annotations

import math
from typing import Literal

import attrs

from junction.core import HybridGeometry, InvalidArgument
from junction.reference.engine.hash_chain import ROOT_HASH, unit_hashes
from junction.reference.errors import one_of
from junction.reference.workloads.hash_prompts import HashArrival
from junction.reference.workloads.hash_reuse import distinct_blocks

from .workload import Workload

__all__ = ["PoolSize", "working_set"]

PoolKind = Literal["blocks", "tokens", "fraction", "unbounded"]


def _value(
    instance: PoolSize, attribute: attrs.Attribute[int | float | None], value: object
) -> None:
    kind = instance.kind
    if kind == "unbounded":
        ok, expected = value is None, "None"
    elif kind == "fraction":
        ok = isinstance(value, float) and 0 < value <= 1
        expected = "a float in (0, 1]"
    else:
        ok = type(value) is int and value >= (2 if kind == "blocks" else 1)
        expected = f"an int >= {2 if kind == 'blocks' else 1}"
    if not ok:
        raise InvalidArgument(attribute.name, value, f"a {kind} pool size must be {expected}")


@attrs.frozen
class PoolSize:
    """How the pool was given: its kind and its value (``None`` for unbounded)."""

    kind: PoolKind = attrs.field(validator=one_of(("blocks", "tokens", "fraction", "unbounded")))
    value: int | float | None = attrs.field(validator=_value)

    @property
    def option(self) -> str:
        """The command-line option that gives this size, for messages and the report."""
        if self.kind == "unbounded":
            return "--blocks unbounded"
        name = {"blocks": "--blocks", "tokens": "--pool-tokens", "fraction": "--pool-fraction"}
        return f"{name[self.kind]} {self.value}"

    def blocks(self, geometry: HybridGeometry, workload: Workload | None) -> int | None:
        """The pool, in blocks, for ``geometry`` on ``workload``.

        ``None`` when it depends on a workload (fraction, unbounded) and none is given.
        """
        sizes = [group.block_size for group in geometry.groups]
        value = self.value
        if self.kind == "blocks" and isinstance(value, int):
            return value
        if self.kind == "tokens" and isinstance(value, int):
            return 1 + sum(math.ceil(value / size) for size in sizes)
        if workload is None:
            return None
        if self.kind == "fraction" and isinstance(value, float):
            return 1 + max(1, math.ceil(value * working_set(geometry, workload)))
        return 1 + sum(
            math.ceil((turn.prompt_length + turn.max_output_tokens) / size) + 1
            for session in workload.sessions
            for turn in session
            for size in sizes
        )


def working_set(geometry: HybridGeometry, workload: Workload) -> int:
    """Every distinct full prompt block of every group: ``sum_g`` distinct hashes at ``B_g``.

    A hash-id trace's is counted from its ids (``workloads.hash_reuse``), the
    same count without building and hashing its prompts.
    """
    turns = workload.turns
    if all(isinstance(turn, HashArrival) for turn in turns):
        requests = [turn.request for turn in turns if isinstance(turn, HashArrival)]
        return sum(distinct_blocks(requests, group.block_size) for group in geometry.groups)
    unit = geometry.hash_block_size
    distinct: dict[int, set[int]] = {}
    for session in workload.sessions:
        for turn in session:
            whole = turn.prompt[: len(turn.prompt) // unit * unit]  # complete units only
            for index, parent in enumerate(unit_hashes(ROOT_HASH, whole, unit), start=1):
                for group in geometry.groups:
                    if index * unit % group.block_size == 0:
                        distinct.setdefault(group.block_size, set()).add(parent)
    blocks_per_size = {size: len(hashes) for size, hashes in distinct.items()}
    return sum(blocks_per_size.get(group.block_size, 0) for group in geometry.groups)
