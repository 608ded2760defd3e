"""python-dp for ``dpharness sweep``: the catalogue (bench/sweep/pydp.yaml) against the installed
release's ε-claiming API (``pydp_.api()``), the adapters of what is not an aggregation
(numerical mechanisms, partition selection, QuantileTree, pydp.ml), the routing of
``adapters.adapt`` and the refusals of records python-dp would mangle."""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest

pytest.importorskip("pydp.algorithms.laplacian")

from dpharness import adapters as A
from dpharness import verifiers as V
from dpharness.adapters import pydp_
from dpharness.bench.sweep.catalogue import load, shipped

CATALOGUE = load(shipped()["pydp"])
AUDITED = [e for e in CATALOGUE.entries if not e.skip]


def _example(mech):
    """A dataset the adapted mechanism takes: one value for the value relation, else records."""
    if mech.claim.neighbours == "value":
        lo = mech.attributes.get("lower", 0.0)
        return int(lo) if mech.kind == "finite" else float(lo)
    return [0.2, 0.5, 0.9]


def test_the_catalogue_and_the_installed_api_agree():
    names = pydp_.api()
    assert names == sorted(set(names)) and len(names) >= 20
    assert set(names) == CATALOGUE.covers(), set(names) ^ CATALOGUE.covers()
    assert A.pydp_.LIBRARY.api is pydp_.api
    # the rule keeps the compiled classes and factories (no signature: read from the docstring),
    # leaves out abstract bases and what takes no epsilon
    for n in ("pydp.algorithms.numerical_mechanisms:LaplaceMechanism", "pydp.algorithms.quantile_tree:QuantileTree",
              "pydp.algorithms.partition_selection:create_laplace_partition_strategy",
              "pydp.ml.mechanisms.geometric:Geometric"):
        assert n in names
    assert not any(n.endswith((":NumericalMechanism", ":DPMechanism", ":GeometricDistribution")) for n in names)
    assert all(e.skip for e in CATALOGUE.entries if e.api.startswith(("pydp.distributions", "pydp.ml.util")))


def _build(entry):
    """What the sweep audits: the library's own name through ``from_target``, or the entry's
    ``build`` factory (a function of the project) called with the params, then adapted."""
    if entry.build == entry.api:
        return A.from_target(entry.api, entry.params, entry.adapter)
    module, _, attr = entry.build.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    return A.adapt(factory(**entry.params), **entry.adapter)


@pytest.mark.parametrize("entry", AUDITED, ids=[e.id for e in AUDITED])
def test_every_audited_entry_builds_and_releases_quickly(entry):
    mech = _build(entry)
    assert mech.claim.neighbours == entry.relation or entry.relation == "add_remove"
    assert mech.attributes["seeded"] is False
    t = time.perf_counter()
    out = mech.sample(_example(mech), 20, np.random.default_rng(0))
    assert len(out) == 20 and time.perf_counter() - t < 1.0


def test_adapt_routes_every_kind_of_python_dp_object():
    from pydp.algorithms import numerical_mechanisms as nm
    from pydp.algorithms import partition_selection as ps
    from pydp.algorithms.quantile_tree import QuantileTree
    from pydp.ml.mechanisms.laplace import LaplaceBoundedDomain

    lap = A.adapt(nm.LaplaceMechanism(0.5, 2.0))
    assert (lap.claim.epsilon, lap.claim.sensitivity, lap.claim.neighbours, lap.kind) == (0.5, 2.0, "value", "real")
    g = A.adapt(nm.GaussianMechanism(1.0, 1e-5, 3.0))
    assert (g.claim.delta, g.claim.sensitivity) == (1e-5, 3.0)
    s = A.adapt(ps.create_laplace_partition_strategy(1.0, 1e-5, 1))
    assert (s.claim.delta, s.kind, s.attributes["lower"]) == (1e-5, "finite", 0.0) and s.attributes["upper"] > 5
    t = A.adapt(QuantileTree, lower=0.0, upper=1.0, tree_height=2, branching_factor=4, epsilon=1.0,
                quantiles=[0.5], max_contributions_per_partition=2)
    assert t.claim.at(2).epsilon == 1.0 and t.sample([0.1, 0.9], 3, np.random.default_rng(0)).shape == (3, 1)
    m = A.adapt(LaplaceBoundedDomain().set_epsilon(1.0).set_sensitivity(1.0).set_bounds(0.0, 4.0))
    assert (m.name, m.attributes["upper"]) == ("python-dp ml LaplaceBoundedDomain", 4.0)
    # before: every pydp object went to the laplacian adapter ("takes a class of pydp.algorithms.laplacian")
    from pydp.ml.naive_bayes import GaussianNB

    with pytest.raises(TypeError, match="numpy.in1d"):
        A.adapt(GaussianNB(epsilon=1.0))
    with pytest.raises(TypeError, match="releases nothing"):
        A.adapt(require_distribution())
    with pytest.raises(TypeError, match="pass the class QuantileTree"):
        A.adapt(QuantileTree(0.0, 1.0, 2, 4))
    with pytest.raises(TypeError, match="pass the factory"):
        A.adapt(ps.create_partition_strategy("laplace", 1.0, 1e-5, 1, pre_threshold=3))


