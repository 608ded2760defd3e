"""diffprivlib swept in one command: the shipped catalogue (bench/sweep/diffprivlib.yaml) against
the installed release's API, every entry built and released once on a generated pair, models and
tools searched with no pair given, misspelt tool arguments refused, and the calibration bugs of
the nan-aware tools found by the generators' missing-value patterns (docs/adapters.md).

Statistical cases use fixed seeds. A "flagged" case relies on a true loss far above the claim
(nanmean: an all-missing dataset releases NaN, a sure event of probability 0 under its neighbour;
the certified bound then only needs a few hundred draws per side); a "not flagged" case relies on
the search's certified lower bound holding at alpha = 0.05 (a false alarm has probability <= 0.05
by construction, and the seed is fixed).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
try:  # diffprivlib 0.6.6 does not import with scikit-learn 1.9
    import diffprivlib.tools  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    pytest.skip(f"diffprivlib does not import: {exc}", allow_module_level=True)

from dpharness import adapters as A
from dpharness import verifiers as V
from dpharness.adapters.diffprivlib_ import LIBRARY
from dpharness.bench.sweep.catalogue import load, shipped

CATALOGUE = load(shipped()["diffprivlib"])
AUDITED = [e for e in CATALOGUE.entries if not e.skip]
NAN = float("nan")


def _has(pairs: list, d1: list, d2: list) -> bool:
    """Whether (d1, d2) or its swap is among the pairs (NaN-equal, as records)."""
    def same(a: object, b: list) -> bool:
        a = np.asarray(a, dtype=np.float64)
        return a.shape == (len(b),) and bool(np.array_equal(a, np.asarray(b, dtype=np.float64), equal_nan=True))
    return any((same(p.d1, d1) and same(p.d2, d2)) or (same(p.d1, d2) and same(p.d2, d1)) for p in pairs)


# -- the catalogue ------------------------------------------------------------------------------

def test_catalogue_and_api_agree():
    assert set(LIBRARY.api()) == CATALOGUE.covers()
    assert LIBRARY.api() == sorted(LIBRARY.api())
    assert "diffprivlib.mechanisms:DPMechanism" not in LIBRARY.api()  # abstract: not a releasable name


@pytest.mark.parametrize("entry", AUDITED, ids=[e.id for e in AUDITED])
def test_catalogue_entry_builds_and_releases(entry):
    mech = A.from_target(entry.api, entry.params, entry.adapter)
    assert mech.claim.neighbours == entry.relation
    pairs = V.pairs_for(mech)
    out = mech.sample(pairs[0].d1, 1, np.random.default_rng(0))
    assert len(out) == 1


# -- misspelt tool arguments ----------------------------------------------------------------------

def test_tool_refuses_a_keyword_it_does_not_name():
    with pytest.raises(A.TargetError, match="did you mean 'bounds'") as err:
        A.from_target("diffprivlib.tools:mean", {"epsilon": 1.0, "bound": [0, 1]})
    assert err.value.field == "params.bound"
    with pytest.raises(ValueError, match="'bound' is not an argument of diffprivlib.tools.mean"):
        A.diffprivlib_tool("mean", epsilon=1.0, bound=(0, 1))
    with pytest.raises(ValueError, match="set by the adapter"):
        A.diffprivlib_tool("mean", epsilon=1.0, bounds=(0, 1), random_state=3)


# -- empty datasets are rejected, not failures ------------------------------------------------------

def test_empty_dataset_a_tool_raises_on_is_rejected():
    mean = A.diffprivlib_tool("mean", epsilon=1.0, bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="rejects an empty dataset"):  # diffprivlib divides by n = 0
        mean.sample(np.zeros(0), 1, np.random.default_rng(0))
    hdd = A.diffprivlib_tool("histogramdd", epsilon=1.0, bins=2, range=[(0.0, 1.0), (0.0, 1.0)])
    pairs = V.pairs_for(hdd)
    assert not pairs.skipped and any(np.asarray(p.d1).shape == (0, 2) for p in pairs)


# -- generators: missing values where the domain admits them ----------------------------------------

def test_missing_value_patterns_only_where_admitted():
    nanmean = A.diffprivlib_tool("nanmean", epsilon=1.0, bounds=(0.0, 1.0))
    mean = A.diffprivlib_tool("mean", epsilon=1.0, bounds=(0.0, 1.0))
    assert nanmean.missing_values and not getattr(mean, "missing_values", False)
    np_ = V.pairs_for(nanmean)
    assert _has(np_, [0, NAN, NAN, NAN], [1, NAN, NAN, NAN]) and _has(np_, [NAN, NAN, NAN], [1, NAN, NAN])
    assert not any(np.isnan(np.asarray(p.d1, dtype=float)).any() or np.isnan(np.asarray(p.d2, dtype=float)).any()
                   for p in V.pairs_for(mean))


def test_nanmean_calibration_bug_on_a_mostly_missing_pair():
    # sensitivity (upper - lower) / 4 counts the three NaNs; the mean of the one value moves by
    # upper - lower: the true loss is 4 * epsilon (at the truncation point masses, e^4 apart)
    nanmean = A.diffprivlib_tool("nanmean", epsilon=1.0, bounds=(0.0, 1.0), float_events=False)
    # at the upper point mass P = 1/2 vs e^-4 / 2 = 0.009: ~450 vs ~8 of 900 draws, a certified
    # log-ratio near 3 at alpha = 0.05, so > 1.5 holds with a wide margin
    v = V.audit(nanmean, np.array([0.0, NAN, NAN, NAN]), np.array([1.0, NAN, NAN, NAN]), samples=1000, rng=2)
    assert v.violated and v.epsilon_lower > 1.5


def test_search_with_no_pair_flags_nanmean():
    # an all-missing dataset releases NaN, its neighbour with one value never does: a sure event
    nanmean = A.diffprivlib_tool("nanmean", epsilon=1.0, bounds=(0.0, 1.0), float_events=False)
    assert V.search(nanmean, budget=2000, rng=1).violated


def test_search_with_no_pair_does_not_flag_mean():
    mean = A.diffprivlib_tool("mean", epsilon=1.0, bounds=(0.0, 1.0), float_events=False)
    assert not V.search(mean, budget=2000, rng=1).violated


@pytest.mark.parametrize("api,params", [("diffprivlib.mechanisms:Snapping",
                                         {"epsilon": 1.0, "sensitivity": 1.0, "lower": 0.0, "upper": 2.0}),
                                        ("diffprivlib.mechanisms:Geometric", {"epsilon": 1.0, "sensitivity": 1})])
def test_correct_mechanisms_not_flagged(api, params):
    mech = A.from_target(api, params, {"float_events": False})
    assert not V.search(mech, budget=4000, rng=1).violated


# -- models: search with no pair -----------------------------------------------------------------

def test_models_hand_their_rows_to_the_generators():
    import diffprivlib.models as DM

    nb = A.diffprivlib_model(DM.GaussianNB(epsilon=1.0, bounds=([0.0, 0.0], [1.0, 1.0])))
    assert nb.width == 3 and nb.classes == (0.0, 1.0) and list(nb.lower) == [0.0, 0.0, 0.0]
    pairs = V.pairs_for(nb)
    labels = {float(v) for p in pairs for d in (p.d1, p.d2) for v in np.asarray(d)[:, -1]}
    assert labels <= {0.0, 1.0}  # the label column takes the classes only
    tree = A.diffprivlib_model(DM.DecisionTreeClassifier(epsilon=1.0, bounds=([0.0, 0.0], [1.0, 1.0]), classes=[0, 1]))
    out = tree.sample(pairs[0].d1, 2, np.random.default_rng(0))
    assert out.shape == (2, 7 * 2)  # class probabilities on the 7-point public grid (4 corners, 3 on the diagonal)


def test_model_search_with_no_pair_runs():
    import diffprivlib.models as DM

    sc = A.diffprivlib_model(DM.StandardScaler(epsilon=1.0, bounds=([0.0, 0.0], [1.0, 1.0])), float_events=False)
    v = V.search(sc, budget=500, rng=1)
    assert v.pairs_tried >= 10


def test_gaussiannb_releases_aligned_on_the_classes():
    import diffprivlib.models as DM

    nb = A.diffprivlib_model(DM.GaussianNB(epsilon=1.0, bounds=([0.0], [1.0])))
    one_class = nb.sample(np.array([[0.5, 1.0], [0.2, 1.0]]), 1, np.random.default_rng(0))
    both = nb.sample(np.array([[0.5, 0.0], [0.2, 1.0]]), 1, np.random.default_rng(0))
    assert one_class.shape == both.shape == (1, 2 * 4)  # per class: present, theta, var, count
    assert one_class[0, 0] == 0.0 and both[0, 0] == 1.0  # which classes the model knows is released


# -- mechanisms with matrix and category inputs ----------------------------------------------------

def test_bingham_categorical_audited_vector_refused():
    import diffprivlib.mechanisms as M

    b = A.diffprivlib_mechanism(M.Bingham(epsilon=1.0, sensitivity=1.0))
    out = b.sample(0.5, 3, np.random.default_rng(0))
    assert out.shape == (3, 2) and np.allclose(np.linalg.norm(out, axis=1), 1.0)
    cat = A.diffprivlib_mechanism(M.ExponentialHierarchical(epsilon=1.0, hierarchy=[["a", "b"], ["c", "d"]]))
    assert cat.claim.neighbours == "local" and set(cat.sample("a", 50, np.random.default_rng(0))) <= set("abcd")
    with pytest.raises(TypeError, match="objective perturbation"):
        A.diffprivlib_mechanism(M.Vector(epsilon=1.0, function_sensitivity=1.0, dimension=2))


def test_tool_arguments_refused_by_name():
    """epsilon='one' names epsilon; reversed bounds name params.bounds (not the pair)."""
    from dpharness import adapters

    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        adapters.diffprivlib_tool("mean", epsilon="one", bounds=(0, 1))
    with pytest.raises(adapters.TargetError) as e:
        adapters.from_target("diffprivlib.tools:mean", {"epsilon": 1, "bounds": [1, 0]})
    assert e.value.field == "params.bounds" and "lower < upper" in str(e.value)
