"""``python -m junction.reference``: the command line (``junction.reference.cli``)."""

import sys

from junction.reference.cli.main import main

sys.exit(main())
