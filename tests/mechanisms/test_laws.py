"""Tests for the exact laws of mechanisms/laws.py.

Densities are checked against scipy quadrature (slow twin), CDFs against integrals of the
density, samplers against the exact CDF (Kolmogorov--Smirnov) or pmf (chi-square); thresholds
come from a stated false-alarm rate with a fixed seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpharness.mechanisms.laws import GridRunsLaw, LocationScaleLaw, PiecewiseDensity, log_expm1_ratio, sample_index

#: Family-wise false-alarm rate of the sampling tests in this file, split evenly (Bonferroni) over
#: the N_STAT statistical test cases below.
N_STAT = 16
ALPHA = 1e-6 / N_STAT
DRAWS = 100_000


def chi2_ok(counts: np.ndarray, probs: np.ndarray, alpha: float = ALPHA) -> tuple[bool, float, float]:
    """Pearson chi-square; cells with expected count < 5 pooled; threshold chi2 (1 - alpha) quantile."""
    n = counts.sum()
    exp_ = n * probs
    big = exp_ >= 5
    obs = list(counts[big])
    ex = list(exp_[big])
    if (~big).any():
        obs.append(counts[~big].sum())
        ex.append(exp_[~big].sum())
    obs_a, ex_a = np.array(obs, dtype=float), np.array(ex)
    keep = ex_a > 0
    assert np.all(obs_a[~keep] == 0), "observed outcomes of probability 0"
    obs_a, ex_a = obs_a[keep], ex_a[keep]
    stat = float(np.sum((obs_a - ex_a) ** 2 / ex_a))
    thr = float(stats.chi2.ppf(1 - alpha, max(obs_a.size - 1, 1)))
    return stat <= thr, stat, thr


# --------------------------------------------------------------------------------------------------
# PiecewiseDensity
# --------------------------------------------------------------------------------------------------

PIECEWISE = {
    "constant_with_empty_piece": (np.array([0.0, 1.0, 1.0, 2.5, 4.0]), np.array([0.0, 5.0, -1.0, 0.5]), None),
    "slopes": (np.array([-3.0, -1.0, 0.0, 2.0]), np.array([0.0, 1.0, -0.5]), np.array([2.0, -3.0, 0.7])),
    "huge_slopes": (np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.0, -1e6, -1e6 + 5.0]), np.array([1e6, -1e6, 1e-13])),
    "huge_levels": (np.array([0.0, 1e-3, 10.0, 11.0]), np.array([1e6, 1e6 + 2.0, 1e6 - 3.0]), np.array([0.0, -0.2, 40.0])),
    "tiny_slope": (np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.0]), np.array([1e-14, -1e-9])),
}


def level_tolerance(levels) -> float:
    """Rounding floor of the current normalisation: log levels of size L are added to O(1) terms
    before normalising, so the log masses carry absolute error ~ulp(L) (normalisation subtracts the top level first)."""
    finite = np.asarray(levels, dtype=float)
    return 8 * float(np.spacing(max(1.0, float(np.max(np.abs(finite))))))


def make_piecewise(name: str) -> PiecewiseDensity:
    e, ll, s = PIECEWISE[name]
    return PiecewiseDensity.from_log_density(e, ll, s)


def piece_integral(f, a: float, c: float, slope: float) -> float:
    """quad over [a, c], split near both ends at ~50/|slope| so a steep exponential is resolved."""
    if c <= a:
        return 0.0
    pts = [a, c]
    if slope != 0 and 50.0 / abs(slope) < (c - a) / 3:
        cut = 50.0 / abs(slope)
        pts = [a, a + cut, c - cut, c]
    return sum(integrate.quad(f, lo, hi, epsabs=0.0, epsrel=1e-11, limit=200)[0] for lo, hi in zip(pts[:-1], pts[1:]))


@pytest.mark.parametrize("name", sorted(PIECEWISE))
def test_piecewise_log_pdf_integrates_to_piece_masses_and_one(name):
    law = make_piecewise(name)
    assert abs(math.fsum(np.exp(law.log_mass)) - 1) < 1e-13 + level_tolerance(PIECEWISE[name][1])

    def pdf(x: float) -> float:
        return float(np.exp(law.log_pdf(np.array(x))))

    masses = []
    for j in range(law.log_mass.size):
        a, c = law.edges[j], law.edges[j + 1]
        # evaluate strictly inside the piece so the right-continuous log_pdf uses piece j
        m = piece_integral(lambda x: pdf(min(max(x, a), np.nextafter(c, a))), a, c, law.log_slope[j])
        masses.append(m)
    masses = np.array(masses)
    np.testing.assert_allclose(masses, np.exp(law.log_mass), rtol=1e-9, atol=1e-300)
    assert abs(masses.sum() - 1) < 1e-9
    assert law.log_pdf(np.array(law.edges[0] - 1.0)) == -np.inf
    assert law.log_pdf(np.array(law.edges[-1] + 1.0)) == -np.inf


@pytest.mark.parametrize("name", sorted(PIECEWISE))
def test_piecewise_cdf_matches_integrated_density(name):
    law = make_piecewise(name)
    rng = np.random.default_rng(1)
    before = np.concatenate(([0.0], np.cumsum(np.exp(law.log_mass))))
    for j in range(law.log_mass.size):
        a, c = law.edges[j], law.edges[j + 1]
        if c <= a:
            continue
        for frac in (0.0, 1e-7, 0.3, 0.5 + 0.4 * rng.random(), 1.0 - 1e-7):
            x = a + frac * (c - a)
            inner = piece_integral(
                lambda y: float(np.exp(law.log_pdf(np.array(min(y, np.nextafter(c, a)))))), a, x, law.log_slope[j]
            )
            assert abs(float(law.cdf(np.array(x))) - (before[j] + inner)) < 1e-9
    grid = np.linspace(law.edges[0] - 1, law.edges[-1] + 1, 20001)
    c = law.cdf(grid)
    assert np.all(np.diff(c) >= 0) and c[0] == 0 and c[-1] == 1
    assert not np.isnan(c).any()


@pytest.mark.statistical
@pytest.mark.parametrize("name", sorted(PIECEWISE))
def test_piecewise_sampler_matches_cdf_by_ks(name):
    law = make_piecewise(name)
    x = law.sample(DRAWS, rng=12345)
    assert x.shape == (DRAWS,) and not np.isnan(x).any()
    assert np.all((x >= law.edges[0]) & (x <= law.edges[-1]))
    # KS p-value is exact for a continuous law; reject at the Bonferroni-corrected ALPHA.
    assert stats.kstest(x, law.cdf).pvalue > ALPHA
    # No draw lands in a piece of zero mass (zero-width pieces included).
    j = np.clip(np.searchsorted(law.edges, x, side="right") - 1, 0, law.log_mass.size - 1)
    inside_zero = (law.log_mass[j] == -np.inf) & (x > law.edges[j]) & (x < law.edges[j + 1])
    assert not inside_zero.any()


def test_piecewise_huge_slopes_put_mass_at_the_right_edge():
    law = make_piecewise("huge_slopes")
    x = law.sample(10_000, rng=3)
    # piece 0 rises with slope 1e6 towards x = 1: all its mass is within ~1e-5 of 1
    in0 = x < 1.0 + 1e-12
    assert np.all(np.abs(x[in0] - 1.0) < 40e-6)
    assert np.isfinite(law.log_pdf(np.array([0.5, 1.0 - 1e-6, 2.5]))).all()


def test_piecewise_expected_abs_error_matches_quadrature():
    law = make_piecewise("constant_with_empty_piece")
    for truth in (-1.0, 0.3, 1.0, 2.0, 3.9, 6.0):
        def f(x: float) -> float:
            return abs(x - truth) * float(np.exp(law.log_pdf(np.array(x))))

        want = sum(
            integrate.quad(f, a, c, points=[truth] if a < truth < c else None, epsabs=0, epsrel=1e-11)[0]
            for a, c in zip(law.edges[:-1], law.edges[1:])
            if c > a
        )
        assert abs(law.expected_abs_error(truth) - want) < 1e-9
    with pytest.raises(NotImplementedError, match="piecewise-constant"):
        make_piecewise("slopes").expected_abs_error(0.0)


def test_piecewise_rejects_bad_edges():
    with pytest.raises(ValueError, match="non-decreasing"):
        PiecewiseDensity.from_log_density([0.0, 1.0, 0.5], [0.0, 0.0])
    with pytest.raises(ValueError, match="one more entry"):
        PiecewiseDensity.from_log_density([0.0, 1.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="no mass"):
        PiecewiseDensity.from_log_density([0.0, 0.0, 0.0], [0.0, 0.0])


def test_piecewise_normalisation_is_shift_invariant():
    e, ll, s = PIECEWISE["slopes"]
    a = PiecewiseDensity.from_log_density(e, ll, s)
    b = PiecewiseDensity.from_log_density(e, ll + 1e6, s)
    np.testing.assert_allclose(b.log_mass, a.log_mass, rtol=0, atol=1e-13)


# --------------------------------------------------------------------------------------------------
# GridRunsLaw
# --------------------------------------------------------------------------------------------------

GRIDS = {
    "plain": (1.5, 0.25, [0, 3, 10], [3, 4, 1], [0.0, -1.0, 2.0]),
    "huge_weights": (-2.0, 1.0, [0, 5, 7], [5, 2, 9], [-1e6, 1e6, 1e6 - 3.0]),
    "empty_run": (0.0, 0.1, [0, 2, 4], [2, 0, 3], [0.0, 50.0, 0.5]),
}


def grid_points(law: GridRunsLaw) -> np.ndarray:
    idx = np.concatenate([np.arange(f, f + c) for f, c in zip(law.first, law.count)])
    return law.values(idx)


@pytest.mark.parametrize("name", sorted(GRIDS))
def test_grid_pmf_sums_to_one_and_cdf_is_cumulative(name):
    law = GridRunsLaw.from_log_weights(*GRIDS[name])
    pts = grid_points(law)
    lp = law.log_pmf(pts)
    assert abs(math.fsum(np.exp(lp)) - 1) < 1e-13 + level_tolerance(GRIDS[name][4])
    # each point of run r has probability exp(weight_r) / Z: equal within a run
    origin, step, first, count, w = GRIDS[name]
    w = np.asarray(w, dtype=float)
    z = np.logaddexp.reduce(np.log(np.maximum(count, 1)) + np.where(np.asarray(count) > 0, w, -np.inf))
    want = np.concatenate([np.full(c, wi - z) for c, wi in zip(count, w)])
    np.testing.assert_allclose(lp, want, rtol=0, atol=1e-12 + level_tolerance(w))
    # off-grid and outside-run points have probability 0
    assert np.all(law.log_pmf(pts + step / 2) == -np.inf)
    gaps = [law.values(f + c) for f, c, f2 in zip(first[:-1], count[:-1], first[1:]) if f + c < f2]
    if gaps:
        assert np.all(law.log_pmf(np.array(gaps)) == -np.inf)
    # cdf at and between grid points is the cumulative pmf
    cum = np.cumsum(np.exp(lp))
    tol = 1e-12 + level_tolerance(w)
    np.testing.assert_allclose(law.cdf(pts), cum, rtol=0, atol=tol)
    np.testing.assert_allclose(law.cdf(pts + step / 2), cum, rtol=0, atol=tol)
    assert law.cdf(np.array(pts[0] - step / 2)) == 0.0


def test_grid_normalisation_is_shift_invariant():
    origin, step, first, count, w = GRIDS["plain"]
    a = GridRunsLaw.from_log_weights(origin, step, first, count, np.asarray(w))
    b = GridRunsLaw.from_log_weights(origin, step, first, count, np.asarray(w) + 1e6)
    np.testing.assert_allclose(b.log_mass, a.log_mass, rtol=0, atol=1e-13)


@pytest.mark.statistical
@pytest.mark.parametrize("name", sorted(GRIDS))
def test_grid_sampler_matches_pmf(name):
    law = GridRunsLaw.from_log_weights(*GRIDS[name])
    pts = grid_points(law)
    x = law.sample(DRAWS, rng=99)
    k = np.rint((x - law.origin) / law.step).astype(np.int64)
    np.testing.assert_allclose(x, law.values(k), rtol=0, atol=1e-12)  # on the grid
    pk = np.rint((pts - law.origin) / law.step).astype(np.int64)
    pos = {int(v): i for i, v in enumerate(pk)}
    assert set(np.unique(k).tolist()) <= set(pos)
    counts = np.zeros(pts.size)
    u, c = np.unique(k, return_counts=True)
    counts[[pos[int(v)] for v in u]] = c
    ok, stat, thr = chi2_ok(counts, np.exp(law.log_pmf(pts)))
    assert ok, f"chi-square {stat:.1f} > {thr:.1f}"


# --------------------------------------------------------------------------------------------------
# LocationScaleLaw
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("noise", ["laplace", "cauchy"])
def test_location_scale_atoms_and_density(noise):
    law = LocationScaleLaw(loc=0.7, scale=1.3, noise=noise, lower=-1.0, upper=2.0)
    lo_atom, hi_atom = law.atom_log_mass()
    dist = stats.laplace if noise == "laplace" else stats.cauchy
    assert abs(lo_atom - dist.logcdf(-1.0, 0.7, 1.3)) < 1e-12
    assert abs(hi_atom - dist.logsf(2.0, 0.7, 1.3)) < 1e-12
    inner = integrate.quad(lambda x: float(np.exp(law.log_pdf(np.array(x)))), -1.0, 2.0, points=[0.7], epsabs=0, epsrel=1e-12)[0]
    assert abs(inner + math.exp(lo_atom) + math.exp(hi_atom) - 1) < 1e-10
    assert law.log_pdf(np.array(-1.0)) == -np.inf and law.log_pdf(np.array(2.0)) == -np.inf
    assert law.cdf(np.array(-1.0 - 1e-9)) == 0 and abs(law.cdf(np.array(-1.0)) - math.exp(lo_atom)) < 1e-12
    assert law.cdf(np.array(2.0)) == 1 and abs(1 - law.cdf(np.array(2.0 - 1e-12)) - math.exp(hi_atom)) < 1e-9
    free = LocationScaleLaw(loc=0.7, scale=1.3, noise=noise)
    assert free.atom_log_mass() == (-np.inf, -np.inf)


@pytest.mark.statistical
@pytest.mark.parametrize("noise", ["laplace", "cauchy"])
def test_location_scale_sampler_atoms_and_body(noise):
    law = LocationScaleLaw(loc=0.2, scale=0.8, noise=noise, lower=-1.0, upper=1.5)
    x = law.sample(DRAWS, rng=4)
    assert np.all((x >= -1.0) & (x <= 1.5))
    # cells: the two atoms and 20 equal-probability-ish bins of the interior, probabilities from cdf
    inner_edges = np.linspace(-1.0, 1.5, 21)
    cdf = law.cdf(inner_edges)
    lo_atom, hi_atom = np.exp(law.atom_log_mass())
    p_inner = np.diff(np.concatenate(([lo_atom], cdf[1:-1], [1 - hi_atom])))
    probs = np.concatenate(([lo_atom], p_inner, [hi_atom]))
    counts = np.concatenate(
        ([np.sum(x == -1.0)], np.histogram(x[(x > -1.0) & (x < 1.5)], bins=inner_edges)[0], [np.sum(x == 1.5)])
    )
    ok, stat, thr = chi2_ok(counts.astype(float), probs)
    assert ok, f"chi-square {stat:.1f} > {thr:.1f}"
    free = LocationScaleLaw(loc=0.2, scale=0.8, noise=noise)
    assert stats.kstest(free.sample(DRAWS, rng=5), free.cdf).pvalue > ALPHA


def test_location_scale_rejects_bad_parameters():
    with pytest.raises(ValueError, match="noise"):
        LocationScaleLaw(0.0, 1.0, "gauss")
    with pytest.raises(ValueError, match="scale"):
        LocationScaleLaw(0.0, 0.0, "laplace")


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------


@pytest.mark.statistical
def test_sample_index_matches_probabilities_and_skips_impossible():
    log_p = np.array([-np.inf, 0.0, -1e6, np.log(3.0), -np.inf, -0.5, -np.inf]) + 1e6  # unnormalised
    idx = sample_index(log_p, DRAWS, np.random.default_rng(8))
    assert not np.isin(idx, [0, 4, 6]).any()
    p = np.exp(log_p - np.logaddexp.reduce(log_p))
    ok, stat, thr = chi2_ok(np.bincount(idx, minlength=p.size).astype(float), p)
    assert ok, f"chi-square {stat:.1f} > {thr:.1f}"


def test_log_expm1_ratio_against_direct_formula():
    z = np.array([-700.0, -30.0, -1.0, -1e-8, 0.0, 1e-12, 0.5, 20.0])
    with np.errstate(all="ignore"):
        direct = np.where(z == 0, 0.0, np.log(np.expm1(z) / z))
    # log((e^z - 1)/z) ~ z/2 near 0 is computed as a difference of two logs: absolute accuracy.
    np.testing.assert_allclose(log_expm1_ratio(z), direct, rtol=1e-13, atol=1e-14)
    big = np.array([1e3, 1e6, 1e300])
    np.testing.assert_allclose(log_expm1_ratio(big), big - np.log(big), rtol=1e-15)
    np.testing.assert_allclose(log_expm1_ratio(-big), -np.log(big), rtol=1e-15)


@pytest.mark.parametrize("kw,match", [
    (dict(loc=0.0, scale=1.0, noise="laplace", lower=0.0), "both lower and upper"),
    (dict(loc=0.0, scale=1.0, noise="laplace", lower=2.0, upper=1.0), "lower < upper"),
    (dict(loc=np.nan, scale=1.0, noise="cauchy"), "loc"),
    (dict(loc=np.inf, scale=1.0, noise="cauchy"), "loc"),
])
def test_location_scale_law_rejects_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        LocationScaleLaw(**kw)


def test_bad_levels_are_rejected():
    with pytest.raises(ValueError, match="NaN"):
        PiecewiseDensity.from_log_density([0.0, 1.0, 2.0], [0.0, np.nan])
    with pytest.raises(ValueError, match="NaN"):
        GridRunsLaw.from_log_weights(0.0, 1.0, [0, 1], [1, 1], [0.0, np.nan])
    with pytest.raises(ValueError, match="no mass"):
        GridRunsLaw.from_log_weights(0.0, 1.0, [0, 1], [0, 1], [0.0, -np.inf])
    with pytest.raises(ValueError, match="probability 0"):
        sample_index(np.array([-np.inf, -np.inf]), 3, np.random.default_rng(0))
