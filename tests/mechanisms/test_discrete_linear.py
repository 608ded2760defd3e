"""Piecewise-linear utilities on discrete output domains: geometric runs.

``continuous_exponential(utility="linear", domain="integers"|"grid")`` and ``revenue_price`` with
prices on a grid give laws whose runs are truncated geometrics (``GridRunsLaw`` with
``log_ratio``). What is checked:

* the closed forms (log geometric sum, cdf, mean, inverse cdf) against brute-force sums, for
  ratios from 1e-300 to 1e6 in size;
* the law (log_pmf, cdf, mean) against enumeration of every grid point: small grids by hand and a
  10^6-point grid by vectorised enumeration;
* the sampler: an exact inverse cdf (compared draw by draw with searchsorted on the enumerated
  cdf) and chi-square against the exact law;
* huge slopes: no NaN / overflow and the right limit (all mass on the top point);
* uniform laws are unchanged (no ratio -> same masses and the same random draws);
* exact privacy loss of neighbours (verifier exact mode, run by run) <= epsilon and equal to the
  brute-force comparison of every atom, hockey-stick delta included;
* bad input -> ValueError.

Statistical tests use fixed seeds; each chi-square test rejects at alpha = 1e-6 / N_STAT_TESTS
(Bonferroni over every chi-square test in this file, parametrised cases counted), so correct
samplers fail one of them with probability < 1e-6.
"""

import math

import numpy as np
import pytest
from scipy import special, stats

from dpharness import mechanisms
from dpharness import verifiers
from dpharness.mechanisms.continuous import ContinuousExponential, RevenuePrice
from dpharness.mechanisms.laws import (
    GridRunsLaw,
    _geometric_ppf,
    geometric_cdf,
    geometric_mean_offset,
    log_geometric_sum,
)
from dpharness.verifiers.losses.canonical import _grid_atoms
from dpharness.verifiers.losses.exact import canonical, loss_between

N_STAT_TESTS = 5  # test_sampler_chi_square: 5 laws
ALPHA = 1e-6 / N_STAT_TESTS
DRAWS = 60_000

RATIOS = [0.0, 1e-300, -1e-300, 1e-12, -1e-12, 1e-4, -1e-4, 0.3, -0.3, 7.0, -7.0, 800.0, -800.0, 1e6, -1e6]
COUNTS = [1, 2, 5, 100, 3000]


