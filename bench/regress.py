"""Accuracy regression checks: is a new run of a config worse than a committed baseline run?

``dpharness regress NEW_RUN_DIR BASELINE_RUN_DIR [--alpha 0.01] [--tolerance 0.05]
[--update-baseline]`` compares two run folders written by :mod:`bench.runner` cell by cell (a cell
is one combination of the experiment's ``cell_columns``, e.g. mechanism x epsilon) and exits

* ``0`` when no cell is significantly worse than the baseline by more than the tolerance
  (significant *improvements* are reported, never failures);
* ``1`` when at least one cell is;
* ``2`` when the runs cannot be compared (missing files or columns, errored tasks, different
  configs, missing cells); the message says what is wrong, there is no traceback.

The statistics
--------------
The unit of replication is the *dataset*: ``results.csv`` holds one row per dataset and cell with
the metric averaged over that dataset's draws (e.g. mean absolute error x 100). For each cell with
baseline values ``b_1..b_m`` and new values ``x_1..x_n`` we test

    H0: E[x] <= (1 + tolerance) * E[b]      against      H1: E[x] > (1 + tolerance) * E[b]

with a one-sided **Welch t-test** of ``x`` against ``(1 + tolerance) * b`` (unequal variances,
Welch-Satterthwaite degrees of freedom). Why Welch:

* the hypothesis is about the *mean* error (what the tables report), which rules out
  Mann-Whitney (a test of stochastic ordering, not of a ratio of means);
* each value is already a mean over many draws, and the test statistic is a difference of two
  means over tens of datasets, so the central limit theorem applies twice; the scaled samples have
  unequal variances by construction (the baseline is multiplied by ``1 + tolerance``), hence Welch
  rather than Student. The level at the boundary of H0 is checked by simulation on skewed data in
  ``tests/test_regress.py`` (and a studentised bootstrap would cost thousands of resamples per cell
  for no measurable gain at these sizes);
* runs with *different* root seeds use independent datasets, so the two samples are independent as
  the test assumes.

Runs with the *same* root seed (the project's CI: the committed config re-run) share the datasets
(``bench.tasks.data_rng`` keys them by root seed and data identity), so replicate ``i`` is the same
dataset in both runs. Then the per-dataset differences ``x_i - (1 + tolerance) b_i`` are tested with
a one-sided **paired t-test**: the pairs are independent and identically distributed across
datasets whatever the dependence inside a pair, so the test is valid, and it removes the
between-dataset variance, which dominates for median mechanisms (their error depends on the data
near the median: across-dataset coefficients of variation of 0.2-0.7 against ~0.1 from 100 draws).
An unchanged implementation gives bit-identical rows and p = 1. ``paired=False`` forces Welch.

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

Detectable degradation: :func:`detectable_degradation` gives, per cell, the smallest relative
increase of the mean error ``d`` (the whole error distribution scaled by ``1 + d``, as a larger
noise scale does) that is flagged with a given power (default 80 %) when it happens in one cell
only -- Holm's hardest case, where the cell must pass ``alpha / K`` -- computed from the baseline's
per-cell mean and standard deviation with the noncentral t distribution and checked by
:func:`simulate_detection` (bootstrap from the baseline's own values, so skewness is included).
``python -m bench.regress power BASELINE_RUN_DIR`` prints it. It is the figure for a re-run with a
*different* seed (Welch); a same-seed (paired) comparison detects smaller changes whenever the
new and baseline errors of a dataset are positively correlated, as they are for median mechanisms.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import yaml
from scipy import optimize, stats
from statsmodels.stats.multitest import multipletests

__all__ = [
    "RegressionInputError",
    "RegressionReport",
    "Run",
    "load_run",
    "matching_hash",
    "welch_greater",
    "paired_greater",
    "z_greater",
    "can_pair",
    "compare_cells",
    "regress",
    "detectable_degradation",
    "detectable_degradation_se",
    "paired_detectable_degradation",
    "simulate_detection",
    "power_table",
    "update_baseline",
    "cmd_regress",
    "REQUIRED_FILES",
    "BASELINE_FILES",
]

#: Files a run folder must contain to be compared.
REQUIRED_FILES = ("results.csv", "config.yaml", "manifest.json")
#: Files ``--update-baseline`` copies (figures and regress outputs are not part of a baseline;
#: committed baselines stay small).
BASELINE_FILES = ("results.csv", "table.csv", "table.md", "config.yaml", "manifest.json")
#: Config keys that may differ between comparable runs: the root seed (different seeds of one
#: config must be comparable) and free text.
IGNORED_CONFIG_KEYS = ("seed", "description")
#: Manifest keys that tell the checker how to read results.csv (from the kind's describe_results).
_DESCRIBE_KEYS = ("cell_columns", "metric", "metric_scaled", "lower_is_better", "replicate_column", "se_column")



class RegressionInputError(ValueError):
    """The runs cannot be compared; the message says why (``dpharness regress`` exits 2)."""


# --------------------------------------------------------------------------------------------
# Reading run folders
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """A run folder read for comparison.

    Attributes
    ----------
    path : pathlib.Path
    results : pandas.DataFrame
        ``results.csv`` restricted to the rows with status ``ok`` (all rows if there is no status).
    config : dict
        The resolved ``config.yaml``.
    manifest : dict
    cell_columns : tuple of str
        Columns whose combination identifies a cell.
    metric : str
        Numeric per-dataset column compared between runs (the manifest's ``metric_scaled`` when
        present, else ``metric``; the tests are scale-free, the scaled one reads like the table).
    match_hash : str
        Hash of the config without the root seed and the description (:func:`matching_hash`).
    lower_is_better : bool
        From the manifest (default True: an error).
    replicate_column : str or None
        Column numbering the replicates (datasets) of a cell, if the manifest names one.
    seed : int or None
        The root seed from ``config.yaml``.
    se_column : str or None
        For kinds that report one row per cell (a Monte Carlo mean of many independent draws) with
        its standard error: the column of that standard error.
    """

    path: Path
    results: pd.DataFrame = field(repr=False)
    config: dict = field(repr=False)
    manifest: dict = field(repr=False)
    cell_columns: tuple[str, ...]
    metric: str
    match_hash: str
    lower_is_better: bool = True
    replicate_column: str | None = None
    seed: int | None = None
    se_column: str | None = None


def matching_hash(config: dict) -> str:
    """Hash used to decide whether two runs come from the same config: :func:`bench.config.config_hash`
    of the resolved config without ``seed`` and ``description``, so that re-runs with a different
    root seed are comparable while any other change (grid, sizes, mechanisms, parameters) is not."""
    from .config import config_hash

    return config_hash({k: v for k, v in config.items() if k not in IGNORED_CONFIG_KEYS})


def _describe_from_kind(config: dict, need_spec: bool) -> dict:
    """``cell_columns``/``metric``/... from the experiment kind, for manifests that lack them:
    module attributes (``CELL_COLUMNS, METRIC, SE_COLUMN, LOWER_IS_BETTER``), and, when
    ``need_spec``, ``describe_results(spec)`` of the config re-parsed."""
    from . import experiments

    try:
        mod = experiments.get(str(config.get("experiment", "median_accuracy")))
    except Exception:  # the manifest is what counts; this is only a fallback
        return {}
    out: dict = {}
    for attr, key in (("CELL_COLUMNS", "cell_columns"), ("METRIC", "metric"), ("SE_COLUMN", "se_column")):
        if getattr(mod, attr, None) is not None:
            out[key] = list(getattr(mod, attr)) if key == "cell_columns" else getattr(mod, attr)
    if isinstance(getattr(mod, "LOWER_IS_BETTER", None), bool):
        out["lower_is_better"] = mod.LOWER_IS_BETTER
    if need_spec and callable(getattr(mod, "describe_results", None)):
        try:
            from .config import load_config

            out.update(mod.describe_results(load_config(dict(config)).spec))
        except Exception:
            pass
    return out


def load_run(path: str | Path, role: str = "run") -> Run:
    """Read and check a run folder.

    Parameters
    ----------
    path
        The run folder (``results/<name>/<timestamp>_<hash>/``).
    role
        ``"new"`` or ``"baseline"``; used in messages.

    Raises
    ------
    RegressionInputError
        Naming the folder and what is missing or wrong.
    """
    p = Path(path)
    if not p.is_dir():
        raise RegressionInputError(f"{role} run folder {str(path)!r} does not exist or is not a folder")
    missing = [f for f in REQUIRED_FILES if not (p / f).is_file()]
    if missing:
        raise RegressionInputError(
            f"{role} run folder {str(path)!r} lacks {', '.join(missing)}; a run folder written by "
            f"`dpharness run` holds {', '.join(REQUIRED_FILES)}"
        )
    try:
        manifest = json.loads((p / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RegressionInputError(f"{role} run {str(path)!r}: manifest.json is not readable JSON ({exc})") from None
    try:
        config = yaml.safe_load((p / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise RegressionInputError(f"{role} run {str(path)!r}: config.yaml is not readable YAML ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(config, dict):
        raise RegressionInputError(f"{role} run {str(path)!r}: manifest.json and config.yaml must be mappings")
    if manifest.get("status", "complete") != "complete":
        raise RegressionInputError(
            f"{role} run {str(path)!r} is not complete (manifest status {manifest.get('status')!r}); "
            "re-run the same command to resume it before comparing"
        )
    try:
        results = pd.read_csv(p / "results.csv")
    except (OSError, ValueError) as exc:
        raise RegressionInputError(f"{role} run {str(path)!r}: results.csv is not readable CSV ({exc})") from None

    desc = {k: v for k, v in manifest.items() if k in _DESCRIBE_KEYS and v is not None}
    if not {"cell_columns", "metric", "se_column", "lower_is_better"} <= set(desc):
        # older manifests, or a kind whose module attributes the runner does not copy
        # (SE_COLUMN, LOWER_IS_BETTER); what the manifest states wins
        need_spec = not {"cell_columns", "metric"} <= set(desc)
        desc = {**_describe_from_kind(config, need_spec), **desc}
    if "cell_columns" not in desc or "metric" not in desc:
        raise RegressionInputError(
            f"{role} run {str(path)!r}: manifest.json does not say which columns identify a cell and "
            "which column is the metric (keys 'cell_columns' and 'metric', written by the runner from "
            "the experiment kind)"
        )
    cells = desc["cell_columns"]
    metric = desc["metric"]
    if isinstance(cells, str) or not isinstance(cells, (list, tuple)) or not cells or not all(isinstance(c, str) for c in cells):
        raise RegressionInputError(f"{role} run {str(path)!r}: manifest cell_columns must be a non-empty list of column names, got {cells!r}")
    if not isinstance(metric, str):
        raise RegressionInputError(f"{role} run {str(path)!r}: manifest metric must be a column name, got {metric!r}")
    if isinstance(desc.get("metric_scaled"), str) and desc["metric_scaled"] in results.columns:
        metric = desc["metric_scaled"]
    lower_is_better = desc.get("lower_is_better", True)
    if not isinstance(lower_is_better, bool):
        raise RegressionInputError(f"{role} run {str(path)!r}: manifest lower_is_better must be true or false, got {lower_is_better!r}")
    replicate = desc.get("replicate_column")
    replicate = replicate if isinstance(replicate, str) and replicate in results.columns else None
    se_col = desc.get("se_column")
    if se_col is not None and (not isinstance(se_col, str) or se_col not in results.columns):
        raise RegressionInputError(f"{role} run {str(path)!r}: results.csv lacks the se_column {se_col!r} the manifest names")
    absent = [c for c in (*cells, metric) if c not in results.columns]
    if absent:
        raise RegressionInputError(
            f"{role} run {str(path)!r}: results.csv lacks column(s) {', '.join(absent)} "
            f"(has: {', '.join(map(str, results.columns))})"
        )

    if "status" in results.columns:
        bad = results[results["status"].astype(str) != "ok"]
        if len(bad):
            first = ""
            if "message" in bad.columns and pd.notna(bad["message"].iloc[0]):
                first = f"; first: {str(bad['message'].iloc[0])[:200]}"
            raise RegressionInputError(
                f"{role} run {str(path)!r} has {len(bad)} task(s) with status other than ok{first}; "
                "finish or fix the run (re-running the same command resumes it) before comparing"
            )
    metric_values = pd.to_numeric(results[metric], errors="coerce")
    # Rows of cells that do not carry the metric at all (e.g. a textbook kind's histogram rows) are
    # not compared; a cell with the metric in some rows only is an error below.
    keep = ~metric_values.isna().groupby([results[c] for c in cells], dropna=False, sort=False).transform("all")
    results, metric_values = results[keep], metric_values[keep]
    if metric_values.isna().any() or not np.isfinite(metric_values.to_numpy(dtype=float)).all():
        n_bad = int((metric_values.isna() | ~np.isfinite(metric_values.fillna(0).to_numpy(dtype=float))).sum())
        raise RegressionInputError(f"{role} run {str(path)!r}: {n_bad} row(s) of results.csv have a missing or non-finite {metric}")
    if len(results) == 0:
        raise RegressionInputError(f"{role} run {str(path)!r}: results.csv has no rows")
    results = results.assign(**{metric: metric_values.astype(float)})
    if se_col is not None:
        se_values = pd.to_numeric(results[se_col], errors="coerce")
        if se_values.isna().any() or (se_values < 0).any():
            raise RegressionInputError(f"{role} run {str(path)!r}: {se_col} must be a number >= 0 in every compared row")
        results = results.assign(**{se_col: se_values.astype(float)})
    if replicate is None and results.duplicated(subset=list(cells)).any():
        raise RegressionInputError(
            f"{role} run {str(path)!r}: results.csv has several rows per cell but the manifest names no "
            "replicate_column, so replicates cannot be told from different quantities (the experiment kind "
            "should declare replicate_column, or one row per cell with an se_column)"
        )
    if replicate is not None:
        dup = results.duplicated(subset=[*cells, replicate])
        if dup.any():
            raise RegressionInputError(
                f"{role} run {str(path)!r}: results.csv has {int(dup.sum())} duplicate row(s) for the same cell and "
                f"{replicate}; expected one row per {replicate} and cell"
            )
    return Run(
        path=p,
        results=results,
        config=config,
        manifest=manifest,
        cell_columns=tuple(cells),
        metric=metric,
        match_hash=matching_hash(config),
        lower_is_better=lower_is_better,
        replicate_column=replicate,
        seed=config.get("seed") if isinstance(config.get("seed"), int) else None,
        se_column=se_col,
    )


def _config_differences(a: dict, b: dict) -> list[str]:
    """Top-level keys (seed and description aside) whose values differ, with both values shown."""
    from .config import config_hash

    out = []
    for k in sorted(set(a) | set(b)):
        if k in IGNORED_CONFIG_KEYS:
            continue
        if k not in a or k not in b:
            out.append(f"{k} ({'absent' if k not in a else 'set'} in new, {'absent' if k not in b else 'set'} in baseline)")
        elif config_hash({"_": a[k]}) != config_hash({"_": b[k]}):
            va, vb = json.dumps(a[k], default=str), json.dumps(b[k], default=str)
            if len(va) + len(vb) < 120:
                out.append(f"{k} (new {va}, baseline {vb})")
            else:
                out.append(k)
    return out


def _check_comparable(new: Run, base: Run) -> None:
    if new.match_hash != base.match_hash:
        diffs = _config_differences(new.config, base.config)
        raise RegressionInputError(
            "the runs come from different configs (the root seed may differ, nothing else may): "
            f"new {new.match_hash} vs baseline {base.match_hash}; differing key(s): {', '.join(diffs) or '?'}. "
            "Re-run the baseline's config, or record a deliberate change with --update-baseline"
        )
    if (new.cell_columns, new.metric, new.lower_is_better, new.se_column) != (
        base.cell_columns, base.metric, base.lower_is_better, base.se_column
    ):
        raise RegressionInputError(
            f"the runs describe their cells differently: new cell_columns={list(new.cell_columns)} "
            f"metric={new.metric!r}, baseline cell_columns={list(base.cell_columns)} metric={base.metric!r}"
        )


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------


def welch_greater(new: Any, base: Any, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-sided Welch t-test of ``H0: E[new] <= scale * E[base]`` against ``E[new] > scale * E[base]``.

    Vectorised over leading axes (the samples are along the last axis), so a simulation can test
    thousands of replicates at once; it agrees with ``scipy.stats.ttest_ind(new, scale * base,
    equal_var=False, alternative="greater")`` where that is defined. Degenerate cells with zero
    variance in both samples get ``p = 0`` when ``mean(new) > scale * mean(base)`` and ``p = 1``
    otherwise (no noise: the comparison is exact).

    Returns
    -------
    t, df, p : numpy.ndarray
        Statistic, Welch-Satterthwaite degrees of freedom and one-sided p-value.
    """
    x = np.asarray(new, dtype=float)
    y = np.asarray(base, dtype=float) * float(scale)
    nx, ny = x.shape[-1], y.shape[-1]
    if nx < 2 or ny < 2:
        raise ValueError(f"new/base: need at least 2 values per sample, got {nx} and {ny}")
    vx = x.var(axis=-1, ddof=1) / nx
    vy = y.var(axis=-1, ddof=1) / ny
    diff = x.mean(axis=-1) - y.mean(axis=-1)
    se2 = vx + vy
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se2 > 0, diff / np.sqrt(se2), np.where(diff > 0, np.inf, np.where(diff < 0, -np.inf, 0.0)))
        df = np.where(se2 > 0, se2**2 / (vx**2 / (nx - 1) + vy**2 / (ny - 1)), np.nan)
    p = np.where(se2 > 0, stats.t.sf(t, np.where(se2 > 0, df, 1.0)), np.where(diff > 0, 0.0, 1.0))
    return t, df, p


