"""StatDP's suite (dpharness.verifiers.controls.suites.statdp): every entry builds, its pairs are StatDP's and
legal, its outputs have the documented shape, dtype and encoding, sampling is reproducible, and
each sampler matches its exact law.

Statistical tests (marked ``statistical``) compare a fixed-seed sample with an exact law:
chi-square for finite outputs (labels / indices; exact cell probabilities from the mechanisms'
certified RNM laws or from one-dimensional quadrature over the threshold noise), Kolmogorov-Smirnov
for real outputs (exact CDFs). There are 11 such tests; each passes when p > ALPHA = 1e-4, a
Bonferroni split of a family-wise false-failure rate of about 1e-3 (11 x 1e-4) if the seeds were
random. Power, checked by hand with 20,000 draws: a threshold or query noise scale off by a
factor 1.2 gives p between 7e-5 (SVT's query noise, the weakest) and 1e-44, a noisy-max scale off
by 1.2 gives p < 5e-6; the histogram test includes one such power check.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpharness.mechanisms.selection_laws import laplace_rnm_log_prob, pf_log_prob
from dpharness.verifiers.controls.suites import statdp as suite_statdp
from dpharness.verifiers.controls import suites
from dpharness.verifiers.relations import check_neighbours
from dpharness.verifiers.controls.suites.base import SuiteEntry, entries

NAMES = ["noisy_max_v1a", "noisy_max_v1b", "noisy_max_v2a", "noisy_max_v2b", "histogram", "histogram_eps",
         "SVT", "iSVT1", "iSVT2", "iSVT3", "iSVT4"]
ALPHA = 1e-4
EPS = suite_statdp.DEFAULT_EPSILON
LABELS_WITH_CUTOFF = {"SVT", "iSVT3"}
LABELS_NO_CUTOFF = {"iSVT1", "iSVT2"}


def _entry(name: str) -> SuiteEntry:
    return suites.get(f"statdp/{name}")


# -- registration, claims, true epsilons ------------------------------------------------------

def test_every_entry_builds_in_statdp_order():
    es = entries("statdp")
    assert [e.name for e in es] == NAMES
    for e in es:
        assert isinstance(e, SuiteEntry) and e.suite == "statdp" and e.qualified == f"statdp/{e.name}"
        assert e.mechanism.name == f"statdp/{e.name}"
        assert e.claimed_epsilon == EPS and e.mechanism.claim.sensitivity == 1.0 and e.mechanism.claim.delta == 0
        assert "Ding" in e.source and ("Lyu" in e.source or "Dwork" in e.source)
        assert e.published == {} and "p-value" in e.note
        assert e.mechanism.claim.neighbours == ("one_differ" if "histogram" in e.name else "score_linf")


def test_true_epsilons_and_broken_flags():
    k = max(suite_statdp.NUM_INPUT)
    expected = {"noisy_max_v1a": EPS, "noisy_max_v1b": k * EPS / 2, "noisy_max_v2a": EPS, "noisy_max_v2b": math.inf,
                "histogram": EPS, "histogram_eps": 1 / EPS, "SVT": EPS, "iSVT1": math.inf, "iSVT2": k * EPS / 2,
                "iSVT3": 7 * EPS / 4, "iSVT4": k * EPS / 2}
    for e in entries("statdp"):
        assert e.true_epsilon == pytest.approx(expected[e.name]), e.name
        assert e.broken == (e.name not in {"noisy_max_v1a", "noisy_max_v2a", "histogram", "SVT"}), e.name
    # histogram_eps is only broken below epsilon = 1 (true epsilon 1/epsilon).
    assert not suite_statdp.histogram_eps(1.5).broken and suite_statdp.histogram_eps(0.2).true_epsilon == 5.0
    assert suite_statdp.SVT(N=2).true_epsilon is None and not suite_statdp.SVT(N=2).broken
    assert suite_statdp.iSVT3(N=2).true_epsilon is None and suite_statdp.iSVT3(N=2).broken
    assert suite_statdp.iSVT4(N=2).true_epsilon == k * EPS / 4


def test_bad_parameters_and_data_raise_value_errors():
    with pytest.raises(ValueError, match="epsilon"):
        suite_statdp.noisy_max_v1a(0.0)
    with pytest.raises(ValueError, match="N"):
        suite_statdp.SVT(N=0)
    with pytest.raises(ValueError, match="threshold"):
        suite_statdp.iSVT3(T=float("nan"))
    with pytest.raises(ValueError, match="lengths"):
        suite_statdp.all_differ_pairs((1,))
    m = _entry("SVT").mechanism
    for bad, what in (([[1.0, 2.0]], "1-D"), ([], "non-empty"), ([1.0, np.nan], "finite"), (["a", "b"], "real")):
        with pytest.raises(ValueError, match=what):
            m.sample(bad, size=3, rng=0)


# -- input pairs ------------------------------------------------------------------------------

def _one_differ_by_definition(d1: np.ndarray, d2: np.ndarray) -> bool:
    moved = np.flatnonzero(d1 != d2)
    return d1.shape == d2.shape and moved.size == 1 and abs(d1[moved[0]] - d2[moved[0]]) <= 1.0


@pytest.mark.parametrize("name", NAMES)
def test_pairs_are_statdps_and_legal(name):
    e = _entry(name)
    one = "histogram" in name
    assert len(e.pairs) == (2 if one else 8) * len(suite_statdp.NUM_INPUT)
    for d1, d2 in e.pairs:
        assert isinstance(d1, np.ndarray) and isinstance(d2, np.ndarray) and d1.shape == d2.shape
        assert d1.size in suite_statdp.NUM_INPUT
        check_neighbours(d1, d2, e.mechanism.claim)
        if one:
            assert _one_differ_by_definition(d1, d2)
    # StatDP's generator: the base is all ones except for the "x shape" pair.
    firsts = [tuple(d2) for d1, d2 in e.pairs if np.all(d1 == 1) and d1.size == 5]
    assert (0, 1, 1, 1, 1) in firsts and (2, 1, 1, 1, 1) in firsts
    if not one:
        assert {(2, 0, 0, 0, 0), (0, 2, 2, 2, 2), (2, 2, 0, 0, 0), (2,) * 5, (0,) * 5} <= set(firsts)
        assert any(tuple(d1) == (1, 1, 0, 0, 0) and tuple(d2) == (0, 0, 1, 1, 1) for d1, d2 in e.pairs)


# -- outputs: shape, dtype, encoding, reproducibility -----------------------------------------

def _check_cutoff_labels(out: np.ndarray, n_above: int) -> None:
    # -1 only after the N-th 1, and every row before it is 0/1.
    ones_before = np.cumsum(out == 1, axis=1) - (out == 1)
    assert np.all((out == -1) == (ones_before >= n_above))


@pytest.mark.parametrize("name", NAMES)
def test_output_shape_dtype_and_encoding(name):
    e = _entry(name)
    m = e.mechanism
    for d1, _ in e.pairs[:: len(e.pairs) // 2]:  # one pair of each length
        out = m.sample(d1, size=500, rng=3)
        k = d1.size
        if name in ("noisy_max_v1a", "noisy_max_v2a"):
            assert m.kind == "finite" and out.shape == (500,) and out.dtype == np.int64
            assert set(np.unique(out)) <= set(range(k))
        elif name in ("noisy_max_v1b", "noisy_max_v2b"):
            assert m.kind == "real" and out.shape == (500,) and out.dtype == np.float64 and np.all(np.isfinite(out))
            if name == "noisy_max_v2b":
                assert np.all(out >= d1.max())  # exponential noise is non-negative: the support bug
        elif "histogram" in name:
            assert m.kind == "real" and out.shape == (500, k) and out.dtype == np.float64 and np.all(np.isfinite(out))
        elif name == "iSVT4":
            assert m.kind == "real" and out.shape == (500, k) and out.dtype == np.float64
            fin = np.isfinite(out)
            assert np.all(fin.sum(axis=1) <= 1) and fin.any() and not fin.all(axis=1).any()
        else:
            assert m.kind == "finite" and out.shape == (500, k) and out.dtype == np.int64
            assert set(np.unique(out)) <= ({-1, 0, 1} if name in LABELS_WITH_CUTOFF else {0, 1})
            if name in LABELS_WITH_CUTOFF:
                _check_cutoff_labels(out, 1)
    assert m.sample(d1, size=None, rng=0).shape == out.shape[1:]  # size=None: one release


@pytest.mark.parametrize("name", NAMES)
def test_sampling_is_reproducible_from_a_seed(name):
    m = _entry(name).mechanism
    d = _entry(name).pairs[0][1]
    a, b, c = (m.sample(d, size=300, rng=s) for s in (7, 7, 8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c, equal_nan=True)
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    np.testing.assert_array_equal(m.sample(d, size=10, rng=g1), m.sample(d, size=10, rng=g2))


def test_cutoff_after_n_above_answers():
    q = np.full(6, 100.0)  # far above the threshold: every answered query is above
    out = suite_statdp.SVT(N=2).mechanism.sample(q, size=50, rng=0)
    np.testing.assert_array_equal(out, np.tile([1, 1, -1, -1, -1, -1], (50, 1)))
    vals = suite_statdp.iSVT4(N=2).mechanism.sample(q, size=50, rng=0)
    assert np.all(np.isfinite(vals[:, :2])) and np.all(np.isnan(vals[:, 2:]))


# -- exact laws --------------------------------------------------------------------------------

def _lap_cdf(x: np.ndarray) -> np.ndarray:
    h = 0.5 * np.exp(-np.abs(x))  # written without exp of large positive numbers (warnings are errors)
    return np.where(x < 0, h, 1.0 - h)


def _chi2_p(observed: dict, probs: dict, n: int) -> float:
    """Chi-square p-value of observed counts against exact cell probabilities; cells with expected
    count < 5 are pooled, and observed cells outside the law's support fail outright."""
    assert set(observed) <= set(probs), f"outputs outside the support: {set(observed) - set(probs)}"
    cells = sorted(probs, key=lambda c: probs[c])
    exp = np.array([probs[c] for c in cells]) * n
    obs = np.array([observed.get(c, 0) for c in cells], dtype=float)
    small = exp < 5
    if small.any():
        exp, obs = np.append(exp[~small], exp[small].sum()), np.append(obs[~small], obs[small].sum())
    exp *= n / exp.sum()  # quadrature error ~1e-10 must not trip chisquare's sum check
    return float(stats.chisquare(obs, exp).pvalue)


