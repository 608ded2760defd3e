"""Duff median / quantile on discrete output domains: ``domain="integers"`` and
``domain="grid"`` with ``step``.

What is checked: ties become an advantage (1,000 copies of 0 give the tie with probability computed
exactly); the discrete utility equals breadth-first search over add/remove edits (the continuous
suite's oracle, o now on the grid); the run-based law equals brute-force enumeration of every grid
point of a 2 * 10^6-point grid; the run-based sampler, its full-sort twin and the windowed fast path
match the exact law; a 10^9-point grid costs O(n) (law sizes); bad grids give ValueError.

Statistical tests use fixed seeds and thresholds from a stated false-alarm rate: each chi-square
test rejects at alpha = 1e-6 / N_STAT_TESTS (Bonferroni over every chi-square test in this file,
parametrised cases counted), so a correct sampler fails one of them with probability < 1e-6.
"""

import math

import numpy as np
import pytest
from scipy import special, stats

from dpharness import mechanisms
from duff_oracle import counts_to_data, exact_cases
from dpharness.mechanisms import median_window, medians
from dpharness.mechanisms.duff_utility import DEFINITIONS, quantile_ratio
from dpharness.mechanisms.laws import GridRunsLaw

V, C, NMAX = 5, 9, 7  # BFS box as in test_duff.py: values 0..4 (data and o in 1..3), counts <= 9

# chi-square tests in this file: 2 (enumeration) + 3 (windowed with rejections) + 3 (public sample)
# + 1 (continuous_exponential on the integers)
N_STAT_TESTS = 9
ALPHA = 1e-6 / N_STAT_TESTS


def make(q=0.5, **kw):
    kw.setdefault("epsilon", 1.0)
    kw.setdefault("lower", -10.0)
    kw.setdefault("upper", 10.0)
    kw.setdefault("domain", "integers")
    if q == 0.5:
        return mechanisms.make("duff_median", **kw)
    return mechanisms.make("duff_quantile", q=q, **kw)


def chi2_merged(p, obs, alpha=ALPHA, min_expected=10.0):
    """Chi-square of observed counts against probabilities p over the same cells; adjacent cells
    are merged until each bin expects >= min_expected draws. Returns (statistic, threshold, bins)."""
    p = np.asarray(p, dtype=np.float64)
    obs = np.asarray(obs, dtype=np.float64)
    n = obs.sum()
    assert obs[p == 0].sum() == 0, "a zero-probability cell was drawn"
    # vectorised merge: cut where the cumulative expectation crosses a multiple of min_expected
    cum = np.cumsum(p * n)
    bin_id = np.minimum(np.floor(cum / min_expected - 1e-12).astype(np.int64), int(cum[-1] // min_expected) - 1)
    bin_id = np.maximum.accumulate(np.maximum(bin_id, 0))
    _, bin_id = np.unique(bin_id, return_inverse=True)
    e = np.bincount(bin_id, weights=p * n)
    o = np.bincount(bin_id, weights=obs)
    stat = float(np.sum((o - e) ** 2 / e))
    df = max(e.size - 1, 1)
    return stat, float(stats.chi2.isf(alpha, df)), e.size


def run_index(law, x):
    """Index of the run of a GridRunsLaw holding each output (checks the outputs are grid points)."""
    k = np.rint((np.asarray(x) - law.origin) / law.step).astype(np.int64)
    np.testing.assert_allclose(law.values(k), x, rtol=0, atol=1e-9 * max(1.0, abs(law.step)))
    r = np.searchsorted(law.first, k, side="right") - 1
    assert np.all(r >= 0) and np.all(k < law.first[r] + law.count[r])
    return r


def reference_lower_median_cost(L, E, G):
    """The closed form of docs/mechanisms.md ("Duff utility: closed forms") for the lower median
    (independent of duff_cost)."""
    e = np.maximum(E, 1)
    add = (E == 0).astype(np.int64)
    return add + np.maximum.reduce([np.zeros_like(L), L - e - G + 1, G - L - e])


# ---------------------------------------------------------------------------------------------
# ties: 1,000 copies of 0
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0])
def test_all_ties_on_the_integers_output_the_tie(eps):
    """1,000 copies of 0 on the integers of [-10, 10]. Lower median, L = #<o, E = #=o, G = #>o:
    o = 0 (E = 1000) costs 0; o < 0 (G = 1000) costs 1 + 999 = 1000; o > 0 (L = 1000) costs
    1 + 1000 = 1001. So P[M = 0] = 1 / (1 + 10 e^{-500 eps} + 10 e^{-500.5 eps}), computed here
    in log space by hand and compared with the mechanism's law."""
    x = np.zeros(1000)
    mech = make(epsilon=eps)
    law = mech.distribution(x)
    assert isinstance(law, GridRunsLaw)
    log_left, log_right = -eps * 1000 / 2, -eps * 1001 / 2
    log_z = special.logsumexp([0.0, math.log(10) + log_left, math.log(10) + log_right])
    grid = np.arange(-10.0, 11.0)
    want = np.where(grid == 0, 0.0, np.where(grid < 0, log_left, log_right)) - log_z
    np.testing.assert_allclose(law.log_pmf(grid), want, rtol=1e-12, atol=1e-300)
    p0 = math.exp(-log_z)
    assert p0 >= 0.99
    assert math.exp(float(law.log_pmf(0.0))) == pytest.approx(p0, rel=1e-15)
    np.testing.assert_allclose(mech.utility(x, grid), -np.where(grid == 0, 0, np.where(grid < 0, 1000, 1001)))
    # exact expected error: sum_k |k| P[M = k] (1.1e-20 at eps = 0.1, 6e-216 at eps = 1)
    exact = float(np.sum(np.abs(grid) * np.exp(want)))
    assert medians.expected_abs_error(mech, x) == pytest.approx(exact, rel=1e-9)
    assert exact < 1e-19
    draws = mech.sample(x, size=10_000, rng=np.random.default_rng(1))
    assert np.all(draws == 0.0)  # P[any draw != 0] <= 10,000 * 20 e^{-50} < 1e-16


