"""The smallest degradation a baseline can detect (power analysis of the per-cell tests).

:func:`detectable_degradation` gives, per cell, the smallest relative increase of the mean error
``d`` (the whole error distribution scaled by ``1 + d``, as a larger noise scale does) that is
flagged with a given power (default 80 %) when it happens in one cell only -- Holm's hardest case,
where the cell must pass ``alpha / K`` -- from the baseline's per-cell mean and standard deviation
with the noncentral t distribution (Welch's statistic under the alternative, Welch-Satterthwaite
df), checked by :func:`simulate_detection` (bootstrap from the baseline's own values, so skewness
is included). It is the figure for a re-run with a *different* seed (Welch); a same-seed (paired)
comparison detects smaller changes whenever the new and baseline errors of a dataset are
positively correlated, as they are for median mechanisms
(:func:`paired_detectable_degradation`). Cells summarised by a Monte Carlo mean and its standard
error use the normal law instead (:func:`detectable_degradation_se`).

``python -m dpharness.bench.regress power BASELINE_RUN_DIR`` prints :func:`power_table`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from scipy import optimize, stats

from dpharness.bench.regress.load import RegressionInputError, by_cell, can_pair, check_comparable, load_run
from dpharness.bench.regress.stats import check_levels, paired_greater, welch_greater

__all__ = [
    "welch_power",
    "detectable_degradation",
    "detectable_degradation_se",
    "paired_detectable_degradation",
    "simulate_detection",
    "power_table",
]


def welch_power(d: float, n: int, cv: float, level: float, tolerance: float, sign: float = 1.0) -> float:
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


def _check_power_args(alpha: float, power: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power!r}")


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
    scaled; (1 - d) x baseline when ``lower_is_better`` is False) detected with probability
    ``power`` by the Holm-corrected test in one cell of ``n_cells``, with ``n`` datasets per run and
    the baseline cell's ``mean`` and ``sd`` taken as the truth.

    One degraded cell among ``n_cells`` is Holm's hardest case (its p-value must pass
    ``alpha / n_cells``), so this is an upper bound for degradations that hit several cells.
    Returns ``tolerance`` when the baseline has no spread (then any excess is detected), ``inf``
    when ``mean`` is 0 with spread (a relative change of nothing is undefined).
    """
    _check_power_args(alpha, power)
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n!r}")
    if sd == 0:
        return float(tolerance)
    if mean <= 0:
        return math.inf
    cv = sd / mean
    level = alpha / max(int(n_cells), 1)
    sign = 1.0 if lower_is_better else -1.0
    return _smallest_degradation(lambda d: welch_power(d, n, cv, level, tolerance, sign) - power,
                                 tolerance, lower_is_better)


def _smallest_degradation(f: Callable[[float], float], tolerance: float, lower_is_better: bool = True) -> float:
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
    _check_power_args(alpha, power)
    x = np.asarray(rerun, dtype=float)
    b = np.asarray(base, dtype=float)
    if x.shape != b.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f"rerun/base: need two 1-D arrays of the same length >= 2, got {x.shape} and {b.shape}")
    n = x.size
    mu = 0.5 * (x.mean() + b.mean())
    cov = np.cov(x, b, ddof=1)
    vx = vb = 0.5 * (cov[0, 0] + cov[1, 1])
    c = 1.0 + tolerance
    crit = stats.t.isf(alpha / max(int(n_cells), 1), n - 1)

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
    _check_power_args(alpha, power)
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
    if int(reps) < 1:
        raise ValueError(f"reps must be >= 1, got {reps!r}")
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
    """Per cell of a baseline run: ``cell, n, mean, cv, detectable_pct`` (power analysis for a
    re-run with another seed) and ``simulated_power`` (:func:`simulate_detection` at that
    degradation; should be close to ``power``). With ``paired_with`` (a same-seed run of an
    equivalent implementation whose draws differ), also ``paired_detectable_pct``
    (:func:`paired_detectable_degradation`) and ``paired_simulated_power`` (bootstrap of the
    pairs, new values scaled by ``1 + d``).

    Raises
    ------
    RegressionInputError
        When a run folder is unusable or ``paired_with`` cannot be paired with the baseline.
    ValueError
        When ``alpha``, ``tolerance``, ``power`` or ``reps`` is out of range.
    """
    alpha, tolerance = check_levels(alpha, tolerance)
    _check_power_args(alpha, power)
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ValueError(f"reps must be an integer >= 1, got {reps!r}")
    run = load_run(baseline_dir, "baseline")
    other = None
    if paired_with is not None:
        prun = load_run(paired_with, "paired")
        check_comparable(prun, run)
        if prun.seed != run.seed or not can_pair(prun.results, run.results, run.cell_columns, run.replicate_column):
            raise RegressionInputError("paired_with must be a run with the baseline's root seed and dataset ids")
        other = by_cell(prun.results, run.cell_columns, run.metric, run.replicate_column)
        base_sorted = by_cell(run.results, run.cell_columns, run.metric, run.replicate_column)
    cells = by_cell(run.results, run.cell_columns, run.metric)
    k = len(cells)
    gen = np.random.default_rng(seed)
    rows = []
    summary = run.se_column is not None and all(len(v) == 1 for _, v, _ in cells.values())
    ses = by_cell(run.results, run.cell_columns, run.se_column) if summary else {}
    lib = run.lower_is_better
    for c, (_, v, _) in cells.items():
        if summary:
            d = detectable_degradation_se(float(v[0]), float(ses[c][1][0]), n_cells=k, alpha=alpha, tolerance=tolerance,
                                          power=power, lower_is_better=lib)
            rows.append({"cell": c, "n": 1, "mean": float(v[0]), "cv": math.nan, "detectable_pct": 100 * d,
                         "simulated_power": math.nan})
            continue
        if len(v) < 2:
            raise RegressionInputError(f"baseline cell {c} has {len(v)} value(s); the power analysis needs at least 2")
        d = detectable_degradation(len(v), float(v.mean()), float(v.std(ddof=1)), n_cells=k, alpha=alpha,
                                   tolerance=tolerance, power=power, lower_is_better=lib)
        sim = (simulate_detection(v, d, n_cells=k, alpha=alpha, tolerance=tolerance, reps=reps, rng=gen, lower_is_better=lib)
               if math.isfinite(d) else math.nan)
        row = {"cell": c, "n": len(v), "mean": float(v.mean()), "cv": float(v.std(ddof=1) / v.mean()) if v.mean() else math.nan,
               "detectable_pct": 100 * d, "simulated_power": sim}
        if other is not None:
            b_sorted = base_sorted[c][1]
            x_sorted = other[c][1]
            dp = paired_detectable_degradation(x_sorted, b_sorted, n_cells=k, alpha=alpha, tolerance=tolerance, power=power)
            row["paired_detectable_pct"] = 100 * dp
            row["paired_simulated_power"] = (
                _simulate_paired(x_sorted, b_sorted, dp, n_cells=k, alpha=alpha, tolerance=tolerance, reps=reps, rng=gen)
                if math.isfinite(dp) else math.nan)
        rows.append(row)
    return pd.DataFrame(rows)
