"""Exact mode for the sorted-vector laws of JointExp / IndExp (verifiers.losses.vector) against brute
force over every region of the common refinement, evaluated with the mechanisms' own densities."""

import itertools
import math

import numpy as np
import pytest
from scipy import special

from dpharness import mechanisms, verifiers
from dpharness.mechanisms.quantiles import IndependentQuantiles, JointQuantiles
from dpharness.verifiers.losses import vector as xv
from dpharness.verifiers.controls import zoo
from dpharness.verifiers.losses.exact import canonical, loss_between

PAIRS = [
    ([0.5, 4.5, 7.5, 8.5], [9.75, 4.5, 7.5, 8.5]),           # replace one
    ([1.0, 2.0, 2.0, 6.0], [1.0, 2.0, 6.0]),                  # remove one (ties)
    ([0.2, 3.3, 5.0], [0.2, 3.3, 5.0, 10.0]),                 # add one at the bound
    ([-3.0, 4.0, 12.0], [4.0, 4.0, 12.0]),                    # clipped records
]


def _tuples(K, m):
    return [tuple(t) for t in itertools.combinations_with_replacement(range(K), m)]


def _ref(mech, d1, d2):
    c = [mechanisms.joint_exp.cells_of(np.asarray(d, float), mech.lower, mech.upper, mech.grid) for d in (d1, d2)]
    return xv.refine(c[0].keys, c[1].keys, mech.lower, mech.upper, mech.grid)


def _brute_joint(mech, d1, d2):
    ref = _ref(mech, d1, d2)
    x = np.array([np.sort(ref.rep[list(t)]) for t in _tuples(ref.K, mech.m)])
    g = mech.log_density(d1, x) - mech.log_density(d2, x)
    return float(max(g.max(), (-g).max(), 0.0))


def _indep_log_density(mech, d, x):
    """Sorted-row density of IndExp at rows x (distinct or tied), from the marginal laws' own
    log_pdf / log_pmf: sum over orderings of prod_j f_j (divided by the tie factor on a grid)."""
    m = mech.m
    laws = [mech.marginal(d, j) for j in range(m)]
    f = (lambda law, v: law.log_pdf(v)) if mech.grid is None else (lambda law, v: law.log_pmf(v))
    terms = [sum(f(laws[j], x[:, p[j]]) for j in range(m)) for p in itertools.permutations(range(m))]
    out = special.logsumexp(np.stack(terms), axis=0)
    if mech.grid is not None:  # ties: each distinct arrangement counted once
        out = out - np.array([sum(math.lgamma(c + 1) for c in np.unique(r, return_counts=True)[1]) for r in x])
    return out


def _brute_indep(mech, d1, d2):
    ref = _ref(mech, d1, d2)
    x = np.array([np.sort(ref.rep[list(t)]) for t in _tuples(ref.K, mech.m)])
    g = _indep_log_density(mech, d1, x) - _indep_log_density(mech, d2, x)
    return float(max(g.max(), (-g).max(), 0.0))


@pytest.mark.parametrize("domain", ["continuous", "integers"])
@pytest.mark.parametrize("qs", [(0.5,), (0.25, 0.75), (0.2, 0.5, 0.9)])
@pytest.mark.parametrize("nb", ["replace_one", "add_remove"])
def test_joint_exp_dp_equals_brute_force(domain, qs, nb):
    m = JointQuantiles(epsilon=1.3, lower=0.0, upper=10.0, quantiles=qs, neighbours=nb, domain=domain)
    for d1, d2 in PAIRS:
        ex = verifiers.exact(m, d1, d2)
        assert ex.epsilon == pytest.approx(_brute_joint(m, d1, d2), rel=1e-9, abs=1e-12), (d1, d2)
        assert not ex.support_violation and ex.method.startswith("joint_exp")


@pytest.mark.parametrize("domain", ["continuous", "integers"])
@pytest.mark.parametrize("qs", [(0.5,), (0.25, 0.75), (0.2, 0.5, 0.9)])
def test_independent_enumeration_equals_brute_force_and_bound(domain, qs):
    m = IndependentQuantiles(epsilon=1.3, lower=0.0, upper=10.0, quantiles=qs, neighbours="add_remove", domain=domain)
    for d1, d2 in PAIRS:
        ex = verifiers.exact(m, d1, d2)
        assert "enumerated" in ex.method
        assert ex.epsilon == pytest.approx(_brute_indep(m, d1, d2), rel=1e-9, abs=1e-12), (d1, d2)
        # the unsorted vector's loss (sum of the 1-D exact losses of the marginals) bounds it
        for direction in (0, 1):
            a, b = (d1, d2) if direction == 0 else (d2, d1)
            ub_f = 0.0
            for j in range(m.m):
                le = loss_between(canonical(m.marginal(a, j)), canonical(m.marginal(b, j)))
                ub_f += le.epsilon_forward
            assert (ex.epsilon_forward if direction == 0 else ex.epsilon_backward) <= ub_f * (1 + 1e-9) + 1e-12


