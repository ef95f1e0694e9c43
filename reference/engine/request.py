"""A request as the reference engine sees it: tokens, progress, junction.

Plain slotted attributes, not properties: the engine reads a request's
counts several times per chunk, and a property call costs as much as the
arithmetic it guards.

What a finished request keeps: the engine releases its tokens at the next
:meth:`Engine.step` after it finished (:meth:`Request.release_tokens`), so
a replay of a whole trace does not hold every prompt. Until then a caller
can still read what the finishing step computed (the harness does). It
keeps its counts, ``hit_length``, ``shared_prefix_boundary``, ``status``
and its hash chain (8 bytes per hash unit), which is all that
``reference.harness``, ``reference.simulator``, ``reference.workloads`` and
``audit`` read after a request finished.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from junction.core import InvalidArgument
from junction.reference.engine.finish import DEFAULT_FINISH, FinishReason
from junction.reference.engine.hash_chain import HashChain

__all__ = ["NextTurnView", "Request", "RequestStatus"]


class RequestStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"
    ABORTED = "aborted"


class Request:
    """Prompt plus accepted output tokens, and how far the engine has computed them.

            ``shared_prefix_boundary`` is the junction ``J`` found at the last
            admission with no computed tokens; it lives across steps and is
            recomputed when the request is admitted again after preemption.
            ``declared_checkpoints``: positions of the prompt its application declared.
    ``answer``: output tokens the workload scripts (what a later turn resends), emitted
    before the engine's own. ``finish_reason``: how it ends after its
    ``max_output_tokens`` outputs (scripted by the workload; ``finish.py``).
        ``num_tokens`` is ``len(tokens)`` while the tokens are held, and stays
            the request's length once they are released. ``prefill_end`` is
            ``core.prefill_end(P, N)``: where prefill ends and decode begins.
    ``step_start``: where its latest step began. Under speculative decode steps
    (``speculative.py``): ``decode_steps`` (its decode steps so far),
    ``decode_states_from`` (the computed tokens where its decode began;
    ``None`` before, and always with one token a step) and, for a policy
    keeping decode checkpoints, ``decode_states`` (the hit-grid positions its steps left
    Mamba states at since, ``core.decode_step_state``, none below the lowest
    its next turn may still resume at): the engine keeps a policy's decode
    checkpoint as the deepest of them at or below it.
    """

    __slots__ = (
        "answer",
        "chain",
        "declared_checkpoints",
        "decode_states",
        "decode_states_from",
        "decode_steps",
        "finish_reason",
        "hit_length",
        "max_output_tokens",
        "num_computed_tokens",
        "num_prompt_tokens",
        "num_tokens",
        "prefill_end",
        "request_id",
        "shared_prefix_boundary",
        "status",
        "step_start",
        "tokens",
    )

    def __init__(
        self,
        request_id: int,
        prompt: Sequence[int],
        max_output_tokens: int,
        hash_unit: int,
        declared_checkpoints: Sequence[int] = (),
        answer: Sequence[int] = (),
        finish_reason: FinishReason = DEFAULT_FINISH,
    ) -> None:
        if not prompt:
            raise InvalidArgument("prompt", prompt, "a prompt needs at least one token")
        if max_output_tokens < 1:
            raise InvalidArgument("max_output_tokens", max_output_tokens, "must be >= 1")
        for position in declared_checkpoints:
            if type(position) is not int or not 0 <= position <= len(prompt):
                raise InvalidArgument(
                    "declared_checkpoints",
                    position,
                    f"each must be an int in [0, {len(prompt)}] (a prompt position)",
                )
        if not isinstance(finish_reason, FinishReason):
            raise InvalidArgument("finish_reason", finish_reason, "must be a FinishReason")
        self.finish_reason = finish_reason
        # Positions the request's application declared (docs/domain.md, "The next turn").
        self.declared_checkpoints: tuple[int, ...] = tuple(sorted(set(declared_checkpoints)))
        # The answer a workload knows (its next turn resends it): the engine emits
        # these tokens first, then its own.
        self.answer: tuple[int, ...] = tuple(answer)
        self.request_id = request_id
        self.max_output_tokens = max_output_tokens
        self.tokens: list[int] = list(prompt)
        self.num_prompt_tokens = self.num_tokens = len(self.tokens)
        # core.prefill_end's max(P, N - 1), kept as N grows: P until an output
        # is accepted, N - 1 after (N > P then).
        self.prefill_end = self.num_prompt_tokens
        self.num_computed_tokens = 0
        self.shared_prefix_boundary = 0
        self.hit_length = 0  # tokens reused at the last admission
        self.step_start = self.decode_steps = 0
        self.decode_states_from: int | None = None
        self.decode_states: list[int] = []
        self.status = RequestStatus.WAITING
        self.chain = HashChain(hash_unit)
        # Hashed once, from the caller's sequence (a tuple's unit slices need no copy).
        self.chain.extend(prompt)

    @property
    def num_output_tokens(self) -> int:
        return self.num_tokens - self.num_prompt_tokens

    def append_output(self, token: int) -> None:
        self.tokens.append(token)
        self.prefill_end = self.num_tokens  # the new N - 1
        self.num_tokens += 1
        if self.num_tokens % self.chain.unit == 0:  # a unit just completed
            self.chain.extend(self.tokens)

    def release_tokens(self) -> None:
        """Drop the token list of a finished request (its counts and chain stay)."""
        self.tokens = []

    def __repr__(self) -> str:
        return (
            f"Request({self.request_id}, P={self.num_prompt_tokens}, N={self.num_tokens}, "
            f"computed={self.num_computed_tokens}, J={self.shared_prefix_boundary}, "
            f"{self.status.value})"
        )


class NextTurnView:
    """A decoding request as if it finished after ``computed`` tokens: what a
    policy keeping decode checkpoints is asked about (``num_tokens = computed +
    1``: the last token is sampled, never computed)."""

    __slots__ = (
        "declared_checkpoints",
        "num_computed_tokens",
        "num_prompt_tokens",
        "num_tokens",
        "shared_prefix_boundary",
    )

    def __init__(self, request: Request, computed: int) -> None:
        self.num_prompt_tokens = request.num_prompt_tokens
        self.num_tokens = computed + 1
        self.num_computed_tokens = computed
        self.shared_prefix_boundary = request.shared_prefix_boundary
        self.declared_checkpoints = request.declared_checkpoints
