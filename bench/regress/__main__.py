"""``python -m dpharness.bench.regress power BASELINE_RUN_DIR...``: the same as ``dpharness regress
power`` (:mod:`bench.cli.regress_power`); ``python -m dpharness.bench.regress NEW BASELINE`` is
``dpharness regress``."""

import sys

from dpharness.bench.cli import run_command

sys.exit(run_command("regress", prog="python -m dpharness.bench.regress"))
