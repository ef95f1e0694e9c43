"""``python -m junction``: the ``junction`` command (:mod:`junction.command`)."""

import sys

if __name__ == "__main__":  # not on import: the fuzz worker's ``spawn`` re-imports __main__
    from junction.command import main

    sys.exit(main())
