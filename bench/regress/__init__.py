"""Accuracy regression checks: is a new run of a config worse than a committed baseline run?

``dpharness regress NEW_RUN_DIR BASELINE_RUN_DIR [--alpha 0.01] [--tolerance 0.05]
[--update-baseline]`` compares two run folders written by :mod:`bench.run.runner` cell by cell (a cell
is one combination of the experiment's ``cell_columns``, e.g. mechanism x epsilon) and exits

* ``0`` when no cell is significantly worse than the baseline by more than the tolerance
  (significant *improvements* are reported, never failures);
* ``1`` when at least one cell is;
* ``2`` when the runs cannot be compared (a folder missing, a file, not a run folder, a truncated
  or corrupt results.csv / manifest.json / config.yaml, errored tasks, different configs, missing
  cells) or an option is out of range (``--alpha`` outside (0, 1), ``--tolerance`` outside
  [0, 1)); one message says what is wrong, there is no traceback.

What it writes: ``regress.csv`` (every column of :func:`compare_cells`) and ``regress.md`` into
NEW_RUN_DIR, each atomically (a temporary file, then a rename: never a half-written file),
replacing those of an earlier comparison; nothing when NEW_RUN_DIR lies under a ``baselines``
folder. ``--update-baseline`` replaces BASELINE_RUN_DIR by the new run (:func:`update_baseline`);
nothing else ever writes into a baseline.

Modules: :mod:`.load` (reading and matching run folders), :mod:`.stats` (the tests),
:mod:`.compare` (cell by cell, verdicts), :mod:`.power` (detectable degradation), :mod:`.report`
(the result and its CSV / markdown / text), :mod:`.baseline` (baselines), :mod:`.machine` (``--json``
/ ``--junit``). The commands are :mod:`bench.cli.regress` and :mod:`bench.cli.regress_power`.

The statistics
--------------
The unit of replication is the *dataset*: ``results.csv`` holds one row per dataset and cell with
the metric averaged over that dataset's draws (e.g. mean absolute error x 100). For each cell with
baseline values ``b_1..b_m`` and new values ``x_1..x_n`` we test

    H0: E[x] <= (1 + tolerance) * E[b]      against      H1: E[x] > (1 + tolerance) * E[b]

with a one-sided **Welch t-test** of ``x`` against ``(1 + tolerance) * b`` (unequal variances,
Welch-Satterthwaite degrees of freedom; ``scipy.stats.ttest_ind``). Why Welch:

* the hypothesis is about the *mean* error (what the tables report), which rules out
  Mann-Whitney (a test of stochastic ordering, not of a ratio of means);
* each value is already a mean over many draws, and the test statistic is a difference of two
  means over tens of datasets, so the central limit theorem applies twice; the scaled samples have
  unequal variances by construction (the baseline is multiplied by ``1 + tolerance``), hence Welch
  rather than Student. The level at the boundary of H0 is checked by simulation on skewed data in
  ``tests/bench/test_regress_stats.py`` (and a studentised bootstrap would cost thousands of
  resamples per cell for no measurable gain at these sizes);
* runs with *different* root seeds use independent datasets, so the two samples are independent as
  the test assumes.

Runs with the *same* root seed (the project's CI: the committed config re-run) share the datasets
(``bench.run.tasks.data_rng`` keys them by root seed and data identity), so replicate ``i`` is the same
dataset in both runs. Then the per-dataset differences ``x_i - (1 + tolerance) b_i`` are tested with
a one-sided **paired t-test** (``scipy.stats.ttest_rel``): the pairs are independent and
identically distributed across datasets whatever the dependence inside a pair, so the test is
valid, and it removes the between-dataset variance, which dominates for median mechanisms (their
error depends on the data near the median: across-dataset coefficients of variation of 0.2-0.7
against ~0.1 from 100 draws). An unchanged implementation gives bit-identical rows and p = 1.
``paired=False`` forces Welch.

Kinds that report one row per cell -- a Monte Carlo mean of many independent draws -- and name its
standard error (``se_column`` in the manifest, or a ``SE_COLUMN`` module attribute) are compared
with a one-sided z-test on the two means (CLT over the draws). Rows of cells that carry no metric
at all (e.g. histogram rows) are not compared.

Improvements are tested the same way in the other direction (``H0: E[x] >= (1 - tolerance) E[b]``).

Multiple testing: the per-cell p-values are corrected with **Holm**'s step-down procedure
(``statsmodels.stats.multitest.multipletests(method="holm")``), separately for the regression and
the improvement family. Holm controls the family-wise error rate -- the probability that a run
with no real regression fails CI *at all* -- at ``alpha``, under any dependence between cells (the
cells of one run share datasets, so they are dependent). That is the "never cries wolf" guarantee.
BH controls the false discovery rate instead (the expected fraction of false flags among flags):
it needs independence or positive dependence, and once one cell really regresses it lets further
cells be flagged falsely, which makes a CI failure report less trustworthy cell by cell. Holm is
uniformly more powerful than Bonferroni and costs little here (tens of cells).

Detectable degradation (:mod:`.power`): per cell, the smallest relative increase of the mean
error flagged with 80 % power when it happens in one cell only (Holm's hardest case);
``python -m dpharness.bench.regress power BASELINE_RUN_DIR`` prints it.
"""

from __future__ import annotations

from dpharness.bench.regress.baseline import is_baseline_location, update_baseline
from dpharness.bench.regress.compare import compare_cells, regress
from dpharness.bench.regress.load import (
    BASELINE_FILES,
    REQUIRED_FILES,
    RegressionInputError,
    Run,
    by_cell,
    can_pair,
    cell_label,
    check_comparable,
    format_row,
    load_run,
    matching_hash,
)
from dpharness.bench.regress.power import (
    detectable_degradation,
    detectable_degradation_se,
    paired_detectable_degradation,
    power_table,
    simulate_detection,
    welch_power,
)
from dpharness.bench.regress.report import REPORT_FILES, RegressionReport
from dpharness.bench.regress.stats import check_levels, holm, paired_greater, welch_greater, z_greater

__all__ = [
    "RegressionInputError",
    "RegressionReport",
    "Run",
    "load_run",
    "matching_hash",
    "welch_greater",
    "paired_greater",
    "z_greater",
    "holm",
    "check_levels",
    "can_pair",
    "by_cell",
    "cell_label",
    "format_row",
    "check_comparable",
    "compare_cells",
    "regress",
    "detectable_degradation",
    "detectable_degradation_se",
    "paired_detectable_degradation",
    "simulate_detection",
    "welch_power",
    "power_table",
    "update_baseline",
    "is_baseline_location",
    "REQUIRED_FILES",
    "BASELINE_FILES",
    "REPORT_FILES",
]
