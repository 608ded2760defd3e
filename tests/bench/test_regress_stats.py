"""Tests of the statistics of ``dpharness regress`` (bench/regress/stats.py, power.py).

The one-sided tests are scipy's (ttest_ind / ttest_rel on the scaled baseline); they are checked
against scipy called directly, against p-values pinned from the implementation before the switch
to scipy, against definitions (Holm), and by simulation (level at the boundary of H0, power).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpharness.bench import regress as rg

# Inputs and the (t, df, p) the hand-written Welch/paired code gave before the switch to
# scipy.stats.ttest_ind / ttest_rel (computed once with that code, bench/regress.py at commit
# 537836a, and pasted here): the switch must not move a p-value beyond rounding.
X1 = [1.2, 0.9, 1.7, 1.1, 2.3]
B1 = [1.0, 0.8, 1.1, 0.95, 1.3, 1.05, 0.7]
X2 = [3.1, 2.7, 3.5, 2.9, 3.3, 3.0]
B2 = [2.9, 2.8, 3.0, 2.7, 3.1, 2.95]
PINNED_WELCH = [
    ((X1, B1, 1.0), (1.7274192026588164, 4.706120312610369, 0.07416104767809169)),
    ((X1, B1, 1.05), (1.533703109213649, 4.7787926871930875, 0.09417164993713105)),
    ((B1, X1, 0.95), (-1.5235437683609234, 4.782714920464375, 0.9046347951822062)),
    ((X2, B2, 1.05), (0.22451161107676232, 7.561644099196911, 0.4141531645393897)),
]
PINNED_PAIRED = [
    ((X2, B2, 1.0), (2.1500329089188295, 5.0, 0.042120759814696394)),
    ((X2, B2, 1.05), (0.3682317043000927, 5.0, 0.36388804980220585)),
    ((B2, X2, 0.95), (-0.27314656978518126, 5.0, 0.6021682696301036)),
]


@pytest.mark.parametrize("args, expected", PINNED_WELCH)
def test_welch_p_values_unchanged_by_the_switch_to_scipy(args, expected):
    got = [float(v) for v in rg.welch_greater(*args)]
    assert got == pytest.approx(list(expected), rel=1e-12)


@pytest.mark.parametrize("args, expected", PINNED_PAIRED)
def test_paired_p_values_unchanged_by_the_switch_to_scipy(args, expected):
    got = [float(v) for v in rg.paired_greater(*args)]
    assert got == pytest.approx(list(expected), rel=1e-12)


def test_welch_and_paired_by_their_definitions():
    """Slow textbook formulas, element by element: Welch's t = (mean x - s mean b) / sqrt(vx/nx +
    s^2 vb/nb) with the Welch-Satterthwaite df; paired t = mean d / (sd d / sqrt n), n - 1 df; the
    one-sided p-value is the Student-t survival function."""
    rng = np.random.default_rng(11)
    for nx, nb, s in [(4, 9, 1.05), (25, 25, 1.0), (40, 13, 0.95)]:
        x, b = rng.lognormal(0, 0.5, nx), rng.lognormal(0, 0.5, nb)
        vx, vb = x.var(ddof=1) / nx, (s * b).var(ddof=1) / nb
        t = (x.mean() - s * b.mean()) / math.sqrt(vx + vb)
        df = (vx + vb) ** 2 / (vx**2 / (nx - 1) + vb**2 / (nb - 1))
        assert [float(v) for v in rg.welch_greater(x, b, s)] == pytest.approx([t, df, stats.t.sf(t, df)], rel=1e-11)
        y = x[:min(nx, nb)] * rng.normal(1, 0.1, min(nx, nb))
        d = y - s * x[:min(nx, nb)]
        t = d.mean() / (d.std(ddof=1) / math.sqrt(d.size))
        got = [float(v) for v in rg.paired_greater(y, x[:min(nx, nb)], s)]
        assert got == pytest.approx([t, d.size - 1, stats.t.sf(t, d.size - 1)], rel=1e-11)


def test_z_test_by_its_definition():
    z = (1.3 - 1.05 * 1.0) / math.hypot(0.02, 1.05 * 0.03)
    t, df, p = rg.z_greater(1.3, 0.02, 1.0, 0.03, 1.05)
    assert float(t) == pytest.approx(z, rel=1e-12) and float(p) == pytest.approx(stats.norm.sf(z), rel=1e-12)
    assert math.isinf(float(df))
    # no standard error at all: the comparison of the means is exact
    assert float(rg.z_greater(1.1, 0.0, 1.0, 0.0, 1.05)[2]) == 0.0
    assert float(rg.z_greater(1.0, 0.0, 1.0, 0.0, 1.05)[2]) == 1.0


def test_levels_are_checked():
    assert rg.check_levels(0.05, 0) == (0.05, 0.0)
    for alpha, tol, word in [(0, 0.05, "alpha"), (1, 0.05, "alpha"), (float("nan"), 0.05, "alpha"),
                             (True, 0.05, "alpha"), (0.01, -0.1, "tolerance"), (0.01, 1.0, "tolerance"),
                             (0.01, float("inf"), "tolerance")]:
        with pytest.raises(ValueError, match=f"^{word} must be in"):
            rg.check_levels(alpha, tol)


def test_scaled_baseline_convention_and_paired_shapes():
    # The tests compare new with scale * base: scaling both samples by c changes nothing (the
    # statistic is scale-free), and testing (x, b, s) equals testing (x, s * b, 1).
    rng = np.random.default_rng(3)
    x, b = rng.gamma(3.0, 1.0, 30), rng.gamma(3.0, 1.0, 30)
    for f in (rg.welch_greater, rg.paired_greater):
        ref = np.array([float(v) for v in f(x, b, 1.05)])
        np.testing.assert_allclose([float(v) for v in f(7.0 * x, 7.0 * b, 1.05)], ref, rtol=1e-10)
        np.testing.assert_allclose([float(v) for v in f(x, 1.05 * b, 1.0)], ref, rtol=1e-10)
        assert 0.0 < ref[2] < 1.0
    with pytest.raises(ValueError, match="same shape"):
        rg.paired_greater([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="at least 2 pairs"):
        rg.paired_greater([1.0], [1.0])


def test_holm_matches_its_definition():
    # Holm's adjusted p-values by definition: p_(i) * (K - i + 1), running maximum, capped at 1
    p = np.array([0.04, 0.001, 0.3, 0.012, 0.0001, 0.02])
    order = np.argsort(p)
    adj_sorted = np.minimum(1, np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p)))))
    expected = np.empty_like(p)
    expected[order] = adj_sorted
    reject, adj = rg.holm(p, 0.05)
    np.testing.assert_allclose(adj, expected, rtol=1e-12)
    np.testing.assert_array_equal(reject, expected <= 0.05)


def test_welch_vectorised_and_degenerate():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(4, 10)), rng.normal(size=(4, 10))
    _, _, p = rg.welch_greater(x, y)
    for i in range(4):
        assert p[i] == pytest.approx(rg.welch_greater(x[i], y[i])[2], rel=1e-14)
    # no spread at all: the comparison is exact
    assert rg.welch_greater([2.0, 2.0], [1.0, 1.0], 1.05)[2] == 0.0
    assert rg.welch_greater([1.0, 1.0], [1.0, 1.0], 1.05)[2] == 1.0
    with pytest.raises(ValueError, match="at least 2"):
        rg.welch_greater([1.0], [1.0, 2.0])
    # a batch mixing degenerate and ordinary cells: each row as if tested alone (the degenerate
    # rows are answered exactly, the others by scipy); scale 1.5 keeps the constant rows exact
    x[1], y[1] = 2.0, 1.0
    x[2], y[2] = 1.0, 1.0
    for f in (rg.welch_greater, rg.paired_greater):
        t, df, p = f(x, y, 1.5)
        for i in range(4):
            np.testing.assert_allclose([t[i], df[i], p[i]], [float(v) for v in f(x[i], y[i], 1.5)], rtol=1e-14)
        assert p[1] == 0.0 and p[2] == 1.0 and t[1] == np.inf and t[2] == -np.inf
        assert 0.0 < p[0] < 1.0 and 0.0 < p[3] < 1.0
    # bit-identical paired runs (an unchanged implementation re-run with its seed): the errors
    # are positive, so new - 1.05 x base is clearly negative (t about -11 here): p is near 1
    e = rng.gamma(4.0, 1.0, 30)
    assert rg.paired_greater(e, e, 1.05)[2] > 1 - 1e-6


@pytest.mark.statistical
def test_family_wise_error_at_the_boundary_is_controlled():
    """Every cell exactly at the boundary of H0 (new mean = 1.05 x baseline), skewed data
    (Gamma, cv 0.5), 12 cells, 30 datasets: the fraction of replicates with ANY flagged cell must
    not exceed alpha = 0.01 beyond binomial noise. Threshold: the 1 - 1e-6 quantile of
    Binomial(R, alpha) / R. Without Holm the rate would be ~1 - 0.99**12 = 11 %, so this fails if
    the correction is dropped (checked below with the raw p-values)."""
    rng = np.random.default_rng(2024)
    R, K, n, alpha, tol = 4000, 12, 30, 0.01, 0.05
    shape = 4.0
    mu = np.linspace(0.5, 20, K)[None, :, None]
    base = rng.gamma(shape, mu / shape, size=(R, K, n))
    new = (1 + tol) * rng.gamma(shape, mu / shape, size=(R, K, n))
    _, _, p = rg.welch_greater(new, base, 1 + tol)
    # Holm rejects something iff its first step does: min p <= alpha / K (checked on a subset with
    # the statsmodels call regress uses; that call is slow, it runs gc.collect() every time)
    any_holm = p.min(axis=1) <= alpha / K
    for r in range(0, R, 400):
        assert rg.holm(p[r], alpha)[0].any() == any_holm[r]
    any_raw = (p < alpha).any(axis=1)
    limit = stats.binom.isf(1e-6, R, alpha) / R
    assert any_holm.mean() <= limit, (any_holm.mean(), limit)
    assert any_raw.mean() > limit  # the uncorrected family would cry wolf


@pytest.mark.statistical
def test_detectable_degradation_matches_simulation():
    """At the degradation detectable_degradation() returns for 80 % power, normal data simulated
    with that degradation is flagged (Holm's first step, alpha / K) in 80 % of replicates, within
    the binomial band at false-alarm 1e-6 (z = 4.9, R = 4000: +-0.031) plus 0.02 for the noncentral-t
    approximation of Welch's statistic (measured at most 0.015 for n >= 10)."""
    rng = np.random.default_rng(7)
    R, K, n, cv = 4000, 12, 30, 0.2
    d = rg.detectable_degradation(n, 1.0, cv, n_cells=K)
    assert 0.05 < d < 1.0
    base = rng.normal(1.0, cv, size=(R, n))
    new = (1 + d) * rng.normal(1.0, cv, size=(R, n))
    rate = float(np.mean(rg.welch_greater(new, base, 1.05)[2] < 0.01 / K))
    band = 4.9 * math.sqrt(0.8 * 0.2 / R) + 0.02
    assert abs(rate - 0.8) <= band, (rate, d)
    # and the bootstrap check of a skewed sample agrees
    v = rng.gamma(25.0, 1 / 25.0, size=n)
    d2 = rg.detectable_degradation(n, v.mean(), v.std(ddof=1), n_cells=K)
    assert abs(rg.simulate_detection(v, d2, n_cells=K, reps=R, rng=rng) - 0.8) <= band
    # more datasets detect smaller changes; no spread means anything beyond tolerance
    assert rg.detectable_degradation(4 * n, 1.0, cv, n_cells=K) < d
    assert rg.detectable_degradation(n, 1.0, 0.0) == 0.05
