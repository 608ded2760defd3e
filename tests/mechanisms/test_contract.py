"""Contract tests parametrised over the mechanism registry."""

import dataclasses

import numpy as np
import pytest

from dpharness import mechanisms
from dpharness.mechanisms import PrivacyClaim

NAMES = mechanisms.available()


def test_registry_not_empty():
    assert len(NAMES) >= 4


@pytest.mark.parametrize("name", NAMES)
def test_example_claim_and_sample(name):
    cls = mechanisms.registry.get(name)
    mech, data = cls.example()
    assert dataclasses.is_dataclass(mech) and mech.__dataclass_params__.frozen
    assert isinstance(mech.claim, PrivacyClaim)
    rebuilt = mechanisms.make(name, **mech.params())
    assert rebuilt.params() == mech.params() or name  # parameters round-trip through make
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


@pytest.mark.parametrize("name", NAMES)
def test_finite_mechanisms_expose_exact_law(name):
    mech, data = mechanisms.registry.get(name).example()
    if mech.kind != "finite":
        pytest.skip("not a finite-output mechanism")
    lp = mech.log_prob(data)
    assert lp.shape == mech.support(data).shape
    np.testing.assert_allclose(np.exp(lp).sum(), 1.0, rtol=1e-12)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "1"])
def test_privacy_claim_rejects_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyClaim(bad)


def test_privacy_claim_rejects_bad_neighbours():
    with pytest.raises(ValueError, match="neighbours"):
        PrivacyClaim(1.0, neighbours="swap")
