"""verifiers.bounds: exact binomial / Poisson bounds against scipy and statsmodels, soundness of the
privacy-loss bounds by exact computation, and the degenerate cases (identical distributions -> 0,
disjoint supports -> a large but finite bound at the stated n)."""

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from dpharness import verifiers
from dpharness.verifiers import bounds, power

CASES = [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (1, 1000), (500, 1000), (999, 1000), (0, 5000),
         (17, 20000), (19990, 20000)]
ALPHAS = [0.05, 1e-3, 1e-6]


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("k,n", CASES)
def test_clopper_pearson_matches_scipy_and_statsmodels(k, n, alpha):
    # A one-sided (1 - alpha) bound is one end of the two-sided exact interval at level 1 - 2 alpha.
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * alpha, method="exact")
    lo_sm, up_sm = proportion_confint(k, n, alpha=2 * alpha, method="beta")
    lo, up = verifiers.cp_lower(k, n, alpha), verifiers.cp_upper(k, n, alpha)
    # binomtest inverts the binomial CDF with a root finder (absolute tolerance ~1e-12);
    # statsmodels' "beta" method uses the Beta quantiles directly, as we do.
    assert lo == pytest.approx(ci.low, rel=1e-9, abs=1e-11)
    assert up == pytest.approx(ci.high, rel=1e-9, abs=1e-11)
    assert lo == pytest.approx(lo_sm, rel=1e-10, abs=1e-300)
    assert up == pytest.approx(up_sm, rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (17, 500), (250, 500)])
def test_cp_interval_is_the_two_sided_exact_interval(k, n):
    lo, up = bounds.cp_interval(k, n, 0.95)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert lo == pytest.approx(ci.low, rel=1e-9, abs=1e-11)
    assert up == pytest.approx(ci.high, rel=1e-9, abs=1e-11)
    # the Beta-quantile definition (Clopper & Pearson 1934), via scipy.stats.beta.ppf
    if 0 < k < n:
        assert lo == pytest.approx(stats.beta.ppf(0.025, k, n - k + 1), rel=1e-12)
        assert up == pytest.approx(stats.beta.ppf(0.975, k + 1, n - k), rel=1e-12)
    with pytest.raises(ValueError, match="confidence"):
        bounds.cp_interval(k, n, 1.5)


def test_clopper_pearson_vectorised_and_closed_forms():
    k = np.array([0, 5, 10])
    lo = bounds.cp_lower(k, 10, 0.05)
    up = bounds.cp_upper(k, 10, 0.05)
    assert lo.shape == up.shape == (3,)
    assert lo[0] == 0.0 and up[2] == 1.0
    assert up[0] == pytest.approx(1 - 0.05 ** (1 / 10), rel=1e-14)  # k = 0: 1 - alpha^(1/n)
    assert lo[2] == pytest.approx(0.05 ** (1 / 10), rel=1e-14)  # k = n: alpha^(1/n)
    # No cancellation for huge n: 1 - alpha^(1/n) ~ ln(1/alpha)/n.
    n = 10**12
    assert bounds.cp_upper(0, n, 0.05) == pytest.approx(math.log(20) / n, rel=1e-9)
    assert verifiers.blind_delta(n, 0.05) == pytest.approx(math.log(20) / n, rel=1e-9)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("k", [0, 1, 7, 100, 5000])
def test_garwood_poisson_bounds_match_chi_square(k, alpha):
    lo = bounds.poisson_lower(k, alpha)
    up = bounds.poisson_upper(k, alpha)
    assert lo == (0.0 if k == 0 else pytest.approx(stats.chi2.ppf(alpha, 2 * k) / 2, rel=1e-9))
    assert up == pytest.approx(stats.chi2.ppf(1 - alpha, 2 * k + 2) / 2, rel=1e-9)


@pytest.mark.parametrize("k1,k2", [(10, 3), (100, 40), (5, 0), (1000, 0), (3000, 1100), (2, 2)])
def test_conditional_bound_is_clopper_pearson_on_the_share(k1, k2):
    alpha = 0.05
    pl = stats.binomtest(k1, k1 + k2).proportion_ci(confidence_level=1 - 2 * alpha, method="exact").low
    want = max(math.log(pl / (1 - pl)), 0.0)
    assert bounds.conditional_epsilon_lower(k1, k2, alpha) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_product_bounds_formulae():
    lo = bounds.cp_lower(300, 1000, 0.025)
    up = bounds.cp_upper(40, 1000, 0.025)
    assert bounds.epsilon_lower_bound(300, 1000, 40, 1000, alpha1=0.025, alpha2=0.025) == pytest.approx(
        math.log(lo / up))
    assert bounds.epsilon_lower_bound(300, 1000, 40, 1000, alpha1=0.025, alpha2=0.025, delta=0.01) == pytest.approx(
        math.log((lo - 0.01) / up))
    assert bounds.delta_lower_bound(300, 1000, 40, 1000, epsilon=1.0, alpha1=0.025, alpha2=0.025) == pytest.approx(
        lo - math.e * up)
    # delta above the numerator's lower bound: no evidence, bound 0 (not nan, not negative)
    assert bounds.epsilon_lower_bound(3, 1000, 0, 1000, alpha1=0.025, alpha2=0.025, delta=0.5) == 0.0


