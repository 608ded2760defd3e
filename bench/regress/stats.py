"""The per-cell tests of ``dpharness regress``: one-sided Welch, paired and z tests, and Holm.

Every test is one-sided against a *scaled* baseline, ``H0: E[new] <= scale * E[base]``: the
scale is ``1 + tolerance`` for the regression test (``1 - tolerance`` on the other side for the
improvement test), and multiplying the baseline sample by it turns the question into an ordinary
two-sample comparison of means, so the library tests apply unchanged:

* Welch (unequal variances, Welch-Satterthwaite df): ``scipy.stats.ttest_ind(new, scale * base,
  equal_var=False, alternative="greater")``. Why Welch and not Mann-Whitney or Student, and why
  it is valid here: see :mod:`bench.regress`.
* paired: ``scipy.stats.ttest_rel(new, scale * base, alternative="greater")`` -- a one-sample t-test
  of the differences ``new_i - scale * base_i``, valid whenever the pairs are independent and
  identically distributed across ``i`` however strongly ``new_i`` and ``base_i`` depend on each
  other (two runs with the same root seed share their datasets).
* z: two independent Monte Carlo means with their standard errors (CLT over the draws).

A cell with zero spread (every value equal in both samples, e.g. two bit-identical runs) has no
noise: scipy returns NaN there, these functions return the exact answer (``p = 0`` when the new
mean exceeds the scaled baseline, ``p = 1`` otherwise).

Holm's step-down correction (Holm 1979) via ``statsmodels.stats.multitest.multipletests``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

__all__ = ["welch_greater", "paired_greater", "z_greater", "holm", "check_levels"]

#: scipy's warning for nearly identical samples; the statistic it returns is still the textbook
#: one (the same as computing it by hand), and exactly identical samples are handled before scipy.
_CANCELLATION = "Precision loss occurred in moment calculation"


def _exact(diff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t, p) when there is no spread at all: the comparison of the means is exact."""
    t = np.where(diff > 0, np.inf, np.where(diff < 0, -np.inf, 0.0))
    p = np.where(diff > 0, 0.0, 1.0)
    return t, p


def _fill(live: np.ndarray, t: np.ndarray, df: np.ndarray, p: np.ndarray, res: Any) -> None:
    t[live], df[live], p[live] = res.statistic, res.df, res.pvalue


def welch_greater(new: Any, base: Any, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-sided Welch t-test of ``H0: E[new] <= scale * E[base]`` against ``E[new] > scale * E[base]``.

    ``scipy.stats.ttest_ind(new, scale * base, equal_var=False, alternative="greater")``,
    vectorised over leading axes (the samples are along the last axis), so a simulation can test
    thousands of replicates at once. Cells with zero variance in both samples get ``p = 0`` when
    ``mean(new) > scale * mean(base)`` and ``p = 1`` otherwise (``df`` NaN).

    Returns
    -------
    t, df, p : numpy.ndarray
        Statistic, Welch-Satterthwaite degrees of freedom and one-sided p-value.

    Raises
    ------
    ValueError
        If a sample has fewer than 2 values.
    """
    x = np.asarray(new, dtype=float)
    y = np.asarray(base, dtype=float) * float(scale)
    nx, ny = x.shape[-1], y.shape[-1]
    if nx < 2 or ny < 2:
        raise ValueError(f"new/base: need at least 2 values per sample, got {nx} and {ny}")
    live = (x.var(axis=-1, ddof=1) / nx + y.var(axis=-1, ddof=1) / ny) > 0
    t, p = _exact(x.mean(axis=-1) - y.mean(axis=-1))
    df = np.full(t.shape, np.nan)
    if live.any():
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", _CANCELLATION, RuntimeWarning)
            res = stats.ttest_ind(x[live], y[live], axis=-1, equal_var=False, alternative="greater")
        _fill(live, t, df, p, res)
    return t, df, p


def paired_greater(new: Any, base: Any, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-sided paired t-test of ``H0: E[new] <= scale * E[base]`` on the differences
    ``new_i - scale * base_i`` (pairs along the last axis):
    ``scipy.stats.ttest_rel(new, scale * base, alternative="greater")``, vectorised over leading
    axes; zero spread of the differences gives ``p = 0`` for a positive mean difference and
    ``p = 1`` otherwise.

    Returns
    -------
    t, df, p : numpy.ndarray

    Raises
    ------
    ValueError
        If the shapes differ or there are fewer than 2 pairs.
    """
    x = np.asarray(new, dtype=float)
    y = np.asarray(base, dtype=float) * float(scale)
    if x.shape != y.shape:
        raise ValueError(f"new/base: paired samples must have the same shape, got {x.shape} and {y.shape}")
    n = x.shape[-1]
    if n < 2:
        raise ValueError(f"new/base: need at least 2 pairs, got {n}")
    d = x - y
    live = d.var(axis=-1, ddof=1) > 0
    t, p = _exact(d.mean(axis=-1))
    df = np.full(t.shape, float(n - 1))
    if live.any():
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", _CANCELLATION, RuntimeWarning)
            res = stats.ttest_rel(x[live], y[live], axis=-1, alternative="greater")
        _fill(live, t, df, p, res)
    return t, df, p


def z_greater(new_mean: Any, new_se: Any, base_mean: Any, base_se: Any,
              scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-sided z-test of ``H0: E[new] <= scale * E[base]`` from two independent Monte Carlo means
    and their standard errors (large-sample normal law of a mean of many independent draws).

    Returns ``t`` (the z statistic), ``df`` (inf) and ``p``; zero standard errors give ``p`` 0 or 1.
    """
    diff = np.asarray(new_mean, float) - scale * np.asarray(base_mean, float)
    se = np.sqrt(np.asarray(new_se, float) ** 2 + (scale * np.asarray(base_se, float)) ** 2)
    t, p = _exact(diff)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, diff / se, t)
    p = np.where(se > 0, stats.norm.sf(z), p)
    return z, np.full(np.shape(z), np.inf), p


def holm(p: Any, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down procedure over a family of p-values: (reject at ``alpha``, adjusted p).

    Controls the family-wise error rate at ``alpha`` under any dependence between the tests.
    """
    reject, p_adj, _, _ = multipletests(np.asarray(p, dtype=float), alpha=alpha, method="holm")
    return reject, p_adj


def check_levels(alpha: Any, tolerance: Any) -> tuple[float, float]:
    """``(alpha, tolerance)`` as floats, or ValueError naming the one out of range: the family-wise
    level ``alpha`` must be in (0, 1), the relative ``tolerance`` in [0, 1) (a higher-is-better
    metric is compared with ``(1 - tolerance)`` x the baseline, which must stay positive)."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance!r}")
    return float(alpha), float(tolerance)
