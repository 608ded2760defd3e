"""``output="set"`` of the top-k mechanisms (mechanisms/topk.py): the selected k-subset, sorted.

Statistical tests: the chi-square goodness-of-fit tests of this file (``SET_CHI2_CASES``, 8 tests:
4 mechanisms x 2 score vectors, each at a fixed seed) form their own family, held to a family-wise
false-alarm level of 1e-3 by Bonferroni: each test rejects at 1e-3 / 8 = 1.25e-4, i.e. when the
statistic exceeds ``scipy.stats.chi2.ppf(1 - 1.25e-4, df)`` (cells with expected count < 5 pooled).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpharness import mechanisms
from dpharness.mechanisms import registry, topk_laws

NAMES = ("peeling_exponential", "gumbel_top_k", "laplace_top_k", "peeling_permute_and_flip")

FAMILY_ALPHA = 1e-3
SET_CHI2_CASES = [
    (name, scores, k)
    for name in NAMES
    for scores, k in (([0.0, 1.0, 2.0, 2.5, -1.0], 2), ([0.0, 3.0, -np.inf, 1.0, 0.5], 3))
]
PER_TEST_ALPHA = FAMILY_ALPHA / len(SET_CHI2_CASES)  # Bonferroni over this file's chi-square family

GOLDEN_SCORES = np.array([0.0, 1.0, 2.0, 2.5, -1.0])


# -- default unchanged ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_default_output_is_ordered_and_unchanged(name):
    u = np.array([0.0, 1.0, 2.0, 2.5, -1.0, 0.5, -np.inf, 1.5])
    for k in (1, 3):
        for monotone in (False, True):
            plain = mechanisms.make(name, epsilon=1.3, k=k, monotone=monotone)
            ordered = mechanisms.make(name, epsilon=1.3, k=k, monotone=monotone, output="ordered")
            assert plain.output == "ordered" and plain == ordered
            a = plain.sample(u, size=3000, rng=11)
            b = ordered.sample(u, size=3000, rng=11)
            assert a.dtype == b.dtype == np.int64
            np.testing.assert_array_equal(a, b)
    small = GOLDEN_SCORES[:4]
    m = mechanisms.make(name, epsilon=1.0, k=2)
    np.testing.assert_array_equal(m.support(small), topk_laws.ordered_tuples(4, 2))


# -- sampling ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_set_sample_is_the_sorted_ordered_draw(name):
    u = np.array([0.0, 1.0, -np.inf, 2.0, 2.5, -1.0, 0.5])
    ordered = mechanisms.make(name, epsilon=1.0, k=3)
    as_set = mechanisms.make(name, epsilon=1.0, k=3, output="set")
    a = ordered.sample(u, size=2000, rng=9)
    b = as_set.sample(u, size=2000, rng=9)
    assert b.shape == (2000, 3) and b.dtype == np.int64
    np.testing.assert_array_equal(b, np.sort(a, axis=1))
    assert np.all(b[:, 1:] > b[:, :-1]) and not np.any(b == 2)
    one = as_set.sample(u, rng=0)
    assert one.shape == (3,) and one.dtype == np.int64 and np.all(np.diff(one) > 0)
    assert as_set.sample(u, size=(4, 5), rng=1).shape == (4, 5, 3)
    assert as_set.sample(u, size=0, rng=1).shape == (0, 3)
    assert as_set.claim == ordered.claim  # post-processing: same claim


# -- exact set law -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_set_law_sums_to_one_and_support_is_all_subsets(name):
    for u, k in ((np.array([0.0, 1.0, 2.0, 2.5, -1.0]), 2), (np.array([0.3, -1.0, 2.0, 1.2, 0.0]), 3),
                 (np.array([0.0, -np.inf, 1.0, 2.0]), 2), (np.array([1.0, 0.0, 2.0]), 3)):
        m = mechanisms.make(name, epsilon=1.5, k=k, output="set")
        sup, lp = m.support(u), m.log_prob(u)
        assert sup.shape == (math.comb(u.size, k), k) and sup.dtype == np.int64
        assert np.all(sup[:, 1:] > sup[:, :-1])
        assert sorted(map(tuple, sup)) == list(itertools.combinations(range(u.size), k))
        assert lp.shape == (sup.shape[0],) and not np.any(np.isnan(lp))
        np.testing.assert_allclose(np.exp(lp).sum(), 1.0, rtol=0, atol=1e-9)
        dead = np.any(np.isneginf(u)[sup], axis=1)
        assert np.all(np.isneginf(lp[dead])) and np.all(np.isfinite(lp[~dead]))


@pytest.mark.parametrize("name", NAMES)
def test_set_law_equals_brute_force_sum_over_orderings(name):
    u = np.array([0.3, -1.0, 2.0, 1.2])
    for k in (1, 2, 3, 4):
        ordered = mechanisms.make(name, epsilon=2.0, k=k)
        as_set = mechanisms.make(name, epsilon=2.0, k=k, output="set")
        sup, lp = as_set.support(u), as_set.log_prob(u)
        for s, l in zip(sup, lp):
            perms = np.array(list(itertools.permutations(s)))
            brute = float(np.exp(ordered.log_prob_of(u, perms)).sum())
            assert abs(brute - math.exp(l)) <= 1e-13 + 1e-12 * brute, (k, s, brute, math.exp(l))
        # log_prob_of reads rows as sets, in any order
        shuffled = np.random.default_rng(k).permuted(sup[::-1], axis=1)
        np.testing.assert_allclose(as_set.log_prob_of(u, shuffled), lp[::-1], rtol=0, atol=1e-14)


def test_set_law_cap_is_that_of_the_ordered_support():
    big = np.linspace(0, 5, 2000)
    m = mechanisms.make("peeling_exponential", epsilon=1.0, k=3, output="set")
    with pytest.raises(ValueError, match=r"cap of 1,000,000"):
        m.support(big)  # C(2000, 3) subsets but 2000*1999*1998 orderings > 1e6
    with pytest.raises(ValueError, match=r"cap of 1,000,000"):
        m.log_prob(big)
    lp = m.log_prob_of(big, np.array([[1997, 1999, 1998], [0, 1, 2]]))
    assert np.all(np.isfinite(lp)) and lp[0] > lp[1]
    with pytest.raises(ValueError, match="cap"):
        m.log_prob_of(big, np.tile([0, 1, 2], (200_000, 1)))  # 200,000 x 3! sequences
    # n = 100, k = 3: 970,200 orderings <= cap, so the 161,700 subsets are listed
    assert m.support(np.zeros(100)).shape == (161_700, 3)


# -- samplers vs exact set laws ------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("name,scores,k", SET_CHI2_CASES)
def test_set_sampler_matches_exact_set_law_chi_square(name, scores, k):
    u = np.array(scores)
    m = mechanisms.make(name, epsilon=2.0, k=k, output="set")
    n_draws = 100_000
    draws = m.sample(u, size=n_draws, rng=24680)
    sup, p = m.support(u), np.exp(m.log_prob(u))
    base = u.size ** np.arange(k)[::-1]
    lookup = {int(c): i for i, c in enumerate(sup @ base)}
    codes, cnt = np.unique(draws @ base, return_counts=True)
    counts = np.zeros(sup.shape[0])
    counts[[lookup[int(c)] for c in codes]] = cnt  # KeyError if a draw is not a sorted subset
    assert counts[p == 0].sum() == 0
    expected = p * n_draws
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp_ = np.append(expected[~small], expected[small].sum())
    if exp_[-1] == 0:
        obs, exp_ = obs[:-1], exp_[:-1]
    stat = float(((obs - exp_) ** 2 / exp_).sum())
    df = obs.size - 1
    assert df >= 2
    assert stat < stats.chi2.ppf(1 - PER_TEST_ALPHA, df), (stat, df)


# -- parameters ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_output_parameter_round_trips_and_is_listed(name):
    m = mechanisms.make(name, epsilon=0.7, k=2, sensitivity=2.0, monotone=True, output="set")
    assert m.params() == {"epsilon": 0.7, "k": 2, "sensitivity": 2.0, "monotone": True, "output": "set"}
    assert mechanisms.make(name, **m.params()) == m
    assert registry.parameters(name)["output"] == "ordered"
    assert "output='ordered'" in registry.describe(name)
    ex, _ = registry.get(name).example()
    assert ex.output == "ordered"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", ["sorted", "Set", "", None, 1, ("set",)])
def test_bad_output_raises_naming_the_accepted_values(name, bad):
    with pytest.raises(ValueError, match=r"output must be one of 'ordered', 'set'"):
        mechanisms.make(name, epsilon=1.0, k=2, output=bad)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "laplace_top_k" else n for n in NAMES])
def test_set_law_privacy_loss_within_claim_on_neighbour_grid(name):
    # Post-processing cannot increase the loss; checked on the score_linf vertices as in test_topk.py.
    rng = np.random.default_rng(17)
    m = mechanisms.make(name, epsilon=1.0, k=2, output="set")
    u = rng.normal(0, 1.5, size=4)
    lp = m.log_prob(u)
    worst = max(float(np.max(np.abs(m.log_prob(u + np.array(d)) - lp)))
                for d in itertools.product([-1.0, 0.0, 1.0], repeat=4))
    assert worst <= m.claim.epsilon + 1e-9, worst
