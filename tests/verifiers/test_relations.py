"""The relation objects (verifiers.relations): one module per relation, the registry, dispatch
through the objects, the one NaN-aware record key, privacy maps wrapping a relation, and adding
a relation as one new module."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpharness import verifiers as V
from dpharness.mechanisms import NEIGHBOURS, PrivacyClaim
from dpharness.mechanisms import base as mech_base
from dpharness.verifiers import claims as C
from dpharness.verifiers import relations as R
from dpharness.verifiers.input_domains import FiniteValues
from dpharness.verifiers.relations import metrics, registry
from dpharness.verifiers.relations.base import Relation
from dpharness.verifiers.relations.registry import UnknownRelation
from dpharness.verifiers.relations.pairs import Pair, data_key, dedupe
from dpharness.verifiers.relations.privacy_unit import unit_records
from dpharness.verifiers.relations.records import NAN_KEY, record_keys, value_key
from dpharness.verifiers.controls import zoo

#: one legal pair per relation (at sensitivity 1), and one that is not, with the reason's start
CASES = {
    "value": (PrivacyClaim(1.0, neighbours="value"), (0.0, 1.0), (0.0, 2.0), "|d1 - d2| = 2 exceeds"),
    "bit": (PrivacyClaim(1.0, neighbours="bit"), (0, 1), (0, 2), "bits must be 0 or 1"),
    "score_linf": (PrivacyClaim(1.0, neighbours="score_linf"), ([0.0, 1.0], [1.0, 0.0]), ([0.0], [0.0, 1.0]),
                   "score vectors must have the same shape"),
    "score_monotone": (PrivacyClaim(1.0, neighbours="score_monotone"), ([0.0, 1.0], [1.0, 1.0]),
                       ([0.0, 1.0], [1.0, 0.0]), "score_monotone neighbours must move every entry"),
    "add_remove": (PrivacyClaim(1.0), ([1, 2], [1, 2, 3]), ([1, 2], [1, 2, 3, 4]), "add_remove neighbours differ in size"),
    "replace_one": (PrivacyClaim(1.0, neighbours="replace_one"), ([1, 2], [1, 3]), ([1, 2], [3, 4]), "2 records differ"),
    "one_differ": (PrivacyClaim(1.0, neighbours="one_differ"), ([0.0, 0.0], [0.0, 1.0]), ([0.0, 0.0], [1.0, 1.0]),
                   "exactly one coordinate may move, 2 moved"),
    "privacy_unit": (PrivacyClaim(1.0, neighbours="privacy_unit", max_contributions=2),
                     ([[1, 5.0]], [[1, 5.0], [2, 3.0], [2, 4.0]]), ([[1, 5.0]], [[1, 5.0], [2, 3.0], [3, 4.0]]),
                     "the records that differ belong to 2 privacy units"),
    "local": (PrivacyClaim(1.0, neighbours="local", input_domain=FiniteValues(("a", "b"))), ("a", "b"), ("a", "z"),
              "d2='z' is not in the input domain"),
}


def test_one_module_and_one_object_per_relation():
    assert set(NEIGHBOURS) == set(CASES) <= set(R.names())  # other relation modules may add names
    for name in NEIGHBOURS:
        rel = R.get(name)
        assert isinstance(rel, Relation) and rel.name == name
        assert type(rel).__module__ == f"dpharness.verifiers.relations.{name}"
        assert importlib.import_module(f"dpharness.verifiers.relations.{name}").RELATION is rel
    assert R.FAMILIES[:8] == ("values", "bits", "scores", "records", "labels", "histograms", "units", "local")  # built-ins first


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_relation_checks_through_its_object(name):
    claim, good, bad, why = CASES[name]
    rel = R.get(name)
    assert rel.why_not(*good, claim) is None and R.are_neighbours(*good, claim)
    rel.check(*good, claim)
    assert rel.why_not(*bad, claim).startswith(why)
    with pytest.raises(ValueError) as a:
        rel.check(*bad, claim)
    with pytest.raises(ValueError) as b:
        V.check_neighbours(*bad, claim)
    assert str(a.value) == str(b.value) == f"d1 and d2 are not {name} neighbours: {rel.why_not(*bad, claim)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_relations_metric_puts_its_neighbours_at_distance_one(name):
    claim, good, _, _ = CASES[name]
    rel = R.get(name)
    if rel.metric is None:
        assert name == "privacy_unit"  # a unit's records are many records apart
        with pytest.raises(ValueError, match="the privacy_unit relation has no input metric"):
            rel.distance(*good)
        return
    assert rel.distance(*good) == metrics.distance(rel.metric, *good) == 1.0
    assert name in C._compatible(rel.metric)


def test_an_unknown_name_admits_no_pair():
    claim = type("Claim", (), {"neighbours": "friends", "sensitivity": None, "input_domain": None})()
    rel = R.get("friends")
    assert isinstance(rel, UnknownRelation)
    assert R.why_not(1, 2, claim) == "unknown neighbour relation 'friends'"
    with pytest.raises(ValueError, match="not friends neighbours: unknown neighbour relation 'friends'"):
        V.check_neighbours(1, 2, claim)


def test_pairs_of_a_relation_are_its_generator_familys_in_order():
    m = zoo.make("duff_median")
    rel = R.relation_of(m.claim)
    assert rel is R.get("add_remove") and R.family_of(m) == "records"
    raw = rel.pairs(m)
    kept = V.pairs_for(m)
    keys = [(data_key(p.d1), data_key(p.d2)) for p in dedupe(raw)]
    got = [(data_key(p.d1), data_key(p.d2)) for p in kept]
    assert got == [k for k in keys if k in set(got)]  # the search keeps a subsequence of the raw pairs


def test_generators_refuse_a_relation_they_do_not_serve():
    m = zoo.make("duff_median")  # add_remove
    with pytest.raises(ValueError, match="the units generator needs privacy_unit neighbours, the claim says 'add_remove'"):
        V.pairs_for(m, "units")
    lap = V.wrap(lambda d, n, r: float(d) + r.laplace(size=n), epsilon=1.0, neighbours="value")
    with pytest.raises(ValueError, match="the records generator needs add_remove or replace_one neighbours, the claim says 'value'"):
        V.pairs_for(lap, "records")
    with pytest.raises(ValueError, match="generator must be 'auto', one of values, bits, scores, records, labels, histograms"):
        V.pairs_for(lap, "bogus")


# -- one NaN-aware key ------------------------------------------------------------------------

@pytest.mark.parametrize("a", [
    np.array([1.0, np.nan, 2.0, np.nan]),
    np.array([[1.0, np.nan], [np.nan, np.nan], [3.0, 4.0]]),
    np.array(["a", "b"]),
    np.array([1, 2, 3]),
    np.array([np.float64("nan"), "x", 3], dtype=object),
    np.array([[1, "x"], [float("nan"), "y"]], dtype=object),
    np.array([(1.0, float("nan")), (2.0, 3.0)], dtype=object),
])
def test_record_keys_are_the_value_keys_of_the_records(a):
    assert record_keys(a) == [value_key(r) for r in a]


def test_one_nan_key_for_relations_metrics_and_domains():
    assert record_keys(np.array([np.nan]))[0] is NAN_KEY
    assert FiniteValues((float("nan"), 1.0)).values[0] is NAN_KEY
    assert metrics._records(np.array([[np.nan, 1.0]]), "d1") == [(NAN_KEY, 1.0)]
    rows, col = unit_records(np.array([[1.0, np.nan]]), PrivacyClaim(1.0, neighbours="privacy_unit", max_contributions=1))
    assert rows == [(1.0, NAN_KEY)] and col == 0
    df = pd.DataFrame({"x": [np.nan, 1.0], "c": ["a", "b"]})
    assert metrics.distance("symmetric_distance", df, df.iloc[::-1]) == 0.0
    assert V.are_neighbours(df, df.iloc[::-1], PrivacyClaim(1.0, neighbours="replace_one"))
    # a container cell is keyed as a tuple, NaN inside canonicalised: hashable, so countable
    obj = np.empty(2, dtype=object)
    obj[0], obj[1] = [1.0, float("nan")], [2.0]
    assert record_keys(obj) == [(1.0, NAN_KEY), (2.0,)]


# -- privacy maps wrap a relation: one pairs_for ------------------------------------------------

def _count(data: Any, size: Any, rng: Any) -> Any:
    return len(data) + rng.laplace(0.0, 1.0, size)


def test_a_map_claim_wraps_the_relation_it_names():
    m = V.wrap(_count, privacy_map=C.LinearMap(1.0), input_metric="symmetric_distance")
    rel = R.relation_of(m.claim)
    assert isinstance(rel, C.MapRelation) and rel.base is R.get("add_remove")
    assert rel.name == "add_remove" and rel.records and rel.metric == "symmetric_distance"
    assert C.pairs_for is V.pairs_for is R.pairs_for
    # a listed pair is held to the map: distance 2 is legal (add_remove alone would refuse it) ...
    assert [p.label for p in V.pairs_for(m, [([1, 2], [1, 3])])] == ["pair 0"]
    assert R.get("add_remove").why_not([1, 2], [1, 3], m.claim) is not None
    # ... and distance 0 is not, with the pair named
    with pytest.raises(ValueError, match=r"pair 0 \(d1=.*\) is at symmetric_distance 0"):
        V.pairs_for(m, [([1, 2], [2, 1])])
    # generated pairs: the base relation's, each admitted by the map
    gen = V.pairs_for(m)
    assert gen and all(C.check_pair(p.d1, p.d2, m.claim) == 1.0 for p in gen)


def test_generated_pairs_the_map_refuses_are_skipped_and_reported():
    m = V.wrap(_count, privacy_map=C.ConstantMap(1.0, up_to=1), input_metric="symmetric_distance",
               neighbours="replace_one")  # replace_one pairs are at distance 2, beyond the map
    with pytest.raises(ValueError, match="no generated pair is at a finite symmetric_distance where the privacy map is valid"):
        V.pairs_for(m)


# -- adding a relation: one module with a RELATION --------------------------------------------

class _Parity(Relation):
    """Test relation: two integers of the same parity."""

    name = "same_parity"
    family = "parities"
    metric = None

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:
        return None if int(d1) % 2 == int(d2) % 2 else f"{d1} and {d2} differ in parity"

    generators = {"parities": lambda mechanism, relation: [Pair(0, 2, "evens"), Pair(1, 2, "mixed"), Pair(1, 3, "odds")]}


def test_a_registered_relation_is_claimable_checked_and_generated(monkeypatch):
    monkeypatch.setattr(mech_base, "_REGISTERED", [])
    monkeypatch.setattr(registry, "_RELATIONS", dict(registry._RELATIONS))
    monkeypatch.setattr(registry, "_FAMILIES", dict(registry._FAMILIES))
    with pytest.raises(ValueError, match="neighbours must be one of"):
        PrivacyClaim(1.0, neighbours="same_parity")
    R.register(_Parity())
    claim = PrivacyClaim(1.0, neighbours="same_parity")
    assert "same_parity" in mech_base.neighbour_relations() and R.families()[-1] == "parities"
    with pytest.raises(ValueError, match="d1 and d2 are not same_parity neighbours: 1 and 2 differ in parity"):
        V.check_neighbours(1, 2, claim)
    m = V.wrap(lambda d, n, r: float(d) + r.laplace(size=n), epsilon=1.0, neighbours="same_parity")
    assert [p.label for p in V.pairs_for(m)] == ["evens", "odds"]


class _ParityMetric(_Parity):
    """The test relation again, declared usable by privacy maps over the absolute distance."""

    name = "same_parity_map"
    metric = "absolute_distance"
    finite_under = ("absolute_distance",)


def test_a_registered_relations_metrics_reach_privacy_maps(monkeypatch):
    # the metric tables of verifiers.claims are read off the registry: no edit there for a new relation
    monkeypatch.setattr(mech_base, "_REGISTERED", [])
    monkeypatch.setattr(registry, "_RELATIONS", dict(registry._RELATIONS))
    monkeypatch.setattr(registry, "_FAMILIES", dict(registry._FAMILIES))
    with pytest.raises(ValueError, match="neighbours"):
        C.map_claim(lambda d: float(d), "absolute_distance", neighbours="same_parity_map")
    R.register(_ParityMetric())
    # the shipped relations first, in registry order; a relation added as a module may come before ours
    assert C._compatible("absolute_distance")[:2] == ("value", "bit")
    assert C._compatible("absolute_distance")[-1] == "same_parity_map"
    assert C.DEFAULT_RELATION["absolute_distance"] == "value"
    claim = C.map_claim(lambda d: float(d), "absolute_distance", neighbours="same_parity_map")
    assert claim.neighbours == "same_parity_map"
    m = V.wrap(lambda d, n, r: float(d) + r.laplace(size=n), privacy_map=lambda d: float(d),
               input_metric="absolute_distance", neighbours="same_parity_map")
    assert [p.label for p in V.pairs_for(m)] == ["evens", "odds"]
