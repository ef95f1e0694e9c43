"""The suite's own command-line options, as values test modules read at import time.

``tests/conftest.py`` registers the options (``pytest --help``, group
"junction") and sets these before any test module is collected; the
defaults here are what a plain ``pytest`` runs. Module-level values rather
than fixtures: the properties' strategies use the core under test at import
time, before any fixture exists.
"""

from __future__ import annotations

#: ``--core MODULE``: the core the properties judge (a vendored copy's module name).
core_module = "junction.core"
#: ``--exhaustive-bound N``: the bound of the bounded-exhaustive walk.
exhaustive_bound = 3
#: ``--require-peer`` (or ``--require-all``): a missing cross-check peer fails its tests.
require_peer = False
#: ``--require-numba`` (or ``--require-all``): a missing numba fails the compiled replay's tests.
require_numba = False
