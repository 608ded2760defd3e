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

# Imported on first use (PEP 562): `dpharness bench` checks its options before any section's
# module, and with them scipy and the peer libraries, is loaded.
_LAZY = {
    "environment": "dpharness.bench.perf.environment",
    "plot_scaling": "dpharness.bench.perf.figure",
    "SECTIONS": "dpharness.bench.perf.plan",
    "BenchInputError": "dpharness.bench.perf.plan",
    "Plan": "dpharness.bench.perf.plan",
    "full_plan": "dpharness.bench.perf.plan",
    "quick_plan": "dpharness.bench.perf.plan",
    "GOAL_N": "dpharness.bench.perf.report",
    "GOAL_RATIO": "dpharness.bench.perf.report",
    "format_goal": "dpharness.bench.perf.report",
    "format_summary": "dpharness.bench.perf.report",
    "format_table": "dpharness.bench.perf.report",
    "median_goal": "dpharness.bench.perf.report",
    "ROW_FIELDS": "dpharness.bench.perf.rows",
    "SCHEMA": "dpharness.bench.perf.rows",
    "output_paths": "dpharness.bench.perf.run",
    "run_bench": "dpharness.bench.perf.run",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
