"""Tests for the finite selection mechanisms (mechanisms/finite.py, mechanisms/selection_laws.py).

Fast exact algorithms are checked against slow definitional twins (enumeration of permutations,
an O(k^2) Bernstein-basis sum, scipy quadrature, closed forms) and samplers against the exact law
by chi-square tests whose threshold comes from a stated false-alarm rate.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpharness import mechanisms
from dpharness.mechanisms.finite import ExponentialMechanism, PermuteAndFlip, RandomizedResponse, ReportNoisyMax
from dpharness.mechanisms.selection_laws import RTOL, em_log_prob, gauss_legendre, laplace_rnm_log_prob, pf_log_prob

UTILS = np.array([0.0, 1.0, 2.0, 2.5])
FINITE_NAMES = ("exponential", "report_noisy_max", "permute_and_flip", "randomized_response")


# --------------------------------------------------------------------------------------------------
# Slow definitional twins
# --------------------------------------------------------------------------------------------------


def pf_bruteforce(q: np.ndarray) -> np.ndarray:
    """Permute-and-flip by enumerating all k! visiting orders (McKenna & Sheldon, Alg. 1)."""
    k = q.size
    p = np.zeros(k)
    perms = list(itertools.permutations(range(k)))
    for perm in perms:
        still = 1.0
        for r in perm:
            p[r] += still * q[r]
            still *= 1.0 - q[r]
    return p / len(perms)


def pf_bernstein(q: np.ndarray, r: int) -> float:
    """P[r] = q_r * mean_j E_j, E_j = average over j-subsets S of the others of prod_{s in S}(1 - q_s).

    Expanding prod_{s != r}((1 - t) + (1 - q_s) t) in the Bernstein basis and integrating each
    basis polynomial over [0, 1] (each integrates to 1/(n + 1)). Every step is a convex
    combination of positive numbers, so this O(k^2) twin is numerically stable.
    """
    b = np.delete(1.0 - q, r)
    e = np.array([1.0])
    for n, bs in enumerate(b):
        j = np.arange(n + 2)
        new = np.zeros(n + 2)
        new[:-1] += (n + 1 - j[:-1]) / (n + 1) * e
        new[1:] += j[1:] / (n + 1) * bs * e
        e = new
    return float(q[r] * e.mean())


def laplace_rnm_quad(v: np.ndarray) -> np.ndarray:
    """P[argmax(v + Laplace(1)) = r] by scipy adaptive quadrature, breakpoints at the scores."""
    k = v.size
    cuts = np.unique(np.concatenate(([v.min() - 60.0], v, [v.max() + 60.0])))
    out = np.zeros(k)
    for r in range(k):
        others = np.delete(v, r)

        def f(y: float, r: int = r, others: np.ndarray = others) -> float:
            return float(stats.laplace.pdf(y - v[r]) * np.prod(stats.laplace.cdf(y - others)))

        out[r] = sum(
            integrate.quad(f, a, c, epsabs=0.0, epsrel=1e-12, limit=200)[0] for a, c in zip(cuts[:-1], cuts[1:])
        )
    return out


def exp_rnm_quad(v: np.ndarray) -> np.ndarray:
    """P[argmax(v + Exp(1)) = r] = int_{max v}^inf e^{-(y - v_r)} prod_{s != r}(1 - e^{-(y - v_s)}) dy."""
    top = v.max()
    out = np.zeros(v.size)
    for r in range(v.size):
        others = np.delete(v, r)

        def f(y: float, r: int = r, others: np.ndarray = others) -> float:
            return float(np.exp(-(y - v[r])) * np.prod(-np.expm1(-(y - others))))

        out[r] = integrate.quad(f, top, top + 80.0, epsabs=0.0, epsrel=1e-12, limit=200)[0]
    return out


# --------------------------------------------------------------------------------------------------
# Chi-square goodness of fit with a derived threshold
# --------------------------------------------------------------------------------------------------

#: Sampling cases below (Bonferroni: each test uses ALPHA / N_GOF so the family-wise false-alarm
#: rate of this file's goodness-of-fit tests is <= 1e-6).
GOF_CASES = [
    ("exponential", dict(epsilon=1.0), UTILS),
    ("exponential", dict(epsilon=1.0, monotone=True), UTILS),
    ("exponential", dict(epsilon=3.0, sensitivity=2.0), np.array([0.0, -np.inf, 5.0, 5.0, 1.0])),
    ("exponential", dict(epsilon=0.7), np.linspace(0.0, 12.0, 40)),
    ("report_noisy_max", dict(epsilon=1.0, noise="laplace"), UTILS),
    ("report_noisy_max", dict(epsilon=1.0, noise="laplace", monotone=True), UTILS),
    ("report_noisy_max", dict(epsilon=1.0, noise="exponential"), UTILS),
    ("report_noisy_max", dict(epsilon=1.0, noise="exponential", monotone=True), UTILS),
    ("report_noisy_max", dict(epsilon=1.0, noise="gumbel"), UTILS),
    ("report_noisy_max", dict(epsilon=1.0, noise="gumbel", monotone=True), UTILS),
    ("report_noisy_max", dict(epsilon=0.5, noise="laplace"), np.linspace(0.0, 30.0, 60)),
    ("report_noisy_max", dict(epsilon=2.0, noise="exponential"), np.array([3.0, 3.0, -np.inf, 2.0, 0.0])),
    ("permute_and_flip", dict(epsilon=1.0), UTILS),
    ("permute_and_flip", dict(epsilon=1.0, monotone=True), UTILS),
    ("permute_and_flip", dict(epsilon=0.5), np.linspace(0.0, 30.0, 60)),
    ("permute_and_flip", dict(epsilon=2.0), np.array([3.0, 3.0, -np.inf, 2.0, 0.0])),
    ("report_noisy_max", dict(epsilon=0.5, noise="laplace", sampler="law"), np.linspace(0.0, 30.0, 60)),
    ("report_noisy_max", dict(epsilon=1.0, noise="gumbel", sampler="law"), UTILS),
    ("permute_and_flip", dict(epsilon=0.5, sampler="law"), np.linspace(0.0, 60.0, 300)),
    ("permute_and_flip", dict(epsilon=0.5), np.linspace(0.0, 60.0, 300)),
    ("randomized_response", dict(epsilon=1.0), 0),
    ("randomized_response", dict(epsilon=0.2), 1),
]
N_GOF = len(GOF_CASES) + 1  # + the count-utility case
ALPHA = 1e-6 / N_GOF
DRAWS = 200_000


def assert_gof(samples: np.ndarray, support: np.ndarray, log_p: np.ndarray, alpha: float = ALPHA) -> None:
    """Pearson chi-square of ``samples`` against exp(log_p) on ``support``.

    Outcomes with probability 0 must never occur. Cells with expected count < 5 are pooled into
    one cell. Reject if the statistic exceeds the chi-square (1 - alpha) quantile.
    """
    p = np.exp(log_p)
    assert abs(p.sum() - 1.0) < 1e-12
    pos = {lab: i for i, lab in enumerate(support.tolist())}
    idx = np.array([pos[s] for s in np.unique(samples).tolist()])
    assert np.all(p[idx] > 0), "sampled an outcome with probability 0"
    counts = np.zeros(p.size)
    uniq, cnt = np.unique(samples, return_counts=True)
    counts[[pos[s] for s in uniq.tolist()]] = cnt
    n = samples.size
    expected = n * p
    big = expected >= 5
    obs = list(counts[big])
    exp_ = list(expected[big])
    if (~big).any() and expected[~big].sum() > 0:
        obs.append(counts[~big].sum())
        exp_.append(expected[~big].sum())
    obs_a, exp_a = np.array(obs), np.array(exp_)
    df = obs_a.size - 1
    if df == 0:
        assert obs_a[0] == n
        return
    stat = float(np.sum((obs_a - exp_a) ** 2 / exp_a))
    assert stat <= stats.chi2.ppf(1.0 - alpha, df), f"chi-square {stat:.1f} > threshold (df={df})"


@pytest.mark.statistical
@pytest.mark.parametrize("name,params,data", GOF_CASES)
def test_sampler_matches_exact_law(name, params, data):
    mech = mechanisms.make(name, **params)
    s = mech.sample(data, size=DRAWS, rng=20240611)
    assert s.shape == (DRAWS,)
    assert_gof(s, mech.support(data), mech.log_prob(data))


@pytest.mark.statistical
def test_count_utility_sampler_and_law():
    statuses = ("married", "single", "divorced", "widowed")
    rng = np.random.default_rng(5)
    data = rng.choice(np.array(statuses + ("unknown",)), size=40, p=[0.35, 0.3, 0.15, 0.1, 0.1])
    mech = mechanisms.make("exponential", epsilon=0.5, utility="count", candidates=statuses)
    counts = np.array([(data == c).sum() for c in statuses], dtype=float)  # slow twin of the counting
    np.testing.assert_allclose(mech.log_prob(data), em_log_prob(0.5 * counts / 2), rtol=0, atol=1e-14)
    assert mech.claim.neighbours == "add_remove" and mech.claim.sensitivity == 1.0
    np.testing.assert_array_equal(mech.support(data), np.array(statuses))
    s = mech.sample(data, size=DRAWS, rng=11)
    assert set(np.unique(s).tolist()) <= set(statuses)
    assert_gof(s, mech.support(data), mech.log_prob(data))


# --------------------------------------------------------------------------------------------------
# Exact laws
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,params,data", GOF_CASES)
def test_log_probs_sum_to_one(name, params, data):
    mech = mechanisms.make(name, **params)
    lp = mech.log_prob(data)
    assert lp.shape == mech.support(data).shape
    assert not np.isnan(lp).any() and np.all(lp <= 1e-15)
    assert abs(math.fsum(np.exp(lp)) - 1.0) < 1e-12


def test_reference_figures_em_versus_permute_and_flip():
    # docs/mechanisms.md, "report_noisy_max": utilities (0, 1, 2, 2.5), eps = 1, Delta = 1. Checked to 3 decimals, correctly
    # rounded: the exact PF top probability is 0.446929... (docs/mechanisms.md quotes 0.4469).
    em = np.exp(mechanisms.make("exponential", epsilon=1.0).log_prob(UTILS))
    pf = np.exp(mechanisms.make("permute_and_flip", epsilon=1.0).log_prob(UTILS))
    rnm_exp = np.exp(mechanisms.make("report_noisy_max", epsilon=1.0, noise="exponential").log_prob(UTILS))
    rnm_gum = np.exp(mechanisms.make("report_noisy_max", epsilon=1.0, noise="gumbel").log_prob(UTILS))
    np.testing.assert_allclose(em, [0.113, 0.186, 0.307, 0.394], atol=5e-4)
    np.testing.assert_allclose(pf, [0.092, 0.161, 0.300, 0.447], atol=5e-4)
    # PF = exponential-noise RNM (exactly: both are the same integral, checked against its own
    # quadrature twin below); Gumbel RNM = EM; and the two families differ.
    np.testing.assert_allclose(pf, rnm_exp, rtol=1e-13)
    np.testing.assert_allclose(em, rnm_gum, rtol=1e-13)
    assert np.max(np.abs(em - pf)) > 0.04


@pytest.mark.parametrize("seed", range(6))
def test_permute_and_flip_matches_enumeration_of_permutations(seed):
    rng = np.random.default_rng(seed)
    k = 1 + seed  # k = 1..6
    u = np.round(rng.normal(scale=2.0, size=k), 1)
    if k >= 3:
        u[1] = u[0]  # ties
    if k >= 4:
        u[2] = -np.inf
    eps, delta = 1.3, 0.8
    mech = PermuteAndFlip(epsilon=eps, sensitivity=delta)
    with np.errstate(over="ignore"):
        q = np.exp(eps * (u - u.max()) / (2 * delta))
    want = pf_bruteforce(q)
    got = np.exp(mech.log_prob(u))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("k,spread", [(300, 3.0), (1000, 0.2), (1000, 40.0)])
def test_permute_and_flip_certified_path_matches_bernstein_twin(k, spread):
    # k > 128 uses the graded certified quadrature; check it against the O(k^2) exact twin.
    rng = np.random.default_rng(k)
    z = -np.abs(rng.normal(scale=spread, size=k))
    z[:3] = 0.0
    lp = pf_log_prob(z)
    q = np.exp(z - z.max())
    for r in [0, 1, 5, int(np.argmin(z)), k // 2]:
        want = pf_bernstein(q, r)
        assert abs(math.exp(lp[r]) / want - 1) < 1e-11
    assert abs(math.fsum(np.exp(lp)) - 1) < 1e-12


def test_exponential_noise_rnm_matches_quadrature_twin():
    v = np.array([0.0, -0.4, -1.7, -1.7, -5.0])
    np.testing.assert_allclose(np.exp(pf_log_prob(v)), exp_rnm_quad(v), rtol=1e-10)


@pytest.mark.parametrize("gap", [0.0, 1e-9, 0.3, 1.0, 4.0, 30.0, 700.0])
def test_laplace_rnm_two_candidates_closed_form(gap):
    # L1 - L2 is a difference of standard Laplaces: P[L2 - L1 > d] = e^{-d}(1 + d/2)/2 for d >= 0.
    lp = laplace_rnm_log_prob(np.array([gap, 0.0]))
    log_p_low = -gap + math.log1p(gap / 2) + math.log(0.5)
    assert abs(lp[1] - log_p_low) < 2 * RTOL + 1e-15
    assert abs(lp[0] - math.log1p(-math.exp(log_p_low))) < 2 * RTOL + 1e-15


@pytest.mark.parametrize(
    "v",
    [
        np.array([0.0, -0.7, -2.1]),
        np.array([0.0, 0.0, -0.5, -3.0]),
        np.array([1.0, 0.2, 0.2, -1.0, -4.0, -9.0]),
    ],
)
def test_laplace_rnm_matches_scipy_quadrature(v):
    np.testing.assert_allclose(np.exp(laplace_rnm_log_prob(v)), laplace_rnm_quad(v), rtol=1e-10)


def test_laplace_rnm_many_candidates_and_ties():
    # k ties: uniform exactly; many spread candidates: sums to one within the certified bound.
    for k in (2, 7, 1000):
        np.testing.assert_allclose(laplace_rnm_log_prob(np.zeros(k)), -math.log(k), rtol=0, atol=5 * RTOL)
    rng = np.random.default_rng(3)
    v = rng.uniform(-20.0, 0.0, size=2000)
    lp = laplace_rnm_log_prob(v)
    assert abs(math.fsum(np.exp(lp)) - 1) < 1e-12
    assert np.all(np.diff(lp[np.argsort(v)]) >= -1e-12)  # higher score, higher probability


def test_gauss_legendre_is_exact_to_its_degree():
    for m in (1, 2, 7, 33, 64):
        x, w = gauss_legendre(m)
        t = (1 + x) / 2
        d = 2 * m - 1
        assert abs(float(np.sum(w / 2 * (1 - t) ** d)) * (d + 1) - 1) < 1e-13
        assert abs(float(np.sum(w)) - 2) < 1e-14


# --------------------------------------------------------------------------------------------------
# Privacy: the claim holds exactly on neighbouring inputs
# --------------------------------------------------------------------------------------------------

PRIVACY_CASES = [
    ("exponential", dict()),
    ("exponential", dict(monotone=True)),
    ("permute_and_flip", dict()),
    ("permute_and_flip", dict(monotone=True)),
    ("report_noisy_max", dict(noise="laplace")),
    ("report_noisy_max", dict(noise="laplace", monotone=True)),
    ("report_noisy_max", dict(noise="exponential")),
    ("report_noisy_max", dict(noise="exponential", monotone=True)),
    ("report_noisy_max", dict(noise="gumbel")),
    ("report_noisy_max", dict(noise="gumbel", monotone=True)),
]
BASES = [np.zeros(3), np.array([0.0, 0.5, 2.0]), np.array([3.0, -1.0, 3.0])]


def neighbour_shifts(k: int, delta: float, monotone: bool) -> np.ndarray:
    """Shift vectors of neighbouring score vectors: every score by a multiple of Delta in a grid."""
    if monotone:
        grid = np.array(list(itertools.product((0.0, 0.5, 1.0), repeat=k))) * delta
        return np.concatenate([grid, -grid])
    return np.array(list(itertools.product((-1.0, -0.5, 0.0, 0.5, 1.0), repeat=k))) * delta


def max_privacy_loss(mech, base: np.ndarray, shifts: np.ndarray) -> float:
    lp0 = mech.log_prob(base)
    worst = 0.0
    for s in shifts:
        lp1 = mech.log_prob(base + s)
        worst = max(worst, float(np.max(np.abs(lp1 - lp0))))
    return worst


@pytest.mark.parametrize("name,params", PRIVACY_CASES)
@pytest.mark.parametrize("eps,delta", [(1.0, 1.0), (0.3, 2.5)])
def test_privacy_claim_holds_on_neighbour_grid(name, params, eps, delta):
    mech = mechanisms.make(name, epsilon=eps, sensitivity=delta, **params)
    shifts = neighbour_shifts(3, delta, mech.monotone)
    for base in BASES:
        assert max_privacy_loss(mech, base * delta, shifts) <= eps + 1e-9


@pytest.mark.parametrize("name,params", [c for c in PRIVACY_CASES if c[1].get("monotone")])
def test_monotone_calibration_is_violated_by_non_monotone_neighbours(name, params):
    # Positive control: the grid test can fail. A monotone calibration applied to scores that move
    # in opposite directions loses more than eps (k = 2, D = (0, 0), D' = (1, -1)).
    mech = mechanisms.make(name, epsilon=1.0, **params)
    loss = float(np.max(np.abs(mech.log_prob(np.array([1.0, -1.0])) - mech.log_prob(np.zeros(2)))))
    assert loss > 1.0 + 0.05


def test_privacy_loss_is_tight_where_theory_says():
    eps = 1.0
    # Permute-and-flip (and exponential-noise RNM): exactly eps for k = 2, D = (0,0), D' = (1,-1).
    # Monotone variants: exactly eps for D = (0, 0), D' = (1, 0).
    for monotone, d1 in ((False, [1.0, -1.0]), (True, [1.0, 0.0])):
        for mech in (
            PermuteAndFlip(epsilon=eps, monotone=monotone),
            ReportNoisyMax(epsilon=eps, noise="exponential", monotone=monotone),
        ):
            loss = np.max(np.abs(mech.log_prob(np.array(d1)) - mech.log_prob(np.zeros(2))))
            assert abs(loss - eps) < 1e-12
    # Exponential mechanism: D = 0^k, D' = (1, -1, ..., -1) loses eps - log((e^eps + k - 1)/k).
    k = 1000
    em = ExponentialMechanism(epsilon=eps)
    d1 = -np.ones(k)
    d1[0] = 1.0
    loss = float(np.max(np.abs(em.log_prob(d1) - em.log_prob(np.zeros(k)))))
    want = eps - math.log((math.exp(eps) + k - 1) / k)
    assert abs(loss - want) < 1e-12 and loss > eps - 2e-3
    # Randomized response: exactly eps.
    rr = RandomizedResponse(epsilon=eps)
    assert abs(float(np.max(np.abs(rr.log_prob(0) - rr.log_prob(1)))) - eps) < 1e-12


def test_randomized_response_is_em_at_twice_epsilon():
    for eps in (0.1, 1.0, 7.0, 800.0):
        rr = RandomizedResponse(epsilon=eps)
        keep = -np.logaddexp(0.0, -eps)  # log e^eps/(1 + e^eps)
        np.testing.assert_allclose(rr.log_prob(1), [-np.logaddexp(0.0, eps), keep], rtol=1e-14, atol=1e-300)
        np.testing.assert_allclose(rr.log_prob(True)[::-1], rr.log_prob(0), rtol=0, atol=0)
        em = ExponentialMechanism(epsilon=2 * eps)  # the documented mapping, eps' = 2 eps
        np.testing.assert_array_equal(em.log_prob(np.array([0.0, 1.0])), rr.log_prob(1))
    assert RandomizedResponse(epsilon=1.0).claim.neighbours == "bit"


# --------------------------------------------------------------------------------------------------
# Numerical safety, reproducibility, shapes
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,extra",
    [("exponential", {}), ("permute_and_flip", {})]
    + [("report_noisy_max", {"noise": n}) for n in ("laplace", "exponential", "gumbel")],
)
def test_huge_scaled_utilities(name, extra):
    mech = mechanisms.make(name, epsilon=1e6, **extra)
    u = np.array([0.0, 1.0, 1.0, -np.inf, 0.99, -1e300])  # eps * gaps of 1e4 .. 1e306
    lp = mech.log_prob(u)
    assert not np.isnan(lp).any()
    assert lp[3] == -np.inf and lp[5] < -1e299
    assert lp[0] < -1e5 and abs(math.fsum(np.exp(lp)) - 1) < 1e-12
    np.testing.assert_allclose(lp[[1, 2]], math.log(0.5), rtol=0, atol=1e-12)
    s = mech.sample(u, size=20_000, rng=0)
    assert set(np.unique(s).tolist()) == {1, 2}
    assert 9_000 < np.sum(s == 1) < 11_000  # binomial(20000, 1/2): 14 sd margin
    # Huge raw scores with small gaps: only gaps matter.
    big = mechanisms.make(name, epsilon=1.0, **extra)
    np.testing.assert_allclose(big.log_prob(UTILS + 1e12), big.log_prob(UTILS), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", FINITE_NAMES)
def test_seeds_shapes_and_scalar_draws(name):
    mech, data = mechanisms.registry.get(name).example()
    a = mech.sample(data, size=(300, 2), rng=7)
    assert a.shape == (300, 2)
    np.testing.assert_array_equal(a, mech.sample(data, size=(300, 2), rng=np.random.default_rng(7)))
    assert not np.array_equal(a, mech.sample(data, size=(300, 2), rng=8))
    one = mech.sample(data, rng=1)
    assert np.shape(one) == () and one.item() in set(mech.support(data).tolist())
    assert mech.sample(data, size=0, rng=1).shape == (0,)


def test_rnm_sampling_chunks_do_not_change_the_law(monkeypatch):
    # Force chunks of 3 rows (k = 4): every draw is still produced and -inf scores never win.
    import dpharness.mechanisms.finite as fin

    monkeypatch.setattr(fin, "_SAMPLE_CHUNK", 12)
    u = np.array([0.0, -np.inf, 0.0, 0.5])
    for mech in (ReportNoisyMax(epsilon=1.0, noise="laplace"), PermuteAndFlip(epsilon=1.0)):
        s = mech.sample(u, size=1001, rng=3)
        assert s.shape == (1001,) and not np.any(s == 1)
        assert set(np.unique(s).tolist()) == {0, 2, 3}


def test_labels_returned_for_candidates():
    mech = ExponentialMechanism(epsilon=1.0, candidates=("a", "b", "c"))
    s = mech.sample(np.array([0.0, 5.0, -np.inf]), size=50, rng=0)
    assert s.dtype.kind == "U" and set(s.tolist()) <= {"a", "b"}
    count = ReportNoisyMax(epsilon=1.0, utility="count", candidates=(3, 1, 2), noise="gumbel")
    np.testing.assert_array_equal(count.support([1, 1, 2, 9]), [3, 1, 2])
    np.testing.assert_allclose(count.log_prob([1, 1, 2, 9]), em_log_prob(np.array([0.0, 2.0, 1.0]) / 2), atol=1e-15)
    np.testing.assert_allclose(count.log_prob([]), np.full(3, -math.log(3)), atol=1e-15)


# --------------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["exponential", "report_noisy_max", "permute_and_flip", "randomized_response"])
@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "1", None])
def test_bad_epsilon(name, bad):
    with pytest.raises(ValueError, match="epsilon"):
        mechanisms.make(name, epsilon=bad)


@pytest.mark.parametrize(
    "params,match",
    [
        (dict(sensitivity=0.0), "sensitivity"),
        (dict(sensitivity=-2.0), "sensitivity"),
        (dict(sensitivity=float("inf")), "sensitivity"),
        (dict(monotone="yes"), "monotone"),
        (dict(utility="rank"), "utility"),
        (dict(utility="count"), "candidates"),
        (dict(utility="count", candidates=()), "candidates"),
        (dict(utility="count", candidates=("a", "a")), "candidates"),
        (dict(utility="count", candidates=("a", "b"), sensitivity=2.0), "sensitivity"),
        (dict(candidates="abc"), "candidates"),
        (dict(candidates=(1, "a")), "candidates"),
    ],
)
@pytest.mark.parametrize("name", ["exponential", "report_noisy_max", "permute_and_flip"])
def test_bad_parameters(name, params, match):
    with pytest.raises(ValueError, match=match):
        mechanisms.make(name, epsilon=1.0, **params)


def test_bad_noise_and_sampler():
    with pytest.raises(ValueError, match="noise.*cauchy"):
        ReportNoisyMax(epsilon=1.0, noise="cauchy")
    for cls in (ReportNoisyMax, PermuteAndFlip):
        with pytest.raises(ValueError, match="sampler.*fast"):
            cls(epsilon=1.0, sampler="fast")


@pytest.mark.parametrize("name", ["exponential", "report_noisy_max", "permute_and_flip"])
@pytest.mark.parametrize(
    "data,match",
    [
        ([0.0, np.inf], r"\+inf"),
        ([0.0, np.nan], "NaN"),
        ([], "empty"),
        ([-np.inf, -np.inf], "-inf"),
        ([[0.0, 1.0]], "1-D"),
    ],
)
def test_bad_scores(name, data, match):
    mech = mechanisms.make(name, epsilon=1.0)
    for call in (mech.log_prob, mech.support, lambda d: mech.sample(d, size=3, rng=0)):
        with pytest.raises(ValueError, match=match):
            call(np.array(data, dtype=float))


@pytest.mark.parametrize("name", ["exponential", "report_noisy_max", "permute_and_flip", "randomized_response"])
@pytest.mark.parametrize("size", [-1, (2, -1), 2.5, "3"])
def test_bad_size(name, size):
    mech, data = mechanisms.registry.get(name).example()
    with pytest.raises(ValueError, match="size"):
        mech.sample(data, size=size, rng=0)


@pytest.mark.parametrize("bit", [2, -1, 0.5, "1", [0, 1], None])
def test_randomized_response_bad_bit(bit):
    with pytest.raises(ValueError, match="data"):
        RandomizedResponse(epsilon=1.0).log_prob(bit)


def test_scores_length_must_match_candidates_and_labels_types():
    with pytest.raises(ValueError, match="one score per candidate"):
        ExponentialMechanism(epsilon=1.0, candidates=("a", "b")).log_prob([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="both be numbers or both strings"):
        ExponentialMechanism(epsilon=1.0, utility="count", candidates=("a", "b")).log_prob([1, 2])
