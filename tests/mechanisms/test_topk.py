"""Top-k selection mechanisms (mechanisms/topk.py) and their exact sequence laws (mechanisms/topk_laws.py).

Statistical tests: every sampler is compared with its exact law by a chi-square goodness-of-fit test
with a fixed seed. The family of chi-square tests in this file (``CHI2_CASES``, 8 tests) is held to
a family-wise false-alarm level of 1e-3, split Bonferroni: each test rejects at level 1e-3 / 8 =
1.25e-4, threshold ``scipy.stats.chi2.ppf(1 - 1.25e-4, df)``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpharness import mechanisms
from dpharness.mechanisms import topk, topk_laws
from dpharness.mechanisms.finite import ExponentialMechanism, PermuteAndFlip
from dpharness.mechanisms.selection_laws import laplace_rnm_log_prob

NAMES = ("peeling_exponential", "gumbel_top_k", "laplace_top_k", "peeling_permute_and_flip")

FAMILY_ALPHA = 1e-3
CHI2_CASES = [
    (name, scores, k)
    for name in NAMES
    for scores, k in (([0.0, 1.0, 2.0, 2.5, -1.0], 2), ([0.0, 3.0, -np.inf, 1.0], 3))
]
PER_TEST_ALPHA = FAMILY_ALPHA / len(CHI2_CASES)  # Bonferroni over the chi-square family


def _tv(lp_a: np.ndarray, lp_b: np.ndarray) -> float:
    return 0.5 * float(np.abs(np.exp(lp_a) - np.exp(lp_b)).sum())


def test_registered_classes():
    assert [mechanisms.registry.get(n) for n in NAMES] == [topk.PeelingExponential, topk.GumbelTopK,
                                                            topk.LaplaceTopK, topk.PeelingPermuteAndFlip]
    assert topk_laws.n_ordered(5, 2) == 20 and topk_laws.ordered_tuples(5, 2).shape == (20, 2)


# -- exact laws --------------------------------------------------------------------------------


def test_peeling_em_and_gumbel_exact_laws_agree_on_random_scores():
    rng = np.random.default_rng(20240613)
    worst = 0.0
    for _ in range(20):
        n = int(rng.integers(2, 7))
        k = int(rng.integers(1, n + 1))
        u = rng.normal(0, 3, size=n)
        eps = float(rng.uniform(0.1, 5))
        a = mechanisms.make("peeling_exponential", epsilon=eps, k=k)
        b = mechanisms.make("gumbel_top_k", epsilon=eps, k=k)
        np.testing.assert_array_equal(a.support(u), b.support(u))
        worst = max(worst, _tv(a.log_prob(u), b.log_prob(u)))
        np.testing.assert_allclose(np.exp(a.log_prob(u)).sum(), 1.0, rtol=1e-12)
    assert worst <= 1e-12


def _gumbel_order_prob(mu: np.ndarray, seq: tuple[int, ...]) -> float:
    """Definition: P(X_seq[0] > ... > X_seq[-1] > every other X) for X_i = mu_i + standard Gumbel,
    by nested quadrature over the noisy values (no Plackett--Luce formula involved)."""
    cdf = lambda y, m: math.exp(-math.exp(-(y - m)))  # noqa: E731
    pdf = lambda y, m: math.exp(-(y - m) - math.exp(-(y - m)))  # noqa: E731
    # Outside [min mu - 7, max mu + 45] every density is below e^-45 (Gumbel tails: exp(-e^7) left).
    lo, hi = float(mu.min()) - 7.0, float(mu.max()) + 45.0
    others = [i for i in range(mu.size) if i not in seq]

    def above(y: float, rest: tuple[int, ...]) -> float:
        # P(X_rest[0] > ... > X_rest[-1] > y)
        if not rest:
            return 1.0
        last = rest[-1]
        val, _ = integrate.quad(lambda t: pdf(t, mu[last]) * above(t, rest[:-1]), y, hi,
                                epsabs=1e-13, epsrel=1e-11, limit=200)
        return val

    last = seq[-1]
    val, _ = integrate.quad(lambda y: pdf(y, mu[last]) * math.prod(cdf(y, mu[o]) for o in others)
                            * above(y, seq[:-1]), lo, hi, epsabs=1e-13, epsrel=1e-11, limit=200)
    return val


@pytest.mark.parametrize("k", [1, 2])
def test_gumbel_top_k_law_matches_definitional_integral(k):
    u = np.array([0.0, 1.0, 2.0, 0.5])
    m = mechanisms.make("gumbel_top_k", epsilon=2.0, k=k)
    mu = m.rate * u  # Gumbel locations in units of the noise scale
    lp = m.log_prob(u)
    brute = np.array([_gumbel_order_prob(mu, tuple(s)) for s in m.support(u)])
    assert abs(brute.sum() - 1.0) < 1e-9
    tv = 0.5 * float(np.abs(brute - np.exp(lp)).sum())
    assert tv < 1e-9, tv


def test_peeling_em_law_matches_round_by_round_recursion():
    # Slow definition: product of the one-round exponential mechanism (finite.py) on what is left.
    u = np.array([0.3, -1.0, 2.0, 1.2, 0.0])
    eps, k = 1.5, 3
    m = mechanisms.make("peeling_exponential", epsilon=eps, k=k)
    em = ExponentialMechanism(epsilon=eps / k)
    seqs, lp = m.support(u), m.log_prob(u)
    for s, l in zip(seqs, lp):
        left, total = list(range(u.size)), 0.0
        for c in s:
            sub = em.log_prob(u[left])
            total += sub[left.index(c)]
            left.remove(c)
        assert abs(total - l) < 1e-12


def test_peeling_pf_law_matches_round_by_round_recursion():
    u = np.array([0.3, -1.0, 2.0, 1.2, 0.0])
    eps, k = 2.0, 3
    m = mechanisms.make("peeling_permute_and_flip", epsilon=eps, k=k)
    pf = PermuteAndFlip(epsilon=eps / k)
    seqs, lp = m.support(u), m.log_prob(u)
    np.testing.assert_allclose(np.exp(lp).sum(), 1.0, rtol=1e-12)
    for s, l in zip(seqs, lp):
        left, total = list(range(u.size)), 0.0
        for c in s:
            total += pf.log_prob(u[left])[left.index(c)]
            left.remove(c)
        assert abs(total - l) < 1e-12


def test_laplace_law_at_k1_is_report_noisy_max():
    u = np.array([0.0, 1.0, 2.0, 2.5, -3.0])
    m = mechanisms.make("laplace_top_k", epsilon=1.0, k=1)
    lp = m.log_prob(u)
    ref = laplace_rnm_log_prob(m.rate * (u - u.max()))  # certified to 1e-13 relative
    np.testing.assert_allclose(np.exp(lp), np.exp(ref), rtol=0, atol=2e-12)


def test_laplace_law_matches_definitional_integral():
    u = np.array([0.0, 1.0, 2.0])
    m = mechanisms.make("laplace_top_k", epsilon=2.0, k=2)
    v = m.rate * u
    f = lambda y, c: 0.5 * math.exp(-abs(y - c))  # noqa: E731
    sf = lambda y, c: 0.5 * math.exp(-(y - c)) if y >= c else 1 - 0.5 * math.exp(y - c)  # noqa: E731
    lp = m.log_prob(u)
    for s, l in zip(m.support(u), lp):
        a, b = int(s[0]), int(s[1])
        o = ({0, 1, 2} - {a, b}).pop()
        val, _ = integrate.quad(lambda y: f(y, v[b]) * (1 - sf(y, v[o])) * sf(y, v[a]), -60, 60,
                                points=sorted(v), epsabs=1e-13, epsrel=1e-11, limit=400)
        assert abs(val - math.exp(l)) < 1e-9


def test_log_prob_of_matches_support_rows_and_works_beyond_the_cap():
    u = np.array([0.0, 1.0, 2.0, 2.5])
    for name in NAMES:
        m = mechanisms.make(name, epsilon=1.0, k=2)
        sup, lp = m.support(u), m.log_prob(u)
        np.testing.assert_allclose(m.log_prob_of(u, sup[::-1]), lp[::-1], rtol=0, atol=1e-14)
    big = np.linspace(0, 5, 2000)
    m = mechanisms.make("peeling_exponential", epsilon=1.0, k=3)
    with pytest.raises(ValueError, match="log_prob_of"):
        m.support(big)  # 2000*1999*1998 rows > 1e6
    seqs = np.array([[1999, 1998, 1997], [0, 1, 2]])
    lp = m.log_prob_of(big, seqs)
    assert np.all(np.isfinite(lp)) and lp[0] > lp[1]


def test_neg_inf_scores_have_zero_probability():
    u = np.array([0.0, -np.inf, 1.0, 2.0])
    for name in NAMES:
        m = mechanisms.make(name, epsilon=1.0, k=2)
        sup, lp = m.support(u), m.log_prob(u)
        has = np.any(sup == 1, axis=1)
        assert np.all(np.isneginf(lp[has])) and np.all(np.isfinite(lp[~has])), name
        np.testing.assert_allclose(np.exp(lp).sum(), 1.0, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("monotone", [False, True])
def test_exact_privacy_loss_within_claim_on_neighbour_grid(name, monotone):
    # Vertices of the neighbour set: every score moves by +-Delta (score_linf) or by 0/+Delta
    # together (score_monotone); the loss of a finite law is max |log P(s|D) - log P(s|D')|.
    rng = np.random.default_rng(7)
    k, delta_u = 2, 1.0
    m = mechanisms.make(name, epsilon=1.0, k=k, monotone=monotone, sensitivity=delta_u)
    steps = [0.0, delta_u] if monotone else [-delta_u, 0.0, delta_u]
    worst = 0.0
    for _ in range(2):
        u = rng.normal(0, 1.5, size=4)
        lp = m.log_prob(u)
        for d in itertools.product(steps, repeat=4):
            worst = max(worst, float(np.max(np.abs(m.log_prob(u + np.array(d)) - lp))))
    assert worst <= m.claim.epsilon + 1e-9, worst


# -- samplers vs exact laws ---------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("name,scores,k", CHI2_CASES)
def test_sampler_matches_exact_law_chi_square(name, scores, k):
    u = np.array(scores)
    m = mechanisms.make(name, epsilon=2.0, k=k)
    n_draws = 100_000
    draws = m.sample(u, size=n_draws, rng=12345)
    sup, p = m.support(u), np.exp(m.log_prob(u))
    # code each ordered tuple as a base-n integer to count draws per support row
    base = u.size ** np.arange(k)[::-1]
    lookup = {int(c): i for i, c in enumerate(sup @ base)}
    codes = draws @ base
    idx = np.array([lookup[int(c)] for c in np.unique(codes)])
    counts = np.zeros(sup.shape[0])
    counts[idx] = np.unique(codes, return_counts=True)[1]
    assert counts[p == 0].sum() == 0  # impossible sequences never drawn
    expected = p * n_draws
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp_ = np.append(expected[~small], expected[small].sum())
    if exp_[-1] == 0:
        obs, exp_ = obs[:-1], exp_[:-1]
    stat = float(((obs - exp_) ** 2 / exp_).sum())
    df = obs.size - 1
    assert stat < stats.chi2.ppf(1 - PER_TEST_ALPHA, df), (stat, df)


# -- shapes, dtype, reproducibility ---------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_shapes_dtype_and_reproducibility(name):
    u = np.array([0.0, 1.0, 2.0, 2.5, -1.0, 0.5])
    m = mechanisms.make(name, epsilon=1.0, k=3)
    one = m.sample(u, rng=0)
    assert one.shape == (3,) and one.dtype == np.int64
    a = m.sample(u, size=1000, rng=np.random.default_rng(5))
    assert a.shape == (1000, 3) and a.dtype.kind == "i"
    assert np.all((a >= 0) & (a < u.size))
    assert np.all(np.sort(a, axis=1)[:, 1:] != np.sort(a, axis=1)[:, :-1])  # distinct per draw
    np.testing.assert_array_equal(a, m.sample(u, size=1000, rng=np.random.default_rng(5)))
    assert not np.array_equal(a, m.sample(u, size=1000, rng=6))
    assert m.sample(u, size=(4, 5), rng=1).shape == (4, 5, 3)
    assert m.sample(u, size=0, rng=1).shape == (0, 3)
    full = mechanisms.make(name, epsilon=1.0, k=u.size).sample(u, size=50, rng=2)
    np.testing.assert_array_equal(np.sort(full, axis=1), np.broadcast_to(np.arange(u.size), (50, u.size)))


@pytest.mark.parametrize("name", NAMES)
def test_huge_scores_do_not_overflow(name):
    u = np.array([0.0, 1e6, 1e6 - 1.0, -1e300])
    m = mechanisms.make(name, epsilon=1.0, k=2)
    draws = m.sample(u, size=2000, rng=3)
    assert set(np.unique(draws[:, :2])) <= {0, 1, 2, 3}
    assert np.all(np.isin(draws[:, 0], [1, 2]))
    lp = m.log_prob(u)
    assert not np.any(np.isnan(lp))
    np.testing.assert_allclose(np.exp(lp).sum(), 1.0, atol=1e-9)


# -- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_bad_parameters_raise_naming_the_problem(name):
    for eps in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="epsilon"):
            mechanisms.make(name, epsilon=eps, k=2)
    for k in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="k must be an integer"):
            mechanisms.make(name, epsilon=1.0, k=k)
    with pytest.raises(ValueError, match="sensitivity"):
        mechanisms.make(name, epsilon=1.0, k=2, sensitivity=0)
    with pytest.raises(ValueError, match="monotone"):
        mechanisms.make(name, epsilon=1.0, k=2, monotone="yes")
    with pytest.raises(ValueError, match="missing"):
        mechanisms.make(name, epsilon=1.0)


@pytest.mark.parametrize("name", NAMES)
def test_bad_data_raises_naming_the_problem(name):
    m = mechanisms.make(name, epsilon=1.0, k=3)
    with pytest.raises(ValueError, match="larger than the number of candidates"):
        m.sample([0.0, 1.0], size=3, rng=0)
    with pytest.raises(ValueError, match="NaN"):
        m.sample([0.0, np.nan, 1.0, 2.0], rng=0)
    with pytest.raises(ValueError, match="NaN"):
        m.log_prob([0.0, np.nan, 1.0, 2.0])
    with pytest.raises(ValueError, match="only 2 of the 4 scores are finite"):
        m.sample([0.0, -np.inf, 1.0, -np.inf], rng=0)
    with pytest.raises(ValueError, match=r"\+inf"):
        m.sample([0.0, np.inf, 1.0, 2.0], rng=0)
    with pytest.raises(ValueError, match="missing"):
        m.sample(None, rng=0)
    with pytest.raises(ValueError, match="1-D"):
        m.sample(np.zeros((2, 3)), rng=0)
    with pytest.raises(ValueError, match="size"):
        m.sample([0.0, 1.0, 2.0], size=-1, rng=0)
    u = [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="shape"):
        m.log_prob_of(u, [[0, 1]])
    with pytest.raises(ValueError, match="repeat"):
        m.log_prob_of(u, [[0, 1, 1]])
    with pytest.raises(ValueError, match="indices in"):
        m.log_prob_of(u, [[0, 1, 4]])
