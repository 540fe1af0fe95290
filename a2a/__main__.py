"""``python -m a2a ...``: the same command as ``a2a ...``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
