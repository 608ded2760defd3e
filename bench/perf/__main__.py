"""``python -m dpharness.bench.perf``: the same as ``dpharness bench``."""

import sys

from .cli import main

sys.exit(main())
