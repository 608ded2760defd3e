"""``python -m dpharness.bench.regress power BASELINE_RUN_DIR...`` (see :mod:`bench.regress.cli`)."""

import sys

from dpharness.bench.regress.cli import main

sys.exit(main())
