"""GJK21's other many-quantiles baselines (mechanisms/quantile_baselines.py).

KS tests: every distributional check in this file is a one-sample Kolmogorov-Smirnov test at a fixed
seed against the exact law of one coordinate. The file holds N_KS such tests; each must give
p > FAMILY_ALPHA / N_KS (Bonferroni), so a correct sampler fails any of them with probability at most
FAMILY_ALPHA = 0.01 over the seeds one could have chosen (the fixed seed makes the outcome
reproducible, the threshold says how surprised to be).
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpharness import mechanisms
from dpharness.mechanisms import quantile_baselines as qb

FAMILY_ALPHA = 0.01
N_KS = 3  # smooth, csmooth (KS) and the tree's first-step binomial test
KS_THRESHOLD = FAMILY_ALPHA / N_KS

DATA = np.random.default_rng(7).normal(0.0, 5.0, 1000)
QS = (0.1, 0.25, 0.5, 0.75, 0.9)


def _pairs_oracle(x, k, beta, a, b):
    z = np.concatenate(([a], np.clip(np.sort(x), a, b), [b]))
    n = x.size
    i = np.arange(k + 1)[:, None]
    j = np.arange(k, n + 2)[None, :]
    ok = i < j
    vals = (z[j] - z[i]) * np.exp(-beta * np.where(ok, j - i - 1, 0))
    return float(vals[ok].max())


def test_order_statistic_smooth_sensitivity_matches_pair_form():
    rng = np.random.default_rng(3)
    for _ in range(150):
        n = int(rng.integers(1, 40))
        x = np.round(rng.normal(0, 3, n), 1)  # ties included
        k = int(rng.integers(1, n + 1))
        beta = float(rng.choice([0.01, 0.1, 1.0, 5.0]))
        assert qb.order_statistic_smooth_sensitivity(x, k, beta, -10, 10) == pytest.approx(
            _pairs_oracle(x, k, beta, -10.0, 10.0), rel=1e-12, abs=0)


def test_median_rank_agrees_with_the_median_module():
    from dpharness.mechanisms.median_sensitivity import median_smooth_sensitivity

    x = DATA[:101]
    assert qb.order_statistic_smooth_sensitivity(x, 51, 0.05, -100, 100) == pytest.approx(
        median_smooth_sensitivity(x, 0.05, -100, 100), rel=1e-12)


@pytest.mark.parametrize("name", ["smooth_quantiles", "csmooth_quantiles"])
def test_shapes_sorted_reproducible(name):
    mech = mechanisms.make(name, **{**mechanisms.registry.get(name).example()[0].params(), "quantiles": QS,
                                    "lower": -100.0, "upper": 100.0})
    a = mech.sample(DATA, size=200, rng=11)
    assert a.shape == (200, len(QS)) and np.all(np.diff(a, axis=1) >= 0)
    assert np.all((a >= -100) & (a <= 100))
    np.testing.assert_array_equal(a, mech.sample(DATA, size=200, rng=11))
    assert mech.sample(DATA, rng=1).shape == (len(QS),)
    assert mech.sample(DATA, size=(4, 3), rng=1).shape == (4, 3, len(QS))


def test_smooth_claim_and_calibration():
    mech = qb.SmoothQuantiles(epsilon=1.0, lower=-100, upper=100, quantiles=QS, delta=1e-6)
    c = mech.claim
    assert (c.epsilon, c.delta, c.neighbours) == (1.0, 1e-6, "replace_one")
    e, d = mech.per_quantile
    assert e == pytest.approx(0.2) and d == pytest.approx(2e-7)
    assert mech.beta == pytest.approx(0.2 / (2 * math.log(2 / 2e-7)))
    centres, scales = mech.centres_and_scales(DATA)
    np.testing.assert_array_equal(centres, mech.statistic(DATA))
    s = [qb.order_statistic_smooth_sensitivity(DATA, int(math.ceil(q * 1000 - 1e-12)), mech.beta, -100, 100) for q in QS]
    np.testing.assert_allclose(scales, 2 * np.array(s) / 0.2, rtol=1e-12)


def test_smooth_one_coordinate_against_its_exact_law():
    # m = 1: the sorted row is the coordinate itself; clipping mass is negligible at this scale
    mech = qb.SmoothQuantiles(epsilon=1.0, lower=-100, upper=100, quantiles=(0.3,), delta=1e-6)
    law = mech.marginal(DATA, 0)
    draws = mech.sample(DATA, size=20000, rng=2021)[:, 0]
    p = stats.kstest(draws, lambda v: np.asarray(law.cdf(np.asarray(v)))).pvalue
    assert p > KS_THRESHOLD, p


@pytest.mark.parametrize("kw, match", [
    ({"epsilon": 0.0}, "epsilon"),
    ({"lower": 5.0, "upper": 1.0}, "lower"),
    ({"quantiles": (0.5, 0.2)}, "quantiles"),
    ({"quantiles": ()}, "quantiles"),
    ({"quantiles": (0.0,)}, "quantiles"),
    ({"delta": 0.0}, "delta"),
    ({"delta": None}, "delta"),
    ({"neighbours": "add_remove"}, "neighbours"),
    ({"neighbours": "nope"}, "neighbours"),
])
def test_smooth_bad_input(kw, match):
    base = dict(epsilon=1.0, lower=-10.0, upper=10.0, quantiles=(0.5,), delta=1e-6)
    with pytest.raises(ValueError, match=match):
        qb.SmoothQuantiles(**{**base, **kw})


def test_bad_data_and_size():
    mech, data = qb.SmoothQuantiles.example()
    with pytest.raises(ValueError, match="data"):
        mech.sample(np.array([]), size=3, rng=0)
    with pytest.raises(ValueError, match="data"):
        mech.sample(np.array([1.0, np.nan]), size=3, rng=0)
    with pytest.raises(ValueError, match="size"):
        mech.sample(data, size=-1, rng=0)
    with pytest.raises(ValueError, match="k must"):
        qb.order_statistic_smooth_sensitivity(data, 0, 0.1, -10, 10)


def _lln_cdf(v, centre, scale, sigma):
    """cdf of centre + scale L e^{sigma N} (L standard Laplace, N standard normal) by 120-node
    Gauss-Hermite quadrature over N."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(120)
    weights = weights / weights.sum()
    u = (np.asarray(v, dtype=float)[:, None] - centre) / (scale * np.exp(sigma * nodes[None, :]))
    lap = np.where(u < 0, 0.5 * np.exp(np.minimum(u, 0)), 1 - 0.5 * np.exp(-np.maximum(u, 0)))
    return lap @ weights