def test_all_ties_continuous_domain_is_documented_side_by_side():
    """The same data on the continuous domain (Lebesgue measure; tests/test_duff.py has the law):
    every gap touching 0 but the two outer ones has length 0, so P[M = 0] = 0, the output is
    uniform on [-10, 0) w.p. 1/(1 + e^{-eps/2}) and on (0, 10] otherwise, E|M - 0| = 5 at every
    eps, and P[|M| < 1] = 0.1. The integer domain's error is < 1e-19 at every eps >= 0.1."""
    x = np.zeros(1000)
    for eps in (0.1, 1.0, 2.0):
        cont = make(epsilon=eps, domain="continuous")
        disc = make(epsilon=eps)
        law = cont.distribution(x)
        assert medians.expected_abs_error(cont, x) == pytest.approx(5.0, rel=1e-12)
        assert float(law.cdf(1.0) - law.cdf(-1.0)) == pytest.approx(0.1, rel=1e-12)
        assert float(law.cdf(0.0) - law.cdf(-1e-300)) == 0.0  # no atom at the tie
        assert medians.expected_abs_error(disc, x) < 1e-19


# ---------------------------------------------------------------------------------------------
# the discrete utility against breadth-first search
# ---------------------------------------------------------------------------------------------

GRIDS = [
    dict(domain="integers", lower=0.0, upper=4.0),  # universe value v is the integer v
    dict(domain="grid", step=0.5, lower=-1.0, upper=1.0),  # v -> -1 + 0.5 v
    dict(domain="grid", step=0.1, lower=10.0, upper=10.4),  # v -> 10 + 0.1 v (inexact decimals)
]


@pytest.mark.parametrize("grid", GRIDS, ids=["integers", "half", "tenth"])
@pytest.mark.parametrize("q,definition", [(0.5, d) for d in DEFINITIONS] + [(0.25, "lower"), (0.9, "set"),
                                                                            (0.333, "upper")])
