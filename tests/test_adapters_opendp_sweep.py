"""The OpenDP side of ``dpharness sweep opendp``: the adapter's releases that are not plain numbers
(dicts, None, bit vectors, Queryables), partition metrics, sized domains, parameters as text, the
API enumerator and the shipped catalogue (bench/sweep/opendp.yaml), every audited entry of which
builds and releases."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

dp = pytest.importorskip("opendp.prelude")

from dpharness import verifiers  # noqa: E402
from dpharness.adapters import TargetError, _resolve, from_target, opendp  # noqa: E402
from dpharness.adapters.common import require  # noqa: E402
from dpharness.adapters.library import Target  # noqa: E402
from dpharness.adapters.opendp_ import LIBRARY  # noqa: E402
from dpharness.adapters.opendp_releases import shape_releases, to_bitvector, to_map  # noqa: E402
from dpharness.adapters.opendp_specs import parse_spec, resolve_params  # noqa: E402
from dpharness.bench.sweep import opendp_chains as chains  # noqa: E402
from dpharness.bench.sweep.catalogue import load, shipped  # noqa: E402

dp.enable_features("contrib", "honest-but-curious")
# OpenDP 0.16 deprecates names it still exports (make_sequential_composition, report_noisy_max_gumbel):
# the catalogue covers them because they are public; the warning is the library's, not ours
pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated:DeprecationWarning")
RNG = np.random.default_rng(20240601)


def _map_domain(value_type: type = float) -> object:
    vd = dp.atom_domain(T=float, nan=False) if value_type is float else dp.atom_domain(T=int)
    return dp.map_domain(dp.atom_domain(T=str), vd)


# ---- releases


def test_dict_releases_are_one_coordinate_per_key_with_nan_for_a_missing_key() -> None:
    # count_by >> threshold releases a dict whose keys depend on the data: before, numpy made an
    # object array of dicts, and the events crashed comparing dicts
    mech = opendp(chains.count_by_then_laplace_threshold(scale=0.5, threshold=3), keys=["0.0", "1.0"], float_events=False)
    y1 = mech.sample(np.array([0.0] * 6), 50, RNG)
    y2 = mech.sample(np.array([1.0] * 6), 50, RNG)
    assert y1.shape == y2.shape == (50, 2) and y1.dtype.kind == "f"
    assert np.all(np.isnan(y1[:, 1])) and np.all(np.isnan(y2[:, 0]))  # "1.0" absent from the first, "0.0" from the second
    assert not np.any(np.isnan(y1[:, 0]))


def test_keys_default_to_the_first_partitions_for_partitioned_input() -> None:
    meas = dp.m.make_laplace_threshold(_map_domain(), dp.l01inf_distance(dp.absolute_distance(T=float)), scale=1.0,
                                       threshold=3.0)
    mech = opendp(meas)
    assert mech.sample(np.array([0.0, 50.0]), 20, RNG).shape == (20, 10)  # k0..k9, whatever one release held


def test_none_releases_are_nan() -> None:
    assert np.isnan(shape_releases([None, 1.5])[0]) and shape_releases([None, 1.5]).dtype.kind == "f"
    out = shape_releases([None, [2.0, 3.0]])  # select_private_candidate: None or (score, candidate)
    assert out.shape == (2, 2) and np.all(np.isnan(out[0])) and out[1].tolist() == [2.0, 3.0]
    mech = opendp(chains.select_private_candidate(threshold=100.0))  # almost never passes: None
    y = mech.sample(np.array([0.0, 1.0]), 20, RNG)
    assert y.dtype.kind == "f" and np.isnan(y).any()


def test_bit_vectors_have_an_example_and_come_back_as_bits() -> None:
    meas = dp.m.make_randomized_response_bitvec(dp.bitvector_domain(max_weight=4), dp.discrete_distance(), f=0.5)
    mech = opendp(meas)  # before: "could not infer the output kind from one release on 0"
    assert mech.kind == "finite"
    y = mech.sample(np.array([1, 0, 1, 0]), 30, RNG)
    assert y.shape == (30, 8) and set(np.unique(y)) <= {0, 1}
    assert to_bitvector([1, 0, 0, 0, 0, 0, 0, 1]).tolist() == [129]


def test_queryables_are_driven_by_their_script() -> None:
    mech = opendp(chains.sequential_composition(scales=(1.0, 2.0)))
    y = mech.sample(np.array([0.0, 1.0, 1.0]), 20, RNG)
    assert y.shape == (20, 2) and y.dtype.kind == "f"
    assert mech.claim.epsilon == pytest.approx(1.5, rel=1e-2)  # d_mids: 1/1 + 1/2, a little above
    bare = dp.c.make_sequential_composition(dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0), nan=False)),
                                            dp.symmetric_distance(), dp.max_divergence(), d_in=1, d_mids=[1.1])
    with pytest.raises(ValueError, match="queries="):
        opendp(bare)


# ---- claims


def test_partition_metrics_map_to_one_differ_at_one_partition() -> None:
    meas = dp.m.make_laplace_threshold(_map_domain(), dp.l01inf_distance(dp.absolute_distance(T=float)), scale=1.0,
                                       threshold=3.0)
    mech = opendp(meas)  # before: "input metric L01InfDistance(...) is not supported"
    eps, delta = meas.map((1, 1.0, 1.0))
    assert mech.claim.input_metric == "l1_distance" and mech.claim.neighbours == "one_differ"
    assert mech.claim.epsilon == pytest.approx(eps) and mech.claim.delta == pytest.approx(delta)
    assert to_map([0.0, 2.0, 0.0, 1.0], "HashMap<String, f64>") == {"k1": 2.0, "k3": 1.0}
    assert to_map([0.0, 2.5], "HashMap<String, i32>") == {"k1": 2}


def test_integer_partitions_are_read_at_integer_distances() -> None:
    mech = opendp(chains.alp_queryable())
    assert mech.claim.epsilon > 0 and mech.sample(np.array([0.0, 3.0, 1.0]), 5, RNG).shape == (5, 3)


def test_approximate_zcdp_adds_the_conversion_delta() -> None:
    meas = dp.m.make_gaussian_threshold(_map_domain(), dp.l02inf_distance(dp.absolute_distance(T=float)), scale=1.0,
                                        threshold=3.0)
    mech = opendp(meas)
    _, d0 = meas.map((1, 1.0, 1.0))
    assert mech.claim.delta == pytest.approx(d0 + 1e-6)


def test_sized_domains_use_replace_one_at_distance_two() -> None:
    meas = chains.population_amplification(size=5, population_size=50)
    mech = opendp(meas)  # before: add_remove at d_in=1, where the map is ~1e-15
    assert mech.claim.neighbours == "replace_one" and mech.claim.d_in == 2
    assert mech.claim.epsilon == pytest.approx(meas.map(2))
    assert len(verifiers.pairs_for(mech)) > 0


# ---- parameters as text


def test_params_as_opendp_specs() -> None:
    dom = parse_spec("vector_domain(atom_domain(T=float, nan=False))")
    assert "VectorDomain" in str(dom)
    mech = from_target("opendp.measurements:make_laplace", {"input_domain": "atom_domain(T=float, nan=False)",
                                                             "input_metric": "absolute_distance(T=float)", "scale": 1.0})
    assert mech.claim.epsilon == pytest.approx(1.0)
    assert resolve_params({"d_out": [1.0, 1e-6]})["d_out"] == (1.0, 1e-6)


@pytest.mark.parametrize("value", ["__import__('os')", "vector_domain(open('x'))", "vector_domain"])
def test_bad_specs_name_the_param(value: str) -> None:
    with pytest.raises(TargetError) as info:
        from_target("opendp.measurements:make_laplace", {"input_domain": value,
                                                         "input_metric": "absolute_distance(T=float)", "scale": 1.0})
    assert info.value.field == "params.input_domain"


# ---- the API and the catalogue


CATALOGUE = load(shipped()["opendp"])


def test_catalogue_and_api_agree() -> None:
    names = LIBRARY.api()
    assert names == sorted(names) and "opendp.measurements:make_laplace" in names
    assert "opendp.measurements:make_proof_link" not in names and "opendp.combinators:make_chain_tt" not in names
    assert set(names) == CATALOGUE.covers()


@pytest.mark.parametrize("entry", [e for e in CATALOGUE.entries if not e.skip], ids=lambda e: e.id)
def test_every_audited_entry_builds_and_releases(entry) -> None:
    module = require(entry.build.split(":")[0], "opendp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # OpenDP warns per call (e.g. deprecations of report_noisy_max_gumbel)
        mech = LIBRARY.from_target(Target(entry.build, _resolve(entry.build, module), dict(entry.params),
                                          dict(entry.adapter)))
        assert mech.claim.neighbours == entry.relation
        pair = verifiers.pairs_for(mech)[0]
        y = np.asarray(mech.sample(pair.d1, 2, RNG))
    assert y.shape[0] == 2 and math.isfinite(mech.claim.epsilon)


def test_a_transformation_is_not_taken_for_a_measurement():
    """`make_sum(...)` without `>> then_laplace` (OpenDP's commonest slip) has a stability map,
    not a privacy claim: refused, saying what to chain, directly or from a factory."""
    import opendp.prelude as dp

    from dpharness import adapters

    dp.enable_features("contrib")
    t = dp.t.make_sum(dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0))), dp.symmetric_distance())
    with pytest.raises(TypeError, match="Transformation.*then_laplace"):
        adapters.opendp(t)
    with pytest.raises(TypeError, match="Transformation"):
        adapters.adapt(t)
    with pytest.raises(TypeError, match="Transformation"):
        adapters.opendp(lambda: t).sample([0.5], 1, 0)
    assert adapters.opendp(t >> dp.m.then_laplace(1.0)).claim.epsilon == pytest.approx(1.0)
