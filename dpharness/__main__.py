"""``python -m dpharness`` is the ``dpharness`` command."""

import sys

from dpharness.bench.cli import main

sys.exit(main())