def test_discrete_utility_and_law_equal_bfs(grid, q, definition):
    """utility(S, o) at every grid point o = 1..3 of the universe equals minus the BFS distance
    over add/remove edits (tests/duff_oracle.py), and the law's log-probability differences
    between grid points equal eps/2 times the BFS distance differences."""
    a, b = quantile_ratio(q)
    eps = 0.7
    h = grid.get("step", 1.0)
    mech = make(q, epsilon=eps, definition=definition, **grid)
    to_value = lambda v: grid["lower"] + h * np.asarray(v, dtype=np.float64)  # noqa: E731
    dist = {}
    for o in range(1, V - 1):
        cnt, d = exact_cases(V, C, o, a, b, definition, NMAX)
        for c, dd in zip(cnt, d):
            dist.setdefault(tuple(c), {})[o] = int(dd)
    checked = full = ties_at_o = 0
    for c, by_o in dist.items():
        x = to_value(counts_to_data(np.array(c)))
        os_ = sorted(by_o)
        u = mech.utility(x, to_value(os_))
        np.testing.assert_array_equal(u, [-by_o[o] for o in os_], err_msg=f"{c} {os_}")
        checked += len(os_)
        ties_at_o += sum(c[o] >= 1 for o in os_)
        if len(os_) == V - 2:
            lp = mech.distribution(x).log_pmf(to_value(os_))
            d = np.array([by_o[o] for o in os_], dtype=np.float64)
            np.testing.assert_allclose(lp - lp[0], -eps / 2 * (d - d[0]), rtol=0, atol=1e-12)
            full += 1
    # every dataset of size <= 7 on {1, 2, 3} (119) x 3 targets, minus the few the box cannot certify
    assert checked >= 290 and full >= 75 and ties_at_o >= 230


def test_snapping_is_nearest_grid_point_ties_up_after_clipping():
    mech = make(domain="grid", step=0.5, lower=-2.0, upper=2.0)
    g = mech.grid
    x = np.array([-7.0, -2.0, -1.76, -1.75, -1.74, -0.25, 0.0, 0.2499, 0.25, 0.26, 1.75, 1.99, 2.0, 9.0])
    want = np.array([-2.0, -2.0, -2.0, -1.5, -1.5, 0.0, 0.0, 0.0, 0.5, 0.5, 2.0, 2.0, 2.0, 2.0])
    np.testing.assert_array_equal(g.values(g.snap(x)), want)
    # the law of the raw data is the law of the snapped data
    a, b = mech.distribution(x), mech.distribution(want)
    np.testing.assert_array_equal(a.first, b.first)
    np.testing.assert_array_equal(a.log_mass, b.log_mass)
    # and snapping agrees with floor((x - lower)/h + 1/2) where that is exact (h = 0.5, 0.01-data)
    z = np.round(np.random.default_rng(3).normal(scale=1.5, size=5000), 2)
    k = np.clip(np.floor((np.clip(z, -2, 2) + 2.0) / 0.5 + 0.5), 0, 8).astype(np.int64)
    np.testing.assert_array_equal(g.snap(z), k)


# ---------------------------------------------------------------------------------------------
# the exact law against enumeration of a grid of 2 * 10^6 + 1 points
# ---------------------------------------------------------------------------------------------


def _enumerated_log_pmf(x, lower, h, size, eps):
    """log P[M = lower + k h] for every k = 0..size by brute force: snap each record to the nearest
    grid point (ties up, exact for the data used here), count L, E, G at every grid point, apply
    the lower-median closed form of docs/mechanisms.md, normalise in log space."""
    k_rec = np.sort(np.clip(np.floor((x - lower) / h + 0.5), 0, size).astype(np.int64))
    k = np.arange(size + 1, dtype=np.int64)
    L = np.searchsorted(k_rec, k, side="left")
    E = np.searchsorted(k_rec, k, side="right") - L
    G = x.size - L - E
    lw = -eps / 2 * reference_lower_median_cost(L, E, G).astype(np.float64)
    return lw - special.logsumexp(lw), k_rec


def _big_grid_case():
    rng = np.random.default_rng(2024)
    # sparse integers (gaps ~ 75 grid points near the median), a tie block of 20 copies ~ 16 ranks
    # above the median, a few records outside [lower, upper] (clipped)
    x = np.round(rng.normal(scale=1.5e5, size=5000))
    x[:20] = 1234.0
    x[400:410] = rng.choice([-5e6, 7e6], size=10)
    return x


