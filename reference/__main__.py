"""``python -m junction.reference``: the command line (``junction.reference.cli``).

Ctrl-C ends any command with exit status 130 and one line, here at the top,
so no command can print a traceback for it; what a command writes, it writes
whole or not at all (each command's own concern).
"""

import sys


def _main() -> int:
    from junction.reference.cli.main import main

    return main()


if __name__ == "__main__":  # not on import: the fuzz worker's ``spawn`` re-imports __main__
    from junction.reference.cli.terminal import interruptible

    sys.exit(interruptible(_main))
