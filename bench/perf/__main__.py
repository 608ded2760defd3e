"""``python -m dpharness.bench.perf``: the same as ``dpharness bench``."""

import sys

from dpharness.bench.perf.cli import main

sys.exit(main())