def test_law_equals_enumeration_on_a_grid_of_two_million_points():
    x = _big_grid_case()
    lower, upper, eps = -1_000_000.0, 1_000_000.0, 0.2
    mech = make(epsilon=eps, lower=lower, upper=upper)
    law = mech.distribution(x)
    assert law.count.sum() == 2_000_001 and law.first.size <= 2 * x.size + 1
    log_p, _ = _enumerated_log_pmf(x, lower, 1.0, 2_000_000, eps)
    grid = lower + np.arange(2_000_001, dtype=np.float64)
    lp = law.log_pmf(grid)
    live = log_p > -700  # compare where the probability is representable
    assert live.sum() > 100_000
    np.testing.assert_allclose(lp[live], log_p[live], rtol=0, atol=1e-8)
    assert np.all(lp[~live] < -690)
    # exact expected error equals the enumerated sum
    t = mech.statistic(x)
    assert medians.expected_abs_error(mech, x) == pytest.approx(float(np.sum(np.exp(log_p) * np.abs(grid - t))),
                                                                rel=1e-9)


@pytest.mark.statistical
@pytest.mark.parametrize("path", ["window", "reference"])
def test_samplers_match_enumerated_law_on_a_grid_of_two_million_points(path, monkeypatch):
    """Chi-square of 40,000 draws against the enumerated probabilities of all 2,000,001 grid points
    (cells = grid points, merged in order to >= 10 expected draws, so the test also sees the
    uniform choice inside runs). ``window``: sample() must take the windowed path (the full law is
    made unavailable); ``reference``: the full-sort run-based sampler."""
    x = _big_grid_case()
    lower, upper, eps = -1_000_000.0, 1_000_000.0, 0.2
    mech = make(epsilon=eps, lower=lower, upper=upper)
    log_p, _ = _enumerated_log_pmf(x, lower, 1.0, 2_000_000, eps)
    rng = np.random.default_rng(77)
    if path == "window":
        def boom(self, data):
            raise AssertionError("full sort used")

        monkeypatch.setattr(medians.DuffMedian, "distribution", boom)
        draws = mech.sample(x, size=40_000, rng=rng)
    else:
        draws = mech.sample_reference(x, size=40_000, rng=rng)
    k = np.rint(draws - lower).astype(np.int64)
    np.testing.assert_array_equal(lower + k, draws)  # outputs are grid points
    obs = np.bincount(k, minlength=2_000_001)
    stat, thr, bins = chi2_merged(np.exp(log_p), obs)
    assert bins >= 1000 and stat <= thr, (stat, thr, bins)


def test_enumeration_chi_square_has_power():
    """Positive control for the test above (same data, draws, cells): draws at eps = 0.3 instead of
    0.2, or draws pushed into the first half of their run (right run masses, wrong within-run
    law), are rejected far beyond the threshold."""
    x = _big_grid_case()
    lower = -1_000_000.0
    log_p, _ = _enumerated_log_pmf(x, lower, 1.0, 2_000_000, 0.2)
    wrong_eps = make(epsilon=0.3, lower=lower, upper=-lower).sample_reference(x, 40_000, np.random.default_rng(77))
    mech = make(epsilon=0.2, lower=lower, upper=-lower)
    law = mech.distribution(x)
    k = np.rint(mech.sample_reference(x, 40_000, np.random.default_rng(77)) - lower).astype(np.int64)
    r = np.searchsorted(law.first, k, side="right") - 1
    squeezed = law.first[r] + (k - law.first[r]) // 2
    for kk in (np.rint(wrong_eps - lower).astype(np.int64), squeezed):
        stat, thr, _ = chi2_merged(np.exp(log_p), np.bincount(kk, minlength=2_000_001))
        assert stat > 1.5 * thr, (stat, thr)


# ---------------------------------------------------------------------------------------------
# the windowed fast path on discrete domains
# ---------------------------------------------------------------------------------------------


def _discrete_datasets(rng, n):
    yield "small_ints", dict(lower=-20.0, upper=20.0), rng.integers(-6, 7, size=n).astype(float)
    yield "sparse_ints", dict(lower=-20000.0, upper=20000.0), np.round(rng.normal(scale=3000, size=n))
    z = np.round(rng.normal(scale=50, size=n))
    z[np.abs(z) < 20] = 3.0  # a tie block straddling the median
    yield "tie_block", dict(lower=-200.0, upper=200.0), z
    yield "beyond_bounds", dict(lower=-30.0, upper=30.0), np.round(rng.standard_cauchy(size=n) * 8)
    yield "half_grid_raw", dict(domain="grid", step=0.5, lower=-10.0, upper=10.0), rng.normal(scale=2, size=n)