def test_lln_sigma_is_the_root_and_s_positive():
    for eps, t in [(1.0, 0.1), (0.2, 0.01), (1 / math.sqrt(29), 1.0), (3.0, 0.5)]:
        s = qb.lln_sigma(eps, t)
        assert (5 * eps / t) * s ** 3 - 5 * s ** 2 - 1 == pytest.approx(0, abs=1e-9)
        assert s > t / eps  # so s = e^{-1.5 sigma^2} (eps - t/sigma) > 0
        real = [r.real for r in np.roots([5 * eps / t, -5, 0, -1]) if abs(r.imag) < 1e-9]
        assert s == pytest.approx(max(real), rel=1e-9)


def test_csmooth_claim_is_the_zcdp_conversion():
    mech = qb.CSmoothQuantiles(epsilon=1.0, lower=-100, upper=100, quantiles=QS, t=0.1, delta=1e-6)
    assert mech.rho == 0.5 and mech.per_quantile_epsilon == pytest.approx(1 / math.sqrt(5))
    c = mech.claim
    assert c.epsilon == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e6)))
    assert (c.delta, c.neighbours) == (1e-6, "replace_one")
    # Bun-Steinke LLN: each coordinate is (1/2) e^2-CDP with e = t/sigma + e^{1.5 sigma^2} s = eps'
    ts, sig, log_s = mech.noise_parameters()
    np.testing.assert_allclose(ts / sig + np.exp(1.5 * sig ** 2 + log_s), mech.per_quantile_epsilon, rtol=1e-12)