def _counts(rows: np.ndarray) -> dict:
    vals, cnt = np.unique(rows, axis=0, return_counts=True) if rows.ndim == 2 else np.unique(rows, return_counts=True)
    return {(tuple(int(x) for x in v) if rows.ndim == 2 else int(v)): int(c) for v, c in zip(vals, cnt)}


def _svt_pattern_prob(pattern: tuple, q: np.ndarray, T: float, rho_scale: float, nu_scale: float) -> float:
    """P[label vector = pattern] = int f_rho(r) prod_i g_i(r) dr, g_i = P[nu < T + r - q_i] for a 0,
    its complement for a 1 and 1 for a -1 (not answered). Continuous noise: > and >= agree.
    Integrated piecewise between the kinks r = 0 and r = q_i - T, where the integrand is smooth."""
    def integrand(r: float) -> float:
        F = _lap_cdf((T + r - q) / nu_scale)
        g = np.where(np.array(pattern) == 0, F, np.where(np.array(pattern) == 1, 1.0 - F, 1.0))
        return float(stats.laplace.pdf(r, scale=rho_scale) * np.prod(g))

    cuts = np.unique(np.concatenate([[0.0], q - T]))
    edges = [-np.inf, *cuts, np.inf]
    return sum(integrate.quad(integrand, a, b, epsabs=1e-13, epsrel=1e-11)[0] for a, b in zip(edges[:-1], edges[1:]))


