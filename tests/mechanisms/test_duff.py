"""Duff median / quantile on the continuous domain: closed forms vs BFS, exact laws, the windowed
sampler vs its full-sort twin and the exact law, expected error, privacy, bad input.

Statistical tests use fixed seeds and thresholds from a stated false-alarm rate: each chi-square /
KS test rejects at alpha = 1e-6 / (number of such tests in this file, Bonferroni), so a correct
sampler fails one of them with probability < 1e-6, and a wrong law of the sizes checked here
(shifted/rescaled weights, a missing factor 1/2, a dropped region) is rejected with certainty.
"""

import math

import numpy as np
import pytest
from scipy import special, stats

from dpharness import mechanisms
from duff_oracle import counts_to_data, exact_cases
from dpharness.mechanisms import duff_utility, median_window, medians
from dpharness.mechanisms.duff_utility import (
    DEFINITIONS,
    cost_lower_bound_left,
    cost_lower_bound_right,
    duff_cost,
    quantile_ratio,
    target_rank,
)
from dpharness.mechanisms.laws import PiecewiseDensity

QS = (0.5, 0.3, 0.25, 0.1, 0.9, 0.75, 0.333, 0.6)
V, C, NMAX = 5, 9, 7  # BFS box: values 0..4 (data and o in 1..3), counts <= 9, n <= 7

N_STAT_TESTS = 16  # chi-square + KS tests in this file (Bonferroni)
ALPHA = 1e-6 / N_STAT_TESTS


def make(q=0.5, **kw):
    kw.setdefault("epsilon", 1.0)
    kw.setdefault("lower", -10.0)
    kw.setdefault("upper", 10.0)
    if q == 0.5 and "q" not in kw:
        return mechanisms.make("duff_median", **kw)
    return mechanisms.make("duff_quantile", q=q, **kw)


def chi2_on_pieces(log_mass, idx, alpha=ALPHA, min_expected=10.0):
    """Chi-square of piece indices against exact piece probabilities; adjacent pieces are merged
    until each bin expects >= min_expected draws. Returns (statistic, threshold, bins)."""
    p = np.exp(np.asarray(log_mass) - special.logsumexp(log_mass))
    n = idx.size
    obs = np.bincount(idx, minlength=p.size).astype(float)
    assert obs[p == 0].sum() == 0, "a zero-probability piece was drawn"
    bins_e, bins_o, acc_e, acc_o = [], [], 0.0, 0.0
    for pe, po in zip(p * n, obs):
        acc_e += pe
        acc_o += po
        if acc_e >= min_expected:
            bins_e.append(acc_e)
            bins_o.append(acc_o)
            acc_e = acc_o = 0.0
    if acc_e > 0 or acc_o > 0:
        bins_e[-1] += acc_e
        bins_o[-1] += acc_o
    e, o = np.array(bins_e), np.array(bins_o)
    stat = float(np.sum((o - e) ** 2 / e))
    df = max(e.size - 1, 1)
    return stat, float(stats.chi2.isf(alpha, df)), e.size


def piece_index(law, x):
    return np.clip(np.searchsorted(law.edges, x, side="right") - 1, 0, law.log_mass.size - 1)


# ---------------------------------------------------------------------------------------------
# closed forms vs breadth-first search
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("definition", DEFINITIONS)
@pytest.mark.parametrize("q", QS)
def test_closed_form_equals_bfs(q, definition):
    a, b = quantile_ratio(q)
    total = ties = e0 = 0
    for o in range(1, V - 1):
        cnt, dist = exact_cases(V, C, o, a, b, definition, NMAX)
        L = cnt[:, :o].sum(1)
        E = cnt[:, o]
        G = cnt.sum(1) - L - E
        np.testing.assert_array_equal(duff_cost(L, E, G, a, b, definition), dist,
                                      err_msg=f"q={q} {definition} o={o}")
        total += dist.size
        ties += int(np.sum(cnt.max(1) >= 2))
        e0 += int(np.sum(E == 0))
    # every dataset of size <= 7 on {1,2,3} (119) x 3 targets, minus the few the box cannot certify
    assert total >= 250 and ties >= 150 and e0 >= 50


