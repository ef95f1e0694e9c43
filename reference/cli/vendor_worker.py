"""The process ``vendor verify`` runs a vendored copy in: import it, walk it, report once.

A copy is code edited by people: it can loop forever, exit during its import
or crash the interpreter. So ``vendor verify`` (:mod:`.vendor`) runs the walk
here, in a contained child with a deadline, and believes only one thing: a
single result (``isolation.send_result``) on the descriptor it passed, sent
after the walk ended. A child that ends without one has failed, whatever its
exit status. Run as ``python -m junction.reference.cli.vendor_worker
WRITE_FD TARGET BOUND``. The walk asks the copy's bound classes and its free
split and mask functions, each against the oracle.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path
from types import ModuleType

from junction.reference import vendoring
from junction.reference.cli.coverage import report_coverage
from junction.reference.isolation import send_result
from junction.reference.oracle.exhaustive import (
    CheckpointGrid,
    check_exhaustively,
    mask_inputs,
    split_inputs,
)
from junction.reference.oracle.first_principles import oracle_split

__all__ = ["free_function_disagreements", "main"]

_SHOWN = 5  # disagreements of the free functions printed


def free_function_disagreements(copy: ModuleType, bound: int) -> tuple[int, list[str]]:
    """The copy's free functions on every split and mask input of the walk, against the
    oracle: how many inputs, and the first disagreements (the walk itself asks the bound
    classes only, so a free function that answers anything at all would pass it)."""
    found: list[str] = []
    checked = 0
    for kwargs in split_inputs(bound):
        grid = kwargs.get("prefill_checkpoints")
        assert grid is None or isinstance(grid, CheckpointGrid)
        checkpoints = grid and grid.in_core(copy)
        got = copy.mamba_block_aligned_split(**{**kwargs, "prefill_checkpoints": checkpoints})
        checked += 1
        if got != oracle_split(**kwargs) and len(found) < _SHOWN:
            found.append(
                f"mamba_block_aligned_split {kwargs}: {got!r}, oracle {oracle_split(**kwargs)!r}"
            )
    for case in mask_inputs(copy, bound):
        spec = case.spec
        got = copy.reachable_block_mask(
            case.start_block,
            case.end_block,
            case.alignment_tokens,
            spec,
            case.use_eagle,
            case.retention_interval,
            case.reachable_boundaries,
            final_segment_end_block=case.final_segment_end_block,
        )
        want = case.oracle_answer()
        checked += 1
        if got != want and len(found) < _SHOWN:
            found.append(f"reachable_block_mask {case}: {got!r}, oracle {want!r}")
    return checked, found


def _run(target: Path, bound: int) -> tuple[int, str, str]:
    """The status, the report's text, and the one-line error that ended the walk (if any)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
        try:
            copy = vendoring.load(target)
        except vendoring.NotVendorable as error:
            return 2, text.getvalue(), str(error)
        except BaseException as error:  # SystemExit and KeyboardInterrupt in its import too
            return 1, text.getvalue(), f"{target}: cannot import the copy: {error!r}"
        started = time.perf_counter()
        try:
            coverage = check_exhaustively(copy, bound)
        except BaseException as error:
            return 1, text.getvalue(), f"{target}: the copy raised {error!r} on a valid input"
        try:
            checked, wrong = free_function_disagreements(copy, bound)
        except BaseException as error:
            problem = f"{target}: a free function of the copy raised {error!r}"
            return 1, text.getvalue(), problem
        status = report_coverage(coverage, str(target), bound, time.perf_counter() - started)
        print(f"free functions: {checked:,} inputs, {len(wrong)} disagreements shown")
        for line in wrong:
            print(f"  {line}")
    return (1 if wrong else status), text.getvalue(), ""


def main(argv: list[str]) -> int:
    write_fd, target, bound = int(argv[0]), Path(argv[1]), int(argv[2])
    status, text, error = _run(target, bound)
    result = {"status": status, "report": text[-200_000:], "error": " ".join(error.split())}
    send_result(write_fd, result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
