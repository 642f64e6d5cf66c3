"""``python -m benchmarks``: see ``benchmarks/_cli.py`` and ``--help``."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
