"""Exact expectations under the piecewise laws of :mod:`mechanisms.laws` (no Monte Carlo).

* :func:`mean_in_piece` -- E[T] for a density proportional to exp(z t) on [0, 1], stable for all z;
* :func:`expected_linear` -- E[v(X)] for v linear on each piece of a
  :class:`~mechanisms.laws.PiecewiseDensity` (the exact mean revenue of ``revenue_price``);
* :func:`grid_expected_abs_error` -- E|X - truth| for a :class:`~mechanisms.laws.GridRunsLaw`
  with uniform runs (the exact error of the Duff mechanisms on a grid).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpharness.mechanisms.laws import GridRunsLaw, PiecewiseDensity

__all__ = ["mean_in_piece", "expected_linear", "grid_expected_abs_error"]


def mean_in_piece(z: Any) -> np.ndarray:
    """E[T] for T with density proportional to exp(z * t) on [0, 1], stable for every real z.

    g(z) = 1/(1 - e^{-z}) - 1/z for z > 0, g(-z) = 1 - g(z), g(0) = 1/2. Near 0 the two terms
    cancel, so a Taylor series 1/2 + z/12 - z^3/720 is used for |z| < 1e-2 (next term z^5/30240,
    below 4e-15 there).
    """
    z = np.asarray(z, dtype=np.float64)
    a = np.abs(z)
    small = a < 1e-2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        big = 1.0 / (-np.expm1(-a)) - 1.0 / a  # g(|z|), no overflow: e^{-|z|} <= 1
    g_abs = np.where(small, 0.5 + a / 12 - a**3 / 720, big)
    return np.where(z >= 0, g_abs, 1.0 - g_abs)


def expected_linear(law: PiecewiseDensity, left: Any, slope: Any) -> float:
    """E[v(X)] exactly for X ~ ``law`` and v linear on each piece: v = left[j] + slope[j](x - edges[j]).

    E[X - edges[j] | piece j] = w_j * g(log_slope_j * w_j) with g from :func:`mean_in_piece`.
    Zero-mass pieces contribute nothing (their values may be anything finite).
    """
    left = np.asarray(left, dtype=np.float64)
    slope = np.asarray(slope, dtype=np.float64)
    w = law.widths
    p = np.exp(law.log_mass)
    et = w * mean_in_piece(law.log_slope * w)
    vals = left + slope * et
    return float(np.sum(np.where(p > 0, p * vals, 0.0)))


def grid_expected_abs_error(law: GridRunsLaw, truth: float) -> float:
    """E|X - truth| exactly for a :class:`~mechanisms.laws.GridRunsLaw` (arithmetic sums per run)."""
    if getattr(law, "log_ratio", None) is not None:
        # Duff laws are uniform on runs; the arithmetic sums below would be wrong on geometric runs.
        raise ValueError("grid_expected_abs_error needs runs that are uniform (log_ratio None)")
    p = np.exp(law.log_mass)
    c = law.count.astype(np.float64)
    h = law.step
    base = law.origin + h * law.first.astype(np.float64) - float(truth)  # first point minus truth
    # j* = number of points of the run that are <= truth
    jstar = np.clip(np.floor(-base / h + 1e-9) + 1, 0, c)
    total = c * base + h * c * (c - 1) / 2
    below = jstar * base + h * jstar * (jstar - 1) / 2
    mean_abs = (total - 2 * below) / c
    return float(np.sum(np.where(p > 0, p * mean_abs, 0.0)))