def require_distribution():
    from pydp.distributions import LaplaceDistribution

    return LaplaceDistribution(epsilon=1.0, sensitivity=1.0)


def test_int_dtype_refuses_float_and_nan_records_naming_them():
    # python-dp's default dtype "int" truncated 0.7 to 0: [0.7, 0.7, 0.7] vs [0.7, 0.7] audited as zeros
    s = A.pydp("BoundedSum", epsilon=1.0, lower_bound=0, upper_bound=1)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"record 1 is 0\.7.*truncate to 0.*dtype='float'"):
        s.sample([1, 0.7, 0.7], 2, rng)
    with pytest.raises(ValueError, match=r"record 2 is nan"):  # was -2**63 and a raw pybind11 overload error
        s.sample([0, 1, np.nan], 2, rng)
    assert s.sample([0, 1, 1.0], 2, rng).shape == (2,)  # integral floats are integers
    # python-dp draws from the OS (the seed fixes only the verifier's choices), and this sum is tight
    # (true loss 1 = the claim): alpha 1e-6 bounds the chance of a false flag by 1e-6 on any run
    assert not V.audit(s, [0, 1, 1], [0, 1], samples=2000, rng=1, alpha=1e-6, float_events=False).violated


def test_python_dp_refusals_at_build_time_say_what_is_wrong():
    with pytest.raises(ValueError, match=r"python-dp refuses BoundedMean.*Lower bound cannot be greater"):
        A.pydp("BoundedMean", epsilon=1.0, lower_bound=1.0, upper_bound=0.0, dtype="float")
    with pytest.raises(ValueError, match=r"refuses LaplaceMechanism.*Epsilon must be finite and positive"):
        A.pydp("LaplaceMechanism", epsilon=-1.0, sensitivity=1.0)
    with pytest.raises(ValueError, match=r"Delta must be in the exclusive interval"):
        A.pydp_quantile_tree(lower=0.0, upper=1.0, epsilon=1.0, delta=0.0, noise_type="gaussian")
    with pytest.raises(A.TargetError, match="Epsilon must be finite") as info:
        A.from_target("pydp.algorithms.partition_selection:create_laplace_partition_strategy",
                      {"epsilon": 0.0, "delta": 1e-5, "max_partitions_contributed": 1})
    assert info.value.field == "params"
    # pydp.ml's Laplace cannot release at all in 1.1.5: refused when adapting, not mid-audit
    with pytest.raises(ValueError, match=r"cannot release.*sample"):
        A.pydp("Laplace", epsilon=1.0, sensitivity=1.0)
    with pytest.raises(ValueError, match=r"cannot release.*need probability="):
        A.pydp("Geometric", epsilon=1.0, sensitivity=1)


def test_partition_selection_is_held_to_its_claim_and_a_wrong_claim_is_flagged():
    s = A.from_target("pydp.algorithms.partition_selection:create_laplace_partition_strategy",
                      {"epsilon": 1.0, "delta": 1e-5, "max_partitions_contributed": 1})
    t = int(s.attributes["upper"])
    # python-dp cannot be seeded: alpha 1e-6 is the chance of a false flag of this correct strategy
    assert not V.audit(s, t, t - 1, samples=20_000, rng=1, alpha=1e-6, float_events=False).violated
    # the same releases held to a tenth of the epsilon: the keep probability moves by e^1 per user
    wrong = V.wrap(s.fn, epsilon=0.1, delta=1e-5, neighbours="value", kind="finite")
    assert V.audit(wrong, t - 3, t - 4, samples=20_000, rng=1, float_events=False).violated


def test_pydp_ml_geometric_is_one_sided_and_flagged():
    # python-dp 1.1.5's pydp.ml Geometric adds GeometricDistribution.sample(), which is >= 0:
    # an output below the input never happens (a support violation, epsilon infinite)
    g = A.from_target("pydp.ml.mechanisms.geometric:Geometric", {"epsilon": 1.0, "sensitivity": 1, "probability": 0.5})
    v = V.audit(g, 0, -1, samples=3000, rng=2, float_events=False)
    assert v.violated and v.support_violation