@pytest.mark.parametrize("q,definition", [(0.5, "lower"), (0.5, "upper"), (0.5, "set"), (0.3, "lower"),
                                          (0.9, "set"), (0.05, "upper")])
def test_window_proposal_equals_full_law_on_the_window(q, definition):
    """The window's runs/points are exactly the law's pieces between x_(s) and x_(t) (same first,
    count, and log weights up to one constant), and each envelope region covers exactly the grid
    points outside and dominates their exact mass."""
    rng = np.random.default_rng(17)
    for name, grid, x in _discrete_datasets(rng, 5000):
        for K in (2, 40, 300):
            for eps in (0.3, 2.0):
                mech = make(q, epsilon=eps, definition=definition, **grid)
                law = mech.distribution(x)
                prop = median_window.window_proposal(mech, x, K)
                nw = prop.nwin
                j0 = int(np.searchsorted(law.first, prop.lo[0]))
                sl = slice(j0, j0 + nw)
                np.testing.assert_array_equal(prop.lo[:nw], law.first[sl], err_msg=name)
                np.testing.assert_array_equal(prop.width[:nw], law.count[sl], err_msg=name)
                assert prop.width[nw] == law.count[:j0].sum() and prop.lo[nw] == 0
                assert prop.width[nw + 1] == law.count[j0 + nw:].sum()
                assert prop.lo[nw + 1] == prop.lo[nw - 1] + prop.width[nw - 1]
                shift = prop.log_weight[:nw] - law.log_mass[sl]
                np.testing.assert_allclose(shift, shift[0], rtol=0, atol=1e-9, err_msg=name)
                env = prop.log_weight[nw:] - shift[0]
                with np.errstate(divide="ignore"):
                    true_left = special.logsumexp(law.log_mass[:j0]) if j0 > 0 else -np.inf
                    true_right = special.logsumexp(law.log_mass[j0 + nw:]) if j0 + nw < law.first.size else -np.inf
                assert true_left <= env[0] + 1e-9 and true_right <= env[1] + 1e-9, name


@pytest.mark.statistical
@pytest.mark.parametrize("q,definition,eps", [(0.5, "lower", 1.0), (0.5, "set", 0.2), (0.3, "upper", 2.0)])
def test_windowed_sampler_with_rejections_matches_exact_law(q, definition, eps):
    """Small K: the envelope regions carry real proposal mass, so outer grid points are proposed
    and accepted/rejected by exact counting; the draws must still follow the exact law
    (chi-square over grid points, merged to >= 10 expected)."""
    rng = np.random.default_rng(101)
    x = np.round(rng.normal(scale=30000, size=3000))  # sparse integers: gaps ~ 25 grid points
    lower, upper = -300_000.0, 300_000.0
    mech = make(q, epsilon=eps, definition=definition, lower=lower, upper=upper)
    law = mech.distribution(x)
    # the smallest K whose envelope regions hold at most half the proposal mass (each outer
    # proposal costs O(n), so a looser envelope only makes the test slower)
    K = next(k for k in (4, 5, 6, 8, 10, 12, 14, 17, 20, 24, 28, 34, 40, 48, 56, 80)
             if median_window.window_proposal(mech, x, k).outside_fraction() <= 0.5)
    prop = median_window.window_proposal(mech, x, K)
    assert prop.outside_fraction() > 0.005  # >= 100 outer proposals: the rejection path is used
    draws = median_window._sample_window(mech, x, 20000, np.random.default_rng(5), K, max_outside=None)
    grid = lower + np.arange(600_001, dtype=np.float64)
    k = np.rint(draws - lower).astype(np.int64)
    np.testing.assert_array_equal(lower + k, draws)
    stat, thr, bins = chi2_merged(np.exp(law.log_pmf(grid)), np.bincount(k, minlength=600_001))
    assert bins >= 100 and stat <= thr, (stat, thr, bins)


