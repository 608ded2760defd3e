"""The verifier's modules one by one (exact_canonical / exact_compare / exact_grids, the zoo's
modules, statistical, search, verdict, wrap, relations), plus a check that every module of
mechanisms/ and verifiers/ is imported by at least one test."""

from __future__ import annotations

import importlib
import math
import re
from pathlib import Path

import numpy as np
import pytest

from dpharness.mechanisms.base import PrivacyClaim
from dpharness.mechanisms.laws import GridRunsLaw, LocationScaleLaw, PiecewiseDensity
from dpharness.mechanisms.selection_laws import laplace_rnm_log_prob, pf_log_prob
from dpharness.verifiers import relations, verdict
from dpharness.verifiers.losses import canonical as exact_canonical
from dpharness.verifiers.losses import compare as exact_compare
from dpharness.verifiers.losses import grids as exact_grids
from dpharness.verifiers.statistical import batch as statistical
from dpharness.verifiers.controls import zoo
from dpharness.verifiers.controls.zoo import base as zoo_base
from dpharness.verifiers.controls.zoo import finite as zoo_finite
from dpharness.verifiers.controls.zoo import medians as zoo_medians
from dpharness.verifiers.controls.zoo import real as zoo_real

# The package re-exports the functions search() and wrap() under the modules' names, so the
# modules themselves are reached through importlib.
search_mod = importlib.import_module("dpharness.verifiers.statistical.search")
wrap_mod = importlib.import_module("dpharness.verifiers.wrap")

ROOT = Path(__file__).resolve().parents[2]


# -- exact mode, module by module ------------------------------------------------------------

def test_canonical_forms_of_each_law():
    pw = PiecewiseDensity.from_log_density([0.0, 1.0, 1.0, 3.0], [0.0, 0.0, -1.0], [0.5, 0.0, -0.2])
    c = exact_canonical.canonical(pw)
    assert c.atom_values.size == 0 and len(c.pieces) == 2  # the zero-width piece is dropped
    ls = LocationScaleLaw(0.0, 1.0, "laplace", -2.0, 2.0)
    c = exact_canonical.canonical(ls)
    np.testing.assert_array_equal(c.atom_values, [-2.0, 2.0])
    np.testing.assert_allclose(np.exp(c.atom_logp), [0.5 * math.exp(-2)] * 2, rtol=1e-14)
    g = GridRunsLaw.from_log_weights(0.0, 1.0, [0, 2], [2, 3], [0.0, -1.0])
    assert exact_canonical.canonical(g).grid is g
    with pytest.raises(ValueError, match="piecewise.*grid_runs.*location_scale"):
        exact_canonical.canonical(object())


def test_laplace_pair_loss_is_shift_over_scale():
    # Two Laplace laws of scale b shifted by d: sup |log ratio| = d / b exactly.
    a = exact_canonical.canonical(LocationScaleLaw(0.0, 2.0, "laplace"))
    b = exact_canonical.canonical(LocationScaleLaw(0.7, 2.0, "laplace"))
    acc = exact_compare.compare(a, b, 0.35)
    assert max(acc.eps) == pytest.approx(0.35, rel=1e-12)
    assert max(acc.delta) == pytest.approx(0.0, abs=1e-12)  # epsilon = d/b: no delta left


def test_grid_comparison_run_by_run_equals_point_by_point():
    rng = np.random.default_rng(11)
    g1 = GridRunsLaw.from_log_weights(0.0, 0.5, [0, 3, 4, 10], [3, 1, 6, 2], rng.normal(0, 1, 4))
    g2 = GridRunsLaw.from_log_weights(1.0, 0.5, [0, 5, 6], [5, 1, 7], rng.normal(0, 1, 3))  # offset 2 steps
    assert exact_grids.same_grid(g1, g2) == 2
    assert exact_grids.same_grid(g1, GridRunsLaw.from_log_weights(0.25, 0.5, [0], [1], [0.0])) is None
    runs = exact_compare.compare(exact_canonical.canonical(g1), exact_canonical.canonical(g2), 0.3)
    pts = exact_compare.compare(exact_canonical._grid_atoms(g1), exact_canonical._grid_atoms(g2), 0.3)
    assert runs.eps == pytest.approx(pts.eps, rel=1e-12)
    assert runs.support == pts.support
    assert runs.delta == pytest.approx(pts.delta, rel=1e-12, abs=1e-15)


# -- the zoo's modules -----------------------------------------------------------------------

@pytest.mark.parametrize("noise", ["laplace", "exponential"])
@pytest.mark.parametrize("q", [[0.0, 1.0, 3.0], [0.0, 0.0, 2.0, -1.0], [5.0, -3.0, 0.5, 0.5, 4.0]])
def test_zoo_rnm_law_matches_the_mechanisms_law(noise, q):
    """Two independent implementations of report noisy max's exact law: the zoo's adaptive scipy
    quadrature and the certified Gauss-Legendre laws of mechanisms.selection_laws (relative error
    1e-12 and 1e-13 respectively, so they must agree to ~1e-11)."""
    q = np.asarray(q)
    b = 2.0
    zoo_lp = zoo_finite.rnm_index_log_prob(q, noise, b)
    z = (q - q.max()) / b
    mech_lp = laplace_rnm_log_prob(z) if noise == "laplace" else pf_log_prob(z)
    np.testing.assert_allclose(zoo_lp, mech_lp, rtol=0, atol=1e-10)