def brute_log_weights(r: float, c: int) -> np.ndarray:
    return r * np.arange(c, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("c", COUNTS)
def test_geometric_closed_forms_match_brute_force(c):
    i = np.arange(c, dtype=np.float64)
    for r in RATIOS:
        lw = brute_log_weights(r, c)
        top = float(np.max(lw))
        lsum = float(special.logsumexp(lw))
        got = float(log_geometric_sum(r, c))
        assert np.isfinite(got)
        assert abs((got + max(0.0, r * (c - 1))) - lsum) <= 1e-12 * max(1.0, abs(lsum)), (r, c)
        assert abs(got - (lsum - top)) <= 1e-12, (r, c)
        p = np.exp(lw - lsum)
        cum = np.concatenate(([0.0], np.cumsum(p)))
        cdf = geometric_cdf(np.arange(c + 1), c, r)
        np.testing.assert_allclose(cdf, np.minimum(cum, 1.0), rtol=0, atol=1e-12, err_msg=f"r={r}")
        assert cdf[-1] == 1.0 and cdf[0] == 0.0
        mean = float(geometric_mean_offset(r, c))
        want = math.fsum(p * i)
        assert abs(mean - want) <= 1e-11 * max(1.0, c), (r, c, mean, want)


def test_log_geometric_sum_edge_values():
    assert float(log_geometric_sum(0.0, 7)) == math.log(7)
    assert float(log_geometric_sum(3.0, 0)) == -math.inf
    assert float(log_geometric_sum(1e6, 2**53)) == 0.0  # one dominant term
    # tiny ratio on a huge run: ~log c, no cancellation
    assert abs(float(log_geometric_sum(1e-300, 2**53)) - math.log(2.0**53)) < 1e-13


@pytest.mark.parametrize("c", [1, 2, 9, 1000, pytest.param(1_000_000, marks=pytest.mark.slow)])
def test_inverse_cdf_is_exact_draw_by_draw(c):
    """_geometric_ppf(u) is the discrete inverse cdf: j with F(j) <= u < F(j+1), F enumerated."""
    u = np.random.default_rng(11).random(20_000)
    u = np.concatenate((u, [0.0, np.nextafter(1.0, 0.0), 0.5]))
    for r in RATIOS:
        lw = brute_log_weights(r, c)
        # cumulative sum in extended precision: a float64 cumsum of 10^6 terms drifts by ~1e-11
        p = np.exp((lw - special.logsumexp(lw)).astype(np.longdouble))
        cum = np.cumsum(p)
        cum = (cum / cum[-1]).astype(np.float64)
        want = np.minimum(np.searchsorted(cum, u, side="right"), c - 1)
        got = _geometric_ppf(u, np.full(u.size, c), np.full(u.size, r))
        # the only allowed disagreements are u within rounding of a cdf step
        bad = got != want
        if bad.any():
            near = np.min(np.abs(u[bad][:, None] - cum[None, :]), axis=1)
            assert np.all(near <= 1e-12), (r, c, int(bad.sum()))
        assert got.min() >= 0 and got.max() <= c - 1


# --------------------------------------------------------------------------------------------
# the law against enumeration
# --------------------------------------------------------------------------------------------

# (origin, step, first, count, log weight of the first point, log ratio)
LAWS = {
    "mixed": (1.5, 0.25, [0, 3, 10], [3, 6, 1], [0.0, -1.0, 2.0], [0.7, -0.4, 3.0]),
    "empty_and_flat": (0.0, 0.1, [0, 2, 4, 9], [2, 0, 5, 3], [0.0, 50.0, 0.5, 1.0], [0.0, 9.0, -1.3, 0.0]),
    "huge_levels": (-2.0, 1.0, [0, 5, 7], [5, 2, 9], [-1e6, 1e6, 1e6 - 3.0], [2.0, 0.0, -0.5]),
    "steep": (0.0, 1.0, [0, 40], [40, 60], [0.0, 0.0], [30.0, -45.0]),
    "tiny_ratios": (10.0, 2.0, [0, 50], [50, 25], [0.0, 0.01], [1e-13, -3e-9]),
}


def enumerate_law(origin, step, first, count, lw, ratio):
    """Every grid point of the law and its brute-force log probability (logsumexp over points)."""
    idx, lp = [], []
    for f, c, w, r in zip(first, count, lw, ratio):
        idx.append(np.arange(f, f + c))
        lp.append(w + r * np.arange(c, dtype=np.float64))
    idx = np.concatenate(idx)
    lp = np.concatenate(lp)
    return origin + step * idx.astype(np.float64), lp - special.logsumexp(lp)


@pytest.mark.parametrize("name", sorted(LAWS))
def test_law_matches_enumeration(name):
    origin, step, first, count, lw, ratio = LAWS[name]
    law = GridRunsLaw.from_log_weights(origin, step, first, count, lw, ratio)
    pts, want = enumerate_law(origin, step, first, count, lw, ratio)
    # log levels of size L carry absolute rounding ~ulp(L) (1e6 levels: ~1e-10)
    tol = 1e-12 + 8 * float(np.spacing(max(1.0, float(np.max(np.abs(lw))))))
    np.testing.assert_allclose(law.log_pmf(pts), want, rtol=0, atol=tol)
    p = np.exp(want)
    cum = np.cumsum(p)
    np.testing.assert_allclose(law.cdf(pts), cum, rtol=0, atol=1e-12 + tol)
    np.testing.assert_allclose(law.cdf(pts + step / 2), cum, rtol=0, atol=1e-12 + tol)
    assert float(law.cdf(np.array(origin - step))) == 0.0
    assert np.all(law.log_pmf(pts + step / 2) == -np.inf)  # off the grid
    assert abs(law.mean() - math.fsum(p * pts)) <= 1e-10 * max(1.0, float(np.max(np.abs(pts))))


def test_million_point_grid_against_vectorised_enumeration():
    """continuous_exponential, linear utility on the 10^6 + 1 integers of [0, 10^6]: 6 pieces, 6 runs.

    Brute force: the linear utility evaluated at every integer (its own formula: which piece, then
    interpolate), times epsilon / (2 Delta), log-sum-exp normalised.
    """
    b = np.array([0.0, 1.0, 2.5, 1000.0, 250_000.5, 600_000.0, 1e6])
    u = np.array([[0.0, 3.0], [-1.0, 2.0], [4.0, 4.0], [100.0, -50.0], [0.0, 400.0], [-3.0, 30.0]])
    mech = ContinuousExponential(0.7, tuple(b), 2.0, "linear", "integers")
    law = mech.distribution(u)
    assert law.first.size == 6 and int(law.count.sum()) == 10**6 + 1 and law.log_ratio is not None
    x = np.arange(10**6 + 1, dtype=np.float64)
    j = np.searchsorted(b, x, side="right") - 1
    j = np.minimum(j, b.size - 2)
    util = u[j, 0] + (u[j, 1] - u[j, 0]) * (x - b[j]) / (b[j + 1] - b[j])
    lw = 0.7 / (2 * 2.0) * util
    want = lw - special.logsumexp(lw)
    got = mech.log_pdf(u, x)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    cum = np.cumsum(np.exp(want))
    np.testing.assert_allclose(law.cdf(x), cum, rtol=0, atol=1e-9)
    assert abs(law.mean() - float(np.sum(np.exp(want) * x))) < 1e-6 * 1e6 * 1e-3
    # draw-by-draw inverse cdf check of the sampler's within-run step on the biggest run
    r = int(np.argmax(law.count))
    uu = np.random.default_rng(5).random(5000)
    off = _geometric_ppf(uu, np.full(uu.size, law.count[r]), np.full(uu.size, law.log_ratio[r]))
    lpr = law.log_ratio[r] * np.arange(law.count[r], dtype=np.float64)
    cr = np.cumsum(np.exp(lpr - special.logsumexp(lpr)))
    cr /= cr[-1]
    want_off = np.minimum(np.searchsorted(cr, uu, side="right"), law.count[r] - 1)
    assert np.mean(off == want_off) > 0.999 and np.max(np.abs(off - want_off)) <= 1


def test_linear_on_grid_is_the_continuous_utility_at_grid_points():
    """Step 0.5 on [0, 4]: every grid point's probability is exp(c u(v)) / sum, u the linear utility."""
    mech, data = ContinuousExponential.example()
    g = ContinuousExponential(mech.epsilon, mech.breakpoints, mech.sensitivity, "linear", "grid", 0.5)
    v = np.arange(0.0, 4.0 + 0.25, 0.5)
    b = np.asarray(mech.breakpoints)
    j = np.minimum(np.searchsorted(b, v, side="right") - 1, b.size - 2)
    util = data[j, 0] + (data[j, 1] - data[j, 0]) * (v - b[j]) / (b[j + 1] - b[j])
    lw = mech.epsilon / 2 * util
    np.testing.assert_allclose(g.log_pdf(data, v), lw - special.logsumexp(lw), rtol=0, atol=1e-13)


def test_zero_slopes_give_the_uniform_law_and_the_same_draws():
    """A linear utility with equal ends is the constant one: same law object contents, same draws."""
    b = (0.0, 3.0, 10.0, 20.0)
    vals = np.array([0.5, -2.0, 1.0])
    lin = ContinuousExponential(1.3, b, 1.0, "linear", "integers")
    con = ContinuousExponential(1.3, b, 1.0, "constant", "integers")
    a, c = lin.distribution(np.stack([vals, vals], 1)), con.distribution(vals)
    assert a.log_ratio is None and c.log_ratio is None
    np.testing.assert_array_equal(a.log_mass, c.log_mass)
    np.testing.assert_array_equal(a.sample(1000, rng=3), c.sample(1000, rng=3))
    # an explicit all-zero ratio is the uniform law too (existing callers: same masses and draws)
    law0 = GridRunsLaw.from_log_weights(0.0, 1.0, [0, 4], [4, 3], [0.0, 1.0])
    lawz = GridRunsLaw.from_log_weights(0.0, 1.0, [0, 4], [4, 3], [0.0, 1.0], [0.0, 0.0])
    np.testing.assert_array_equal(law0.log_mass, lawz.log_mass)
    np.testing.assert_array_equal(law0.sample(500, rng=8), lawz.sample(500, rng=8))


# --------------------------------------------------------------------------------------------
# sampler
# --------------------------------------------------------------------------------------------


def _stat_laws():
    out = {name: GridRunsLaw.from_log_weights(*LAWS[name]) for name in ("mixed", "empty_and_flat", "steep", "tiny_ratios")}
    out["pumpkin_cents_eps5"] = RevenuePrice(5.0, 0.0, 3.5, "grid", 0.01).distribution([1.0, 1.0, 1.0, 3.01])
    return out


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["mixed", "empty_and_flat", "steep", "tiny_ratios", "pumpkin_cents_eps5"])
def test_sampler_chi_square(name):
    law = _stat_laws()[name]
    idx = np.concatenate([np.arange(f, f + c) for f, c in zip(law.first, law.count)])
    p = np.exp(law.log_pmf_index(idx))
    x = law.sample(DRAWS, rng=20240611)
    k = np.rint((x - law.origin) / law.step).astype(np.int64)
    np.testing.assert_allclose(x, law.values(k), rtol=0, atol=1e-12)  # grid points
    pos = np.searchsorted(idx, k)
    assert np.all(idx[np.minimum(pos, idx.size - 1)] == k), "a draw outside every run"
    counts = np.bincount(pos, minlength=idx.size).astype(float)
    assert counts[p == 0].sum() == 0
    # pool cells with expected count < 5 into one; threshold = chi2(df) quantile at 1 - ALPHA
    e = DRAWS * p
    big = e >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp_ = np.append(e[big], e[~big].sum())
    keep = exp_ > 0
    assert np.all(obs[~keep] == 0)
    obs, exp_ = obs[keep], exp_[keep]
    stat = float(np.sum((obs - exp_) ** 2 / exp_))
    thr = float(stats.chi2.ppf(1 - ALPHA, max(obs.size - 1, 1)))
    assert stat <= thr, (name, stat, thr)


