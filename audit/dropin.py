"""The drop-in's former import path: ``junction.audit.dropin`` is ``junction.dropin``.

Only README.md's drop-in example still imports it from here (README.md is
rewritten in another branch); delete this module once that example reads
``from junction import dropin``.
"""

from junction.dropin import (
    Decision,
    Mode,
    UnsupportedOption,
    decision_points,
    install,
    installed,
    installed_mode,
    swapped_in,
    uninstall,
)

__all__ = [
    "Decision",
    "Mode",
    "UnsupportedOption",
    "decision_points",
    "install",
    "installed",
    "installed_mode",
    "swapped_in",
    "uninstall",
]