def _cutoff_patterns(k: int) -> list[tuple]:
    return [tuple([0] * m + [1] + [-1] * (k - m - 1)) for m in range(k)] + [tuple([0] * k)]


N_DRAWS = 20_000
Q = np.array([0.0, 2.0, 2.0, 2.0, 2.0])  # StatDP's "one below, rest above" input: both answers likely


@pytest.mark.statistical
@pytest.mark.parametrize("name, law", [("noisy_max_v1a", laplace_rnm_log_prob), ("noisy_max_v2a", pf_log_prob)])
def test_noisy_max_index_law(name, law):
    # Exact index law: the certified RNM laws of mechanisms.selection_laws in units of the scale.
    e = _entry(name)
    q = np.array([1.0, 0.0, 2.0, 2.0, 1.5])
    b = e.mechanism.noise_scale
    probs = dict(enumerate(np.exp(law((q - q.max()) / b))))
    out = e.mechanism.sample(q, size=N_DRAWS, rng=11)
    assert _chi2_p(_counts(out), probs, N_DRAWS) > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["noisy_max_v1b", "noisy_max_v2b"])
def test_noisy_max_value_law(name):
    # Exact CDF of the maximum of independent noisy answers: prod_i F((y - q_i)/b).
    e = _entry(name)
    q = np.array([1.0, 0.0, 2.0, 2.0, 1.5])
    b = e.mechanism.noise_scale
    if e.mechanism.noise == "laplace":
        def cdf(y):
            return np.prod(_lap_cdf((np.asarray(y)[..., None] - q) / b), axis=-1)
    else:
        def cdf(y):
            return np.prod(1.0 - np.exp(-np.maximum(np.asarray(y)[..., None] - q, 0.0) / b), axis=-1)
    out = e.mechanism.sample(q, size=N_DRAWS, rng=12)
    assert stats.kstest(out, cdf).pvalue > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["histogram", "histogram_eps"])
