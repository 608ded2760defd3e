"""The one mechanism registry and its namespaces (mechanisms/registry.py; the zoo registers as ``zoo``)."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from dpharness import mechanisms
from dpharness.mechanisms import registry
from dpharness.verifiers.controls import zoo
from dpharness.verifiers.controls.zoo.base import ZOO, zoo_register

REAL = ("continuous_exponential", "csmooth_quantiles", "discrete_laplace", "duff_median", "duff_quantile", "exponential",
        "gumbel_top_k", "independent_quantiles", "joint_quantiles", "laplace_median_global", "laplace_top_k",
        "laplace_via_exponential", "peeling_exponential", "peeling_permute_and_flip", "permute_and_flip", "randomized_response", "report_noisy_max",
        "revenue_price", "smooth_quantiles", "smooth_sensitivity_median", "snapping", "tree_quantiles")


def test_default_namespace_lists_only_real_mechanisms():
    assert set(REAL) <= set(mechanisms.available())  # the shipped ones; a new module adds its own
    assert registry.available(registry.DEFAULT) == mechanisms.available() == sorted(mechanisms.available())
    assert not any(registry.SEPARATOR in n for n in mechanisms.available())
    assert set(registry.namespaces()) == {registry.DEFAULT, ZOO}


def test_zoo_is_a_namespace_of_the_one_registry():
    assert zoo.available() == registry.available(ZOO)
    assert len(zoo.available()) == 27 and len(zoo.available(structured=True)) == 12
    everything = registry.available(None)
    assert set(everything) == set(mechanisms.available()) | {f"zoo/{n}" for n in zoo.available()}
    # the same plain name in two namespaces: two different classes
    assert registry.get("permute_and_flip") is not registry.get("zoo/permute_and_flip")
    assert registry.get("zoo/permute_and_flip") is registry.get("permute_and_flip", namespace="zoo")


@pytest.mark.parametrize("how", ["qualified", "keyword", "zoo.make"])
def test_three_spellings_build_the_same_zoo_mechanism(how):
    if how == "qualified":
        m = mechanisms.make("zoo/rnm_laplace_value", k=3)
    elif how == "keyword":
        m = mechanisms.make("rnm_laplace_value", namespace="zoo", k=3)
    else:
        m = zoo.make("rnm_laplace_value", k=3)
    assert type(m) is zoo.ZooRNMLaplaceValue
    assert m.true_epsilon == pytest.approx(1.5)  # k eps / 2 at eps = 1 (zoo docstring)
    assert (m.name, m.namespace) == ("rnm_laplace_value", "zoo")


def test_zoo_entries_carry_their_metadata():
    e = zoo.get("em_missing_half")
    assert (e.name, e.cls, e.broken, e.twin) == ("em_missing_half", zoo.ZooEMMissingHalf, True, "em")
    assert e.summary.startswith("BROKEN")
    raw = registry.entry("zoo/em_missing_half")
    assert raw.meta == {"broken": True, "twin": "em", "structured": False} and raw.qualified == "zoo/em_missing_half"
    assert registry.entry("exponential").qualified == "exponential"
    assert [x.name for x in zoo.entries()] == zoo.available()


def test_unknown_names_list_the_namespace_and_suggest():
    with pytest.raises(ValueError, match=r"unknown mechanism 'exponentail' \(did you mean 'exponential'\?\)"):
        mechanisms.make("exponentail", epsilon=1.0)
    with pytest.raises(ValueError, match="unknown zoo mechanism 'laplase'.*accepted: duff_median, em"):
        zoo.make("laplase")
    # a zoo name asked for in the default namespace points to where it is
    with pytest.raises(ValueError, match="'zoo/em_missing_half' exists in another namespace"):
        mechanisms.make("em_missing_half")
    with pytest.raises(ValueError, match="namespace 'zoo', not 'default'"):
        registry.get("zoo/em", namespace="default")
    with pytest.raises(ValueError, match="namespace must be"):
        registry.available("")
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        registry.get(None)


def test_registration_rules():
    with pytest.raises(TypeError, match="dataclass"):
        registry.register("not_a_dataclass", namespace="test_ns")(type("X", (), {}))

    @dataclasses.dataclass(frozen=True)
    class Dummy:
        epsilon: float = 1.0

    registry.register("dummy", namespace="test_ns")(Dummy)
    try:
        assert registry.register("dummy", namespace="test_ns")(Dummy) is Dummy  # same class again: fine
        other = dataclasses.make_dataclass("Other", [("epsilon", float, dataclasses.field(default=1.0))])
        with pytest.raises(ValueError, match="already registered in namespace 'test_ns' by Dummy"):
            registry.register("dummy", namespace="test_ns")(other)
        with pytest.raises(ValueError, match="already registered"):
            zoo_register("em", broken=False)(Dummy)
        assert "test_ns" in registry.namespaces() and "dummy" not in mechanisms.available()
    finally:
        registry._SPACES["test_ns"].pop("dummy")


def test_parameters_and_describe_work_in_every_namespace():
    assert registry.parameters("duff_median")["epsilon"] is inspect.Parameter.empty
    assert registry.parameters("zoo/ss_median") == {"epsilon": 1.0, "lower": 0.0, "upper": 10.0,
                                                    "noise": "laplace", "delta": 1e-3, "clip_output": False}
    text = mechanisms.describe("zoo/em")
    assert text.splitlines()[0] == "zoo/em" and "epsilon=1 (pure DP)" in text
    assert mechanisms.describe("exponential").splitlines()[0] == "exponential"
    with pytest.raises(ValueError, match="missing required parameter.*lower"):
        mechanisms.make("duff_median", epsilon=1.0)


def test_default_table_is_the_registrys_name_to_class_dict(monkeypatch):
    # Benchmarks' regression tests swap a degraded class in by patching this dict.
    real = registry.get("exponential")

    class Degraded(real):
        pass

    monkeypatch.setitem(registry._REGISTRY, "exponential", Degraded)
    assert type(mechanisms.make("exponential", epsilon=1.0)) is Degraded
    monkeypatch.undo()
    assert type(mechanisms.make("exponential", epsilon=1.0)) is real


def test_empty_namespace_says_nothing_is_registered():
    with pytest.raises(ValueError, match="no mechanism is registered in namespace 'nowhere'"):
        registry.get("nowhere/x")
    assert registry.available("nowhere") == []
