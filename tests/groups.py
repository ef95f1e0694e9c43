"""The marks that decide where a test runs in ``make test``.

``WALL_CLOCK`` (the ``wall_clock`` marker): tests that time a real command (a
deadline plus a few seconds of slack, a signal sent mid-run) or start several
processes of their own. ``make test`` runs them first, in one process with
nothing beside them, then the rest in two xdist workers: a deadline measured
while another worker holds a core would judge the machine, not the code.
"""

from __future__ import annotations

import pytest

WALL_CLOCK = pytest.mark.wall_clock
