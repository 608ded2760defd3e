"""``python -m dpharness`` is the ``dpharness`` command."""

import sys

from .bench.cli import main

sys.exit(main())
