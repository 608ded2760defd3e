"""The JointExp and top-k zoo entries (verifiers/controls/zoo/selection.py): exact witness probabilities
against the samplers, broken twins flagged, correct twins not.

Statistical thresholds: counts of an event on n fixed-seed draws are Binomial(n, p) with the
witness's exact p; the tolerance 5.5 sigma (+1 for p near 0) has two-sided normal tail ~4e-8 per
comparison, < 1e-6 over the 12 comparisons. Chi-square goodness of fit is judged at p-value 1e-6.
Budgets of the "flagged" tests: the smallest of a grid whose computed detection probability on the
replayed witness (verifiers.power's exact Poisson sums) is >= 1 - 1e-6; the automatic audit runs at
four times that.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpharness import verifiers
from dpharness.mechanisms.quantiles import JointQuantiles
from dpharness.verifiers import power
from dpharness.verifiers.controls import zoo
from dpharness.verifiers.controls.zoo import selection as zoo_selection

NEW = ["joint_exp", "joint_exp_single_sensitivity", "topk_peeling_em", "topk_peeling_reused_uniform", "topk_laplace",
       "topk_laplace_top1_scale"]
BROKEN = [n for n in NEW if zoo.get(n).broken]
TWINS = [n for n in NEW if not zoo.get(n).broken]


def test_entries_registered_with_their_twins():
    assert set(NEW) <= set(zoo.available(structured=True))
    assert {zoo.get(n).twin for n in BROKEN} == set(TWINS)
    for n in BROKEN:
        m, t = zoo.make(n), zoo.make(zoo.get(n).twin)
        assert (m.claim.epsilon, m.claim.neighbours) == (t.claim.epsilon, t.claim.neighbours)
        assert m.true_epsilon > m.claim.epsilon and m.witness().loss > m.claim.epsilon
        assert t.witness().loss <= t.claim.epsilon
    # documented numbers
    assert zoo.make("joint_exp_single_sensitivity").witness().loss == pytest.approx(1.338, abs=1e-3)
    assert zoo.make("joint_exp_single_sensitivity").true_epsilon == 2.0
    assert zoo.make("topk_laplace_top1_scale").witness().loss == pytest.approx(1.440, abs=1e-3)
    w = zoo.make("topk_peeling_reused_uniform").witness()
    assert w.p_d1 == 0.0 and w.p_d2 == pytest.approx(0.1450, abs=1e-4) and math.isinf(w.loss)


def test_joint_exp_coordinate_cdf_matches_the_one_dimensional_law_and_is_a_cdf():
    # m = 1: JointExp's law is the piecewise density exp(-eps |L - q n| / 2) on the gaps (Delta = 2,
    # u = -2 |L - q n|): integrate it directly.
    mech = JointQuantiles(epsilon=1.0, lower=0.0, upper=10.0, quantiles=(0.5,))
    d = np.array([1.0, 2.5, 6.0])
    edges = np.array([0.0, 1.0, 2.5, 6.0, 10.0])
    lw = -0.5 * np.abs(np.arange(4) - 1.5) + np.log(np.diff(edges))
    cell = np.exp(lw - np.logaddexp.reduce(lw))
    t = 4.0  # in the cell (2.5, 6): two full cells plus 1.5/3.5 of the third
    want = cell[0] + cell[1] + cell[2] * 1.5 / 3.5
    assert zoo_selection.joint_exp_coordinate_cdf(mech, d, 0, t) == pytest.approx(want, rel=1e-12)
    m2 = zoo.make("joint_exp").mechanism
    d2 = np.array([0.5, 4.5, 7.5, 8.5])
    cdf = [zoo_selection.joint_exp_coordinate_cdf(m2, d2, 1, t) for t in (0.0, 3.0, 6.0, 9.0, 10.0)]
    assert cdf[0] == 0.0 and cdf[-1] == pytest.approx(1.0, abs=1e-12) and np.all(np.diff(cdf) > 0)


def test_witness_probabilities_match_sampling():
    rng = np.random.default_rng(2024)
    n = 20000
    for name in NEW:
        m = zoo.make(name)
        w = m.witness()
        for d, p in ((w.d1, w.p_d1), (w.d2, w.p_d2)):
            k = w.event.count(np.asarray(m.sample(d, size=n, rng=rng)))
            if p == 0.0:
                assert k == 0, (name, k)
                continue
            sd = math.sqrt(p * (1 - p) * n)
            assert abs(k - n * p) <= 5.5 * sd + 1, (name, k, n * p)


def test_reused_uniform_sampler_matches_its_exact_law():
    m = zoo.make("topk_peeling_reused_uniform", k=2)
    d = np.array([2.0, 0.0, 1.0, 3.0])
    sup = m.support(d)
    p = np.exp(m.log_prob(d))
    assert p.sum() == pytest.approx(1.0, abs=1e-12) and (p == 0).any()  # some sequences impossible
    n = 40000
    y = m.sample(d, size=n, rng=np.random.default_rng(3))
    idx = {tuple(r): i for i, r in enumerate(sup.tolist())}
    counts = np.bincount([idx[tuple(r)] for r in y.tolist()], minlength=len(sup))
    assert counts[p == 0].sum() == 0
    live = p > 0
    assert stats.chisquare(counts[live], n * p[live]).pvalue > 1e-6


@pytest.mark.parametrize("name", [n for n in NEW if n.startswith("topk")])
def test_exact_mode_on_the_witness(name):
    m = zoo.make(name)
    w = m.witness()
    ex = verifiers.exact(m, w.d1, w.d2)
    assert ex.epsilon >= w.loss - 1e-9
    assert ex.violated == zoo.get(name).broken
    if name == "topk_peeling_reused_uniform":
        assert ex.support_violation


@pytest.mark.parametrize("name", BROKEN)
def test_broken_flagged_on_witness_and_by_automatic_audit(name):
    m = zoo.make(name)
    w = m.witness()
    n = next(n for n in (500, 1000, 2000, 4000, 8000, 16000, 32000)
             if power.certification_power(w.p_num, w.p_den, n, m.claim.epsilon, alpha1=0.05) >= 1 - 1e-6)
    v = verifiers.audit(m, w.d1, w.d2, samples=n, event=w.event, direction=w.direction, rng=17)
    assert v.violated, v.summary
    v = verifiers.audit(m, w.d1, w.d2, samples=4 * n, rng=19)
    assert v.violated and v.epsilon_lower > m.claim.epsilon, v.summary


@pytest.mark.parametrize("name", TWINS)
def test_twins_not_flagged_at_small_alpha(name):
    m = zoo.make(name)
    w = m.witness()
    v = verifiers.audit(m, w.d1, w.d2, samples=20000, alpha=1e-6, rng=23)
    assert not v.violated, v.summary