def test_histogram_law(name):
    # Residuals (x - q)/scale are iid standard Laplace; a wrong scale (1/eps vs eps) is rejected.
    e = _entry(name)
    out = e.mechanism.sample(Q, size=N_DRAWS // Q.size, rng=13)
    z = ((out - Q) / e.mechanism.noise_scale).reshape(-1)
    assert stats.kstest(z, "laplace").pvalue > ALPHA
    if name == "histogram_eps":  # power check: the correct histogram's scale is rejected
        wrong = ((out - Q) * EPS).reshape(-1)
        assert stats.kstest(wrong, "laplace").pvalue < 1e-12


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["SVT", "iSVT2", "iSVT3", "iSVT4"])
def test_svt_label_law(name):
    # Exact law of the label vector (iSVT4: of its NaN pattern) by quadrature over rho.
    e = _entry(name)
    m = e.mechanism
    k = Q.size
    pats = list(itertools.product((0, 1), repeat=k)) if name == "iSVT2" else _cutoff_patterns(k)
    probs = {p: _svt_pattern_prob(p, Q, m.T, m.rho_scale, m.nu_scale) for p in pats}
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-8)
    out = m.sample(Q, size=N_DRAWS, rng=14)
    if name == "iSVT4":
        fin = np.isfinite(out)
        after = (np.cumsum(fin, axis=1) - fin) >= m.N
        out = np.where(fin, 1, np.where(after, -1, 0))
    assert _chi2_p(_counts(out), probs, N_DRAWS) > ALPHA


@pytest.mark.statistical
def test_isvt1_label_law():
    # No query noise: labels are 1[q_i >= T + rho]. With T = 1 on [0, 2, 2, 2, 2]: all ones when
    # rho <= -1, (0, 1, 1, 1, 1) when -1 < rho <= 1, all zeros when rho > 1 (rho ~ Lap(2/eps)).
    m = _entry("iSVT1").mechanism
    tail = 0.5 * math.exp(-1.0 / m.rho_scale)
    probs = {(1,) * 5: tail, (0, 1, 1, 1, 1): 1 - 2 * tail, (0,) * 5: tail}
    assert _chi2_p(_counts(m.sample(Q, size=N_DRAWS, rng=15)), probs, N_DRAWS) > ALPHA
