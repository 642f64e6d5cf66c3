"""``python -m benchmarks``: see ``benchmarks/_harness.py`` and ``--help``."""

import sys

from ._harness import main

if __name__ == "__main__":
    sys.exit(main())