@pytest.mark.statistical
@pytest.mark.parametrize("case", ["heavy_ties", "sparse_quantile", "half_grid"])
def test_public_sample_takes_the_window_path_and_matches_exact_law(case, monkeypatch):
    """sample() at n = 20,000 on a discrete domain uses the window (the full law is made
    unavailable) even with heavy ties, which force the continuous domain back to the full sort."""
    rng = np.random.default_rng(202)
    if case == "heavy_ties":
        x = rng.integers(-300, 301, size=20_000).astype(float)  # ~33 copies of every value
        mech = make(epsilon=0.05, lower=-1000, upper=1000)
    elif case == "sparse_quantile":
        x = np.round(rng.normal(scale=2000, size=20_000))
        mech = make(0.75, epsilon=0.1, lower=-10_000, upper=10_000, definition="set")
    else:
        x = rng.normal(scale=0.3, size=20_000)
        mech = make(epsilon=0.02, domain="grid", step=0.01, lower=-3, upper=3)
    law = mech.distribution(x)

    def boom(self, data):
        raise AssertionError("full sort used")

    monkeypatch.setattr(type(mech), "distribution", boom)
    draws = mech.sample(x, size=20_000, rng=np.random.default_rng(9))
    r = run_index(law, draws)
    stat, thr, bins = chi2_merged(np.exp(law.log_mass), np.bincount(r, minlength=law.first.size))
    assert bins >= 3 and stat <= thr, (stat, thr, bins)


def test_window_and_reference_are_reproducible_on_a_grid():
    x = np.round(np.random.default_rng(8).normal(scale=40, size=50_000))
    mech = make(0.3, epsilon=0.5, lower=-500, upper=500, definition="upper")
    a = mech.sample(x, size=(4, 5), rng=np.random.default_rng(1))
    np.testing.assert_array_equal(a, mech.sample(x, size=(4, 5), rng=np.random.default_rng(1)))
    assert a.shape == (4, 5) and np.all(a == np.round(a))
    one = mech.sample(x, rng=3)
    assert np.ndim(one) == 0 and float(one) == round(float(one))


# ---------------------------------------------------------------------------------------------
# a 10^9-point grid is never enumerated
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("grid", [dict(domain="integers", lower=0.0, upper=1e9),
                                  dict(domain="grid", step=1e-3, lower=-5e5, upper=5e5)], ids=["ints", "milli"])
def test_billion_point_grid_costs_o_n(grid, monkeypatch):
    """Law and window sizes depend on n, not on the 10^9 + 1 grid points."""
    rng = np.random.default_rng(99)
    mid = (grid["lower"] + grid["upper"]) / 2
    h = grid.get("step", 1.0)
    x = mid + h * np.round(rng.normal(scale=2e5, size=8000))
    x[:500] = mid  # ties
    mech = make(epsilon=0.5, **grid)
    assert mech.grid.size == 10**9
    law = mech.distribution(x)
    assert law.first.size <= 2 * x.size + 1 and int(law.count.sum()) == 10**9 + 1
    assert law.first.nbytes + law.count.nbytes + law.log_mass.nbytes <= 24 * (2 * x.size + 1)
    assert math.isfinite(medians.expected_abs_error(mech, x))
    ref = mech.sample_reference(x, size=1000, rng=np.random.default_rng(1))
    K = median_window._window_half_width(x.size, 0.5, 0.5, 1000)
    assert K is not None
    prop = median_window.window_proposal(mech, x, K)
    assert prop.lo.size == prop.width.size == prop.log_weight.size <= 2 * (2 * K + 1) + 2

    def boom(self, data):
        raise AssertionError("full sort used")

    monkeypatch.setattr(medians.DuffMedian, "distribution", boom)
    out = mech.sample(x, size=1000, rng=np.random.default_rng(2))
    for v in (ref, out):
        mech.grid.index_of(v)  # every output is a grid point (ValueError otherwise)
        assert np.all((v >= grid["lower"]) & (v <= grid["upper"]))
    # both samplers concentrate on the tie block at eps = 0.5 (tie 500 copies at the median)
    assert np.mean(out == mid) > 0.9 and np.mean(ref == mid) > 0.9