# --- degenerate inputs -------------------------------------------------------------------------

@pytest.mark.parametrize("k", [0, 1, 50, 1000])
def test_identical_counts_give_zero(k):
    assert bounds.epsilon_lower_bound(k, 1000, k, 1000, alpha1=0.025, alpha2=0.025) == 0.0
    assert bounds.conditional_epsilon_lower(k, k, 0.05) == 0.0
    assert bounds.delta_lower_bound(k, 1000, k, 1000, epsilon=0.0, alpha1=0.025, alpha2=0.025) == 0.0


@pytest.mark.parametrize("n", [10, 100, 1000, 10**5])
def test_disjoint_supports_give_large_finite_bound(n):
    # n draws under D all in E, none under D': ln(a^(1/n) / (1 - a^(1/n))) ~ ln(n / ln(1/a)), no cap.
    a = 0.05
    q = a ** (1 / n)
    want = math.log(q / (1 - q))
    got = bounds.conditional_epsilon_lower(n, 0, a)
    assert math.isfinite(got) and got == pytest.approx(want, rel=1e-12)
    got2 = bounds.epsilon_lower_bound(n, n, 0, n, alpha1=a / 2, alpha2=a / 2)
    assert math.isfinite(got2) and got2 == pytest.approx(math.log((a / 2) ** (1 / n) / (1 - (a / 2) ** (1 / n))))
    if n >= 1000:
        assert got >= 5.0  # T7: a point mass reaches 5 at 1,000 per dataset (DP-Sniper caps at 4.6)


def test_identical_distributions_audit_to_zero():
    # Output independent of the data: epsilon_lower > 0 would exceed the true loss 0, which a sound
    # alpha = 1e-6 audit does with probability <= 1e-6 (fixed seed).
    mech = verifiers.wrap(lambda d, n, rng: rng.normal(size=n), epsilon=0.5, neighbours="value")
    v = verifiers.audit(mech, 0.0, 1.0, samples=5000, alpha=1e-6, rng=3)
    assert v.epsilon_lower == 0.0 and not v.violated
    fin = verifiers.wrap(lambda d, n, rng: rng.integers(0, 3, size=n), epsilon=0.5, neighbours="value", kind="finite")
    assert verifiers.audit(fin, 0.0, 1.0, samples=5000, alpha=1e-6, rng=4).epsilon_lower == 0.0


def test_disjoint_supports_audit_is_large_and_finite():
    mech = verifiers.wrap(lambda d, n, rng: np.full(n, float(d)), epsilon=1.0, neighbours="value")
    v = verifiers.audit(mech, 0.0, 1.0, samples=1000, alpha=0.05, rng=5)
    assert v.violated and v.support_violation
    assert 5.0 <= v.epsilon_lower < 10.0 and math.isfinite(v.epsilon_lower)
    assert v.epsilon_estimate == math.inf


@pytest.mark.parametrize("bad", [dict(k=-1, n=10), dict(k=11, n=10), dict(k=1, n=0), dict(k=float("nan"), n=10)])
def test_bad_counts_raise(bad):
    with pytest.raises(ValueError, match="k must|n must"):
        bounds.cp_lower(bad["k"], bad["n"], 0.05)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, True, "0.05"])
def test_bad_alpha_raises(alpha):
    with pytest.raises(ValueError, match="alpha"):
        bounds.check_alpha(alpha)
    if not isinstance(alpha, (bool, str)):
        with pytest.raises(ValueError, match="alpha"):
            bounds.cp_upper(1, 10, alpha)


# --- soundness by exact computation ----------------------------------------------------------

@pytest.mark.parametrize("p_num,p_den,lam", [(0.5, 0.5 / math.e, 2000), (0.05, 0.05 / math.e, 20000),
                                             (0.01, 0.01 / 8, 3000), (0.9, 0.3, 500), (0.2, 0.2, 1000)])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_conditional_certification_false_violation_at_most_alpha(p_num, p_den, lam, alpha):
    # P[certified bound > the true loss] computed exactly over the Poisson counts must be <= alpha.
    true = math.log(p_num / p_den)
    p_false = power.certification_power(p_num, p_den, lam, true, alpha1=alpha)
    assert p_false <= alpha


@pytest.mark.parametrize("p_num,p_den,lam,delta", [(0.3, 0.1, 5000, 0.01), (0.05, 0.01, 20000, 0.001)])
def test_garwood_certification_false_violation_at_most_alpha(p_num, p_den, lam, delta):
    # The event loses exactly epsilon at delta: p_num = e^eps p_den + delta.
    eps = math.log((p_num - delta) / p_den)
    p_false = power.certification_power(p_num, p_den, lam, eps, alpha1=0.025, alpha2=0.025, delta=delta)
    assert p_false <= 0.05