# --------------------------------------------------------------------------------------------
# huge slopes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_huge_slopes_no_overflow_and_right_limit(sign):
    """eps * Delta_u-scaled utility range 1e6 over 10 points (ratio 1e5 per step) and over 10^9 points."""
    d = np.array([[0.0, sign * 1e6]])
    for upper in (9.0, 1e9):
        mech = ContinuousExponential(2.0, (0.0, upper), 1.0, "linear", "integers")
        law = mech.distribution(d)
        assert np.all(np.isfinite(law.log_mass)) and np.all(np.isfinite(law.log_ratio))
        top = upper if sign > 0 else 0.0
        other = upper - 1 if sign > 0 else 1.0
        lp_top, lp_other = mech.log_pdf(d, [top, other])
        ratio = 1e6 / upper  # log ratio per step (epsilon / (2 Delta) = 1)
        assert abs(lp_other - lp_top + ratio) < 1e-9 * max(1.0, ratio)
        # limit: P[top] = (1 - e^{-ratio}) / (1 - e^{-ratio * points}), the second factor 1 here
        assert lp_top == pytest.approx(math.log(-math.expm1(-ratio)), abs=1e-12)
        x = mech.sample(d, size=2000, rng=1)
        assert np.all(np.isfinite(x))
        if upper == 9.0:
            assert np.all(x == top)  # P[other] = e^{-1e5}
        else:
            assert np.all(np.abs(x - top) < 60 / ratio)  # P[distance >= 60/ratio] = e^{-60}
        c = law.cdf(np.array([0.0, upper / 2, upper]))
        assert np.all(np.isfinite(c)) and c[-1] == 1.0
        # E|X - top| = 1 / expm1(ratio) (geometric, truncation at e^{-1e6} negligible)
        dist = math.exp(-ratio) / -math.expm1(-ratio)  # 1 / expm1(ratio) without overflow
        assert abs(abs(law.mean() - top) - dist) <= 1e-12 * max(1.0, upper)
    # the verifier copes too: a neighbour moves the slope end by Delta = 1 -> loss <= 2 / 2 = 1
    mech = ContinuousExponential(2.0, (0.0, 9.0), 1.0, "linear", "integers")
    loss = verifiers.exact(mech, d, d + np.array([[1.0, -1.0]]))
    assert np.isfinite(loss.epsilon) and loss.epsilon <= 2.0 * (1 + 1e-9)