# ---------------------------------------------------------------------------------------------
# bad grids
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kw,match", [
    (dict(domain="grid", step=0.0), "step must be > 0"),
    (dict(domain="grid", step=-0.5), "step must be > 0"),
    (dict(domain="grid", step=float("nan")), "step"),
    (dict(domain="grid", step=float("inf")), "step"),
    (dict(domain="grid", step="1"), "step"),
    (dict(domain="grid", step=True), "step"),
    (dict(domain="grid"), "step must be given"),
    (dict(domain="integers", step=2.0), "step"),
    (dict(domain="continuous", step=1.0), "step"),
    (dict(domain="integers", lower=-10.5), "lower must be on the grid"),
    (dict(domain="integers", upper=9.999), "upper must be on the grid"),
    (dict(domain="integers", lower=1e10 + 0.5, upper=1e10 + 100.5), "lower must be on the grid"),
    (dict(domain="grid", step=0.3, lower=-10.0), "lower must be on the grid"),
    (dict(domain="grid", step=0.25, lower=-1.0, upper=2.1), "upper must be on the grid"),
    (dict(domain="integers", lower=0.0, upper=2.0**62), "2\\^62"),  # 2^62 + 1 points
    (dict(domain="integers", lower=-2.0**62, upper=2.0**62), "2\\^62"),
    (dict(domain="integers", lower=0.0, upper=2.0**53), "2\\^53"),  # 2^53 + 1 points: indices inexact
    (dict(domain="grid", step=1e-10, lower=0.0, upper=1e9), "2\\^62"),
    (dict(domain="grid", step=1e-300, lower=0.0, upper=1e300), "2\\^62"),  # inf points
    (dict(domain="lattice"), "domain"),
])
def test_bad_grids_raise_value_error(kw, match):
    for q in (0.5, 0.3):
        with pytest.raises(ValueError, match=match):
            make(q, **kw)


def test_largest_grids_are_accepted():
    m = make(domain="integers", lower=0.0, upper=2.0**53 - 1)  # 2^53 points: every index exact in float64
    assert m.grid.size == 2**53 - 1  # Grid.size is the largest index (points 0..size)
    x = np.full(101, 3.0)
    assert np.all(m.sample(x, size=50, rng=0) == 3.0)  # data at 3 on a 2^53-point grid: output 3
    assert make(domain="grid", step=0.1, lower=-1000, upper=1000).grid.size == 20_000
    assert make(domain="grid", step=0.01, lower=-12345.67, upper=1e5).grid.size == 11_234_567


def test_utility_rejects_points_off_the_grid():
    mech = make(domain="grid", step=0.5, lower=-2, upper=2)
    x = np.array([0.0, 0.5, 1.0])
    assert mech.utility(x, [0.5])[0] == 0
    for bad in ([0.25], [2.5], [np.nan]):
        with pytest.raises(ValueError, match="grid points"):
            mech.utility(x, bad)


def test_registry_exposes_domain_and_step():
    for name in ("duff_median", "duff_quantile"):
        p = mechanisms.registry.parameters(name)
        assert p["domain"] == "continuous" and p["step"] is None
    assert medians.DOMAINS == ("continuous", "integers", "grid")
    mech, data = mechanisms.registry.get("duff_quantile").example()
    assert mech.domain == "integers" and isinstance(mech.distribution(data), GridRunsLaw)


# ---------------------------------------------------------------------------------------------
# continuous_exponential on a discrete domain (piecewise-constant utility)
# ---------------------------------------------------------------------------------------------


def _ce(**kw):
    kw.setdefault("epsilon", 1.0)
    return mechanisms.make("continuous_exponential", **kw)


def _enumerated_ce_log_pmf(breakpoints, u, lower, h, size, eps, sens):
    """Brute force: every grid point v = lower + k h gets the utility of the piece
    [b_j, b_{j+1}) holding it (the last piece closed; v within 1e-9 steps of b_j counts as b_j)."""
    v = lower + h * np.arange(size + 1, dtype=np.float64)
    b = np.asarray(breakpoints, dtype=np.float64)
    j = np.searchsorted(b, v + 1e-9 * h, side="right") - 1
    j = np.clip(j, 0, len(u) - 1)
    lw = eps / (2 * sens) * np.asarray(u, dtype=np.float64)[j]
    return lw - special.logsumexp(lw)


CE_CASES = [
    (dict(domain="integers"), (0.0, 2.5, 3.0, 3.2, 10.0, 40.0), [0.0, 4.0, 9.0, -3.0, 1.0]),
    (dict(domain="grid", step=0.1), (-1.0, -0.3, 0.0, 0.7, 1.0), [2.0, -1.0, 5.5, 0.5]),
    (dict(domain="grid", step=0.25), (-5.0, -4.9, 0.125, 0.25, 5.0), [1e6, 1e6 - 3, 1e6 + 2, 1e6 - 1]),
]


