"""An implementation's answers to the walk's questions: plain data in, plain data out.

The exhaustive walk (:mod:`.exhaustive`) asks its questions as plain lists
and judges plain answers, so the implementation may answer in this process
or in another one that alone imports it (``vendor verify`` asks a copy in a
contained worker over :mod:`..isolation`'s plain JSON). :class:`Answerer`
answers for ``core`` (a module with core's public names) through the
per-call API an engine uses, one binding per setting reused for every
question that shares it. Every answer is made of exact ints, bools,
``None`` and flat lists of them; an exception or any other value is an
answer too (``{"raised": ...}``, ``{"unsupported": ...}``) that no oracle
answer equals.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__all__ = ["SPLIT_ENGINE", "SPLIT_FIELDS", "SPLIT_REQUEST", "Answerer", "plain"]

# A split question's arguments in order: the request's, then what a ChunkSplitter binds.
SPLIT_REQUEST = (
    "num_computed_tokens",
    "num_new_tokens",
    "num_prompt_tokens",
    "num_tokens",
    "shared_prefix_boundary",
    "num_new_local_computed_tokens",
)
SPLIT_ENGINE = (
    "block_size",
    "hash_block_size",
    "use_eagle",
    "partial_hits",
    "max_prefill_tokens",
    "hash_lookahead_tokens",
    "exact_junction_stop",
    "prefill_checkpoints",
)
SPLIT_FIELDS = SPLIT_REQUEST + SPLIT_ENGINE
_LIMIT = 1 << 63  # what the wire carries of an int
_LONGEST = 1 << 12  # elements of one answer's list


def _scalar(value: object) -> bool:
    kind = type(value)
    return value is None or kind is bool or (kind is int and -_LIMIT <= value < _LIMIT)  # type: ignore[operator]


def plain(value: object) -> Any:
    """``value`` if it is an exact scalar or a short flat list or tuple of them (as a list);
    otherwise an ``{"unsupported": ...}`` answer naming what it was."""
    if _scalar(value):
        return value
    if type(value) is list or type(value) is tuple:
        items: list[Any] | tuple[Any, ...] = value
        if len(items) <= _LONGEST and all(_scalar(item) for item in items):
            return list(items)
        return {"unsupported": f"a {type(value).__name__} of {len(items)} elements, not all plain"}
    return {"unsupported": f"a {type(value).__name__}"}


def _raised(error: Exception) -> dict[str, str]:
    text = " ".join(str(error).split())[:200]
    return {"raised": f"{type(error).__name__}: {text}"}


class Answerer:
    """``core``'s answers to the walk's questions, each decision by its name."""

    def __init__(self, core: ModuleType) -> None:
        self.core = core
        self._bindings: dict[tuple[Any, ...], Any] = {}
        self._cached: dict[int, frozenset[int]] = {}
        self._calls = {
            "reachable_block_mask": self._mask,
            "free reachable_block_mask": self._free_mask,
            "mamba_block_aligned_split": self._split,
            "free mamba_block_aligned_split": self._free_split,
            "reconcile_hits": self._reconcile,
            "promised_positions": self._next_turn,
        }

    @property
    def decisions(self) -> tuple[str, ...]:
        return tuple(self._calls)

    def answer_all(self, decision: str, questions: list[Any]) -> list[Any]:
        """The answer to each question of ``decision``, in order. An exception the
        implementation raises is that question's answer; ``KeyboardInterrupt`` and
        ``SystemExit`` are not (they end the caller)."""
        call = self._calls[decision]
        answers = []
        for question in questions:
            try:
                answers.append(call(question))
            except Exception as error:
                answers.append(_raised(error))
        return answers

    def _bound(self, key: tuple[Any, ...], make: Any) -> Any:
        """The binding for ``key``, made once by ``make()``."""
        found = self._bindings.get(key)
        if found is None:
            found = self._bindings[key] = make()
        return found

    def _spec(self, fields: list[Any]) -> Any:
        kind, block, window, eagle_group = fields
        core = self.core
        return self._bound(
            ("spec", kind, block, window, eagle_group),
            lambda: core.GroupSpec(core.GroupKind(kind), block, window, eagle_group=eagle_group),
        )

    def _geometry(self, q: list[Any]) -> Any:
        """The geometry of a question ``[partial, eagle, unit, x, y, z, group...]``, each
        group ``[kind, block, window, eagle_group]``."""
        key = (*q[:3], *map(tuple, q[6:]))
        found = self._bindings.get(key)
        if found is None:
            specs = [self._spec(group) for group in q[6:]]
            found = self._bindings[key] = self.core.HybridGeometry(
                specs, q[2], partial_hits=q[0], use_eagle=q[1]
            )
        return found

    # -- the decisions --------------------------------------------------------
    # mask: [kind, block, window, eagle_group, A, eagle, interval, start, end, boundaries, final]
    def _mask(self, q: list[Any]) -> Any:
        binding = self._bound(
            ("mask", *q[:7]), lambda: self.core.GroupMask(q[4], self._spec(q[:4]), q[5], q[6])
        )
        return plain(binding.reachable_block_mask(q[7], q[8], tuple(q[9]), q[10]))

    def _free_mask(self, q: list[Any]) -> Any:
        start, end, boundaries, final = q[7], q[8], tuple(q[9]), q[10]
        answer = self.core.reachable_block_mask(
            start, end, q[4], self._spec(q[:4]), q[5], q[6], boundaries,
            final_segment_end_block=final,
        )  # fmt: skip
        return plain(answer)

    # split: the values of SPLIT_FIELDS, the checkpoint grid as [alignment, unit, keyed]
    def _split_arguments(self, q: list[Any]) -> dict[str, Any]:
        arguments = dict(zip(SPLIT_FIELDS, q, strict=True))
        grid = q[-1]
        if grid is not None:
            arguments["prefill_checkpoints"] = self._bound(
                ("checkpoints", *grid), lambda: self.core.PrefillCheckpoints(*grid)
            )
        return arguments

    def _split(self, q: list[Any]) -> Any:
        grid = q[-1]
        key = ("split", *q[6:-1], grid if grid is None else tuple(grid))
        binding = self._bindings.get(key)
        if binding is None:
            settings = self._split_arguments(q)
            engine = {name: settings[name] for name in SPLIT_ENGINE}
            binding = self._bindings[key] = self.core.ChunkSplitter(**engine)
        answer = binding.split(
            num_computed_tokens=q[0],
            num_new_tokens=q[1],
            num_prompt_tokens=q[2],
            num_tokens=q[3],
            shared_prefix_boundary=q[4],
            num_new_local_computed_tokens=q[5],
        )
        return plain(answer)

    def _free_split(self, q: list[Any]) -> Any:
        return plain(self.core.mamba_block_aligned_split(**self._split_arguments(q)))

    # reconcile: [partial, eagle, unit, max_hit, limit, [cached blocks of each group, as
    # bits], group...]
    def _reconcile(self, q: list[Any]) -> Any:
        key = ("reconcile", *q[:3], *map(tuple, q[6:]))
        bound = self._bindings.get(key)
        if bound is None:
            geometry, core = self._geometry(q), self.core
            lookups = [
                core.GroupLookup(spec, geometry.alignment_tokens) for spec in geometry.groups
            ]
            bound = self._bindings[key] = (core.HitReconciler(geometry), lookups)
        reconciler, lookups = bound
        finders = []
        for lookup, bits in zip(lookups, q[5], strict=True):
            cached = self._cached.get(bits)
            if cached is None:
                cached = frozenset(i for i in range(bits.bit_length()) if bits >> i & 1)
                self._cached[bits] = cached
            finders.append(lookup.finder(cached.__contains__))
        got = reconciler.reconcile(finders, q[3], q[4])
        return plain([got.hit_length, got.longest_hit_length, got.shared_prefix_boundary])

    # next turn: [partial, eagle, unit, "finished" or "declared", a, b, groups...]
    def _next_turn(self, q: list[Any]) -> list[Any]:
        geometry, kind, first, second = self._geometry(q), q[3], q[4], q[5]
        promised = self.core.promised_positions
        if kind == "finished":
            prompt = first - 1
            return [
                plain(self.core.decode_checkpoint(geometry, first)),
                plain(sorted(promised(geometry, prompt))),
                plain(sorted(promised(geometry, prompt, finished_tokens=first))),
            ]
        return [
            plain(sorted(promised(geometry, first))),
            plain(sorted(promised(geometry, first, declared_checkpoints=(second,)))),
        ]
