"""``python -m perfmodel``: the same command line as the ``perfmodel`` console script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
