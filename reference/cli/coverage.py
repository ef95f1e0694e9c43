"""The bounded-exhaustive walk's report, printed the same way for core and for a copy.

``exhaustive`` (core) and ``vendor verify`` (a vendored copy) run the same
walk; this prints its coverage per decision, its time and any disagreements,
and gives the exit status: 0 when every input agrees, 1 otherwise.
"""

from __future__ import annotations

from junction.reference.oracle.exhaustive import Coverage

__all__ = ["report_coverage"]


def report_coverage(coverage: Coverage, subject: str, bound: int, elapsed: float) -> int:
    """Print ``coverage`` of ``subject`` against the oracle; the command's exit status."""
    print(f"bounded-exhaustive check, bound {bound}: {subject} against the oracle")
    for name, count in coverage.checked.items():
        print(f"  {name:<28} {count:>12,} inputs")
    print(f"  {'total':<28} {coverage.total:>12,} inputs in {elapsed:.1f} s")
    if coverage.mismatch_count:
        print(f"{coverage.mismatch_count:,} disagreements; first ones:")
        for line in coverage.mismatches:
            print(f"  {line}")
        return 1
    print("every input agrees")
    return 0
