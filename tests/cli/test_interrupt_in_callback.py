"""A Ctrl-C that lands inside a callback Python cannot raise from still ends in one line.

Hypothesis registers a garbage-collector callback; a signal whose handler
runs there raises ``KeyboardInterrupt`` where Python can only print it
("Exception ignored in ...", with a traceback) and drop it. ``fuzz`` then
stopped on ``signalled()`` as it should, but the traceback was on stderr.
Here a command's own collector callback signals the process, so the handler
runs inside it every time: the command must end with status 130 and
"interrupted" alone on stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

COMMAND = """
import gc, os, signal, sys
from junction.reference.cli import terminal

def callback(phase, info):
    if phase == "start" and not terminal.signalled():
        os.kill(os.getpid(), signal.SIGINT)  # the handler runs here, in the callback

def main():
    gc.callbacks.append(callback)
    while terminal.signalled() is None:  # a long loop asks, as fuzz does
        gc.collect()
    return 0

sys.exit(terminal.interruptible(main))
"""


def test_an_interrupt_inside_a_collector_callback_ends_with_one_line() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", COMMAND],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr, done.stdout) == (130, "interrupted\n", "")
