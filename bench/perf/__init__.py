"""Performance benchmarks: dpharness beside a physical floor and beside peer libraries.

``dpharness bench [--quick] [--json PATH] [--only SECTION...] [--max-n N] [--repeats R]`` (or
``python -m dpharness.bench.perf``) prints a table, writes JSON rows and a log-log scaling
figure. Absolute times on a shared machine are noise, so every number that matters is a *ratio*
computed pairwise inside one repetition (:mod:`.timing`).

Sections, one module each:

* ``median``   -- :mod:`.medians`: median mechanisms against ``np.partition`` / ``np.sort`` and
  peer medians;
* ``finite``   -- :mod:`.finite`: selection over k candidates against Gumbel-argmax /
  ``rng.choice`` and per-draw peers (slow ones extrapolated);
* ``table1``   -- :mod:`.table1`: wall time of ``bench.run.runner.run`` on
  ``configs/duff_table1.yaml`` at jobs 1 and 2;
* ``verifier`` -- :mod:`.verifier`: samples per second through ``verifiers.audit`` and its
  overhead over raw sampling.

The rest: :mod:`.plan` (sizes and budgets), :mod:`.rows` (JSON row fields, the section report),
:mod:`.build` (mechanisms from the registry), :mod:`.environment` (machine block of the JSON),
:mod:`.report` (table, goal and summary text), :mod:`.figure` (scaling figure), :mod:`.run`
(output checks, running the sections, writing the JSON). The command is :mod:`bench.cli.bench`.

Anything unavailable (a mechanism not written yet, a peer not installed, no runner) is reported
as ``skipped: <reason>`` and the rest still runs.
"""

from __future__ import annotations

from dpharness.bench.perf.environment import environment
from dpharness.bench.perf.figure import plot_scaling
from dpharness.bench.perf.plan import SECTIONS, BenchInputError, Plan, full_plan, quick_plan
from dpharness.bench.perf.report import (
    GOAL_N,
    GOAL_RATIO,
    format_goal,
    format_summary,
    format_table,
    median_goal,
)
from dpharness.bench.perf.rows import ROW_FIELDS, SCHEMA
from dpharness.bench.perf.run import output_paths, run_bench

__all__ = [
    "GOAL_N",
    "GOAL_RATIO",
    "ROW_FIELDS",
    "SCHEMA",
    "SECTIONS",
    "BenchInputError",
    "Plan",
    "environment",
    "format_goal",
    "format_summary",
    "format_table",
    "full_plan",
    "median_goal",
    "output_paths",
    "plot_scaling",
    "quick_plan",
    "run_bench",
]