def test_huge_pumpkin_levels():
    """10^4 bidders at 1e5, prices on the integers of [0, 2e5]: eps * revenue / (2 r_max) ~ 2.5e3."""
    mech = RevenuePrice(1.0, 0.0, 2e5, "integers")
    bids = np.full(10_000, 1e5)
    law = mech.distribution(bids)
    assert np.all(np.isfinite(law.log_mass[law.count > 0]))
    x = mech.sample(bids, size=1000, rng=2)
    assert np.all(x <= 1e5)  # prices above every bid: revenue 0, mass e^{-2500}
    # log ratio per cent below the bids: 1 * 10^4 / (2 * 2e5) = 0.025, so the distance to OPT's price
    # is geometric: E[loss] = 10^4 * 1/expm1(0.025) (truncation at price 0: e^{-2500})
    assert mech.expected_loss(bids) == pytest.approx(1e4 / math.expm1(0.025), rel=1e-9)
    assert np.all(1e5 - x < 60 / 0.025)


# --------------------------------------------------------------------------------------------
# revenue_price on a price grid
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_pumpkin_on_cents_against_enumeration(eps):
    bids = np.array([1.0, 1.0, 1.0, 3.01, 0.0, 2.5, 7.0])
    mech = RevenuePrice(eps, 0.0, 3.5, "grid", 0.01)
    prices = np.round(np.arange(351) * 0.01, 10)
    buyers = np.array([np.sum(bids >= p - 1e-12) for p in prices])
    rev = prices * buyers
    lw = eps / (2 * 3.5) * rev
    want = lw - special.logsumexp(lw)
    np.testing.assert_allclose(mech.log_pdf(bids, prices), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(mech.revenue(bids, prices), rev, rtol=1e-12, atol=1e-12)
    assert mech.revenue(bids, [3.01])[0] == pytest.approx(3.01 * 2)  # bid 3.01 buys at price 3.01
    p = np.exp(want)
    assert mech.expected_revenue(bids) == pytest.approx(math.fsum(p * rev), rel=1e-12, abs=1e-12)
    opt, arg = mech.optimum(bids)
    assert opt == pytest.approx(rev.max(), rel=1e-12) and arg == pytest.approx(prices[int(np.argmax(rev))])
    assert mech.expected_loss(bids) == pytest.approx(rev.max() - math.fsum(p * rev), rel=1e-10, abs=1e-12)


def test_pumpkin_fine_grid_tends_to_continuous():
    bids = np.array([1.0, 1.0, 1.0, 3.01])
    cont = RevenuePrice(1.0, 0.0, 3.5).expected_loss(bids)
    fine = RevenuePrice(1.0, 0.0, 3.5, "grid", 1e-5).expected_loss(bids)
    assert abs(fine - cont) < 1e-3


def test_pumpkin_defaults_unchanged():
    mech = mechanisms.make("revenue_price", epsilon=1.0, r_min=0.0, r_max=3.5)
    assert mech.domain == "continuous" and mech.step is None and mech.grid is None
    assert mechanisms.make("revenue_price", **mech.params()).params() == mech.params()


# --------------------------------------------------------------------------------------------
# exact privacy loss
# --------------------------------------------------------------------------------------------


def _brute(mech, d1, d2, eps):
    A = canonical(mech.distribution(d1))
    B = canonical(mech.distribution(d2))
    return loss_between(_grid_atoms(A.grid), _grid_atoms(B.grid), epsilon_claimed=eps)


def test_exact_loss_continuous_exponential_neighbours():
    """score_linf neighbours (every utility entry moved by <= Delta): exact loss <= epsilon and
    equal to the atom-by-atom comparison; hockey-stick delta at eps/3 equal too."""
    rng = np.random.default_rng(7)
    b = (0.0, 2.0, 2.0 + 1e-10, 7.5, 12.0)  # a breakpoint snapped to the grid point 2 (clamped ends)
    mech = ContinuousExponential(1.5, b, 2.0, "linear", "grid", 0.5)
    worst = 0.0
    for _ in range(60):
        d1 = rng.normal(scale=4.0, size=(4, 2))
        d2 = d1 + rng.choice([-1.0, 1.0], size=(4, 2)) * rng.uniform(0.0, 2.0, size=(4, 2))
        loss = verifiers.exact(mech, d1, d2)
        bf = _brute(mech, d1, d2, 0.5)
        assert loss.epsilon <= 1.5 * (1 + 1e-9) and not loss.violated
        assert abs(loss.epsilon - bf.epsilon) <= 1e-12
        assert abs(loss.delta_at(0.5) - bf.delta) <= 1e-13
        worst = max(worst, loss.epsilon)
    assert worst > 1.0  # the bound is nearly attained by some pair


def test_exact_loss_pumpkin_add_remove():
    mech = RevenuePrice(1.0, 0.0, 3.5, "grid", 0.01)
    base = [1.0, 1.0, 1.0, 3.01]
    for extra in (0.0, 0.5, 1.0, 2.0, 3.01, 3.5, 10.0):
        d2 = base + [extra]
        loss = verifiers.exact(mech, base, d2)
        bf = _brute(mech, base, d2, 0.3)
        assert loss.epsilon <= 1.0 * (1 + 1e-9) and not loss.violated
        assert abs(loss.epsilon - bf.epsilon) <= 1e-12
        assert abs(loss.delta_at(0.3) - bf.delta) <= 1e-13


def test_exact_loss_detects_a_too_small_sensitivity():
    """Claiming Delta = 1 while the data move by 3: exact mode reports a loss above epsilon."""
    mech = ContinuousExponential(1.0, (0.0, 5.0, 10.0), 1.0, "linear", "integers")
    d1 = np.array([[0.0, 0.0], [0.0, 0.0]])
    d2 = np.array([[0.0, 3.0], [-3.0, 0.0]])
    loss = verifiers.exact(mech, d1, d2)
    assert loss.violated and loss.epsilon == pytest.approx(_brute(mech, d1, d2, 1.0).epsilon, abs=1e-12)
    assert loss.epsilon > 1.0


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ratio,match", [
    ([0.1], "log_ratio must have the shape"),
    ([0.1, np.nan], "log_ratio must be finite"),
    ([np.inf, 0.0], "log_ratio must be finite"),
])
def test_bad_log_ratio(ratio, match):
    with pytest.raises(ValueError, match=match):
        GridRunsLaw.from_log_weights(0.0, 1.0, [0, 3], [3, 2], [0.0, 0.0], ratio)


@pytest.mark.parametrize("kw,match", [
    (dict(domain="grid", step=0.0), "step must be > 0"),
    (dict(domain="grid", step=0.3), "r_max|upper must be on the grid"),
    (dict(domain="grid"), "step must be given"),
    (dict(domain="continuous", step=0.01), "step"),
    (dict(domain="cents"), "domain"),
    (dict(domain="integers", r_max=2.0**62), "2\\^62"),
])
def test_revenue_price_bad_domain(kw, match):
    kw.setdefault("r_max", 3.5)
    with pytest.raises(ValueError, match=match):
        mechanisms.make("revenue_price", epsilon=1.0, r_min=0.0, **kw)


def test_linear_grid_bad_data():
    mech = ContinuousExponential(1.0, (0.0, 1.0, 4.0), 1.0, "linear", "integers")
    with pytest.raises(ValueError, match="shape"):
        mech.distribution([1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        mech.distribution([[0.0, np.inf], [0.0, 1.0]])
    with pytest.raises(ValueError, match="bids"):
        RevenuePrice(1.0, 0.0, 3.5, "grid", 0.01).distribution([1.0, -2.0])
