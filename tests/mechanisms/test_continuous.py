"""Continuous exponential mechanisms: exact laws vs definitional twins, samplers vs exact CDFs."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpharness import mechanisms
from dpharness.mechanisms.continuous import ContinuousExponential
from dpharness.mechanisms.expectations import expected_linear, mean_in_piece
from dpharness.mechanisms.laplace_exponential import LaplaceViaExponential
from dpharness.mechanisms.revenue import RevenuePrice

PUMPKIN = np.array([1.0, 1.0, 1.0, 3.01])


# ---------------------------------------------------------------------------------------------
# definitional twins
# ---------------------------------------------------------------------------------------------


def brute_utility(mech: ContinuousExponential, data, r: float) -> float:
    """u(r) straight from the definition (right-continuous at interior breakpoints)."""
    b = mech.breakpoints
    j = min(max(i for i in range(len(b) - 1) if b[i] <= r), len(b) - 2)
    if mech.utility == "constant":
        return float(data[j])
    left, right = data[j]
    return float(left + (right - left) * (r - b[j]) / (b[j + 1] - b[j]))


def brute_log_z(mech, data, shift):
    """log of the integral of exp(eps u / (2 Delta) - shift), piece by piece with quad."""
    c = mech.epsilon / (2 * mech.sensitivity)
    b = mech.breakpoints
    total = 0.0
    for j in range(len(b) - 1):
        mid = 0.5 * (b[j] + b[j + 1])
        val, _ = integrate.quad(
            lambda r, j=j: math.exp(c * brute_utility(mech, data, min(max(r, b[j]), np.nextafter(b[j + 1], b[j]))) - shift),
            b[j], b[j + 1], points=[mid], epsabs=0, epsrel=1e-12, limit=200,
        )
        total += val
    return math.log(total)


MODERATE = [
    (ContinuousExponential(1.0, (0.0, 1.0, 3.0, 4.0)), np.array([0.0, 2.0, -1.0])),
    (ContinuousExponential(0.7, (-2.0, 0.0, 0.5, 3.0), 2.0, "linear"),
     np.array([[0.0, 3.0], [1.0, 1.0], [4.0, -2.0]])),
    (ContinuousExponential(3.0, (0.0, 10.0), 1.0, "linear"), np.array([[5.0, -5.0]])),
]


@pytest.mark.parametrize("mech,data", MODERATE)
def test_log_pdf_and_cdf_match_quadrature(mech, data):
    c = mech.epsilon / (2 * mech.sensitivity)
    shift = c * float(np.max(data))
    log_z = brute_log_z(mech, data, shift)
    rs = np.linspace(mech.lower, mech.upper, 37)[1:-1] + 1e-3
    want = np.array([c * brute_utility(mech, data, r) - shift - log_z for r in rs])
    np.testing.assert_allclose(mech.log_pdf(data, rs), want, rtol=0, atol=1e-9)
    for r in rs[::6]:
        num, _ = integrate.quad(lambda t: math.exp(c * brute_utility(mech, data, t) - shift - log_z),
                                mech.lower, r, points=list(mech.breakpoints[1:-1]), epsabs=1e-13, limit=200)
        assert mech.cdf(data, r) == pytest.approx(num, abs=1e-9)
    assert mech.cdf(data, mech.lower - 1) == 0.0 and mech.cdf(data, mech.upper) == 1.0


# ---------------------------------------------------------------------------------------------
# sampler vs exact CDF (KS)
# ---------------------------------------------------------------------------------------------

KS_CASES = {
    "constant": (ContinuousExponential(1.0, (0.0, 1.0, 3.0, 4.0)), np.array([0.0, 2.0, -1.0])),
    "linear_with_flat_pieces": (
        ContinuousExponential(2.0, (-1.0, 0.0, 1.0, 2.0, 5.0), 1.0, "linear"),
        np.array([[0.0, 1.0], [2.0, 2.0], [1.0, 3.0], [3.0, 3.0]]),
    ),
    "single_constant_piece": (ContinuousExponential(1.0, (2.0, 7.0)), np.array([4.0])),
    "single_linear_piece": (ContinuousExponential(1.0, (0.0, 1.0), 0.5, "linear"), np.array([[0.0, -3.0]])),
    # eps * Delta_u-range / (2 Delta) = 1e6: a spike of width 1e-6 around r = 1.
    "huge_epsilon_linear": (
        ContinuousExponential(2.0, (0.0, 1.0, 2.0), 1.0, "linear"),
        np.array([[0.0, 1e6], [1e6, 0.0]]),
    ),
    "huge_epsilon_constant": (ContinuousExponential(2e6, (0.0, 1.0, 2.0, 3.0)), np.array([0.0, 1.0, 0.5])),
    "tiny_range": (
        ContinuousExponential(1.0, (1.0, 1.0 + 1e-9, 1.0 + 3e-9), 1.0, "linear"),
        np.array([[0.0, 5.0], [5.0, 5.0]]),
    ),
    "revenue_pumpkin_eps5": (RevenuePrice(5.0, 0.0, 3.5), PUMPKIN),
    "revenue_eps0.01": (RevenuePrice(0.01, 0.0, 3.5), PUMPKIN),
    "laplace_bounded": (LaplaceViaExponential(1.0, 1.0, -3.0, 10.0), 0.5),
    "laplace_answer_outside": (LaplaceViaExponential(1.0, 1.0, 0.0, 4.0), -2.0),
}
# KS p-value false-alarm rate 1e-6 per test, Bonferroni over the cases: the KS statistic is
# distribution-free for a continuous CDF, so kstest's exact p-value is valid here.
KS_ALPHA = 1e-6 / len(KS_CASES)


@pytest.mark.statistical
@pytest.mark.parametrize("case", sorted(KS_CASES))
def test_sampler_matches_exact_cdf_ks(case):
    mech, data = KS_CASES[case]
    rng = np.random.default_rng(20240611)
    x = mech.sample(data, size=20_000, rng=rng)
    law = mech.distribution(data)
    assert np.all(np.isfinite(x))
    lo, hi = law.edges[0], law.edges[-1]
    assert np.all((x >= lo) & (x <= hi))
    # compare in the CDF's own coordinates: for the tiny range, subtract nothing but keep doubles
    p = stats.kstest(x, law.cdf).pvalue
    assert p > KS_ALPHA, f"{case}: KS p-value {p:.3g} below {KS_ALPHA:.3g}"


def test_huge_epsilon_stays_finite_and_concentrates():
    mech, data = KS_CASES["huge_epsilon_linear"]
    law = mech.distribution(data)
    assert np.all(np.isfinite(law.log_mass))
    # log-weights of size 1e6 carry absolute rounding ~1e6 * 2^-52 ~ 2e-10: masses agree to that
    np.testing.assert_allclose(np.exp(law.log_mass), [0.5, 0.5], rtol=1e-9)
    # density at the peak: c * slope / 2 per side = 1e6 / 2 ... exactly log(1e6 / 2)
    assert float(law.log_pdf(1.0)) == pytest.approx(math.log(1e6 / 2), rel=1e-9)
    x = mech.sample(data, size=1000, rng=1)
    assert np.max(np.abs(x - 1.0)) < 30e-6  # P[|X - 1| > 30e-6] = e^{-30}
    # even larger: 1e9, no overflow warnings (warnings are errors in this suite)
    big = ContinuousExponential(2.0, (0.0, 1.0, 2.0), 1.0, "linear")
    y = big.sample(np.array([[0.0, 1e9], [1e9, 0.0]]), size=100, rng=2)
    assert np.all(np.abs(y - 1.0) < 1e-7)


def test_zero_slope_linear_equals_constant():
    b = (0.0, 1.0, 2.0, 4.0)
    vals = np.array([1.0, -2.0, 0.5])
    lin = ContinuousExponential(1.3, b, 1.0, "linear").distribution(np.stack([vals, vals], 1))
    con = ContinuousExponential(1.3, b, 1.0, "constant").distribution(vals)
    np.testing.assert_allclose(lin.log_mass, con.log_mass, rtol=0, atol=1e-14)
    xs = np.linspace(-0.5, 4.5, 41)
    np.testing.assert_allclose(lin.cdf(xs), con.cdf(xs), atol=1e-14)


def test_sampling_is_reproducible_and_shaped():
    mech, data = ContinuousExponential.example()
    a = mech.sample(data, size=(3, 4), rng=np.random.default_rng(5))
    b = mech.sample(data, size=(3, 4), rng=np.random.default_rng(5))
    assert a.shape == (3, 4)
    np.testing.assert_array_equal(a, b)
    assert np.ndim(mech.sample(data, rng=1)) == 0


# ---------------------------------------------------------------------------------------------
# revenue_price
# ---------------------------------------------------------------------------------------------


def test_revenue_matches_definition_and_textbook_values():
    mech = RevenuePrice(1.0, 0.0, 3.5)
    rs = np.array([0.0, 0.5, 1.0, 1.0 + 1e-12, 2.0, 3.0, 3.01, 3.02, 3.5])
    brute = np.array([r * sum(1 for b in PUMPKIN if b >= r) for r in rs])
    np.testing.assert_array_equal(mech.revenue(PUMPKIN, rs), brute)
    # docs/mechanisms.md, "revenue_price": 4.00 at r = 1, 3.00 at r = 3, 3.01 at r = 3.01, 0 at r = 3.02
    assert mech.revenue(PUMPKIN, [1.0, 3.0, 3.01, 3.02]).tolist() == pytest.approx([4.0, 3.0, 3.01, 0.0])
    assert mech.optimum(PUMPKIN) == (4.0, 1.0)
    assert mech.claim.sensitivity == 3.5 and mech.claim.neighbours == "add_remove"


@pytest.mark.parametrize("eps", [0.01, 1.0, 5.0, 200.0])
def test_revenue_density_integrates_to_one_and_matches_fine_grid(eps):
    mech = RevenuePrice(eps, 0.0, 3.5)
    law = mech.distribution(PUMPKIN)
    c = eps / (2 * 3.5)
    # integrates to one: quad of the exact density, piece by piece (pieces are smooth)
    tot = sum(integrate.quad(lambda r: math.exp(float(law.log_pdf(r))), a, b, epsabs=0, epsrel=1e-12)[0]
              for a, b in zip(law.edges[:-1], law.edges[1:]))
    assert tot == pytest.approx(1.0, abs=1e-10)
    # fine-grid numerical computation from the definition exp(eps u / (2 r_max)): midpoint rule
    # with step h = 1e-5 on a grid aligned with the bids; the midpoint rule's relative error on
    # exp(c n r) is at most (c n h)^2 / 24 <= (c*4*1e-5)^2 / 24, far below the 1e-6 used here.
    h = 1e-5
    edges = np.array([0.0, 1.0, 3.01, 3.5])
    mids = np.concatenate([np.arange(a + h / 2, b, h) for a, b in zip(edges[:-1], edges[1:])])
    logw = c * mech.revenue(PUMPKIN, mids)
    m = logw.max()
    log_z = m + math.log(np.sum(np.exp(logw - m)) * h)
    np.testing.assert_allclose(law.log_pdf(mids[::997]), logw[::997] - log_z, rtol=0, atol=1e-6)
    for r in (0.5, 1.0, 2.0, 3.005, 3.2):
        grid_cdf = np.sum(np.exp(logw[mids < r] - log_z)) * h
        assert float(law.cdf(r)) == pytest.approx(grid_cdf, abs=2e-5)  # one grid cell of mass <= h*max pdf


@pytest.mark.parametrize("eps", [0.01, 1.0, 5.0])
def test_expected_revenue_loss_matches_quadrature(eps):
    mech = RevenuePrice(eps, 0.0, 3.5)
    law = mech.distribution(PUMPKIN)
    opt, _ = mech.optimum(PUMPKIN)
    num = 0.0
    for a, b in zip(law.edges[:-1], law.edges[1:]):
        mid = 0.5 * (a + b)  # revenue is linear inside the piece; evaluate at an interior point
        v, _ = integrate.quad(
            lambda r: (opt - float(mech.revenue(PUMPKIN, min(max(r, np.nextafter(a, b)), b)))) * math.exp(float(law.log_pdf(max(r, a)))),
            a, b, points=[mid], epsabs=1e-14, epsrel=1e-12)
        num += v
    assert mech.expected_loss(PUMPKIN) == pytest.approx(num, rel=1e-9)


def test_mean_in_piece_and_expected_linear_against_quadrature():
    for z in [-800.0, -30.0, -1.0, -1e-3, -1e-9, 0.0, 1e-9, 5e-3, 0.02, 1.0, 30.0, 800.0]:
        if abs(z) < 50:
            num = integrate.quad(lambda t: t * math.exp(z * t), 0, 1)[0] / integrate.quad(lambda t: math.exp(z * t), 0, 1)[0]
        else:  # exp(z t) overflows quad's float; use the asymptotic 1 - 1/z (z>0) or -1/z (z<0)
            num = 1 - 1 / z if z > 0 else -1 / z
        assert float(mean_in_piece(z)) == pytest.approx(num, rel=1e-11, abs=1e-15)
    mech, data = ContinuousExponential.example()
    law = mech.distribution(data)
    lin = np.asarray(data)
    w = np.diff(mech.breakpoints)
    e_u = expected_linear(law, lin[:, 0], (lin[:, 1] - lin[:, 0]) / w)
    num = integrate.quad(lambda r: brute_utility(mech, data, r) * math.exp(float(law.log_pdf(r))), 0, 4,
                         points=[1.0, 2.5], epsabs=1e-13)[0]
    assert e_u == pytest.approx(num, rel=1e-9)


def test_revenue_density_with_bids_on_the_range_ends_and_ties():
    # bids at r_min and r_max, ties, and bids outside the range; definitional twin: normalise
    # exp(c * r * #{bids >= r}) by quadrature between consecutive breakpoints
    bids = np.array([0.0, 0.7, 0.7, 2.0, 3.5, 3.5, 9.0, 0.0])
    mech = RevenuePrice(2.0, 0.0, 3.5)
    c = 2.0 / (2 * 3.5)
    cuts = [0.0, 0.7, 2.0, 3.5]

    def w(r):
        return math.exp(c * r * sum(1 for b in bids if b >= r))

    z = sum(integrate.quad(w, a, b, epsabs=0, epsrel=1e-12)[0] for a, b in zip(cuts[:-1], cuts[1:]))
    rs = np.array([0.01, 0.5, 0.69, 0.71, 1.5, 1.99, 2.01, 3.0, 3.49])
    want = np.array([math.log(w(r) / z) for r in rs])
    np.testing.assert_allclose(mech.log_pdf(bids, rs), want, rtol=0, atol=1e-10)
    assert mech.optimum(bids) == (pytest.approx(3.5 * 3), 3.5)


def test_revenue_with_no_bids_is_uniform_and_bids_outside_range():
    mech = RevenuePrice(1.0, 1.0, 2.0)
    np.testing.assert_allclose(mech.cdf([], [1.25, 1.5]), [0.25, 0.5], atol=1e-15)
    # a bid below r_min never buys, a bid above r_max always does: u = r * 1 on the whole range
    law = mech.distribution([0.5, 9.0])
    assert law.edges.tolist() == [1.0, 2.0]
    assert float(law.log_slope[0]) == pytest.approx(1.0 * 1 / (2 * 2.0))


# ---------------------------------------------------------------------------------------------
# laplace_via_exponential
# ---------------------------------------------------------------------------------------------


def test_laplace_real_line_is_laplace_with_scale_2delta_over_eps():
    mech = LaplaceViaExponential(0.8, 1.5)
    law = mech.distribution(2.0)
    xs = np.linspace(-20, 20, 81)
    np.testing.assert_allclose(law.log_pdf(xs), stats.laplace(2.0, 2 * 1.5 / 0.8).logpdf(xs), rtol=1e-13)
    assert mech.claim.epsilon == 0.8
    assert mech.tight_epsilon == 0.4
    assert mech.privacy_loss(2.0, 3.5) == pytest.approx(0.4, rel=1e-14)


def test_laplace_bounded_is_truncated_laplace():
    mech = LaplaceViaExponential(1.0, 1.0, -3.0, 10.0)
    d = stats.laplace(0.5, 2.0)
    xs = np.linspace(-3.0, 10.0, 53)
    want = d.logpdf(xs) - math.log(d.cdf(10.0) - d.cdf(-3.0))
    np.testing.assert_allclose(mech.log_pdf(0.5, xs), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(mech.cdf(0.5, xs), (d.cdf(xs) - d.cdf(-3.0)) / (d.cdf(10.0) - d.cdf(-3.0)), atol=1e-13)


@pytest.mark.parametrize("eps,lo,hi", [(1.0, -50.0, 50.0), (0.2, -5.0, 5.0), (4.0, 0.0, 0.7)])
def test_laplace_tight_epsilon_against_brute_force(eps, lo, hi):
    mech = LaplaceViaExponential(eps, 1.0, lo, hi)
    rs = np.linspace(lo, hi, 2001)
    # the log-ratio is Lipschitz in r with constant 2/scale, so a grid of step h misses its sup
    # (at a kink f or f') by at most h/scale
    slack = (rs[1] - rs[0]) / mech.scale + 1e-12
    # many answers around and beyond the interval, plus the claimed worst case f = lower
    fs = np.concatenate([np.linspace(lo - 3.0, hi + 3.0, 241), [lo, hi - 1.0]])
    worst = 0.0
    for f in fs:
        for fp in (f + 1.0, f + 0.5, f - 1.0):
            brute = float(np.max(np.abs(mech.log_pdf(f, rs) - mech.log_pdf(fp, rs))))
            exact = mech.privacy_loss(f, fp)
            assert brute - 1e-9 <= exact <= brute + slack
            assert exact <= mech.tight_epsilon + 1e-12
            worst = max(worst, brute)
    assert worst == pytest.approx(mech.tight_epsilon, abs=1e-9)  # grid contains r = lower, the arg-sup
    assert 0 < mech.tight_epsilon <= eps
    if hi - lo > 1.0:  # wider than the sensitivity: the boundary costs extra over eps/2
        assert mech.tight_epsilon > eps / 2
    else:  # narrower: the utility range caps the loss at (hi - lo) / scale
        assert mech.tight_epsilon == pytest.approx((hi - lo) / mech.scale, rel=1e-12)


def test_laplace_interior_pair_loses_exactly_half():
    mech = LaplaceViaExponential(1.0, 1.0, -1e4, 1e4)
    assert mech.privacy_loss(0.0, 1.0) == pytest.approx(0.5, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(epsilon=1.0, breakpoints=(0.0, 2.0, 1.0)), "breakpoints.*unsorted"),
        (dict(epsilon=1.0, breakpoints=(0.0, 1.0, 1.0, 2.0)), "breakpoints.*duplicate"),
        (dict(epsilon=1.0, breakpoints=(0.0,)), "breakpoints"),
        (dict(epsilon=1.0, breakpoints=(0.0, float("nan"))), "breakpoints"),
        (dict(epsilon=float("nan"), breakpoints=(0.0, 1.0)), "epsilon"),
        (dict(epsilon=1.0, breakpoints=(0.0, 1.0), sensitivity=0.0), "sensitivity"),
        (dict(epsilon=1.0, breakpoints=(0.0, 1.0), utility="quadratic"), "utility"),
    ],
)
def test_continuous_exponential_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mechanisms.make("continuous_exponential", **kwargs)


def test_continuous_exponential_rejects_bad_data():
    mech = ContinuousExponential(1.0, (0.0, 1.0, 2.0))
    with pytest.raises(ValueError, match="shape"):
        mech.sample([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        mech.sample([1.0, float("nan")])
    lin = ContinuousExponential(1.0, (0.0, 1.0, 2.0), utility="linear")
    with pytest.raises(ValueError, match="shape"):
        lin.sample([1.0, 2.0])


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(epsilon=1.0, r_min=2.0, r_max=2.0), "r_min must be < r_max"),
        (dict(epsilon=1.0, r_min=3.0, r_max=2.0), "r_min must be < r_max"),
        (dict(epsilon=1.0, r_min=-1.0, r_max=2.0), "r_min must be >= 0"),
        (dict(epsilon=1.0, r_min=0.0, r_max=float("nan")), "r_max"),
        (dict(epsilon=0.0, r_min=0.0, r_max=1.0), "epsilon"),
    ],
)
def test_revenue_price_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mechanisms.make("revenue_price", **kwargs)


def test_revenue_price_rejects_bad_bids():
    mech = RevenuePrice(1.0, 0.0, 3.5)
    with pytest.raises(ValueError, match=r"bids.*-0.5"):
        mech.sample([1.0, -0.5])
    with pytest.raises(ValueError, match="bids.*finite"):
        mech.sample([1.0, float("nan")])
    with pytest.raises(ValueError, match="bids"):
        mech.sample([[1.0, 2.0]])


def test_laplace_via_exponential_rejects_bad_input():
    with pytest.raises(ValueError, match="lower"):
        LaplaceViaExponential(1.0, 1.0, 0.0, None)
    with pytest.raises(ValueError, match="lower must be < upper"):
        LaplaceViaExponential(1.0, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="sensitivity"):
        LaplaceViaExponential(1.0, -1.0)
    mech = LaplaceViaExponential(1.0)
    with pytest.raises(ValueError, match="f\\(D\\)"):
        mech.sample(float("nan"))
    with pytest.raises(ValueError, match="f\\(D\\)"):
        mech.sample([1.0, 2.0])