def test_csmooth_tuned_t_is_data_independent_and_in_grid_range():
    a = qb.CSmoothQuantiles(epsilon=1.0, lower=-100, upper=100, quantiles=QS)
    ts = a.ts
    assert len(ts) == len(QS) and all(0.01 <= t <= 1.0 for t in ts)
    assert ts == qb.CSmoothQuantiles(epsilon=1.0, lower=-100, upper=100, quantiles=QS).ts


def test_csmooth_one_coordinate_against_its_exact_law():
    mech = qb.CSmoothQuantiles(epsilon=1.0, lower=-100, upper=100, quantiles=(0.3,), t=0.1)
    c, log_scale, sig = mech.centres_and_log_scales(DATA)
    draws = mech.sample(DATA, size=20000, rng=2022)[:, 0]
    p = stats.kstest(draws, lambda v: _lln_cdf(v, c[0], math.exp(log_scale[0]), sig[0])).pvalue
    assert p > KS_THRESHOLD, p


@pytest.mark.parametrize("kw, match", [
    ({"epsilon": -1.0}, "epsilon"),
    ({"quantiles": (0.5, 0.5)}, "quantiles"),
    ({"t": 0.0}, "t must"),
    ({"t": (0.1, 0.2)}, "t must"),
    ({"t": "x"}, "t must"),
    ({"delta": 1.5}, "delta"),
    ({"neighbours": "add_remove"}, "neighbours"),
])
def test_csmooth_bad_input(kw, match):
    base = dict(epsilon=1.0, lower=-10.0, upper=10.0, quantiles=(0.5,), t=0.1)
    with pytest.raises(ValueError, match=match):
        qb.CSmoothQuantiles(**{**base, **kw})


def test_tree_shapes_sorted_reproducible_and_blocks():
    mech = qb.TreeQuantiles(epsilon=1.0, lower=-100, upper=100, quantiles=QS)
    a = mech.sample(DATA, size=300, rng=5)
    assert a.shape == (300, len(QS)) and np.all(np.diff(a, axis=1) >= 0)
    assert np.all((a >= -100) & (a <= 100))
    np.testing.assert_array_equal(a, mech.sample(DATA, size=300, rng=5))
    assert mech.sample(DATA, rng=1).shape == (len(QS),)
    assert mech.sample(DATA, size=0, rng=1).shape == (0, len(QS))
    big = mech.sample(DATA, size=qb._TREE_BLOCK + 10, rng=9)  # more than one block
    assert big.shape == (qb._TREE_BLOCK + 10, len(QS)) and np.all(np.diff(big, axis=1) >= 0)


@pytest.mark.parametrize("neighbours", ["replace_one", "add_remove"])
def test_tree_without_noise_returns_the_true_quantile(neighbours):
    # epsilon -> large: the noise is ~1e-9 of a count; the answer lies in the leaf of x_(ceil(q n)).
    # (Laplace only: the Gaussian tree's sigma formula is not (eps, delta)-DP at huge epsilon, and
    # the constructor rejects it -- test_tree_bad_input; the descent is shared code.)
    noise, delta = "laplace", None
    rng = np.random.default_rng(4)
    x = rng.uniform(-50, 50, 999)
    mech = qb.TreeQuantiles(epsilon=1e9, lower=-100, upper=100, quantiles=QS, noise=noise, delta=delta,
                            neighbours=neighbours)
    leaf = 200 / 16 ** 4
    rows = mech.sample(x, size=20, rng=0)
    truth = mech.statistic(x)
    assert np.all(np.abs(rows - truth) <= leaf + 1e-9), np.abs(rows - truth).max()


