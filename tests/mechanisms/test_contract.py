"""Contract tests parametrised over the mechanism registry (mechanisms/contracts.py)."""

import dataclasses

import numpy as np
import pytest

from dpharness import mechanisms, verifiers
from dpharness.mechanisms import PrivacyClaim
from dpharness.mechanisms.contracts import (Auditable, FiniteLaw, HasDistribution, HasExample, KnownLoss, LAW_KINDS,
                                            OutputLaw, Rebuildable, check_auditable, is_finite, output_kind)
from dpharness.verifiers.controls import zoo

NAMES = mechanisms.available()
FINITE_NAMES = [n for n in NAMES if mechanisms.registry.get(n).kind == "finite"]
REAL_NAMES = [n for n in NAMES if mechanisms.registry.get(n).kind == "real"]


def test_registry_not_empty():
    assert len(NAMES) >= 4


@pytest.mark.parametrize("name", NAMES)
def test_example_claim_and_sample(name):
    cls = mechanisms.registry.get(name)
    mech, data = cls.example()
    assert dataclasses.is_dataclass(mech) and mech.__dataclass_params__.frozen
    assert isinstance(mech.claim, PrivacyClaim)
    rebuilt = mechanisms.make(name, **mech.params())
    assert type(rebuilt) is type(mech)
    assert rebuilt.params() == mech.params()  # parameters round-trip through make
    assert rebuilt == mech  # frozen dataclasses: equal parameters, equal mechanisms
    a = mech.sample(data, size=50, rng=123)
    b = mech.sample(data, size=50, rng=123)
    c = mech.sample(data, size=50, rng=124)
    assert a.shape[0] == 50
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not any(isinstance(v, np.random.Generator) for v in vars(mech).values())


@pytest.mark.parametrize("name", NAMES)
def test_make_rejects_unknown_parameter(name):
    mech, _ = mechanisms.registry.get(name).example()
    with pytest.raises(ValueError, match="accepted"):
        mechanisms.make(name, **mech.params(), not_a_parameter=1)


def test_make_rejects_unknown_name():
    with pytest.raises(ValueError, match="accepted"):
        mechanisms.make("no_such_mechanism")


def test_every_registered_mechanism_declares_its_output_kind():
    assert sorted(FINITE_NAMES + REAL_NAMES) == NAMES
    assert FINITE_NAMES == ["exponential", "gumbel_top_k", "laplace_top_k", "peeling_exponential",
                            "peeling_permute_and_flip", "permute_and_flip", "randomized_response", "report_noisy_max"]


@pytest.mark.parametrize("name", FINITE_NAMES)
def test_finite_mechanisms_expose_exact_law(name):
    mech, data = mechanisms.registry.get(name).example()
    assert is_finite(mech) and isinstance(mech, FiniteLaw)
    lp = mech.log_prob(data)
    support = mech.support(data)
    # log_prob is aligned with the support's first axis: scalar outputs (M,), vector outputs (M, k)
    assert lp.shape == support.shape[:1]
    np.testing.assert_allclose(np.exp(lp).sum(), 1.0, rtol=1e-12)


VECTOR_REAL_NAMES = ["csmooth_quantiles", "independent_quantiles", "joint_quantiles", "smooth_quantiles",
                     "tree_quantiles"]  # one sorted row of m reals per draw


@pytest.mark.parametrize("name", [n for n in REAL_NAMES if n not in VECTOR_REAL_NAMES])
def test_real_mechanisms_expose_an_output_law(name):
    mech, data = mechanisms.registry.get(name).example()
    assert output_kind(mech) == "real" and not is_finite(mech)
    assert isinstance(mech, HasDistribution)
    law = mech.distribution(data)
    assert isinstance(law, OutputLaw) and law.law in LAW_KINDS
    c = np.asarray(law.cdf(np.array([-1e300, 1e300])))
    np.testing.assert_array_equal(c, [0.0, 1.0])


@pytest.mark.parametrize("name", VECTOR_REAL_NAMES)
def test_vector_real_mechanisms_return_sorted_rows(name):
    # A row of m reals has no univariate OutputLaw; JointExp exposes its exact log_density instead,
    # IndExp the exact law of each coordinate before sorting (marginal).
    mech, data = mechanisms.registry.get(name).example()
    assert name in REAL_NAMES and output_kind(mech) == "real"
    rows = mech.sample(data, size=20, rng=0)
    assert rows.shape == (20, len(mech.quantiles)) and np.all(np.diff(rows, axis=1) >= 0)
    if hasattr(mech, "log_density"):
        assert np.all(np.isfinite(mech.log_density(data, rows)))
    elif hasattr(mech, "marginal"):
        law = mech.marginal(data, 0)
        assert isinstance(law, OutputLaw) and law.law in LAW_KINDS
    # (csmooth_quantiles and tree_quantiles expose no law: Laplace-log-normal noise and the noisy
    # tree have none in closed form; their tests check the sampler against numerical laws.)


@pytest.mark.parametrize("name", NAMES)
def test_registered_mechanisms_satisfy_the_protocols(name):
    cls = mechanisms.registry.get(name)
    mech, _ = cls.example()
    assert isinstance(mech, Auditable) and isinstance(mech, Rebuildable) and isinstance(mech, HasExample)
    assert check_auditable(mech) is mech
    assert not isinstance(mech, KnownLoss)  # only the zoo knows its true epsilon


@pytest.mark.parametrize("name", zoo.available(structured=False))
def test_zoo_entries_satisfy_the_protocols(name):
    m = zoo.make(name)
    assert isinstance(m, KnownLoss) and isinstance(m, Auditable) and isinstance(m, Rebuildable)
    assert m.true_epsilon >= m.claim.epsilon
    # an exact law of some form: finite, a distribution, or (value-releasing RNM) a cdf
    assert isinstance(m, FiniteLaw) or isinstance(m, HasDistribution) or callable(getattr(m, "cdf", None))


def test_check_auditable_says_what_is_accepted():
    wrapped = verifiers.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0)
    assert check_auditable(wrapped) is wrapped and output_kind(wrapped) == "real"
    with pytest.raises(TypeError, match="mechanism must be a mechanism.*verifiers.wrap"):
        check_auditable(42)
    with pytest.raises(TypeError, match="got the class ExponentialMechanism"):
        check_auditable(mechanisms.registry.get("exponential"))

    class ClaimIsText:
        claim = "epsilon=1"

        def sample(self, data, size=None, rng=None):
            return np.zeros(size)

    with pytest.raises(TypeError, match="claim must be a mechanisms.PrivacyClaim"):
        check_auditable(ClaimIsText(), "mech")
    assert output_kind(ClaimIsText()) == "real"


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "1"])
def test_privacy_claim_rejects_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyClaim(bad)


def test_privacy_claim_rejects_bad_neighbours():
    with pytest.raises(ValueError, match="neighbours"):
        PrivacyClaim(1.0, neighbours="swap")