def test_independent_past_the_cap_is_a_labelled_upper_bound(monkeypatch):
    m, data = IndependentQuantiles.example()
    d2 = data.copy()
    d2[4] = 10.0
    exact_ = verifiers.exact(m, data, d2)
    monkeypatch.setattr(xv, "_ENUM_CAP", 10)
    ub = verifiers.exact(m, data, d2)
    assert "upper bound by post-processing" in ub.method
    assert ub.epsilon >= exact_.epsilon * (1 - 1e-12)
    assert ub.delta == 0.0  # within the claim: no hockey-stick mass


def test_region_masses_normalise():
    # the region volumes / tie factors used for delta: total mass 1 under each dataset
    for dom in ("continuous", "integers"):
        j = JointQuantiles(epsilon=2.0, lower=0.0, upper=10.0, quantiles=(0.3, 0.6, 0.8), domain=dom)
        ex = verifiers.exact(j, PAIRS[1][0], PAIRS[1][1])
        assert ex.delta_at(-50.0) == pytest.approx(1.0, rel=1e-9)  # sum P1 - e^-50 P2
        i = IndependentQuantiles(epsilon=2.0, lower=0.0, upper=10.0, quantiles=(0.3, 0.6, 0.8), domain=dom)
        ex = verifiers.exact(i, PAIRS[1][0], PAIRS[1][1])
        assert ex.delta_at(-50.0) == pytest.approx(1.0, rel=1e-9)
        assert ex.delta_at(ex.epsilon) <= 1e-12 and ex.delta_at(0.0) > 0


@pytest.mark.parametrize("name", ["joint_quantiles", "independent_quantiles"])
def test_registered_examples_within_claim_over_generated_pairs(name):
    m, _ = mechanisms.registry.get(name).example()
    losses = [verifiers.exact(m, p.d1, p.d2) for p in verifiers.pairs_for(m)]
    assert losses and not any(e.violated for e in losses)
    assert 0 < max(e.epsilon for e in losses) <= m.claim.epsilon


def test_app_ind_exp_delta_at_claim():
    m = IndependentQuantiles(epsilon=1.0, lower=-10.0, upper=10.0, quantiles=(0.25, 0.5, 0.75),
                             composition="optimal", delta=1e-6)
    for p in verifiers.pairs_for(m)[:20]:
        ex = verifiers.exact(m, p.d1, p.d2)
        assert not ex.violated and not math.isnan(ex.delta) and ex.delta <= 1e-6


def test_app_ind_exp_delta_not_computed_past_the_cap(monkeypatch):
    monkeypatch.setattr(xv, "_ENUM_CAP", 10)
    m = IndependentQuantiles(epsilon=0.3, lower=0.0, upper=10.0, quantiles=(0.25, 0.5, 0.75),
                             composition="optimal", delta=1e-3)
    ex = verifiers.exact(m, [0.5, 4.5, 7.5, 8.5], [9.75, 4.5, 7.5, 8.5])
    if ex.epsilon > ex.epsilon_claimed:
        assert math.isnan(ex.delta) and "delta not computed" in ex.method and not ex.violated
    else:
        assert ex.delta == 0.0


def test_zoo_joint_exp_twins_on_witness():
    broken = zoo.make("joint_exp_single_sensitivity")
    w = broken.witness()
    ex = verifiers.exact(broken, w.d1, w.d2)
    # pointwise loss >= the witness event's 1.338 and <= the true 2 epsilon
    assert ex.violated and 1.338 <= ex.epsilon <= 2 * broken.epsilon
    assert ex.epsilon >= math.log(w.p_d2 / w.p_d1) - 1e-9
    assert ex.delta > 0
    ok = zoo.make("joint_exp")
    ex2 = verifiers.exact(ok, w.d1, w.d2)
    assert not ex2.violated and ex2.epsilon >= math.log(0.1214 / 0.0612) - 1e-3
    assert _brute_joint(broken.mechanism, w.d1, w.d2) == pytest.approx(ex.epsilon, rel=1e-9)
