"""Why a request stopped decoding, and on which of those a policy publishes.

vLLM's request statuses name the ways a request ends: ``FINISHED_STOPPED`` (a
stop token or a stop string: both end the answer where the model or the
client meant it to end), ``FINISHED_LENGTH_CAPPED`` (its output cap) and
``FINISHED_ABORTED`` (the client cancelled). Preemption is not one of them:
a preempted request gives back what it held (its pinned decode states
included, uncached), is admitted again and ends later for one of these
reasons. A policy keeping decode checkpoints declares on which reasons the
engine publishes them (``decode_checkpoint_finishes``); vLLM PR #50551
publishes on ``FINISHED_STOPPED`` only.
"""

from __future__ import annotations

import enum

__all__ = ["DEFAULT_FINISH", "PUBLISHED_BY_DEFAULT", "FinishReason"]


class FinishReason(enum.Enum):
    """How a request ends; the value is its name in JSON and in workload mixes."""

    STOPPED = "stopped"  # a stop token or a stop string (vLLM's FINISHED_STOPPED)
    LENGTH_CAPPED = "length_capped"  # its output cap (FINISHED_LENGTH_CAPPED)
    ABORTED = "aborted"  # the client cancelled after its last token (FINISHED_ABORTED)


#: What a request ends with unless its workload says otherwise: its answer ends
#: where the workload scripted it, with a stop token.
DEFAULT_FINISH = FinishReason.STOPPED

#: Where a policy that keeps decode checkpoints and declares nothing publishes
#: them: at every finish that is not an abort (an aborted request gives its
#: pinned states back uncached, as a preempted one does).
PUBLISHED_BY_DEFAULT = frozenset({FinishReason.STOPPED, FinishReason.LENGTH_CAPPED})
