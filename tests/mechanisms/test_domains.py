"""Output domains (mechanisms/domains.py), exact expectations (mechanisms/expectations.py), and the
public names of split modules at their old import paths."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from dpharness.mechanisms import continuous, domains, expectations, laws, medians, smooth_sensitivity
from dpharness.mechanisms.domains import DOMAINS, MAX_GRID_POINTS, Grid, last_index_at_most, on_grid, resolve_grid


def test_resolve_grid_per_domain():
    assert resolve_grid("continuous", 0.0, 1.0, None) is None
    assert resolve_grid("integers", -3.0, 7.0, None) == Grid(lower=-3.0, step=1.0, size=10)
    assert resolve_grid("integers", -3.0, 7.0, 1) == Grid(lower=-3.0, step=1.0, size=10)
    g = resolve_grid("grid", 0.0, 1.0, 0.01)
    assert (g.lower, g.step, g.size) == (0.0, 0.01, 100)
    assert DOMAINS == ("continuous", "integers", "grid") and MAX_GRID_POINTS == 2**53


@pytest.mark.parametrize("domain, lower, upper, step, match", [
    ("continuous", 0.0, 1.0, 0.5, "step must be None for domain='continuous'"),
    ("integers", 0.0, 1.0, 2, "step must be None \\(or 1\\)"),
    ("grid", 0.0, 1.0, None, "step must be given"),
    ("grid", 0.0, 1.0, 0.0, "step must be > 0"),
    ("grid", 0.0, 1.0, float("nan"), "step must be a finite number"),
    ("grid", 0.0, 1.0, True, "step must be a finite number"),
    ("grid", 0.05, 1.0, 0.1, "lower must be on the grid"),
    ("integers", 0.0, 10.5, None, "upper must be on the grid \\(an integer\\)"),
    ("integers", 0.0, 2.0**53, None, "at most 2\\^53"),
])
def test_resolve_grid_refuses_with_the_argument_named(domain, lower, upper, step, match):
    with pytest.raises(ValueError, match=match):
        resolve_grid(domain, lower, upper, step)


def test_on_grid_tolerates_rounding_not_offsets():
    assert on_grid(3.0, 0.1) and on_grid(0.3, 0.1) and on_grid(-7.0, 1.0)
    assert not on_grid(1e10 + 0.5, 1.0)  # a relative tolerance would accept it
    assert not on_grid(0.05, 0.1)


def test_snap_is_nearest_point_ties_up_and_matches_thresholds():
    g = Grid(lower=-1.0, step=0.25, size=12)  # points -1, -0.75, ..., 2
    x = np.array([-5.0, -1.0, -0.875, -0.87, 0.1, 0.125, 1.99, 2.0, 9.0])
    k = g.snap(x)
    # brute force: nearest point, ties up, clipped to the range
    pts = g.values(np.arange(g.size + 1))
    ref = np.array([int(np.flatnonzero(np.abs(pts - v) <= np.min(np.abs(pts - v)))[-1]) for v in x])
    np.testing.assert_array_equal(k, ref)
    for kk in range(g.size + 2):
        assert g.count_below(x, kk) == int(np.count_nonzero(k < kk))
    np.testing.assert_array_equal(g.index_of([-1.0, 0.5, 2.0]), [0, 6, 12])
    with pytest.raises(ValueError, match="points must be grid points"):
        g.index_of([0.1])


def test_last_index_at_most_is_exact_on_the_float_grid():
    g = resolve_grid("grid", 0.0, 3.0, 0.01)
    y = np.array([-1.0, 0.0, 0.005, 0.01, 0.3, 3.01 - 0.01, 2.999999, 3.0, 4.0, 1e300])
    k = last_index_at_most(g, y)
    pts = g.values(np.arange(g.size + 1))
    ref = np.array([int(np.count_nonzero(pts <= v)) - 1 for v in y])
    np.testing.assert_array_equal(k, ref)


def test_grid_law_cdf_and_pmf_far_outside_the_support():
    g = laws.GridRunsLaw.from_log_weights(0.0, 1.0, [0, 3, 4], [3, 1, 6], [0.0, 2.0, -1.0])
    x = np.array([-1e300, -1.0, 0.0, 9.0, 10.0, 1e300])
    np.testing.assert_array_equal(g.cdf(x)[[0, 1, 3, 4, 5]], [0.0, 0.0, 1.0, 1.0, 1.0])
    assert 0 < g.cdf(0.0) < 1
    assert np.all(np.isneginf(g.log_pmf(np.array([-1e300, 1e300, 0.5]))))


def test_grid_expected_abs_error_matches_enumeration():
    rng = np.random.default_rng(3)
    g = laws.GridRunsLaw.from_log_weights(-2.0, 0.5, [0, 4, 5, 9], [4, 1, 4, 3], rng.normal(0, 2, 4))
    idx = np.arange(12)
    p = np.exp(g.log_pmf_index(idx))
    for truth in (-3.0, -2.0, 0.3, 1.5, 4.0):
        ref = float(np.sum(p * np.abs(g.values(idx) - truth)))
        assert expectations.grid_expected_abs_error(g, truth) == pytest.approx(ref, rel=1e-12, abs=1e-15)
    geo = laws.GridRunsLaw.from_log_weights(0.0, 1.0, [0], [5], [0.0], [0.3])
    with pytest.raises(ValueError, match="uniform"):
        expectations.grid_expected_abs_error(geo, 1.0)


@pytest.mark.parametrize("z", [-800.0, -30.0, -1.0, -1e-3, 0.0, 1e-9, 5e-3, 0.02, 2.0, 40.0, 700.0])
def test_mean_in_piece_matches_quadrature(z):
    shift = max(z, 0.0)  # exp(z t - shift) <= 1 on [0, 1]: no overflow at z = 700
    kw = dict(epsabs=0, epsrel=1e-13, limit=200, points=[1e-3, 1e-2, 0.1, 0.9, 0.99, 0.999])
    num = integrate.quad(lambda t: t * math.exp(z * t - shift), 0, 1, **kw)[0]
    den = integrate.quad(lambda t: math.exp(z * t - shift), 0, 1, **kw)[0]
    assert float(expectations.mean_in_piece(z)) == pytest.approx(num / den, rel=1e-11, abs=1e-14)


def test_public_names_of_split_modules_stay_importable_from_their_old_modules():
    # The modules were split by job; the names in the old modules' __all__ are the very same objects
    # (private helpers are imported from their new homes, not pinned here).
    from dpharness.mechanisms import laplace_exponential, median_sensitivity, median_window, revenue

    assert medians.Grid is domains.Grid and medians.DOMAINS is domains.DOMAINS
    assert medians.window_proposal is median_window.window_proposal
    assert medians.grid_expected_abs_error is expectations.grid_expected_abs_error
    assert continuous.RevenuePrice is revenue.RevenuePrice
    assert continuous.LaplaceViaExponential is laplace_exponential.LaplaceViaExponential
    assert continuous.expected_linear is expectations.expected_linear
    assert smooth_sensitivity.median_smooth_sensitivity is median_sensitivity.median_smooth_sensitivity
    for module in (medians, continuous, smooth_sensitivity):
        for name in module.__all__:
            assert getattr(module, name) is not None, (module.__name__, name)