@pytest.mark.slow
@pytest.mark.parametrize("definition", DEFINITIONS)
@pytest.mark.parametrize("q", (0.5, 0.123, 0.01, 0.99, 2 / 3, 0.45))
def test_closed_form_equals_bfs_bigger_universe(q, definition):
    a, b = quantile_ratio(q)
    total = 0
    for o in range(1, 5):
        cnt, dist = exact_cases(6, 8, o, a, b, definition, 6)
        L = cnt[:, :o].sum(1)
        E = cnt[:, o]
        G = cnt.sum(1) - L - E
        np.testing.assert_array_equal(duff_cost(L, E, G, a, b, definition), dist)
        total += dist.size
    assert total >= 500


def test_reference_median_formulas():
    """The median closed forms of docs/mechanisms.md ("Duff utility: closed forms") equal
    duff_cost at q = 1/2 (which equals BFS)."""
    L, E, G = (v.reshape(-1)[1:] for v in np.meshgrid(*(np.arange(25),) * 3, indexing="ij"))  # n >= 1
    e = np.maximum(E, 1)
    add = (E == 0).astype(int)
    lower = add + np.maximum.reduce([0 * L, L - e - G + 1, G - L - e])
    upper = add + np.maximum.reduce([0 * L, L - e - G, G - L - e + 1])
    sett = np.maximum(0, np.abs(L - G) - E)
    np.testing.assert_array_equal(duff_cost(L, E, G, 1, 2, "lower"), lower)
    np.testing.assert_array_equal(duff_cost(L, E, G, 1, 2, "upper"), upper)
    np.testing.assert_array_equal(duff_cost(L, E, G, 1, 2, "set"), sett)
    # gap forms (E = 0, L = i, G = n - i)
    for n in range(1, 40):
        i = np.arange(n + 1)
        np.testing.assert_array_equal(duff_utility.gap_costs(n, 1, 2, "set"), np.abs(n - 2 * i))
        np.testing.assert_array_equal(duff_utility.gap_costs(n, 1, 2, "lower"),
                                      1 + np.maximum.reduce([0 * i, 2 * i - n, n - 2 * i - 1]))
        np.testing.assert_array_equal(duff_utility.gap_costs(n, 1, 2, "upper"),
                                      1 + np.maximum.reduce([0 * i, 2 * i - n - 1, n - 2 * i]))


@pytest.mark.parametrize("definition", DEFINITIONS)
@pytest.mark.parametrize("q", (0.5, 0.25, 0.9, 0.333))
def test_mechanism_utility_and_gaps_equal_bfs(q, definition):
    """utility() at every o and the sampler's gap costs (o strictly between data) equal BFS."""
    a, b = quantile_ratio(q)
    mech = make(q, lower=0.0, upper=float(V - 1), definition=definition) if q != 0.5 else \
        mechanisms.make("duff_median", epsilon=1.0, lower=0.0, upper=float(V - 1), definition=definition)
    checked = gaps = 0
    for o in range(1, V - 1):
        cnt, dist = exact_cases(V, C, o, a, b, definition, NMAX)
        for c, d in zip(cnt[::3], dist[::3]):
            x = counts_to_data(c)
            assert mech.utility(x, [float(o)])[0] == -d
            if c[o] == 0:  # o lies strictly inside gap i = #records below o
                edges, cost = mech._gap_structure(x)
                assert cost[int(c[:o].sum())] == d
                gaps += 1
            checked += 1
    assert checked >= 100 and gaps >= 20


def test_envelope_bounds_are_lower_bounds():
    """cost >= (qn - A)/max(q, 1-q) and >= (B - qn)/max(q, 1-q), A = L + E, B = L (all q, defs)."""
    rng = np.random.default_rng(7)
    L, E, G = (rng.integers(0, 60, size=20000) for _ in range(3))
    for q in QS + (0.01, 0.99, 0.123):
        a, b = quantile_ratio(q)
        n = L + E + G
        for definition in DEFINITIONS:
            c = duff_cost(L, E, G, a, b, definition)
            left = np.array([cost_lower_bound_left(nn, aa, a, b) for nn, aa in zip(n, L + E)])
            right = np.array([cost_lower_bound_right(nn, bb, a, b) for nn, bb in zip(n, L)])
            assert np.all(c >= left - 1e-9) and np.all(c >= right - 1e-9)
            # the bounds are tight on the gaps (E = 0) that the windowed sampler leaves outside
            n_gap = 2000
            i = np.arange(n_gap + 1)
            cg = duff_utility.gap_costs(n_gap, a, b, definition)
            lb = np.array([max(cost_lower_bound_left(n_gap, k, a, b), cost_lower_bound_right(n_gap, k, a, b))
                           for k in i])
            assert np.all(cg >= lb - 1e-9) and np.all(cg <= lb + 2)