@pytest.mark.parametrize("grid,breakpoints,u", CE_CASES, ids=["ints", "tenth", "quarter_huge_u"])
def test_continuous_exponential_discrete_law_equals_enumeration(grid, breakpoints, u):
    eps, sens = 0.8, 2.0
    mech = _ce(epsilon=eps, breakpoints=breakpoints, sensitivity=sens, **grid)
    g = mech.grid
    law = mech.distribution(u)
    assert isinstance(law, GridRunsLaw) and int(law.count.sum()) == g.size + 1
    want = _enumerated_ce_log_pmf(breakpoints, u, g.lower, g.step, g.size, eps, sens)
    pts = g.values(np.arange(g.size + 1))
    np.testing.assert_allclose(law.log_pmf(pts), want, rtol=0, atol=1e-9)
    np.testing.assert_allclose(mech.log_pdf(u, pts), want, rtol=0, atol=1e-9)
    assert np.all(np.isneginf(law.log_pmf(pts[:-1] + g.step / 3)))  # nothing off the grid


@pytest.mark.statistical
def test_continuous_exponential_discrete_sampler_matches_enumeration():
    grid, breakpoints, u = CE_CASES[0]
    mech = _ce(epsilon=0.8, breakpoints=breakpoints, sensitivity=2.0, **grid)
    want = _enumerated_ce_log_pmf(breakpoints, u, 0.0, 1.0, 40, 0.8, 2.0)
    draws = mech.sample(u, size=20_000, rng=np.random.default_rng(12))
    k = np.rint(draws).astype(np.int64)
    np.testing.assert_array_equal(k, draws)
    stat, thr, bins = chi2_merged(np.exp(want), np.bincount(k, minlength=41))
    assert bins >= 20 and stat <= thr, (stat, thr, bins)


def test_continuous_exponential_billion_point_grid_and_privacy():
    """10^9 + 1 points, m = 4 pieces: the law has 4 runs. Neighbouring utilities (every entry
    moved by at most the sensitivity) give point log-ratios <= epsilon, attained up to rounding."""
    mech = _ce(epsilon=0.5, breakpoints=(0.0, 1e3, 2.5e8, 7e8, 1e9), sensitivity=1.0, domain="integers")
    law = mech.distribution([0.0, 3.0, 1.0, -2.0])
    assert law.first.size == 4 and int(law.count.sum()) == 10**9 + 1
    np.testing.assert_array_equal(law.count, [1000, 2.5e8 - 1000, 4.5e8, 3e8 + 1])
    out = mech.sample([0.0, 3.0, 1.0, -2.0], size=1000, rng=np.random.default_rng(3))
    mech.grid.index_of(out)
    rng = np.random.default_rng(4)
    worst = 0.0
    for _ in range(200):
        u = rng.normal(scale=3, size=4)
        v = u + rng.choice([-1.0, 1.0], size=4) * rng.uniform(0.5, 1.0, size=4)  # |u - v| <= 1
        pts = np.array([0.0, 1e3, 2.5e8, 7e8])
        r = float(np.max(np.abs(mech.log_pdf(u, pts) - mech.log_pdf(v, pts))))
        assert r <= 0.5 * (1 + 1e-9)
        worst = max(worst, r)
    assert worst > 0.3


@pytest.mark.parametrize("kw,match", [
    (dict(domain="integers", breakpoints=(0.5, 1.0, 4.0)), "lower must be on the grid"),
    (dict(domain="grid", step=0.5, breakpoints=(0.0, 1.0, 4.2)), "upper must be on the grid"),
    (dict(domain="grid", step=0.0), "step must be > 0"),
    (dict(domain="continuous", step=1.0), "step"),
    (dict(domain="integers", breakpoints=(0.0, 1.0, 2.0**62)), "2\\^62"),
    (dict(domain="reals"), "domain"),
])
def test_continuous_exponential_bad_discrete_parameters(kw, match):
    kw.setdefault("breakpoints", (0.0, 1.0, 4.0))
    with pytest.raises(ValueError, match=match):
        _ce(**kw)
