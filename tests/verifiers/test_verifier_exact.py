"""Exact mode (verifiers.exact) against the closed forms of docs/auditing.md and independent
numerical computations (dense grids, quadrature)."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpharness import mechanisms
from dpharness import verifiers
from dpharness.mechanisms.laws import LocationScaleLaw
from dpharness.verifiers.controls import zoo
from dpharness.verifiers.losses.exact import canonical, loss_between


def test_em_missing_half_closed_form():
    # docs/auditing.md, "The zoo": u = (0, 4) vs (1, 3): P[r = 0] = 1/(1 + e^4) = 0.0180 vs 1/(1 + e^2) = 0.1192,
    # pair epsilon ln((1 + e^4)/(1 + e^2)) = 1.89.
    m = zoo.make("em_missing_half")
    ex = verifiers.exact(m, [0.0, 4.0], [1.0, 3.0])
    want = math.log((1 + math.e**4) / (1 + math.e**2))
    assert ex.epsilon == pytest.approx(want, rel=1e-12)
    assert round(ex.epsilon, 2) == 1.89
    assert ex.violated and not ex.support_violation
    w = m.witness()
    assert (round(w.p_d1, 4), round(w.p_d2, 4)) == (0.0180, 0.1192)
    # its correct twin loses ln((1 + e^2)/(1 + e)) on the same pair, within its claim
    ex2 = verifiers.exact(zoo.make("em"), [0.0, 4.0], [1.0, 3.0])
    assert ex2.epsilon == pytest.approx(math.log((1 + math.e**2) / (1 + math.e)), rel=1e-12)
    assert not ex2.violated


def test_rnm_monotone_scale_closed_form():
    # Two candidates, Lap(1) noise: P[argmax = 0] = P[L1 - L2 > d] = e^{-d}(1 + d/2)/2 for a gap d.
    m = zoo.make("rnm_monotone_scale")
    p = lambda d: 0.5 * math.exp(-d) * (1 + d / 2)  # noqa: E731
    assert p(4) == pytest.approx(0.0275, abs=5e-5) and p(2) == pytest.approx(0.1353, abs=5e-5)
    ex = verifiers.exact(m, [0.0, 4.0], [1.0, 3.0])
    assert ex.epsilon == pytest.approx(math.log(p(2) / p(4)), rel=1e-9)
    assert round(ex.epsilon, 2) == 1.59 and ex.violated
    assert np.exp(m.log_prob(np.array([0.0, 4.0])))[0] == pytest.approx(p(4), rel=1e-9)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_laplace_and_inverted_scale(eps):
    ex = verifiers.exact(zoo.make("laplace", epsilon=eps), 0.0, 1.0)
    assert ex.epsilon == pytest.approx(eps, rel=1e-12) and not ex.violated
    inv = verifiers.exact(zoo.make("laplace_inverted_scale", epsilon=eps), 0.0, 1.0)
    assert inv.epsilon == pytest.approx(1.0 / eps, rel=1e-12)
    assert inv.violated == (1.0 / eps > eps)


@pytest.mark.parametrize("shift,scale", [(1.0, 0.5), (2.0, 1.0), (0.3, 2.0)])
@pytest.mark.parametrize("eps", [0.0, 0.25, 1.0])
def test_laplace_hockey_stick_closed_form(shift, scale, eps):
    # Lap(0, b) vs Lap(s, b), mu = s/b: delta(eps) = 1 - e^{(eps - mu)/2} for eps < mu, else 0.
    A = canonical(LocationScaleLaw(0.0, scale, "laplace"))
    B = canonical(LocationScaleLaw(shift, scale, "laplace"))
    ex = loss_between(A, B, epsilon_claimed=eps)
    mu = shift / scale
    assert ex.epsilon == pytest.approx(mu, rel=1e-12)
    want = max(0.0, 1.0 - math.exp((eps - mu) / 2))
    assert ex.delta == pytest.approx(want, abs=1e-12)
    assert ex.delta_at(eps) == pytest.approx(want, abs=1e-12)


def test_ss_median_big_beta_closed_form():
    # docs/auditing.md, "The zoo": same centre, scales b1 < b2 = e^beta b1; delta(eps) = e^{-t/b2} - e^eps e^{-t/b1},
    # t = (eps + ln(b2/b1)) / (1/b1 - 1/b2); about 0.039 at eps = 1 against a claimed 0.001.
    m = zoo.make("ss_median_big_beta")
    d1, d2 = np.array([10.0, 10, 10, 10]), np.array([0.0, 10, 10, 10])
    b = sorted([m.scale_of(d1), m.scale_of(d2)])
    assert b[1] / b[0] == pytest.approx(math.exp(m.beta), rel=1e-9)  # S* changes by exactly e^beta
    t = (1.0 + math.log(b[1] / b[0])) / (1 / b[0] - 1 / b[1])
    want = math.exp(-t / b[1]) - math.e * math.exp(-t / b[0])
    ex = verifiers.exact(m, d1, d2)
    assert ex.delta == pytest.approx(want, rel=1e-9)
    assert 0.03 < ex.delta < 0.05 and ex.violated
    # a numerical check of the same integral: int max(0, f2 - e f1)
    f1 = stats.laplace(10, b[0]).pdf
    f2 = stats.laplace(10, b[1]).pdf
    num = sum(integrate.quad(lambda x: max(0.0, f2(x) - math.e * f1(x)), lo, hi, limit=200)[0]
              for lo, hi in ((-np.inf, 10 - t), (10 + t, np.inf)))
    assert ex.delta == pytest.approx(num, rel=1e-6)
    # the correct twin's delta on the same pair stays below its claim
    assert not verifiers.exact(zoo.make("ss_median"), d1, d2).violated


@pytest.mark.parametrize("m1,b1,m2,b2", [(0.0, 1.0, 1.0, 1.0), (0.0, 1.0, 0.5, 1.7), (2.0, 0.3, -1.0, 0.9)])
def test_cauchy_log_ratio_supremum_matches_dense_grid(m1, b1, m2, b2):
    A = canonical(LocationScaleLaw(m1, b1, "cauchy"))
    B = canonical(LocationScaleLaw(m2, b2, "cauchy"))
    ex = loss_between(A, B, epsilon_claimed=0.5)
    x = np.concatenate([np.linspace(-60, 60, 2_000_001), [-1e9, 1e9]])
    g = stats.cauchy.logpdf(x, m1, b1) - stats.cauchy.logpdf(x, m2, b2)
    assert ex.epsilon == pytest.approx(float(np.max(np.abs(g))), abs=1e-7)
    num = integrate.quad(lambda y: max(0.0, stats.cauchy.pdf(y, m1, b1) - math.exp(0.5) * stats.cauchy.pdf(y, m2, b2)),
                         -np.inf, np.inf, limit=400)[0]
    num2 = integrate.quad(lambda y: max(0.0, stats.cauchy.pdf(y, m2, b2) - math.exp(0.5) * stats.cauchy.pdf(y, m1, b1)),
                          -np.inf, np.inf, limit=400)[0]
    assert ex.delta == pytest.approx(max(num, num2), rel=1e-5, abs=1e-9)


def test_clipped_laplace_atoms():
    # Clipped at [0, 10]: the atoms at the bounds carry F(0) and 1 - F(10); their ratio is the loss.
    A = canonical(LocationScaleLaw(2.0, 1.0, "laplace", 0.0, 10.0))
    B = canonical(LocationScaleLaw(3.0, 1.0, "laplace", 0.0, 10.0))
    ex = loss_between(A, B)
    assert ex.epsilon == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("name", ["em", "rnm_laplace", "rnm_exponential", "permute_and_flip", "em_missing_half",
                                  "rnm_monotone_scale"])
def test_finite_exact_is_max_log_ratio(name):
    m = zoo.make(name)
    rng = np.random.default_rng(11)
    for _ in range(5):
        u = rng.normal(size=4) * 3
        u2 = u + rng.uniform(-1, 1, size=4)
        ex = verifiers.exact(m, u, u2)
        want = float(np.max(np.abs(m.log_prob(u) - m.log_prob(u2))))
        assert ex.epsilon == pytest.approx(want, rel=1e-12, abs=1e-14)
        assert ex.epsilon <= m.true_epsilon * (1 + 1e-9)


def test_support_violations_are_infinite():
    for name in ("rnm_shared_noise", "ss_median_local"):
        m = zoo.make(name)
        w = m.witness()
        ex = verifiers.exact(m, w.d1, w.d2)
        assert ex.epsilon == math.inf and ex.support_violation and ex.violated


def test_correct_zoo_controls_within_claim_on_their_witnesses():
    for name in zoo.available(broken=False, structured=False):
        m = zoo.make(name)
        w = m.witness()
        ex = verifiers.exact(m, w.d1, w.d2)
        assert not ex.violated, name


#: Registered mechanisms with no exact law of their output row (GJK21's noise-added quantile
#: baselines, mechanisms/quantile_baselines.py): audited statistically only.
NO_EXACT_LAW = {"csmooth_quantiles", "smooth_quantiles", "tree_quantiles"}


def test_registered_mechanisms_exact_on_example_pairs():
    # Every registered mechanism with an exact law exact mode reads (finite log_prob or a
    # univariate distribution, or a sorted-vector law: verifiers.losses.vector) holds its claim on
    # its generated pairs.
    for name in mechanisms.registry.available():
        if name in NO_EXACT_LAW:
            continue
        m, _ = mechanisms.registry.get(name).example()
        pairs = verifiers.pairs_for(m)[:12]
        for p in pairs:
            ex = verifiers.exact(m, p.d1, p.d2)
            assert not ex.violated, (name, p.label, ex.epsilon, ex.delta)


def test_no_law_raises():
    m = zoo.make("rnm_laplace_value")
    with pytest.raises(ValueError, match="exposes no exact law"):
        verifiers.exact(m, np.ones(5), np.full(5, 2.0))


def test_exact_loss_lives_in_its_own_module():
    # 1-D and sorted-vector exact modes both build it, without importing each other
    from dpharness.verifiers.losses.loss import ExactLoss

    assert verifiers.ExactLoss is ExactLoss and verifiers.exact.__module__.endswith(".exact")


# -- the canonical form is complete: its CDF, summed from atoms and pieces, is each law's own ----------

def _laws_for_cdf():
    from dpharness.mechanisms.laws import GridRunsLaw, PiecewiseDensity
    return {
        "laplace": LocationScaleLaw(0.3, 1.7, "laplace"),
        "laplace_clipped": LocationScaleLaw(2.0, 1.0, "laplace", 0.0, 3.5),
        "cauchy": LocationScaleLaw(-1.0, 0.5, "cauchy"),
        "cauchy_clipped": LocationScaleLaw(-1.0, 0.5, "cauchy", -4.0, 2.0),
        "piecewise": PiecewiseDensity.from_log_density([0.0, 1.0, 2.5, 4.0], [0.0, -2.0, 1.0], [0.5, 0.0, -3.0]),
        "grid": GridRunsLaw.from_log_weights(-2.0, 0.5, [0, 4, 5, 9], [4, 1, 4, 3], [0.0, 1.5, -1.0, 0.3]),
    }


@pytest.mark.parametrize("name", list(_laws_for_cdf()))
def test_canonical_cdf_from_atoms_and_pieces_is_the_laws_own(name):
    import dataclasses

    law = _laws_for_cdf()[name]
    form = canonical(law)
    bare = dataclasses.replace(form, law=None)  # forced through the atoms and pieces
    ys = np.concatenate([np.linspace(-8.0, 8.0, 401), form.atoms, np.nextafter(form.atoms, -np.inf)])
    if form.grid is not None:  # a grid law reads a value within rounding of a grid point as that point
        ys = np.concatenate([form.atoms, form.atoms + 0.25, [-9.0, 9.0]])
    # closed-form integrals against the law's own CDF: agreement to rounding (1e-12 absolute)
    np.testing.assert_allclose(bare.cdf(ys), law.cdf(ys), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(form.cdf(ys), np.asarray(law.cdf(ys), dtype=np.float64))
