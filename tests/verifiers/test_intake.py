"""dpharness.verifiers.intake: the one intake of user code (mechanisms, plain functions, library
objects through registered recognisers, "package.module:attr" targets), in code and in a config."""

from __future__ import annotations

import sys
import textwrap
import uuid

import numpy as np
import pytest

from dpharness import mechanisms, verifiers
from dpharness.verifiers import intake as intake_module
from dpharness.verifiers.controls import zoo
from dpharness.verifiers.intake import IntakeError, Reclaimed, intake, register_recogniser


def noisy_count(data, size, rng):
    return len(data) + rng.laplace(scale=1.0, size=size)


@pytest.fixture
def recognisers(monkeypatch):
    """A private registry of recognisers for the test (the adapters' one stays as it was)."""
    monkeypatch.setattr(intake_module, "_RECOGNISERS", [])
    return intake_module._RECOGNISERS


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A throwaway module with a function, a mechanism and a factory, importable as a target."""
    name = f"intake_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""\
        from dpharness import verifiers


        def noisy_count(data, size, rng):
            return len(data) + rng.laplace(scale=1.0, size=size)


        COUNT = verifiers.wrap(noisy_count, epsilon=1.0, sensitivity=1, name="count object")


        def make_count():
            return COUNT
        """))
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield name, str(tmp_path)
    sys.modules.pop(name, None)


def test_mechanisms_are_returned_as_they_are():
    m = mechanisms.make("exponential", epsilon=1.0)
    w = verifiers.wrap(noisy_count, epsilon=1.0)
    for mech in (m, w, zoo.make("laplace")):
        assert intake(mech) is mech
        assert intake(mech, strict=True) is mech
    # in code, the claim passed is audited: the same claim keeps the object, another goes through a proxy
    assert intake(m, epsilon=m.claim.epsilon, delta=0.0) is m
    other = intake(m, epsilon=0.5, delta=0.0)
    assert isinstance(other, Reclaimed) and other.claim.epsilon == 0.5 and other.declared == m.claim
    bounded = verifiers.wrap(noisy_count, epsilon=1.0, kind="finite", attributes={"lower": 0, "upper": 5})
    proxy = intake(bounded, epsilon=0.5, delta=0.0)
    assert proxy.kind == "finite" and (proxy.lower, proxy.upper) == (0, 5)  # every other attribute its own


def test_functions_and_samplers_are_wrapped_under_the_claim():
    w = intake(noisy_count, epsilon=1.0, sensitivity=1.0)
    assert isinstance(w, verifiers.WrappedMechanism) and w.fn is noisy_count and w.name == "noisy_count"
    assert w.claim.epsilon == 1.0 and w.claim.neighbours == "add_remove" and w.kind == "real"

    class SamplerOnly:
        def sample(self, data, size=None, rng=None):
            return np.zeros(size)

    s = SamplerOnly()
    ws = intake(s, epsilon=2.0, kind=None, name="")  # in code: None and "" mean the defaults
    assert ws.fn == s.sample and ws.kind == "real" and ws.name == "SamplerOnly"
    strict = intake(noisy_count, strict=True, epsilon=1.0)
    assert strict.name == "noisy_count" and strict.fn is noisy_count


def test_targets_are_imported_then_taken_as_what_they_name(project):
    name, folder = project
    w = intake(f"{name}:noisy_count", paths=(folder,), epsilon=1.0)
    assert w.name == f"{name}:noisy_count" and w.claim.epsilon == 1.0
    obj = intake(f"{name}:COUNT")
    assert obj.name == "count object"
    assert intake(f"{name}:make_count", strict=True) is obj  # a zero-argument factory, in a config
    with pytest.raises(IntakeError, match="its own claim") as e:
        intake(f"{name}:COUNT", strict=True, sensitivity=1, epsilon=2)
    assert e.value.key == "sensitivity"  # the first key given
    with pytest.raises(IntakeError, match="no attribute 'noisy_cout'.*did you mean 'noisy_count'") as e:
        intake(f"{name}:noisy_cout", epsilon=1.0)
    assert e.value.key == "callable"
    with pytest.raises(IntakeError, match="no module named"):
        intake("no_such_module_dpharness_intake:f", epsilon=1.0)


def test_errors_in_code_and_in_a_config():
    with pytest.raises(TypeError, match="got the class ExponentialMechanism; build an instance first"):
        intake(mechanisms.registry.get("exponential"), epsilon=1.0)
    with pytest.raises(TypeError, match=r"or a function fn\(data, size, rng\); got int 42"):
        intake(42, epsilon=1.0)
    with pytest.raises(TypeError, match="mechanism.claim must be a mechanisms.PrivacyClaim, got str"):
        intake(type("M", (), {"claim": "1-DP", "sample": lambda self, d, n=None, r=None: 0})(), epsilon=1.0)
    with pytest.raises(IntakeError, match="neither callable nor a mechanism"):
        intake(42, strict=True)
    with pytest.raises(IntakeError, match="no claim is given") as e:
        intake(noisy_count, strict=True)
    assert e.value.key == "epsilon"
    with pytest.raises(IntakeError, match="wrong signature"):
        intake(len, strict=True, epsilon=1.0)
    with pytest.raises(IntakeError, match="is required to wrap") as e:
        intake(noisy_count, strict=True, delta=1e-6)
    assert e.value.key == "epsilon"


def test_recognisers_take_library_objects(recognisers):
    FakeRelease = type("FakeRelease", (), {"__module__": "fakelib.measurements"})
    made = verifiers.wrap(noisy_count, epsilon=3.0, name="adapted")
    seen = []

    def recognise(obj):
        seen.append(obj)
        return made

    register_recogniser(recognise, packages=("fakelib",))
    register_recogniser(recognise, packages=("fakelib",))  # again (a reload): replaces, not doubles
    assert len(recognisers) == 1
    release = FakeRelease()
    assert intake(release) is made and intake(release, strict=True) is made and seen == [release, release]
    assert intake(release, epsilon=3.0, delta=0.0) is made  # the library's own claim, held to itself
    assert isinstance(intake(release, epsilon=1.0, delta=0.0), Reclaimed)
    with pytest.raises(IntakeError, match="its own claim"):
        intake(release, strict=True, epsilon=1.0)
    # other code is never shown to a recogniser
    assert intake(noisy_count, epsilon=1.0).fn is noisy_count and len(seen) == 5
    with pytest.raises(ValueError, match="packages"):
        register_recogniser(recognise, packages=())


def test_adapters_register_their_recogniser():
    import dpharness.adapters  # noqa: F401

    assert any("opendp" in p and "diffprivlib" in p for p, _ in intake_module._RECOGNISERS)
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=1.0)
    m = intake(meas)
    assert isinstance(m, verifiers.WrappedMechanism) and m.float_events and m.claim.epsilon == 1.0


def test_claim_keys_are_the_config_keys():
    from dpharness.bench.audits.spec import CLAIM_KEYS

    assert CLAIM_KEYS == intake_module.CLAIM_KEYS