def test_zoo_entries_live_in_the_module_of_their_output_kind():
    where = {e.name: e.cls.__module__.rsplit(".", 1)[1] for e in zoo.entries()}
    assert {n for n, m in where.items() if m == "finite"} == {
        "rnm_laplace", "rnm_monotone_scale", "rnm_exponential", "rnm_shared_noise", "permute_and_flip", "em",
        "em_missing_half"}
    assert {n for n, m in where.items() if m == "real"} == {
        "laplace", "laplace_inverted_scale", "rnm_laplace_value", "rnm_exponential_value"}
    assert {n for n, m in where.items() if m == "medians"} == {
        "duff_median", "ss_median", "ss_median_local", "ss_median_big_beta"}
    assert {n for n, m in where.items() if m == "vectors"} == {
        "noisy_histogram", "noisy_histogram_half_noise", "user_count", "user_count_one_record", "topk_gumbel",
        "topk_top1_scale"}
    assert {n for n, m in where.items() if m == "selection"} == {
        "joint_exp", "joint_exp_single_sensitivity", "topk_peeling_em", "topk_peeling_reused_uniform", "topk_laplace",
        "topk_laplace_top1_scale"}
    assert {n for n, m in where.items() if m in ("vectors", "selection")} == set(zoo.available(structured=True))
    for e in zoo.entries():
        if where[e.name] not in ("vectors", "selection"):
            assert e.cls.kind == ("finite" if where[e.name] == "finite" else "real"), e.name
    assert zoo.ZooLaplace is zoo_real.ZooLaplace and zoo.ZooSSMedian is zoo_medians.ZooSSMedian


def test_zoo_witness_loss():
    w = zoo_base.ZooWitness(0.0, 1.0, None, "d1>d2", 0.5, 0.25)
    assert (w.p_num, w.p_den, w.loss) == (0.5, 0.25, pytest.approx(math.log(2)))
    w2 = zoo_base.ZooWitness(0.0, 1.0, None, "d2>d1", 0.0, 0.3)
    assert (w2.p_num, w2.p_den, w2.loss) == (0.3, 0.0, math.inf)


# -- statistical, search, verdict, wrap, neighbours ------------------------------------------

def test_selection_score_is_monotone_in_the_counts():
    s = statistical.selection_score(np.arange(0, 200, 10), 5, 200, 1000, 0.05)
    assert np.all(np.diff(s[np.isfinite(s)]) > 0)
    t = statistical.selection_score(150, np.arange(0, 100, 10), 200, 1000, 0.05)
    assert np.all(np.diff(t) < 0)
    assert statistical.DIRECTIONS == ("d1>d2", "d2>d1") and 0 < search_mod.DEFAULT_SEARCH_SELECTION < 1
    with pytest.raises(ValueError, match="selection"):
        statistical.check_selection(0.0)


def test_draw_refuses_non_numeric_real_outputs():
    class Labels:
        claim = PrivacyClaim(1.0, neighbours="value")

        def sample(self, data, size=None, rng=None):
            return np.array(["a"] * size)

    with pytest.raises(TypeError, match="kind='finite'"):
        statistical.draw(Labels(), 0.0, 5, np.random.default_rng(0))
    Labels.kind = "finite"  # declared finite: labels are fine
    assert statistical.draw(Labels(), 0.0, 5, np.random.default_rng(0)).tolist() == ["a"] * 5


def test_verdict_row_and_format_data():
    assert verdict.format_data(np.arange(20.0), limit=3) == "[0, 1, 2, ... (20 records)]"
    assert verdict.format_data(0.5) == "0.5"
    w = wrap_mod.wrap(lambda d, n, r: float(d) + r.laplace(size=n), epsilon=1.0, neighbours="value", name="lap")
    v = statistical.audit(w, 0.0, 1.0, samples=2000, rng=3)
    row = v.row()
    assert row["epsilon_claimed"] == 1.0 and row["witness_seed"] == "3" and row["cert_samples"] > 0
    assert isinstance(w, wrap_mod.WrappedMechanism) and w.params()["name"] == "lap"


def test_neighbour_families_generate_legal_pairs():
    assert relations.FAMILIES[:8] == ("values", "bits", "scores", "records", "labels", "histograms", "units", "local")
    m = zoo.make("duff_median")
    pairs = relations.pairs_for(m, "records")
    assert pairs and all(relations.are_neighbours(p.d1, p.d2, m.claim) for p in pairs)


# -- every module is exercised by a test -----------------------------------------------------

def _modules(pkg: str) -> list[str]:
    return sorted(p.stem for p in (ROOT / pkg).glob("*.py") if p.stem != "__init__")


def test_every_module_is_imported_by_some_test():
    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py"))
    missing = []
    for pkg in ("mechanisms", "verifiers"):
        for mod in _modules(pkg):
            dotted = rf"dpharness\.{pkg}\.{mod}\b"
            from_pkg = rf"from dpharness\.{pkg} import [^\n]*\b{mod}\b"
            if not (re.search(dotted, text) or re.search(from_pkg, text)):
                missing.append(f"{pkg}/{mod}.py")
    assert not missing, f"modules no test imports: {missing}"
