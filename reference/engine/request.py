"""A request as the reference engine sees it: tokens, progress, junction."""

from __future__ import annotations

import enum

from junction.reference.engine.hash_chain import HashChain

__all__ = ["Request", "RequestStatus"]


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
    """

    def __init__(
        self, request_id: int, prompt: tuple[int, ...], max_output_tokens: int, hash_unit: int
    ) -> None:
        if not prompt:
            raise ValueError(f"request {request_id}: a prompt needs at least one token")
        if max_output_tokens < 1:
            raise ValueError(f"request {request_id}: max_output_tokens must be >= 1")
        self.request_id = request_id
        self.prompt = prompt
        self.max_output_tokens = max_output_tokens
        self.tokens: list[int] = list(prompt)
        self.num_computed_tokens = 0
        self.shared_prefix_boundary = 0
        self.hit_length = 0  # tokens reused at the last admission
        self.status = RequestStatus.WAITING
        self.chain = HashChain(hash_unit)
        self.chain.extend(self.tokens)

    @property
    def num_prompt_tokens(self) -> int:
        return len(self.prompt)

    @property
    def num_tokens(self) -> int:
        return len(self.tokens)

    @property
    def num_output_tokens(self) -> int:
        return len(self.tokens) - len(self.prompt)

    def append_output(self, token: int) -> None:
        self.tokens.append(token)
        self.chain.extend(self.tokens)

    def __repr__(self) -> str:
        return (
            f"Request({self.request_id}, P={self.num_prompt_tokens}, N={self.num_tokens}, "
            f"computed={self.num_computed_tokens}, J={self.shared_prefix_boundary}, "
            f"{self.status.value})"
        )
