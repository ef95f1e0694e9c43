"""Each decision from first principles, position by position, and the exhaustive walk.

Nothing here imports ``core``: the oracle is a second, independent statement
of the domain, and an implementation is checked by handing it to the walk.
It validates nothing: its inputs are those core accepts
(docs/design/error-root.md). The names below are what a caller imports.
"""

from .exhaustive import (
    CheckpointGrid,
    Coverage,
    MaskInput,
    check_exhaustively,
    count_inputs,
    mask_inputs,
    next_turn_inputs,
    reconcile_inputs,
    split_inputs,
)
from .first_principles import (
    CheckpointBackend,
    OracleGroup,
    oracle_blocks_needed,
    oracle_declared_positions,
    oracle_decode_checkpoint,
    oracle_in_prefill,
    oracle_last_cacheable_position,
    oracle_reachable_block_mask,
    oracle_reconcile,
    oracle_split,
)

__all__ = [
    "CheckpointBackend",
    "CheckpointGrid",
    "Coverage",
    "MaskInput",
    "OracleGroup",
    "check_exhaustively",
    "count_inputs",
    "mask_inputs",
    "next_turn_inputs",
    "oracle_blocks_needed",
    "oracle_declared_positions",
    "oracle_decode_checkpoint",
    "oracle_in_prefill",
    "oracle_last_cacheable_position",
    "oracle_reachable_block_mask",
    "oracle_reconcile",
    "oracle_split",
    "reconcile_inputs",
    "split_inputs",
]