def test_quantile_half_is_the_median():
    x = np.random.default_rng(3).normal(size=301)
    for d in DEFINITIONS:
        lm = mechanisms.make("duff_median", epsilon=0.7, lower=-5, upper=5, definition=d).distribution(x)
        lq = mechanisms.make("duff_quantile", epsilon=0.7, lower=-5, upper=5, q=0.5, definition=d).distribution(x)
        np.testing.assert_array_equal(lm.log_mass, lq.log_mass)


def test_set_definition_equals_textbook_rank_em_at_two_epsilon():
    """Set-definition Duff at epsilon: gap probabilities of the rank-utility EM u = -|i - n/2|
    (sensitivity 1, diffprivlib's median) at 2 epsilon (docs/peer-libraries.md, "diffprivlib")."""
    rng = np.random.default_rng(11)
    for n in (1, 2, 7, 50, 301, 1000):
        x = rng.normal(size=n)
        x[: n // 5] = 0.25  # ties
        for eps in (0.1, 0.5, 1.0, 3.0):
            law = mechanisms.make("duff_median", epsilon=eps, lower=-4, upper=4, definition="set").distribution(x)
            edges = np.concatenate(([-4.0], np.sort(np.clip(x, -4, 4)), [4.0]))
            i = np.arange(n + 1)
            em = PiecewiseDensity.from_log_density(edges, (2 * eps) / 2 * -np.abs(i - n / 2))
            np.testing.assert_allclose(np.exp(law.log_mass), np.exp(em.log_mass), rtol=1e-12, atol=1e-300)


# ---------------------------------------------------------------------------------------------
# exact laws
# ---------------------------------------------------------------------------------------------


def test_continuous_domain_with_all_ties_is_uniform_on_the_two_sides():
    """1,000 copies of 0 on [-10, 10] (continuous, Lebesgue measure): every inner gap has length 0,
    so the output is uniform on [-10, 0) w.p. 1/(1 + e^{-1/2}) (gap 0: cost 1000) and on (0, 10]
    otherwise (gap n: cost 1001); E|M - 0| = 5 at every epsilon. The integer domain fixes this
    (tests/test_discrete_domain.py)."""
    x = np.zeros(1000)
    for eps in (0.5, 1.0, 2.0):
        mech = mechanisms.make("duff_median", epsilon=eps, lower=-10, upper=10)
        law = mech.distribution(x)
        p_left = 1.0 / (1.0 + math.exp(-eps / 2))
        assert law.cdf(np.array([-1e-12]))[0] == pytest.approx(p_left, rel=1e-12)
        assert law.cdf(np.array([-5.0]))[0] == pytest.approx(p_left / 2, rel=1e-12)
        assert law.cdf(np.array([5.0]))[0] == pytest.approx(p_left + (1 - p_left) / 2, rel=1e-12)
        assert medians.expected_abs_error(mech, x) == pytest.approx(5.0, rel=1e-12)


def test_expected_abs_error_equals_numeric_integral():
    rng = np.random.default_rng(5)
    x = np.round(rng.normal(size=40), 1)
    for q, d in ((0.5, "lower"), (0.3, "upper"), (0.8, "set")):
        mech = make(q, epsilon=2.0, lower=-3, upper=3, definition=d)
        law = mech.distribution(x)
        t = mech.statistic(x)
        # midpoint rule on each piece of a refined partition (|x - t| is linear between nodes)
        nodes = np.unique(np.concatenate((law.edges, [t])))
        fine = np.unique(np.concatenate([np.linspace(u, v, 65) for u, v in zip(nodes[:-1], nodes[1:])]))
        mid = (fine[1:] + fine[:-1]) / 2
        integral = float(np.sum(np.exp(law.log_pdf(mid)) * np.abs(mid - t) * np.diff(fine)))
        assert medians.expected_abs_error(mech, x) == pytest.approx(integral, rel=1e-9)


def test_statistic_is_the_clipped_order_statistic():
    x = np.array([-50.0, 1.0, 2.0, 3.0, 40.0, 41.0])
    assert make(0.5, lower=-10, upper=10).statistic(x) == 2.0  # x_(3)
    assert make(0.5, lower=-10, upper=10, definition="upper").statistic(x) == 3.0  # x_(4)
    assert make(0.9, lower=-10, upper=10).statistic(x) == 10.0  # x_(6) = 41 clipped
    assert make(0.1, lower=-10, upper=10).statistic(x) == -10.0
    assert make(0.3, lower=-10, upper=10).statistic(np.arange(10.0)) == 2.0  # ceil(0.3 * 10) = 3


def test_data_outside_the_range_is_clipped_not_dropped():
    mech = make(0.5, lower=0, upper=1)
    a = mech.distribution([-5.0, 0.5, 7.0])
    b = mech.distribution([0.0, 0.5, 1.0])
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_array_equal(a.log_mass, b.log_mass)


# ---------------------------------------------------------------------------------------------
# the windowed sampler and its full-sort twin
# ---------------------------------------------------------------------------------------------


def _datasets(rng, n):
    yield "normal", rng.normal(size=n)
    yield "rounded", np.round(rng.normal(size=n), 2)  # many ties inside the window
    z = rng.normal(size=n)
    z[np.abs(z) < 0.3] = 0.0  # a tie block straddling the median
    yield "tie_block", z
    yield "beyond_bounds", rng.standard_cauchy(size=n) * 4


@pytest.mark.parametrize("q,definition", [(0.5, "lower"), (0.5, "upper"), (0.5, "set"), (0.3, "lower"),
                                          (0.9, "set"), (0.05, "upper")])
def test_window_proposal_equals_full_law_on_the_window(q, definition):
    rng = np.random.default_rng(17)
    for name, x in _datasets(rng, 5000):
        for K in (2, 40, 300):
            for eps in (0.3, 2.0):
                mech = make(q, epsilon=eps, definition=definition)
                law = mech.distribution(x)
                prop = median_window.window_proposal(mech, x, K)
                s, t, nw = prop.s, prop.t, prop.nwin
                assert nw == t - s
                np.testing.assert_array_equal(prop.lo[:nw], law.edges[s:t])
                np.testing.assert_array_equal(prop.width[:nw], np.diff(law.edges)[s:t])
                lw, lm = prop.log_weight[:nw], law.log_mass[s:t]
                np.testing.assert_array_equal(np.isfinite(lw), np.isfinite(lm))
                fin = np.isfinite(lw)
                if not fin.any():  # all window gaps tied (length 0): nothing to compare
                    continue
                shift = lw[fin] - lm[fin]
                np.testing.assert_allclose(shift, shift[0], rtol=0, atol=1e-9, err_msg=name)
                # the envelope dominates the exact mass of each outer region
                env = prop.log_weight[nw:] - shift[0]
                with np.errstate(divide="ignore"):
                    true_left = special.logsumexp(law.log_mass[:s]) if s > 0 else -np.inf
                    true_right = special.logsumexp(law.log_mass[t:])
                assert true_left <= env[0] + 1e-9 and true_right <= env[1] + 1e-9


@pytest.mark.parametrize("n", [1, 5, 200_000])
def test_rank_window_is_exact_on_adversarial_orders(n):
    rng = np.random.default_rng(23)
    base = rng.normal(size=n)
    orders = {
        "random": base,
        "sorted": np.sort(base),
        "reversed": np.sort(base)[::-1].copy(),
        "periodic": np.tile(np.sort(base[: max(1, n // 64)]), 64)[:n] if n >= 64 else base,
        "constant": np.full(n, 3.0),
        "ties": np.round(base, 1),
    }
    ranks = [(1, n), (max(1, n // 2 - 3), min(n, n // 2 + 3)), (1, min(n, 5)), (max(1, n - 4), n)]
    for name, x in orders.items():
        ref = np.sort(x)
        for s, t in ranks:
            np.testing.assert_array_equal(median_window._rank_window(x, s, t), ref[s - 1:t], err_msg=name)


CASES_SAMPLER = [
    (0.5, "lower", 1.0),
    (0.5, "set", 0.2),
    (0.3, "upper", 2.0),
    (0.9, "lower", 0.5),
]


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("q,definition,eps", CASES_SAMPLER)
def test_windowed_sampler_with_rejections_matches_exact_law(q, definition, eps):
    """Small K: the envelope regions carry real mass, so many outer proposals are made and
    accepted/rejected; the draws must still follow the exact law (chi-square on gap index, KS)."""
    rng = np.random.default_rng(101)
    x = rng.normal(size=3000)  # no ties: many gaps carry mass
    mech = make(q, epsilon=eps, definition=definition)
    law = mech.distribution(x)
    # The smallest K whose envelope regions hold at most 85% of the proposal mass: smaller K makes
    # the loose envelope dominate and acceptance so rare that the test would take hours.
    K = next(k for k in (8, 10, 12, 14, 17, 20, 24, 28, 34, 40, 48, 56, 80) if median_window.window_proposal(mech, x, k).outside_fraction() <= 0.85)
    prop = median_window.window_proposal(mech, x, K)
    assert prop.outside_fraction() > 0.005  # >= 100 outer proposals: the rejection path is exercised
    draws = median_window._sample_window(mech, x, 20000, np.random.default_rng(5), K, max_outside=None)
    stat, thr, bins = chi2_on_pieces(law.log_mass, piece_index(law, draws))
    assert bins >= 8 and stat <= thr, (stat, thr, bins)
    assert stats.kstest(draws, law.cdf).pvalue >= ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("n,kind", [(20_000, "normal"), (300, "normal"), (20_000, "integers")])
def test_public_sample_matches_exact_law(n, kind):
    """sample(): window path (n = 20,000 normal), full path (n = 300), and the fallback when ties
    leave the continuous window with no length (integer data)."""
    rng = np.random.default_rng(202)
    x = rng.normal(size=n) if kind == "normal" else rng.integers(-5, 6, size=n).astype(float)
    mech = make(0.5, epsilon=1.0)
    law = mech.distribution(x)
    draws = mech.sample(x, size=20000, rng=np.random.default_rng(9))
    stat, thr, bins = chi2_on_pieces(law.log_mass, piece_index(law, draws))
    assert stat <= thr, (stat, thr, bins)


def test_window_path_is_taken_for_large_n(monkeypatch):
    """At n = 2^18 the sampler never builds the full law (O(n) expected: no full sort)."""
    x = np.random.default_rng(4).normal(size=2**18)
    mech = make(0.5, epsilon=1.0)

    def boom(self, data):
        raise AssertionError("full sort used")

    monkeypatch.setattr(medians.DuffMedian, "distribution", boom)
    out = mech.sample(x, size=1000, rng=1)
    assert out.shape == (1000,) and np.all(np.abs(out) < 0.05)


def test_window_and_reference_give_identical_law_objects_and_reproducible_draws():
    x = np.random.default_rng(8).normal(size=50_000)
    mech = make(0.3, epsilon=0.5, definition="upper")
    a = mech.sample(x, size=(4, 5), rng=np.random.default_rng(1))
    b = mech.sample(x, size=(4, 5), rng=np.random.default_rng(1))
    assert a.shape == (4, 5)
    np.testing.assert_array_equal(a, b)
    one = mech.sample(x, rng=3)
    assert np.ndim(one) == 0 and -10 <= float(one) <= 10
    assert mech.sample(x, size=0, rng=3).shape == (0,)
    ref = mech.sample_reference(x, size=7, rng=3)
    assert ref.shape == (7,)


@pytest.mark.statistical
def test_expected_abs_error_matches_monte_carlo():
    """|MC mean - exact| <= z sd / sqrt(N), z = 5.33 (two-sided 1e-7, CLT), per case (3 cases)."""
    rng = np.random.default_rng(31)
    N = 200_000
    z = stats.norm.isf(1e-7 / 2)
    for q, eps in ((0.5, 0.5), (0.25, 2.0), (0.9, 1.0)):
        x = rng.normal(size=1000)
        mech = make(q, epsilon=eps)
        exact = medians.expected_abs_error(mech, x)
        err = np.abs(mech.sample(x, size=N, rng=np.random.default_rng(2)) - mech.statistic(x))
        assert abs(err.mean() - exact) <= z * err.std() / math.sqrt(N), (q, eps, err.mean(), exact)


# ---------------------------------------------------------------------------------------------
# privacy: exact log-ratio of densities between add/remove neighbours
# ---------------------------------------------------------------------------------------------


def _max_log_ratio(law1, law2):
    nodes = np.unique(np.concatenate((law1.edges, law2.edges)))
    mid = (nodes[1:] + nodes[:-1])[np.diff(nodes) > 0] / 2
    return float(np.max(np.abs(law1.log_pdf(mid) - law2.log_pdf(mid))))


def test_add_remove_neighbours_have_log_ratio_at_most_epsilon():
    rng = np.random.default_rng(41)
    worst = 0.0
    for _ in range(300):
        n = int(rng.integers(1, 12))
        x = rng.integers(-3, 4, size=n).astype(float) + (rng.random(n) < 0.3) * rng.random(n)
        extra = float(rng.choice([rng.integers(-3, 4), rng.uniform(-6, 6), x[0]]))
        q = float(rng.choice([0.5, 0.3, 0.8, 0.1]))
        d = str(rng.choice(DEFINITIONS))
        eps = float(rng.choice([0.3, 1.0, 2.5]))
        mech = make(q, epsilon=eps, lower=-4, upper=4, definition=d)
        r = _max_log_ratio(mech.distribution(x), mech.distribution(np.append(x, extra)))
        assert r <= eps * (1 + 1e-9), (x, extra, q, d, eps, r)
        worst = max(worst, r / eps)
    assert worst > 0.9  # the bound is nearly attained, so a factor-2 error could not hide


def test_privacy_check_catches_a_missing_half():
    """Positive control: exp(epsilon u) (no 1/2) between the same neighbours exceeds epsilon."""
    x = np.array([0.0, 1.0, 2.0])
    y = np.append(x, 1.5)
    mech = make(0.5, epsilon=1.0, lower=-4, upper=4)

    def broken(v):
        edges, cost = mech._gap_structure(v)
        return PiecewiseDensity.from_log_density(edges, -1.0 * cost)

    assert _max_log_ratio(broken(x), broken(y)) > 1.5
    assert _max_log_ratio(mech.distribution(x), mech.distribution(y)) <= 1.0 + 1e-12


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("data,match", [([], "data"), ([1.0, np.nan], "data"), ([np.inf], "data"),
                                        ([[1.0, 2.0]], "data"), (["a"], "data")])
def test_bad_data(data, match):
    mech = make(0.5)
    for f in (mech.sample, mech.distribution, mech.statistic):
        with pytest.raises(ValueError, match=match):
            f(data)
    with pytest.raises(ValueError, match=match):
        medians.expected_abs_error(mech, data)


def test_bad_data_in_a_large_array_is_caught_by_the_fast_path():
    x = np.random.default_rng(0).normal(size=10_000)
    x[1234] = np.nan
    with pytest.raises(ValueError, match="finite"):
        make(0.5).sample(x, size=3)
    x[1234] = -np.inf
    with pytest.raises(ValueError, match="finite"):
        make(0.5).sample(x, size=3)
    x[1234] = 1e308
    x[1235] = 1e308  # finite but the sum overflows: must still be accepted
    assert make(0.5).sample(x, size=3, rng=0).shape == (3,)


@pytest.mark.parametrize("kw,match", [
    (dict(lower=1.0, upper=1.0), "lower"),
    (dict(lower=2.0, upper=1.0), "lower"),
    (dict(lower=float("nan")), "lower"),
    (dict(upper=float("inf")), "upper"),
    (dict(epsilon=0.0), "epsilon"),
    (dict(epsilon=-1.0), "epsilon"),
    (dict(epsilon=float("nan")), "epsilon"),
    (dict(definition="middle"), "definition"),
    (dict(domain="reals"), "domain"),
    (dict(step=0.5), "step"),
])
def test_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        make(0.5, **kw)
    with pytest.raises(ValueError, match=match):
        make(0.3, **kw)


@pytest.mark.parametrize("q", [0, 1, -0.1, 1.5, float("nan"), float("inf"), "0.5", True, None])
def test_bad_q(q):
    with pytest.raises(ValueError, match="q"):
        mechanisms.make("duff_quantile", epsilon=1.0, lower=0, upper=1, q=q)


def test_registry_parameters_and_claim():
    assert mechanisms.registry.parameters("duff_median") == {
        "epsilon": mechanisms.registry.inspect.Parameter.empty, "lower": mechanisms.registry.inspect.Parameter.empty,
        "upper": mechanisms.registry.inspect.Parameter.empty, "definition": "lower", "domain": "continuous",
        "step": None}
    assert "q" in mechanisms.registry.parameters("duff_quantile")
    with pytest.raises(ValueError, match="missing"):
        mechanisms.make("duff_quantile", epsilon=1.0, lower=0, upper=1)
    c = make(0.3, epsilon=0.7).claim
    assert (c.epsilon, c.delta, c.neighbours, c.sensitivity) == (0.7, 0.0, "add_remove", 1.0)
    assert target_rank(10, 0.3, "lower") == 3 and target_rank(10, 0.3, "upper") == 4
