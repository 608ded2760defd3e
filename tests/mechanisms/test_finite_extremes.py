"""Property tests of every finite-output mechanism over extreme score vectors.

For score vectors with wide ranges, many ties, -inf entries, magnitudes up to 1e12 and k up to
10^6, and epsilon from 1e-6 to 1e3, the exact law (``log_prob``) must be a probability vector:
no NaN, no +inf, masses summing to 1 within 1e-12, -inf exactly for -inf scores, equal
probabilities for tied scores and probabilities non-decreasing in the score. The samplers
(``sampler="direct"``, the mechanism's own randomisation, and ``sampler="law"``, inverse CDF)
must agree with that law: a chi-square goodness-of-fit test per case, fixed seed, with a
Bonferroni threshold derived below. Explicit parametrised grids (reproducible, named cases) plus
one derandomised hypothesis search over small vectors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from dpharness import mechanisms

EPSILONS = (1e-6, 1e-2, 1.0, 1e3)
#: Every finite mechanism with a score-vector input, one entry per noise of report noisy max.
MECHS = (
    ("exponential", {}),
    ("report_noisy_max", {"noise": "laplace"}),
    ("report_noisy_max", {"noise": "exponential"}),
    ("report_noisy_max", {"noise": "gumbel"}),
    ("permute_and_flip", {}),
)
MECH_IDS = ("em", "rnm_laplace", "rnm_exponential", "rnm_gumbel", "pf")


def _vec(name: str) -> np.ndarray:
    """The named extreme score vectors (deterministic)."""
    r = np.random.default_rng(20240516)
    if name == "pf_nan":  # a vector that once gave NaN for one candidate at epsilon = 1
        return np.concatenate(([0.0], np.linspace(-71.0, -1000.0, 128)))
    if name == "single":
        return np.array([3.0])
    if name == "two_tiny_gap":
        return np.array([0.0, 1e-300])
    if name == "wide_1e12":
        return np.linspace(-1e12, 1e12, 1000)
    if name == "offset_1e12":  # huge common offset, unit gaps
        return 1e12 + np.arange(300.0)
    if name == "leader_far":
        return np.concatenate(([0.0], np.full(499, -1e12)))
    if name == "ties_3_levels":
        return np.repeat([0.0, -1.0, -5.0], 400)
    if name == "all_equal":
        return np.zeros(1000)
    if name == "neg_inf":
        return np.array([0.0, -np.inf, -1.0, -np.inf, 3.0, 3.0])
    if name == "normal_1e3":
        return r.normal(0.0, 1e3, 700)
    if name == "integers_many_ties":
        return r.integers(-3, 4, 5000).astype(np.float64)
    if name == "k129_distinct":  # just above the exact Gauss-Legendre path of pf_log_prob
        return -np.arange(129.0) * 7.3
    if name == "ties_1e6":
        return np.repeat(np.arange(10.0), 10**5)
    if name == "distinct_1e5":
        return r.normal(0.0, 10.0, 10**5)
    if name == "distinct_1e6":
        return r.normal(0.0, 10.0, 10**6)
    raise KeyError(name)


FAST_VECTORS = ("pf_nan", "single", "two_tiny_gap", "wide_1e12", "offset_1e12", "leader_far", "ties_3_levels",
                "all_equal", "neg_inf", "normal_1e3", "integers_many_ties", "k129_distinct", "ties_1e6")
#: Distinct scores at k = 10^5 (Laplace: ~2-3 s per call) and 10^6 (up to ~25 s per call).
SLOW_VECTORS = ("distinct_1e5", "distinct_1e6")


def _law_cases():
    for v in FAST_VECTORS + SLOW_VECTORS:
        for (name, kw), mid in zip(MECHS, MECH_IDS):
            if v == "distinct_1e6" and kw.get("noise") == "laplace":
                continue  # ~1 min per call; the 1e5 case covers the Laplace quadrature at scale
            for eps in EPSILONS:
                if v == "distinct_1e6" and eps not in (1e-6, 1e3):
                    continue  # k = 10^6 at the two extreme epsilons (~25 s each); 10^5 covers every epsilon
                marks = (pytest.mark.slow,) if v in SLOW_VECTORS else ()
                yield pytest.param(name, kw, v, eps, id=f"{mid}-{v}-eps{eps:g}", marks=marks)


def _check_law(mech, u: np.ndarray) -> np.ndarray:
    lp = np.asarray(mech.log_prob(u))
    assert lp.shape == u.shape
    assert not np.isnan(lp).any(), f"NaN at indices {np.flatnonzero(np.isnan(lp))[:5]}"
    assert not np.isposinf(lp).any()
    assert np.all(lp <= 1e-12)
    # Masses sum to 1: fsum makes the check's own rounding negligible (exactly rounded sum).
    assert abs(math.fsum(np.exp(lp)) - 1.0) <= 1e-12
    # -inf scores (and only they, or scores too far behind to be representable) get probability 0.
    assert np.all(np.isneginf(lp[np.isneginf(u)]))
    # Ties get equal probabilities; a higher score never gets a lower probability.
    fin = np.isfinite(u)
    order = np.argsort(u[fin], kind="stable")
    us, ls = u[fin][order], lp[fin][order]
    same = us[1:] == us[:-1]
    np.testing.assert_array_equal(ls[1:][same], ls[:-1][same])
    both = np.isfinite(ls[1:]) & np.isfinite(ls[:-1])
    # non-decreasing up to the certified relative error of the quadratures (1e-13) and rounding
    assert np.all(ls[1:][both] >= ls[:-1][both] - 1e-10)
    return lp


@pytest.mark.parametrize("name, kw, vector, eps", list(_law_cases()))
def test_exact_law_is_a_probability_vector(name, kw, vector, eps):
    mech = mechanisms.make(name, epsilon=eps, **kw)
    _check_law(mech, _vec(vector))


def test_pf_nan_vector_has_a_law_and_samples_by_law():
    """The score vector on which permute-and-flip and exponential-noise RNM once gave NaN at eps = 1."""
    u = _vec("pf_nan")
    for name, kw in (("permute_and_flip", {}), ("report_noisy_max", {"noise": "exponential"})):
        mech = mechanisms.make(name, epsilon=1.0, sampler="law", **kw)
        lp = _check_law(mech, u)
        # The leader is 71 score units (35.5 noise scales) ahead: P[leader] = 1 - O(e^-35.5).
        assert lp[0] == pytest.approx(0.0, abs=1e-14)
        assert np.all(mech.sample(u, size=100, rng=1) == 0)


# --------------------------------------------------------------------------------------------------
# Sampler versus law: chi-square goodness of fit
# --------------------------------------------------------------------------------------------------

SAMPLER_VECTORS = ("pf_nan", "two_tiny_gap", "wide_1e12", "offset_1e12", "leader_far", "ties_3_levels",
                   "neg_inf", "normal_1e3", "k129_distinct")
SAMPLER_EPS = (1e-6, 1.0, 1e3)
DRAWS = 20_000


def _sampler_cases():
    for v in SAMPLER_VECTORS:
        for (name, kw), mid in zip(MECHS, MECH_IDS):
            samplers = ("direct",) if name == "exponential" else ("direct", "law")
            for sampler in samplers:
                for eps in SAMPLER_EPS:
                    skw = dict(kw) if name == "exponential" else dict(kw, sampler=sampler)
                    yield pytest.param(name, skw, v, eps, id=f"{mid}-{sampler}-{v}-eps{eps:g}")


SAMPLER_CASES = list(_sampler_cases())
RR_EPS = (1e-6, 1e-2, 1.0, 5.0, 1e3)
#: Family-wise false-alarm rate of all chi-square tests in this file. Each test is run at
#: FAMILY_ALPHA / N_TESTS (Bonferroni), so with a correct sampler the chance that any of them
#: fails is at most FAMILY_ALPHA (and each outcome is fixed by its seed).
FAMILY_ALPHA = 1e-3
N_TESTS = len(SAMPLER_CASES) + 2 * len(RR_EPS)


def chi_square_ok(counts: np.ndarray, p: np.ndarray) -> tuple[bool, float, float]:
    """Pearson's chi-square of ``counts`` against probabilities ``p`` at level FAMILY_ALPHA/N_TESTS.

    Bins with expected count < 5 are merged into one (the chi2 approximation needs >= 5 per bin);
    a draw in a zero-probability bin fails outright. Under H0 the statistic is asymptotically
    chi2 with (bins - 1) degrees of freedom, so the threshold is its upper FAMILY_ALPHA/N_TESTS
    quantile (scipy.stats.chi2.isf).
    """
    n = counts.sum()
    if np.any(counts[p == 0] > 0):
        return False, math.inf, 0.0
    exp = n * p
    big = exp >= 5
    obs_b = np.append(counts[big], counts[~big].sum())
    exp_b = np.append(exp[big], exp[~big].sum())
    keep = exp_b > 0
    obs_b, exp_b = obs_b[keep], exp_b[keep]
    if obs_b.size < 2:  # one bin holds (essentially) all the mass: the no-impossible-draw check is all
        return True, 0.0, 0.0
    stat = float(np.sum((obs_b - exp_b) ** 2 / exp_b))
    thr = float(stats.chi2.isf(FAMILY_ALPHA / N_TESTS, obs_b.size - 1))
    return stat <= thr, stat, thr


@pytest.mark.statistical
@pytest.mark.parametrize("name, kw, vector, eps", SAMPLER_CASES)
def test_sampler_matches_exact_law(name, kw, vector, eps):
    mech = mechanisms.make(name, epsilon=eps, **kw)
    u = _vec(vector)
    p = np.exp(mech.log_prob(u))
    draws = mech.sample(u, size=DRAWS, rng=12345)
    counts = np.bincount(draws, minlength=u.size)
    ok, stat, thr = chi_square_ok(counts, p)
    assert ok, f"chi-square {stat:.1f} > threshold {thr:.1f}"


@pytest.mark.statistical
@pytest.mark.parametrize("eps", RR_EPS)
@pytest.mark.parametrize("bit", [0, 1])
def test_randomized_response_law_and_sampler(eps, bit):
    mech = mechanisms.make("randomized_response", epsilon=eps)
    lp = mech.log_prob(bit)
    assert not np.isnan(lp).any()
    assert abs(math.fsum(np.exp(lp)) - 1.0) <= 1e-12
    # P[truth] = e^eps / (1 + e^eps), i.e. log P[truth] = -log1p(e^-eps), exactly (Warner 1965).
    assert lp[bit] == pytest.approx(-math.log1p(math.exp(-eps)), rel=1e-12, abs=1e-300)
    counts = np.bincount(mech.sample(bit, size=DRAWS, rng=777), minlength=2)
    ok, stat, thr = chi_square_ok(counts, np.exp(lp))
    assert ok, f"chi-square {stat:.1f} > threshold {thr:.1f}"


# --------------------------------------------------------------------------------------------------
# A derandomised hypothesis search over small extreme vectors
# --------------------------------------------------------------------------------------------------

_mags = st.sampled_from([0.0, 1e-300, 1e-6, 1.0, 70.0, 1e3, 1e6, 1e12])
_score = st.one_of(
    st.builds(lambda m, s, i: s * m * i, _mags, st.sampled_from([-1.0, 1.0]), st.integers(0, 5)),
    st.just(-np.inf),
)


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    scores=st.lists(_score, min_size=1, max_size=200).filter(lambda s: any(math.isfinite(x) for x in s)),
    eps=st.sampled_from(EPSILONS),
    which=st.integers(0, len(MECHS) - 1),
)
def test_hypothesis_extreme_vectors(scores, eps, which):
    name, kw = MECHS[which]
    _check_law(mechanisms.make(name, epsilon=eps, **kw), np.array(scores, dtype=np.float64))
