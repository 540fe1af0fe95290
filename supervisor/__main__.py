"""``python -m supervisor supervise "objective" ...``: the ``a2a supervise`` command on its own."""

import sys

from .cli import main

sys.exit(main())
