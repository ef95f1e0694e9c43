"""The xdist groups of ``make test`` (``-n 2 --dist loadgroup``): a group's tests run one
after another in one worker, while the other worker runs the rest of the suite.

``WALL_CLOCK``: tests that time a real command (a deadline plus a few seconds
of slack, a signal sent mid-run) or start several processes of their own.
In one line, no two of them compete for the two cores at once, and none
starts beside another's worker processes.
"""

from __future__ import annotations

import pytest

WALL_CLOCK = pytest.mark.xdist_group("wall_clock")
