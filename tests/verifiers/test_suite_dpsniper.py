"""DP-Sniper's evaluation suite (verifiers/controls/suites/dpsniper.py): every entry builds, every pair is
legal, outputs have the documented shape / dtype / encoding, sampling is reproducible, and the
samplers match exact laws where these are cheap to write down.

Statistical checks use a fixed seed and a threshold derived from the exact law: each test runs m
checks (binomial, chi-square or Kolmogorov-Smirnov tests via scipy.stats) and rejects at level
ALPHA / m (Bonferroni), so a correct sampler fails a test with probability <= ALPHA = 1e-4 over
seeds; with the fixed seed the outcome is deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpharness.verifiers.controls.suites import base as suite_base
from dpharness.verifiers.controls import suites
from dpharness.verifiers.controls.suites import dpsniper as ds
from dpharness.verifiers.relations import check_neighbours

ALPHA = 1e-4
N = 20_000

NAMES = ["LaplaceMechanism", "TruncatedGeometric", "NoisyHist1", "NoisyHist2", "ReportNoisyMax1",
         "ReportNoisyMax2", "ReportNoisyMax3", "ReportNoisyMax4"] + [f"SparseVectorTechnique{i}" for i in range(1, 7)] + [
         "Rappor", "OneTimeRappor", "LaplaceParallel", "SVT34Parallel", "PrefixSum", "NumericalSVT"]

#: name -> (kind, output shape after the sample axis, dtype kind)
SHAPES = {"LaplaceMechanism": ("real", (), "f"), "TruncatedGeometric": ("finite", (), "i"),
          "NoisyHist1": ("real", (5,), "f"), "NoisyHist2": ("real", (5,), "f"),
          "ReportNoisyMax1": ("finite", (), "i"), "ReportNoisyMax2": ("finite", (), "i"),
          "ReportNoisyMax3": ("real", (), "f"), "ReportNoisyMax4": ("real", (), "f"),
          "SparseVectorTechnique1": ("finite", (10,), "i"), "SparseVectorTechnique2": ("finite", (10,), "i"),
          "SparseVectorTechnique3": ("real", (10,), "f"), "SparseVectorTechnique4": ("finite", (10,), "i"),
          "SparseVectorTechnique5": ("finite", (10,), "i"), "SparseVectorTechnique6": ("finite", (10,), "i"),
          "Rappor": ("finite", (20,), "i"), "OneTimeRappor": ("finite", (20,), "i"),
          "LaplaceParallel": ("real", (20,), "f"), "SVT34Parallel": ("real", (20,), "f"),
          "PrefixSum": ("real", (10,), "f"), "NumericalSVT": ("real", (10,), "f")}


@pytest.fixture(scope="module")
def entries() -> dict:
    return {e.name: e for e in suites.entries("dpsniper")}


def _sample(entries: dict, name: str, data, n: int = N, seed: int = 0) -> np.ndarray:
    return entries[name].mechanism.sample(data, size=n, rng=seed)


# -- building, pairs, API --------------------------------------------------------------------

def test_entries_in_paper_order_with_published_bounds(entries):
    assert list(entries) == NAMES
    for e in entries.values():
        assert e.qualified == f"dpsniper/{e.name}" and e.mechanism.name == f"dpsniper/{e.name}"
        assert set(e.published) == {"dpsniper_reg", "dpsniper_mlp"}
        assert "DP-Sniper" in e.source and e.note
        assert e.true_epsilon is not None
        assert e.broken == (e.true_epsilon > e.claimed_epsilon * (1 + 1e-12))
        assert e.mechanism.kind == SHAPES[e.name][0]
        # a published lower bound above the true epsilon would contradict the derivation
        assert max(e.published.values()) <= e.true_epsilon + 1e-9
    assert suites.get("dpsniper/Rappor").name == "Rappor"
    assert "dpsniper" in suite_base.suites()


def test_published_bounds_are_the_logs(entries):
    # spot checks against eval_sp2021/reference-results/dd_search_{reg,mlp}_data.log (eps_lcb)
    assert entries["ReportNoisyMax1"].published == {"dpsniper_reg": 0.092, "dpsniper_mlp": 0.093}
    assert entries["ReportNoisyMax2"].published == {"dpsniper_reg": 0.098, "dpsniper_mlp": 0.098}
    assert entries["SparseVectorTechnique2"].published == {"dpsniper_reg": 0.086, "dpsniper_mlp": 0.085}
    assert entries["NoisyHist2"].published["dpsniper_reg"] == 4.60


def test_true_and_claimed_epsilons(entries):
    want = {"LaplaceMechanism": (0.1, 0.1), "NoisyHist2": (0.1, 10.0), "ReportNoisyMax3": (0.1, 0.25),
            "ReportNoisyMax4": (0.1, math.inf), "SparseVectorTechnique3": (0.1, 0.5),
            "SparseVectorTechnique4": (0.1, 0.175), "SparseVectorTechnique5": (0.1, math.inf),
            "SparseVectorTechnique6": (0.1, 0.5), "SVT34Parallel": (0.2, 0.575), "PrefixSum": (0.1, 1.0),
            "LaplaceParallel": (0.1, 0.1), "TruncatedGeometric": (math.log(9 / 8), math.log(9 / 8)),
            "Rappor": (8 * math.log(0.5125 / 0.4875),) * 2, "OneTimeRappor": (8 * math.log(0.525 / 0.475),) * 2}
    for name, (claim, true) in want.items():
        assert entries[name].claimed_epsilon == pytest.approx(claim, rel=1e-12), name
        assert entries[name].true_epsilon == pytest.approx(true, rel=1e-12), name


@pytest.mark.parametrize("name", NAMES)
def test_pairs_are_dpsniper_patterns_and_legal(entries, name):
    e = entries[name]
    # one entry differs: 2 patterns + swaps; component-wise: 8 patterns + swaps
    expected = {"value": 4, "one_differ": 4, "score_linf": 16}[e.mechanism.claim.neighbours]
    assert len(e.pairs) == expected
    for d1, d2 in e.pairs:
        check_neighbours(d1, d2, e.mechanism.claim)
        e.mechanism.sample(d1, size=2, rng=0)
        e.mechanism.sample(d2, size=2, rng=0)


def test_pattern_pairs_match_dpsniper_generator():
    pairs = ds.pattern_pairs(10, component_wise=True)
    assert len(pairs) == 16
    x1, x2 = pairs[-2]  # the X shape
    np.testing.assert_array_equal(x1, [1.0] * 5 + [0.0] * 5)
    np.testing.assert_array_equal(x2, [0.0] * 5 + [1.0] * 5)
    np.testing.assert_array_equal(pairs[9][1], np.ones(10))  # swaps follow their pair
    np.testing.assert_array_equal(pairs[8][1], [2.0] * 5 + [0.0] * 5)
    assert ds.scalar_pairs() == ((1.0, 0.0), (0.0, 1.0), (1.0, 2.0), (2.0, 1.0))
    with pytest.raises(ValueError, match="integer >= 1"):
        ds.pattern_pairs(0, component_wise=False)


# -- outputs: shape, dtype, encoding, reproducibility ----------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_output_shape_dtype_and_reproducible(entries, name):
    e = entries[name]
    _, shape, dkind = SHAPES[name]
    data = e.pairs[0][0]
    a = e.mechanism.sample(data, size=500, rng=7)
    assert a.shape == (500,) + shape and a.dtype.kind == dkind
    np.testing.assert_array_equal(a, e.mechanism.sample(data, size=500, rng=7))
    assert not np.array_equal(a, e.mechanism.sample(data, size=500, rng=8))


def _check_cutoff_labels(out: np.ndarray, c: int) -> None:
    """1/0 before the c-th 1, -1 strictly after it, and nowhere else."""
    assert set(np.unique(out)) <= {-1, 0, 1}
    ones_before = np.cumsum(out == 1, axis=1) - (out == 1)
    np.testing.assert_array_equal(out == -1, ones_before >= c)


def _check_cutoff_values(out: np.ndarray, c: int) -> None:
    """At most c finite values per row; NaN elsewhere (before: below, after: not answered)."""
    assert np.all(np.isfinite(out) | np.isnan(out))
    assert np.all(np.sum(np.isfinite(out), axis=1) <= c)


def test_svt_encodings(entries):
    q = np.ones(10)
    for name in ("SparseVectorTechnique1", "SparseVectorTechnique2", "SparseVectorTechnique4"):
        out = _sample(entries, name, q, 5000)
        _check_cutoff_labels(out, 1)
        assert np.any(out == -1) and np.any(out == 0) and np.any(out == 1)
    for name in ("SparseVectorTechnique5", "SparseVectorTechnique6"):
        assert set(np.unique(_sample(entries, name, q, 5000))) == {0, 1}
    _check_cutoff_values(_sample(entries, "SparseVectorTechnique3", q, 5000), 1)
    num = _sample(entries, "NumericalSVT", q, 5000)
    _check_cutoff_values(num, 2)
    assert np.any(np.sum(np.isfinite(num), axis=1) == 2)
    both = _sample(entries, "SVT34Parallel", q, 5000)
    _check_cutoff_values(both[:, :10], 2)
    _check_cutoff_labels(both[:, 10:].astype(np.int64), 2)
    np.testing.assert_array_equal(both[:, 10:], np.round(both[:, 10:]))


def test_sparse_vector5_is_a_threshold_cut(entries):
    # no query noise: on [2]*5 + [0]*5 the output is [1]*5+[0]*5, all 1 or all 0 (never on [1]*10)
    out = _sample(entries, "SparseVectorTechnique5", np.array([2.0] * 5 + [0.0] * 5), 5000)
    assert np.all(out[:, :5] == out[:, :1]) and np.all(out[:, 5:] == out[:, 5:6])
    assert np.any((out[:, 0] == 1) & (out[:, 5] == 0))
    flat = _sample(entries, "SparseVectorTechnique5", np.ones(10), 5000)
    assert np.all(flat == flat[:, :1])


def test_support_edge_of_report_noisy_max4(entries):
    assert np.all(_sample(entries, "ReportNoisyMax4", 2.0 * np.ones(5), 5000) >= 2.0)


def test_value_outputs_in_range(entries):
    assert set(np.unique(_sample(entries, "TruncatedGeometric", 2.0, 5000))) == set(range(6))
    assert set(np.unique(_sample(entries, "ReportNoisyMax1", np.ones(5), 5000))) == set(range(5))
    assert set(np.unique(_sample(entries, "Rappor", 1.0, 500))) == {0, 1}


# -- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, data, match", [
    ("NoisyHist1", np.ones(4), "5 query answers"),
    ("SparseVectorTechnique1", np.ones(5), "10 query answers"),
    ("ReportNoisyMax1", np.ones((5, 1)), "5 query answers"),
    ("PrefixSum", [1.0] * 9 + [np.nan], "finite"),
    ("LaplaceMechanism", np.ones(2), "scalar"),
    ("LaplaceMechanism", "abc", "real query answer"),
    ("TruncatedGeometric", 2.5, r"integer in \[0, 5\]"),
    ("TruncatedGeometric", 6.0, r"integer in \[0, 5\]"),
    ("Rappor", 11.0, r"integer in \[-10, 10\]"),
    ("OneTimeRappor", math.inf, "finite"),
])
def test_bad_input_raises_value_error(entries, name, data, match):
    with pytest.raises(ValueError, match=match):
        entries[name].mechanism.sample(data, size=3, rng=0)


# -- exact laws ------------------------------------------------------------------------------

def test_murmur3_and_bloom_bits_match_dpsniper():
    # published MurmurHash3 x86_32 test vectors; mmh3.hash("foo") = -156908512 (signed)
    assert ds.murmur3_32(b"", 0) == 0
    assert ds.murmur3_32(b"", 1) == 0x514E28B7
    assert ds.murmur3_32(b"", 0xFFFFFFFF) == 0x81F16F39
    assert ds.murmur3_32(b"Hello, world!", 0x9747B28C) == 0x24884CBA
    assert ds.murmur3_32(b"The quick brown fox jumps over the lazy dog", 0x9747B28C) == 0x2FA826CD
    assert ds.murmur3_32(b"foo", 0) - 2 ** 32 == -156908512
    # DP-Sniper's RAPPOR log (values 1 vs 0): the classifier's features with mean 1/2 -- the bits
    # set for exactly one of the two values -- are 0, 3, 10, 11, 13, 18, and none has mean q*.
    assert ds.bloom_bits(1) ^ ds.bloom_bits(0) == {0, 3, 10, 11, 13, 18}
    assert not ds.bloom_bits(1) & ds.bloom_bits(0)


def test_geo_sample_law_is_truncated_two_sided_geometric():
    for c in range(6):
        p = ds.geo_sample_pmf(c)
        assert p.sum() == pytest.approx(1.0, abs=1e-15)
        # interior outputs 1..4 rise towards c by (2^k+1)/2^k = 9/8 (the end points hold the tails)
        for z in range(1, 4):
            want = 9 / 8 if z + 1 <= c else 8 / 9
            assert p[z + 1] / p[z] == pytest.approx(want, rel=1e-12), (c, z)
    for c in range(5):
        lr = np.log(ds.geo_sample_pmf(c)) - np.log(ds.geo_sample_pmf(c + 1))
        np.testing.assert_allclose(np.abs(lr), math.log(9 / 8), rtol=1e-12)


@pytest.mark.statistical
def test_truncated_geometric_pmf(entries):
    # chi-square goodness of fit against the exact pmf, 3 counts -> level ALPHA / 3
    for c in (0, 2, 5):
        x = _sample(entries, "TruncatedGeometric", float(c), seed=c)
        observed = np.bincount(x, minlength=6)
        expected = ds.geo_sample_pmf(c) * N
        assert stats.chisquare(observed, expected).pvalue > ALPHA / 3, c


@pytest.mark.statistical
def test_rappor_bit_probabilities(entries):
    # each reported bit is Bernoulli(q*) on the value's Bloom bits and Bernoulli(p*) elsewhere;
    # 2 mechanisms x 20 bits two-sided binomial tests -> level ALPHA / 40
    for name, f, p, q in (("Rappor", 0.75, 0.45, 0.55), ("OneTimeRappor", 0.95, None, None)):
        one, zero = ds.rappor_bit_probabilities(f, p, q)
        bits = _sample(entries, name, 1.0, seed=3)
        bloom = ds.bloom_bits(1)
        for j in range(20):
            prob = one if j in bloom else zero
            k = int(bits[:, j].sum())
            assert stats.binomtest(k, N, prob).pvalue > ALPHA / 40, (name, j)
    assert ds.rappor_bit_probabilities(0.75, 0.45, 0.55) == pytest.approx((0.5125, 0.4875))


def _laplace_sum_tail(t: float, a: float, b: float) -> float:
    """P[X + Y >= t] for independent X ~ Lap(a), Y ~ Lap(b) (densities convolved in closed form)."""
    if t < 0:
        return 1.0 - _laplace_sum_tail(-t, a, b)
    if math.isclose(a, b):
        return math.exp(-t / a) * (2 + t / a) / 4
    return (a * a * math.exp(-t / a) - b * b * math.exp(-t / b)) / (2 * (a * a - b * b))


@pytest.mark.statistical
def test_svt_first_answer_probabilities(entries):
    # P[first query above] = P[nu - rho >= T - q_1]; nu - rho is a sum of two Laplace (rho is
    # symmetric). 7 binomial tests -> level ALPHA / 7.
    cases = [  # name, q, T, nu scale, rho scale
        ("SparseVectorTechnique1", 1.0, 0.5, 40.0, 20.0),
        ("SparseVectorTechnique2", 0.0, 1.0, 40.0, 20.0),
        ("SparseVectorTechnique3", 0.0, 1.0, 20.0, 20.0),
        ("SparseVectorTechnique4", 0.0, 1.0, 40.0 / 3.0, 40.0),
        ("SparseVectorTechnique6", 0.0, 1.0, 20.0, 20.0),
        ("NumericalSVT", 0.0, 1.0, 120.0, 30.0),
    ]
    for i, (name, q, t, nu, rho) in enumerate(cases):
        out = _sample(entries, name, np.full(10, q), seed=10 + i)
        hit = np.isfinite(out[:, 0]) if out.dtype.kind == "f" else out[:, 0] == 1
        prob = _laplace_sum_tail(t - q, nu, rho)
        assert stats.binomtest(int(hit.sum()), N, prob).pvalue > ALPHA / 7, name
    # SVT5: all above iff rho <= q - T = 1 on [2]*10
    out = _sample(entries, "SparseVectorTechnique5", np.full(10, 2.0), seed=20)
    prob = 1 - 0.5 * math.exp(-1 / 20)
    assert stats.binomtest(int(np.all(out == 1, axis=1).sum()), N, prob).pvalue > ALPHA / 7


def _svt_stopping_law(q: np.ndarray, t: float, nu: float, rho: float) -> np.ndarray:
    """P[first answer above is query j] (j = 0..d-1) and P[none] of SVT with c = 1:
    integral of f_rho(r) prod_{i<j} F(t + r - q_i) (1 - F(t + r - q_j)) dr, F the query noise's
    Laplace(nu) cdf and f_rho the threshold noise's Laplace(rho) density. Trapezoid rule on a
    grid of step rho/400 over +-40 rho (the tails beyond carry e^-40): every factor is bounded
    and Lipschitz, so the rule's error is O(step^2), far below the test's resolution."""
    r = np.linspace(-40 * rho, 40 * rho, 32_001)
    weight = stats.laplace.pdf(r, scale=rho)
    below = np.ones_like(r)
    out = []
    for qj in q:
        out.append(float(np.trapezoid(weight * below * stats.laplace.sf(t + r - qj, scale=nu), r)))
        below = below * stats.laplace.cdf(t + r - qj, scale=nu)
    out.append(float(np.trapezoid(weight * below, r)))
    return np.asarray(out)


@pytest.mark.statistical
def test_svt4_stopping_index_law(entries):
    # SVT4 with c = 1 releases only where its first answer "above" is: its whole law is the
    # stopping index's. Chi-square over the 11 cells (expected counts >= 150 at N) on the two
    # datasets of its best pair (ties against half up, half down) -> level ALPHA / 2 each.
    for i, q in enumerate((np.zeros(10), np.r_[np.ones(5), -np.ones(5)])):
        out = _sample(entries, "SparseVectorTechnique4", q, seed=30 + i)
        above = out == 1
        j = np.where(above.any(axis=1), above.argmax(axis=1), 10)
        law = _svt_stopping_law(q, 1.0, 40.0 / 3.0, 40.0)
        assert abs(law.sum() - 1.0) < 1e-5  # the rule's O(step^2) error: about 5e-7
        expected = N * law / law.sum()
        assert expected.min() >= 150
        assert stats.chisquare(np.bincount(j, minlength=11), expected).pvalue > ALPHA / 2, i


@pytest.mark.statistical
def test_laplace_family_against_exact_laws(entries):
    # Kolmogorov-Smirnov against the exact continuous laws, 6 tests -> level ALPHA / 6
    lap = stats.laplace
    checks = [
        (_sample(entries, "LaplaceMechanism", 1.0, seed=1), lap(1.0, 10.0).cdf),
        (_sample(entries, "NoisyHist2", np.arange(5.0), seed=2)[:, 3], lap(3.0, 0.1).cdf),
        (_sample(entries, "LaplaceParallel", 2.0, seed=3)[:, 7], lap(2.0, 200.0).cdf),
        (np.diff(_sample(entries, "PrefixSum", np.arange(10.0), seed=4), axis=1)[:, 4], lap(5.0, 10.0).cdf),
    ]
    q = np.array([0.0, 1.0, 2.0, 1.0, 0.0])
    # the maximum's CDF is the product of the coordinates' CDFs
    checks.append((_sample(entries, "ReportNoisyMax3", q, seed=5),
                   lambda y: np.prod(lap.cdf((np.asarray(y)[..., None] - q) / 20.0), axis=-1)))
    checks.append((_sample(entries, "ReportNoisyMax4", q, seed=6),
                   lambda y: np.prod(stats.expon.cdf((np.asarray(y)[..., None] - q) / 20.0), axis=-1)))
    for i, (x, cdf) in enumerate(checks):
        assert stats.kstest(x, cdf).pvalue > ALPHA / 6, i


@pytest.mark.statistical
def test_report_noisy_max_ties_are_uniform(entries):
    # on equal scores every index is equally likely; 2 chi-square tests -> level ALPHA / 2
    for i, name in enumerate(("ReportNoisyMax1", "ReportNoisyMax2")):
        idx = _sample(entries, name, np.ones(5), seed=30 + i)
        assert stats.chisquare(np.bincount(idx, minlength=5)).pvalue > ALPHA / 2, name
