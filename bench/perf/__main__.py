"""``python -m dpharness.bench.perf``: the same as ``dpharness bench`` (:mod:`bench.cli.bench`)."""

import sys

from dpharness.bench.cli import main

sys.exit(main(["bench", *sys.argv[1:]]))