def test_tree_counts_and_claims():
    mech = qb.TreeQuantiles(epsilon=0.5, lower=0, upper=1, quantiles=(0.5,), height=2, branching=4)
    counts = mech.level_counts(np.array([0.0, 0.1, 0.5, 0.99, 1.0, 7.0]))  # 7 clipped to the top leaf
    assert [c.size for c in counts] == [1, 4, 16]
    assert counts[1].tolist() == [2, 0, 1, 3] and counts[2].sum() == 6 and counts[2][15] == 3
    assert (mech.claim.epsilon, mech.claim.delta, mech.claim.sensitivity) == (0.5, 0.0, 4.0)
    assert mech.scale == pytest.approx(4.0 / 0.5)
    g = qb.TreeQuantiles(epsilon=1.0, lower=0, upper=1, quantiles=(0.5,), noise="gaussian", delta=1e-6,
                         neighbours="add_remove")
    assert g.l1_sensitivity == 4 and g.l2_sensitivity == 2
    assert g.scale == pytest.approx(math.sqrt(2 * math.log(1.32e6)) * 4)
    assert (g.claim.epsilon, g.claim.delta, g.claim.neighbours) == (1.0, 1e-6, "add_remove")
    assert qb.gaussian_delta(1.0, g.scale, g.l2_sensitivity) <= 1e-6


def test_gaussian_delta_matches_the_known_calibration():
    # sigma = sqrt(2 ln(1.25/delta)) / eps is (eps, delta)-DP for eps < 1 (Dwork & Roth Thm A.1)
    for eps, d in [(0.5, 1e-5), (0.9, 1e-3)]:
        assert qb.gaussian_delta(eps, math.sqrt(2 * math.log(1.25 / d)) / eps, 1.0) <= d
    # monotone in sigma, and large for tiny sigma
    assert qb.gaussian_delta(1.0, 0.1, 1.0) > 0.5


def test_tree_noise_law_through_the_first_descent_step():
    # Height 1, two leaves, m = 1, q = 0.5, counts (a, b) = (4, 1), Laplace(s) noise L1, L2 on them.
    # The estimate is <= 1 (midpoint) iff the descent stops (T = 5 + L1 + L2 <= 0) or goes left
    # (a + L1 >= (0.5 - 1e-6) T, i.e. L2 <= L1 + 3 up to ~1e-5): P = E[F(max(-5 - L1, L1 + 3))],
    # F the Laplace(s) cdf -- one quadrature. A binomial test on the count of such draws.
    from scipy import integrate

    mech = qb.TreeQuantiles(epsilon=0.5, lower=0, upper=2, quantiles=(0.5,), height=1, branching=2,
                            neighbours="add_remove")
    s = mech.scale
    assert s == 2.0
    data = np.array([0.1, 0.2, 0.3, 0.4, 1.5])
    draws = mech.sample(data, size=40000, rng=77)[:, 0]
    lap = stats.laplace(scale=s)
    p_exact = integrate.quad(lambda l1: lap.pdf(l1) * lap.cdf(max(-5 - l1, l1 + 3)), -np.inf, np.inf,
                             points=None, limit=200)[0]
    n_left = int(np.sum(draws <= 1.0))
    p = stats.binomtest(n_left, draws.size, p_exact).pvalue
    assert p > KS_THRESHOLD, (n_left / draws.size, p_exact, p)


@pytest.mark.parametrize("kw, match", [
    ({"noise": "cauchy"}, "noise"),
    ({"noise": "gaussian"}, "delta"),
    ({"noise": "laplace", "delta": 1e-6}, "delta"),
    ({"height": 0}, "height"),
    ({"branching": 1}, "branching"),
    ({"height": 2.5}, "height"),
    ({"height": 30}, "leaves"),
    ({"neighbours": "bits"}, "neighbours"),
    ({"noise": "gaussian", "delta": 0.5, "height": 1, "epsilon": 40.0}, "too small"),
])
def test_tree_bad_input(kw, match):
    base = dict(epsilon=1.0, lower=-10.0, upper=10.0, quantiles=(0.5,))
    with pytest.raises(ValueError, match=match):
        qb.TreeQuantiles(**{**base, **kw})