def paired_greater(new: Any, base: Any, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-sided paired t-test of ``H0: E[new] <= scale * E[base]`` on the differences
    ``new_i - scale * base_i`` (pairs along the last axis).

    Valid whenever the pairs are independent and identically distributed across ``i``, however
    strongly ``new_i`` and ``base_i`` depend on each other -- which is what two runs with the same
    root seed give (replicate ``i`` of both runs uses the same dataset, replicates are independent).
    Agrees with ``scipy.stats.ttest_rel(new, scale * base, alternative="greater")``; zero spread
    gives ``p = 0`` for a positive mean difference and ``p = 1`` otherwise.

    Returns
    -------
    t, df, p : numpy.ndarray
    """
    x = np.asarray(new, dtype=float)
    y = np.asarray(base, dtype=float) * float(scale)
    if x.shape != y.shape:
        raise ValueError(f"new/base: paired samples must have the same shape, got {x.shape} and {y.shape}")
    n = x.shape[-1]
    if n < 2:
        raise ValueError(f"new/base: need at least 2 pairs, got {n}")
    d = x - y
    diff = d.mean(axis=-1)
    se2 = d.var(axis=-1, ddof=1) / n
    df = np.full(np.shape(diff), float(n - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se2 > 0, diff / np.sqrt(se2), np.where(diff > 0, np.inf, np.where(diff < 0, -np.inf, 0.0)))
    p = np.where(se2 > 0, stats.t.sf(t, df), np.where(diff > 0, 0.0, 1.0))
    return t, df, p


def _holm(p: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    reject, p_adj, _, _ = multipletests(np.asarray(p, dtype=float), alpha=alpha, method="holm")
    return reject, p_adj


def _cell_label(cols: Sequence[str], values: Sequence[Any]) -> str:
    """``mechanism=Duff|epsilon=0.5`` (canonical number text, no escaping: for reading only)."""
    return "|".join(f"{c}={v}" for c, v in zip(cols, values))


def _by_cell(
    df: pd.DataFrame, cols: Sequence[str], metric: str, replicate: str | None = None
) -> dict[str, tuple[tuple, np.ndarray, np.ndarray | None]]:
    """``{cell label: (cell values, metric values, replicate ids)}`` in order of first appearance;
    values sorted by replicate id when there is a replicate column."""
    out: dict[str, tuple[tuple, np.ndarray, np.ndarray | None]] = {}
    for values, g in df.groupby(list(cols), sort=False, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        ids = None
        if replicate is not None:
            g = g.sort_values(replicate, kind="stable")
            ids = g[replicate].astype(str).to_numpy()
        out[_cell_label(cols, _format_row(values))] = (values, g[metric].to_numpy(dtype=float), ids)
    return out


def can_pair(new: pd.DataFrame, base: pd.DataFrame, cell_columns: Sequence[str], replicate: str | None) -> bool:
    """True when every cell has the same replicate ids in both frames (pairs can be formed)."""
    if replicate is None or replicate not in new.columns or replicate not in base.columns:
        return False
    keyed_b = base.groupby(list(cell_columns), sort=False, dropna=False)[replicate].apply(lambda s: tuple(sorted(map(str, s))))
    keyed_n = new.groupby(list(cell_columns), sort=False, dropna=False)[replicate].apply(lambda s: tuple(sorted(map(str, s))))
    return bool(len(keyed_b) == len(keyed_n) and keyed_b.sort_index().equals(keyed_n.sort_index()))


def _format_row(values: Sequence[Any]) -> list[str]:
    from .tasks import format_value

    return [format_value(v) if not (isinstance(v, float) and math.isnan(v)) else "" for v in values]


def compare_cells(
    new: pd.DataFrame,
    base: pd.DataFrame,
    cell_columns: Sequence[str],
    metric: str,
    *,
    alpha: float = 0.01,
    tolerance: float = 0.05,
    power: float = 0.8,
    lower_is_better: bool = True,
    replicate_column: str | None = None,
    paired: bool = False,
    se_column: str | None = None,
) -> pd.DataFrame:
    """Cell-by-cell comparison of two tidy result frames (one row per dataset and cell).

    With ``se_column`` and exactly one row per cell in both frames (kinds that report a Monte
    Carlo mean of many independent draws and its standard error per cell), each cell is tested
    with :func:`z_greater` on those summaries instead.

    With ``paired`` (runs with the same root seed: replicate ``i`` of both runs is the same
    dataset), replicates are matched through ``replicate_column`` and tested with
    :func:`paired_greater`, which removes the between-dataset variance -- the dominant part for
    median mechanisms, whose error depends strongly on the data near the median. Otherwise
    :func:`welch_greater`.

    Returns one row per cell (in the baseline's order) with the cell columns, ``cell`` (label),
    ``n_baseline, n_new, baseline, new, baseline_se, new_se, change_pct``, the regression test
    (``t_worse, df_worse, p_worse, p_worse_holm``), the improvement test (``p_better,
    p_better_holm``), ``verdict`` (ok / regression / improvement), ``p_value`` (the Holm-adjusted
    p-value of the test that decided the verdict: the improvement test for improvements, the
    regression test otherwise) and ``detectable_pct`` (:func:`detectable_degradation` of the
    baseline cell at ``power``).

    Raises
    ------
    RegressionInputError
        When the cells differ between the frames or a cell has fewer than 2 datasets, or the
        dataset counts differ (an incomplete run).
    """
    cols = list(cell_columns)
    if paired and not can_pair(new, base, cols, replicate_column):
        raise RegressionInputError(
            f"paired comparison needs the same {replicate_column or 'replicate'} ids in every cell of both runs "
            "(same dataset ids)"
        )
    rep_col = replicate_column if paired else None
    nb = _by_cell(base, cols, metric, rep_col)
    nn = _by_cell(new, cols, metric, rep_col)
    summary = (
        se_column is not None
        and all(len(v[1]) == 1 for v in nb.values())
        and all(len(v[1]) == 1 for v in nn.values())
    )
    if summary:
        return _compare_summaries(new, base, cols, metric, se_column, nb, nn, alpha=alpha, tolerance=tolerance,
                                  power=power, lower_is_better=lower_is_better)
    test = paired_greater if paired else welch_greater
    only_base = [c for c in nb if c not in nn]
    only_new = [c for c in nn if c not in nb]
    if only_base or only_new:
        parts = []
        if only_base:
            parts.append(f"missing from the new run: {', '.join(only_base[:5])}{' ...' if len(only_base) > 5 else ''}")
        if only_new:
            parts.append(f"not in the baseline: {', '.join(only_new[:5])}{' ...' if len(only_new) > 5 else ''}")
        raise RegressionInputError("the runs do not have the same cells; " + "; ".join(parts))
    for c, (_, b, _) in nb.items():
        x = nn[c][1]
        if len(b) < 2 or len(x) < 2:
            raise RegressionInputError(
                f"cell {c} has {len(b)} baseline and {len(x)} new dataset value(s); the test needs at least 2 each"
            )
        if len(b) != len(x):
            raise RegressionInputError(
                f"cell {c} has {len(x)} datasets in the new run but {len(b)} in the baseline "
                "(same config, so one run is incomplete)"
            )

    k = len(nb)
    rows = []
    for c, (values, b, _) in nb.items():
        x = nn[c][1]
        up = test(x, b, 1.0 + tolerance)  # H0: E[x] <= (1 + tol) E[b]
        down = test((1.0 - tolerance) * b, x, 1.0)  # H0: E[x] >= (1 - tol) E[b]
        (t_w, df_w, p_w), (_, _, p_b) = (up, down) if lower_is_better else (down, up)
        mb, mx = float(b.mean()), float(x.mean())
        sb = float(b.std(ddof=1))
        rows.append(
            {
                **dict(zip(cols, values)),
                "cell": c,
                "test": "paired t" if paired else "Welch t",
                "baseline": mb,
                "new": mx,
                "change_pct": 100.0 * (mx / mb - 1.0) if mb != 0 else (0.0 if mx == 0 else math.inf),
                "baseline_se": sb / math.sqrt(len(b)),
                "new_se": float(x.std(ddof=1)) / math.sqrt(len(x)),
                "n_baseline": len(b),
                "n_new": len(x),
                "t_worse": float(t_w),
                "df_worse": float(df_w),
                "p_worse": float(p_w),
                "p_better": float(p_b),
                "detectable_pct": 100.0
                * detectable_degradation(len(b), mb, sb, n_cells=k, alpha=alpha, tolerance=tolerance, power=power,
                                         lower_is_better=lower_is_better),
            }
        )
    return _finish(pd.DataFrame(rows), cols, alpha)


def _finish(out: pd.DataFrame, cols: list[str], alpha: float) -> pd.DataFrame:
    """Holm over the cells, verdicts, column order."""
    rej_w, adj_w = _holm(out["p_worse"].to_numpy(), alpha)
    rej_b, adj_b = _holm(out["p_better"].to_numpy(), alpha)
    out["p_worse_holm"] = adj_w
    out["p_better_holm"] = adj_b
    out["verdict"] = np.where(rej_w, "regression", np.where(rej_b, "improvement", "ok"))
    out["p_value"] = np.where(out["verdict"] == "improvement", adj_b, adj_w)
    order = cols + ["cell", "baseline", "new", "change_pct", "p_value", "verdict", "test", "baseline_se", "new_se",
                    "n_baseline", "n_new", "t_worse", "df_worse", "p_worse", "p_worse_holm", "p_better",
                    "p_better_holm", "detectable_pct"]
    return out[order]


def z_greater(new_mean: Any, new_se: Any, base_mean: Any, base_se: Any, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-sided z-test of ``H0: E[new] <= scale * E[base]`` from two independent Monte Carlo means
    and their standard errors (large-sample normal law of a mean of many independent draws).

    Returns ``t`` (the z statistic), ``df`` (inf) and ``p``; zero standard errors give ``p`` 0 or 1.
    """
    diff = np.asarray(new_mean, float) - scale * np.asarray(base_mean, float)
    se = np.sqrt(np.asarray(new_se, float) ** 2 + (scale * np.asarray(base_se, float)) ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, diff / se, np.where(diff > 0, np.inf, np.where(diff < 0, -np.inf, 0.0)))
    p = np.where(se > 0, stats.norm.sf(z), np.where(diff > 0, 0.0, 1.0))
    return z, np.full(np.shape(z), np.inf), p


def _compare_summaries(new, base, cols, metric, se_column, nb, nn, *, alpha, tolerance, power, lower_is_better):
    """compare_cells for one-row-per-cell runs with a standard-error column."""
    sb_cells = _by_cell(base, cols, se_column)
    sn_cells = _by_cell(new, cols, se_column)
    only_base = [c for c in nb if c not in nn]
    only_new = [c for c in nn if c not in nb]
    if only_base or only_new:
        raise RegressionInputError(
            "the runs do not have the same cells; "
            + "; ".join(p for p in (f"missing from the new run: {', '.join(only_base[:5])}" if only_base else "",
                                    f"not in the baseline: {', '.join(only_new[:5])}" if only_new else "") if p)
        )
    rows = []
    k = len(nb)
    for c, (values, b, _) in nb.items():
        mb, mx = float(b[0]), float(nn[c][1][0])
        sb, sx = float(sb_cells[c][1][0]), float(sn_cells[c][1][0])
        up = z_greater(mx, sx, mb, sb, 1.0 + tolerance)
        down = z_greater((1.0 - tolerance) * mb, (1.0 - tolerance) * sb, mx, sx, 1.0)
        (t_w, df_w, p_w), (_, _, p_b) = (up, down) if lower_is_better else (down, up)
        rows.append(
            {
                **dict(zip(cols, values)),
                "cell": c,
                "test": "z (mean ± SE)",
                "baseline": mb,
                "new": mx,
                "change_pct": 100.0 * (mx / mb - 1.0) if mb != 0 else (0.0 if mx == 0 else math.inf),
                "baseline_se": sb,
                "new_se": sx,
                "n_baseline": 1,
                "n_new": 1,
                "t_worse": float(t_w),
                "df_worse": float(df_w),
                "p_worse": float(p_w),
                "p_better": float(p_b),
                "detectable_pct": 100.0 * detectable_degradation_se(mb, sb, n_cells=k, alpha=alpha, tolerance=tolerance,
                                                                    power=power, lower_is_better=lower_is_better),
            }
        )
    return _finish(pd.DataFrame(rows), list(cols), alpha)


# --------------------------------------------------------------------------------------------
# Power: the smallest degradation a baseline can detect
# --------------------------------------------------------------------------------------------


def _power(d: float, n: int, cv: float, level: float, tolerance: float, sign: float = 1.0) -> float:
    """Power of the one-sided Welch test at per-cell level ``level`` when the new mean and
    standard deviation are ``1 + sign * d`` times the baseline's (coefficient of variation
    ``cv``; ``sign`` is +1 when lower is better, -1 when higher is better), ``n`` datasets in
    each run; noncentral t with the Welch-Satterthwaite df."""
    a = (1.0 + sign * d) ** 2 * cv**2 / n  # variance of the new mean, in units of mu^2
    b = (1.0 + sign * tolerance) ** 2 * cv**2 / n  # variance of the scaled baseline mean
    se = math.sqrt(a + b)
    df = (a + b) ** 2 / (a**2 / (n - 1) + b**2 / (n - 1))
    nc = (d - tolerance) / se
    crit = stats.t.isf(level, df)
    return float(stats.nct.sf(crit, df, nc))


def detectable_degradation(
    n: int,
    mean: float,
    sd: float,
    *,
    n_cells: int = 1,
    alpha: float = 0.01,
    tolerance: float = 0.05,
    power: float = 0.8,
    lower_is_better: bool = True,
) -> float:
    """Smallest relative degradation ``d`` (new error = (1 + d) x baseline error, distribution
    scaled; (1 - d) x baseline when ``lower_is_better`` is False) detected with probability ``power`` by the Holm-corrected test in one cell of
    ``n_cells``, with ``n`` datasets per run and the baseline cell's ``mean`` and ``sd`` taken as
    the truth.

    One degraded cell among ``n_cells`` is Holm's hardest case (its p-value must pass
    ``alpha / n_cells``), so this is an upper bound for degradations that hit several cells.
    Returns ``tolerance`` when the baseline has no spread (then any excess is detected), ``inf``
    when ``mean`` is 0 with spread (a relative change of nothing is undefined).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n!r}")
    if sd == 0:
        return float(tolerance)
    if mean <= 0:
        return math.inf
    cv = sd / mean
    level = alpha / max(int(n_cells), 1)
    sign = 1.0 if lower_is_better else -1.0
    f = lambda d: _power(d, n, cv, level, tolerance, sign) - power  # noqa: E731
    return _smallest_degradation(f, tolerance, lower_is_better)


def _smallest_degradation(f: Any, tolerance: float, lower_is_better: bool = True) -> float:
    """Root of the increasing power gap ``f`` above ``tolerance``: the smallest detectable
    degradation; inf when even the largest possible one (100 % for a higher-is-better metric,
    1e6 otherwise) does not reach the power."""
    if not lower_is_better:
        # a higher-is-better metric can lose at most 100 %
        hi = 1.0 - 1e-9
        return float(optimize.brentq(f, tolerance, hi, xtol=1e-6)) if f(hi) > 0 else math.inf
    hi = tolerance + 1.0
    while f(hi) < 0:
        hi = 2 * hi + 1
        if hi > 1e6:
            return math.inf
    return float(optimize.brentq(f, tolerance, hi, xtol=1e-6))


def paired_detectable_degradation(
    rerun: Any,
    base: Any,
    *,
    n_cells: int = 1,
    alpha: float = 0.01,
    tolerance: float = 0.05,
    power: float = 0.8,
) -> float:
    """:func:`detectable_degradation` for a same-seed (paired) comparison, from a baseline cell's
    values ``base`` and a same-seed re-run ``rerun`` of an *equivalent* implementation whose
    draws differ (e.g. after a refactor that consumes random numbers differently): smallest ``d``
    such that the paired test of ``(1 + d) * rerun`` against ``base`` reaches ``power`` at level
    ``alpha / n_cells``, with the mean taken as common (no real change) and the variances and
    covariance estimated from the pairs (noncentral t, ``n - 1`` df). Lower-is-better metrics."""
    x = np.asarray(rerun, dtype=float)
    b = np.asarray(base, dtype=float)
    if x.shape != b.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f"rerun/base: need two 1-D arrays of the same length >= 2, got {x.shape} and {b.shape}")
    n = x.size
    mu = 0.5 * (x.mean() + b.mean())
    cov = np.cov(x, b, ddof=1)
    vx = vb = 0.5 * (cov[0, 0] + cov[1, 1])
    c = 1.0 + tolerance
    crit_level = alpha / max(int(n_cells), 1)
    crit = stats.t.isf(crit_level, n - 1)

    def f(d: float) -> float:
        var = (1 + d) ** 2 * vx + c**2 * vb - 2 * (1 + d) * c * cov[0, 1]
        if var <= 0:
            return 1.0 - power
        return float(stats.nct.sf(crit, n - 1, (d - tolerance) * mu / math.sqrt(var / n))) - power

    if mu <= 0:
        return math.inf
    return _smallest_degradation(f, tolerance)


def detectable_degradation_se(
    mean: float,
    se: float,
    *,
    n_cells: int = 1,
    alpha: float = 0.01,
    tolerance: float = 0.05,
    power: float = 0.8,
    lower_is_better: bool = True,
) -> float:
    """:func:`detectable_degradation` for a cell summarised by a Monte Carlo ``mean`` and its
    standard error ``se`` (the new run's SE assumed to scale with its mean): smallest ``d`` with
    ``Phi((d - tol) / sqrt(((1 + d) r)^2 + ((1 + tol) r)^2) - z) = power``, ``r = se / mean``,
    ``z`` the upper ``alpha / n_cells`` normal quantile (signs flipped when higher is better)."""
    if se == 0:
        return float(tolerance)
    if mean <= 0:
        return math.inf
    r = se / mean
    z = stats.norm.isf(alpha / max(int(n_cells), 1))
    sign = 1.0 if lower_is_better else -1.0

    def f(d: float) -> float:
        sd = math.hypot((1 + sign * d) * r, (1 + sign * tolerance) * r)
        return float(stats.norm.sf(z - (d - tolerance) / sd)) - power

    return _smallest_degradation(f, tolerance, lower_is_better)


def simulate_detection(
    values: Any,
    degradation: float,
    *,
    n_cells: int = 1,
    alpha: float = 0.01,
    tolerance: float = 0.05,
    reps: int = 2000,
    rng: Any = None,
    lower_is_better: bool = True,
) -> float:
    """Monte Carlo check of :func:`detectable_degradation`: the fraction of ``reps`` replicates in
    which a new run whose per-dataset values are ``(1 + degradation)`` x a bootstrap resample of the
    baseline ``values`` is flagged against an independent bootstrap resample of the baseline at the
    per-cell level ``alpha / n_cells`` (Holm's first step). Bootstrapping the observed values keeps
    their skewness, which the t approximation ignores."""
    if not math.isfinite(degradation):
        raise ValueError(f"degradation must be finite, got {degradation!r}")
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size < 2:
        raise ValueError(f"values must be a 1-D array of at least 2 numbers, got shape {v.shape}")
    gen = np.random.default_rng(rng)
    n = v.size
    # Inflate the deviations by sqrt(n / (n - 1)) so a resample's variance is unbiased for the
    # population's, as the power analysis (which plugs in the sample sd) assumes.
    v = v.mean() + (v - v.mean()) * math.sqrt(n / (n - 1))
    base = v[gen.integers(0, n, size=(reps, n))]
    if lower_is_better:
        new = (1.0 + degradation) * v[gen.integers(0, n, size=(reps, n))]
        _, _, p = welch_greater(new, base, 1.0 + tolerance)
    else:
        new = (1.0 - degradation) * v[gen.integers(0, n, size=(reps, n))]
        _, _, p = welch_greater((1.0 - tolerance) * base, new, 1.0)
    return float(np.mean(p < alpha / max(int(n_cells), 1)))


def power_table(
    baseline_dir: str | Path,
    *,
    alpha: float = 0.01,
    tolerance: float = 0.05,
    power: float = 0.8,
    reps: int = 2000,
    seed: int = 0,
    paired_with: str | Path | None = None,
) -> pd.DataFrame:
    """Per cell of a baseline run: ``detectable_pct`` (power analysis for a re-run with another
    seed) and ``simulated_power`` (:func:`simulate_detection` at that degradation; should be close
    to ``power``). With ``paired_with`` (a same-seed run of an equivalent implementation whose
    draws differ), also ``paired_detectable_pct`` (:func:`paired_detectable_degradation`) and
    ``paired_simulated_power`` (bootstrap of the pairs, new values scaled by ``1 + d``)."""
    run = load_run(baseline_dir, "baseline")
    other = None
    if paired_with is not None:
        prun = load_run(paired_with, "paired")
        _check_comparable(prun, run)
        if prun.seed != run.seed or not can_pair(prun.results, run.results, run.cell_columns, run.replicate_column):
            raise RegressionInputError("paired_with must be a run with the baseline's root seed and dataset ids")
        other = _by_cell(prun.results, run.cell_columns, run.metric, run.replicate_column)
    cells = _by_cell(run.results, run.cell_columns, run.metric)
    k = len(cells)
    gen = np.random.default_rng(seed)
    rows = []
    summary = run.se_column is not None and all(len(v) == 1 for _, v, _ in cells.values())
    ses = _by_cell(run.results, run.cell_columns, run.se_column) if summary else {}
    for c, (_, v, _) in cells.items():
        lib = run.lower_is_better
        if summary:
            d = detectable_degradation_se(float(v[0]), float(ses[c][1][0]), n_cells=k, alpha=alpha, tolerance=tolerance,
                                          power=power, lower_is_better=lib)
            rows.append({"cell": c, "n": 1, "mean": float(v[0]), "cv": math.nan, "detectable_pct": 100 * d,
                         "simulated_power": math.nan})
            continue
        d = detectable_degradation(len(v), float(v.mean()), float(v.std(ddof=1)), n_cells=k, alpha=alpha,
                                   tolerance=tolerance, power=power, lower_is_better=lib)
        sim = (simulate_detection(v, d, n_cells=k, alpha=alpha, tolerance=tolerance, reps=reps, rng=gen, lower_is_better=lib)
               if math.isfinite(d) else math.nan)
        row = {"cell": c, "n": len(v), "mean": float(v.mean()), "cv": float(v.std(ddof=1) / v.mean()) if v.mean() else math.nan,
               "detectable_pct": 100 * d, "simulated_power": sim}
        if other is not None:
            b_sorted = _by_cell(run.results, run.cell_columns, run.metric, run.replicate_column)[c][1]
            x_sorted = other[c][1]
            dp = paired_detectable_degradation(x_sorted, b_sorted, n_cells=k, alpha=alpha, tolerance=tolerance, power=power)
            row["paired_detectable_pct"] = 100 * dp
            row["paired_simulated_power"] = (
                _simulate_paired(x_sorted, b_sorted, dp, n_cells=k, alpha=alpha, tolerance=tolerance, reps=reps, rng=gen)
                if math.isfinite(dp) else math.nan)
        rows.append(row)
    return pd.DataFrame(rows)


def _simulate_paired(x: np.ndarray, b: np.ndarray, degradation: float, *, n_cells: int, alpha: float,
                     tolerance: float, reps: int, rng: np.random.Generator) -> float:
    """Bootstrap of (rerun, baseline) pairs: fraction of replicates in which ``(1 + d) * rerun``
    is flagged against the baseline by the paired test at ``alpha / n_cells``. The rerun is first
    shifted to the baseline's mean (no real change) as the power analysis assumes."""
    n = x.size
    x = x - x.mean() + b.mean()
    idx = rng.integers(0, n, size=(reps, n))
    _, _, p = paired_greater((1.0 + degradation) * x[idx], b[idx], 1.0 + tolerance)
    return float(np.mean(p < alpha / max(int(n_cells), 1)))


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegressionReport:
    """Outcome of :func:`regress`.

    Attributes
    ----------
    cells : pandas.DataFrame
        One row per cell (see :func:`compare_cells`); empty when the input was unusable.
    exit_code : int
        0 (no significant regression), 1 (at least one), 2 (unusable input; see ``message``).
    message : str
        One-line summary, or what made the input unusable.
    """

    cells: pd.DataFrame = field(repr=False)
    exit_code: int
    message: str
    new_dir: str = ""
    baseline_dir: str = ""
    alpha: float = 0.01
    tolerance: float = 0.05
    metric: str = ""
    cell_columns: tuple[str, ...] = ()
    lower_is_better: bool = True
    paired: bool = False

    @property
    def regressions(self) -> pd.DataFrame:
        return self.cells[self.cells["verdict"] == "regression"] if len(self.cells) else self.cells

    @property
    def improvements(self) -> pd.DataFrame:
        return self.cells[self.cells["verdict"] == "improvement"] if len(self.cells) else self.cells

    def short_labels(self) -> list[str]:
        """Cell labels without the cell columns that are the same in every cell (e.g. data, n)."""
        c = self.cells
        cols = [col for col in self.cell_columns if col in c.columns]
        varying = [col for col in cols if c[col].astype(str).nunique() > 1] or cols
        if not varying or len(varying) == len(cols):
            return c["cell"].tolist()
        return [_cell_label(varying, _format_row(r)) for r in c[varying].itertuples(index=False)]

    def _display(self) -> pd.DataFrame:
        c = self.cells
        return pd.DataFrame(
            {
                "cell": self.short_labels(),
                "baseline": [f"{m:.4g} ± {s:.2g}" for m, s in zip(c["baseline"], c["baseline_se"])],
                "new": [f"{m:.4g} ± {s:.2g}" for m, s in zip(c["new"], c["new_se"])],
                "change %": [f"{v:+.1f}" if math.isfinite(v) else "n/a" for v in c["change_pct"]],
                "p-value": [f"{p:.2g}" for p in c["p_value"]],
                "verdict": [v.upper() if v == "regression" else v for v in c["verdict"]],
                "detectable %": [f"{v:.0f}" if math.isfinite(v) else "n/a" for v in c["detectable_pct"]],
            }
        )

    def header(self) -> str:
        better, worse = ("smaller", f"new > (1 + {self.tolerance:g}) x baseline") if self.lower_is_better else (
            "larger", f"new < (1 - {self.tolerance:g}) x baseline")
        c = self.cells
        cols = [col for col in self.cell_columns if col in c.columns]
        fixed = [f"{col}={_format_row([c[col].iloc[0]])[0]}" for col in cols if c[col].astype(str).nunique() == 1]
        fixed_text = f" All cells: {', '.join(fixed)}." if fixed and len(fixed) < len(cols) else ""
        test = str(c["test"].iloc[0]) if len(c) else ""
        what, how = {
            "paired t": ("mean over datasets ± SE", "paired t-test (same root seed: same datasets)"),
            "Welch t": ("mean over datasets ± SE", "Welch t-test (independent runs)"),
        }.get(test, ("Monte Carlo mean ± SE of each cell", "z-test on the two means"))
        return (
            f"regress: {self.new_dir} vs baseline {self.baseline_dir}\n"
            f"metric {self.metric}: {what}, {better} is better.{fixed_text}\n"
            f"Per cell a one-sided {how} of {worse}; Holm over {len(c)} cells at alpha {self.alpha:g}.\n"
            "p-value: Holm-adjusted (of the improvement test for improvements); detectable %: the "
            "degradation of one cell caught with 80% power by a re-run with another seed."
        )

    def format_table(self) -> str:
        """Aligned plain-text table for the terminal."""
        if not len(self.cells):
            return ""
        d = self._display()
        widths = {col: max(len(col), *(len(str(v)) for v in d[col])) for col in d.columns}
        lines = ["  ".join(col.ljust(widths[col]) if col == "cell" else col.rjust(widths[col]) for col in d.columns)]
        for _, r in d.iterrows():
            lines.append("  ".join(str(r[col]).ljust(widths[col]) if col == "cell" else str(r[col]).rjust(widths[col]) for col in d.columns))
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The report as markdown (``regress.md``)."""
        out = [f"# Regression check: {self.message}", "", self.header().replace("\n", "\n\n"), ""]
        if len(self.cells):
            d = self._display()
            out.append("| " + " | ".join(d.columns) + " |")
            out.append("|" + "|".join("---" if col == "cell" else "---:" for col in d.columns) + "|")
            for _, r in d.iterrows():
                out.append("| " + " | ".join(str(r[col]).replace("|", "\\|") for col in d.columns) + " |")
        return "\n".join(out) + "\n"

    def write(self, directory: str | Path) -> list[Path]:
        """Write ``regress.csv`` (all columns) and ``regress.md`` into ``directory``."""
        d = Path(directory)
        csv_path, md_path = d / "regress.csv", d / "regress.md"
        self.cells.to_csv(csv_path, index=False)
        md_path.write_text(self.to_markdown(), encoding="utf-8")
        return [csv_path, md_path]


def _check_levels(alpha: Any, tolerance: Any) -> tuple[float, float]:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance!r}")
    return float(alpha), float(tolerance)


def regress(
    new_dir: str | Path,
    baseline_dir: str | Path,
    *,
    alpha: float = 0.01,
    tolerance: float = 0.05,
    paired: bool | None = None,
) -> RegressionReport:
    """Compare a new run folder with a baseline run folder of the same config, cell by cell.

    Parameters
    ----------
    new_dir, baseline_dir
        Run folders written by ``dpharness run`` (``results.csv``, ``config.yaml``,
        ``manifest.json`` with ``cell_columns`` and ``metric``). Their configs must be equal except
        for the root seed (and description).
    alpha
        Family-wise error rate over the cells (Holm): the probability that a run whose every cell is
        within tolerance of the baseline is reported as a regression is at most ``alpha``.
    tolerance
        Relative slack: a cell regresses when its mean error exceeds ``(1 + tolerance)`` x the
        baseline's, significantly.
    paired
        ``None`` (default): pair replicates (paired t-test) when both runs have the same root seed
        and the same replicate ids in every cell -- then replicate ``i`` is the same dataset in
        both runs -- else compare independent samples (Welch). ``False`` forces Welch; ``True``
        requires pairing (exit 2 if impossible).

    Returns
    -------
    RegressionReport
        ``exit_code`` 0, 1 or 2 (unusable input: ``cells`` empty, ``message`` says why).

    Raises
    ------
    ValueError
        If ``alpha`` or ``tolerance`` is out of range.
    """
    alpha, tolerance = _check_levels(alpha, tolerance)
    common = dict(new_dir=str(new_dir), baseline_dir=str(baseline_dir), alpha=alpha, tolerance=tolerance)
    try:
        new = load_run(new_dir, "new")
        base = load_run(baseline_dir, "baseline")
        _check_comparable(new, base)
        if paired is None:
            same_seed = new.seed is not None and new.seed == base.seed
            paired = same_seed and can_pair(new.results, base.results, base.cell_columns, base.replicate_column)
        cells = compare_cells(new.results, base.results, base.cell_columns, base.metric, alpha=alpha,
                              tolerance=tolerance, lower_is_better=base.lower_is_better,
                              replicate_column=base.replicate_column, paired=bool(paired),
                              se_column=base.se_column)
        paired = bool(paired) and bool((cells["test"] == "paired t").all())
    except RegressionInputError as exc:
        return RegressionReport(cells=pd.DataFrame(), exit_code=2, message=f"cannot compare: {exc}", **common)
    report = RegressionReport(
        cells=cells,
        exit_code=0,
        message="",
        metric=base.metric,
        cell_columns=base.cell_columns,
        lower_is_better=base.lower_is_better,
        paired=bool(paired),
        **common,
    )
    short = pd.Series(report.short_labels(), index=cells.index)
    reg = cells["verdict"] == "regression"
    n_reg, n_imp = int(reg.sum()), int((cells["verdict"] == "improvement").sum())
    if n_reg:
        worst = short[reg].loc[cells.loc[reg, "change_pct"].sort_values(ascending=False).index].tolist()
        msg = f"REGRESSION in {n_reg} of {len(cells)} cells ({'; '.join(worst[:5])}{' ...' if n_reg > 5 else ''})"
    else:
        msg = f"no significant regression in {len(cells)} cells"
    if n_imp:
        msg += f"; {n_imp} significant improvement(s)"
    return replace(report, exit_code=1 if n_reg else 0, message=msg)


# --------------------------------------------------------------------------------------------
# Updating a baseline
# --------------------------------------------------------------------------------------------


def update_baseline(new_dir: str | Path, baseline_dir: str | Path) -> list[Path]:
    """Replace the baseline run folder by the new run's :data:`BASELINE_FILES`.

    The new run must be usable on its own (:func:`load_run`). ``baseline_dir`` is created if
    missing; an existing non-empty folder is replaced only if it looks like a run folder (has a
    ``results.csv`` and ``manifest.json``), so a mistyped path such as ``results/`` is never wiped.

    Raises
    ------
    RegressionInputError
        When the new run is unusable or the baseline location is not safe to replace.
    """
    src, dst = Path(new_dir), Path(baseline_dir)
    load_run(src, "new")
    if src.resolve() == dst.resolve():
        raise RegressionInputError("the new run and the baseline are the same folder")
    if dst.exists():
        if not dst.is_dir():
            raise RegressionInputError(f"baseline location {str(dst)!r} exists and is not a folder")
        if any(dst.iterdir()) and not ((dst / "results.csv").is_file() and (dst / "manifest.json").is_file()):
            raise RegressionInputError(
                f"baseline location {str(dst)!r} is not empty and is not a run folder (no results.csv and "
                "manifest.json); refusing to replace it"
            )
    tmp = dst.with_name(dst.name + ".updating")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    copied = []
    for f in BASELINE_FILES:
        if (src / f).is_file():
            # content only: run files are written 0600 via mkstemp, a committed baseline is 0644
            shutil.copyfile(src / f, tmp / f)
            copied.append(dst / f)
    # swap in one rename so an interrupted update never leaves a half-written baseline
    if dst.exists():
        old = dst.with_name(dst.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        dst.rename(old)
        tmp.rename(dst)
        shutil.rmtree(old)
    else:
        tmp.rename(dst)
    return copied


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def cmd_regress(args: argparse.Namespace) -> int:
    """``dpharness regress NEW_RUN_DIR BASELINE_RUN_DIR [--alpha] [--tolerance] [--update-baseline]``.

    Prints the table, writes ``regress.csv`` and ``regress.md`` into the new run folder and returns
    0 / 1 / 2 (see :func:`regress`). With ``--update-baseline`` the comparison is still printed (if
    possible), then the new run replaces the baseline and the exit code is 0 (the change is
    deliberate), or 2 if the new run is unusable.
    """
    try:
        report = regress(args.new_run_dir, args.baseline_run_dir, alpha=args.alpha, tolerance=args.tolerance)
    except ValueError as exc:
        print(f"dpharness regress: {exc}", file=sys.stderr)
        return 2
    update = bool(getattr(args, "update_baseline", False))
    if report.exit_code == 2:
        if not update:
            print(f"dpharness regress: {report.message}", file=sys.stderr)
            return 2
        if Path(args.baseline_run_dir).exists():
            print(f"note: {report.message}", file=sys.stderr)
        else:
            print(f"note: {args.baseline_run_dir} does not exist yet; creating it", file=sys.stderr)
    else:
        print(report.header())
        print(report.format_table())
        try:
            paths = report.write(args.new_run_dir)
            print(f"wrote {', '.join(str(p) for p in paths)}")
        except OSError as exc:
            print(f"warning: could not write the report into {args.new_run_dir}: {exc}", file=sys.stderr)
        print(report.message)
    if update:
        try:
            update_baseline(args.new_run_dir, args.baseline_run_dir)
        except (RegressionInputError, OSError) as exc:
            print(f"dpharness regress: cannot update the baseline: {exc}", file=sys.stderr)
            return 2
        print(f"baseline {args.baseline_run_dir} updated from {args.new_run_dir} (deliberate change; exit 0)")
        return 0
    return report.exit_code


def _main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.regress power BASELINE_RUN_DIR...``: the detectable degradation per cell."""
    p = argparse.ArgumentParser(prog="python -m bench.regress")
    sub = p.add_subparsers(dest="command", required=True)
    pw = sub.add_parser("power", help="smallest degradation each baseline cell can detect")
    pw.add_argument("baselines", nargs="+", metavar="BASELINE_RUN_DIR")
    pw.add_argument("--alpha", type=float, default=0.01)
    pw.add_argument("--tolerance", type=float, default=0.05)
    pw.add_argument("--power", type=float, default=0.8)
    pw.add_argument("--reps", type=int, default=2000, help="simulation replicates per cell")
    pw.add_argument("--seed", type=int, default=0)
    pw.add_argument("--paired-with", metavar="RUN_DIR", default=None,
                    help="a same-seed run of an equivalent implementation with different draws: adds the paired figures")
    a = p.parse_args(argv)
    if a.paired_with is not None and len(a.baselines) != 1:
        p.error("--paired-with needs exactly one BASELINE_RUN_DIR")
    for b in a.baselines:
        try:
            t = power_table(b, alpha=a.alpha, tolerance=a.tolerance, power=a.power, reps=a.reps, seed=a.seed,
                            paired_with=a.paired_with)
        except (RegressionInputError, ValueError) as exc:
            print(f"{b}: {exc}", file=sys.stderr)
            return 2
        print(f"{b}: alpha {a.alpha:g} (Holm over {len(t)} cells, one degraded cell), tolerance {a.tolerance:g}, "
              f"power {a.power:g}")
        with pd.option_context("display.width", 200, "display.max_rows", 500):
            print(t.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
        test = "z-test on the Monte Carlo means" if (t["n"] == 1).all() else "Welch"
        print(f"detectable degradation, re-run with another seed ({test}): {t['detectable_pct'].min():.1f}% (most "
              f"sensitive cell) to {t['detectable_pct'].max():.1f}% (least sensitive); median {t['detectable_pct'].median():.1f}%")
        if "paired_detectable_pct" in t:
            print(f"detectable degradation, same seed (paired): {t['paired_detectable_pct'].min():.1f}% to "
                  f"{t['paired_detectable_pct'].max():.1f}%; median {t['paired_detectable_pct'].median():.1f}%")
        print()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main())
