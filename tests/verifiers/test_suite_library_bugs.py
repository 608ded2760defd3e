"""The library-bugs suite (dpharness.verifiers.controls.suites.library_bugs): every entry builds with its fixed
twin, its pairs are legal under the declared relation, the derived true losses are re-derived here
independently (brute force, exact laws, the released library's own code where it is installed), the
samplers follow their laws, and a fixed-seed audit flags every bug and none of the twins.

Statistical tests use a fixed seed and a threshold derived from the exact law: each rejects at
ALPHA = 1e-4 (chi-square or Kolmogorov-Smirnov, scipy.stats), so a correct sampler would fail with
probability <= 1e-4 per test over seeds. The audits run at alpha = 1e-3 (the config's level): with a
fixed seed their outcome is deterministic; over seeds a twin is falsely flagged with probability
<= 1e-3 (the verifier's guarantee) and the budgets flag each bug on every seed we tried (6 seeds).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpharness import verifiers as V
from dpharness.verifiers.controls.suites import library_bugs as lb
from dpharness.verifiers.controls import suites
from dpharness.verifiers.relations import check_neighbours

ALPHA = 1e-4
BUGS = ["float_sum_rounding", "float_laplace", "rr_bool", "gaussian_replace_one", "covariance_no_clip",
        "mean_noise_from_n", "linreg_diag_sensitivity", "privbayes_count_noise", "geometric_unclamped",
        "count_threshold_truncation"]
NAMES = [x for b in BUGS for x in (b, f"{b}_fixed")]
#: Seed of the fixed-seed audits. (Seed 20261201 falsely flags rr_bool_fixed: its certification
#: counts sit 3.2 standard deviations off, an event of probability ~7e-4 < alpha -- the 1e-3 the
#: verifier allows, not a defect; any other seed we tried passes.)
SEED = 7
#: Total calls of the fixed-seed audit: the (epsilon, delta) bug needs more than the others.
BUDGET = {"gaussian_replace_one": 400_000, "count_threshold_truncation": 200_000}


def _entry(name: str):
    return suites.get(f"library_bugs/{name}")


# -- registration, metadata, pairs -----------------------------------------------------------

def test_every_entry_builds_with_its_twin():
    es = suites.entries("library_bugs")
    assert [e.name for e in es] == NAMES
    assert len(BUGS) >= 8
    for e in es:
        m = e.mechanism
        assert e.qualified == f"library_bugs/{e.name}" and m.name == f"library_bugs/{e.name}"
        assert e.broken == (not e.name.endswith("_fixed"))
        twin = _entry(m.twin)
        assert twin.mechanism.twin == e.name and twin.broken != e.broken
        assert twin.mechanism.claim.epsilon == m.claim.epsilon and twin.mechanism.claim.delta == m.claim.delta
        assert twin.mechanism.claim.neighbours == m.claim.neighbours and twin.pairs is not None
        assert m.bug_class and m.library and e.source and e.note and e.published == {}
        assert e.true_epsilon is not None
        # a broken entry's true loss exceeds its claim, a twin's does not (relative slack for rounding)
        assert (e.true_epsilon > e.claimed_epsilon * (1 + 1e-9)) == e.broken, e.name
    assert _entry("float_laplace").mechanism.float_events and _entry("float_laplace_fixed").mechanism.float_events


@pytest.mark.parametrize("name", NAMES)
def test_pairs_are_legal_under_the_declared_relation(name):
    e = _entry(name)
    assert len(e.pairs) >= 1
    for d1, d2 in e.pairs:
        check_neighbours(d1, d2, e.mechanism.claim)
        for d in (d1, d2):
            out = e.mechanism.sample(d, size=7, rng=0)
            assert out.shape[0] == 7


@pytest.mark.parametrize("name", NAMES)
def test_sampling_is_reproducible(name):
    e = _entry(name)
    d = e.pairs[0][1]
    a, b = (e.mechanism.sample(d, size=200, rng=5) for _ in range(2))
    np.testing.assert_array_equal(a, b)


def test_bad_parameters_and_data_raise_value_errors():
    with pytest.raises(ValueError, match="epsilon"):
        lb.float_sum_rounding(epsilon=0.0)
    with pytest.raises(ValueError, match="n must be"):
        lb.float_sum_rounding(n=40)
    with pytest.raises(ValueError, match="p must be"):
        lb.rr_bool(p=0.4)
    with pytest.raises(ValueError, match="bounds"):
        lb.linreg_diag_sensitivity(lower=0.0)
    with pytest.raises(ValueError, match="bounds"):
        lb.geometric_unclamped(lo=3, hi=1)
    cases = [("float_sum_rounding", np.zeros(3), "records"), ("rr_bool", 0.5, "bit"),
             ("float_laplace_fixed", 0.5, "integer"), ("covariance_no_clip", [0.0, np.nan] * 5, "finite"),
             ("mean_noise_from_n", [], "empty"), ("privbayes_count_noise", [0.0] * 9 + [7.0], "category"),
             ("geometric_unclamped", 1.5, "integer"), ("float_laplace", "x", "finite")]
    for name, data, what in cases:
        with pytest.raises(ValueError, match=what):
            _entry(name).mechanism.sample(data, size=3, rng=0)


# -- the derived true losses, re-derived independently ---------------------------------------

def _loop_sum(x) -> float:
    s = 0.0
    for v in x:  # the plain sequential loop a library would write
        s = s + float(v)
    return s


def test_float_sum_pair_and_worst_case():
    e = _entry("float_sum_rounding")
    d1, d2 = e.pairs[0]
    L = 2.0**52
    assert set(np.unique(np.concatenate([d1, d2]))) <= {L, L + 1}
    assert np.sum(d2 - L) - np.sum(d1 - L) == 1.0  # one record replaced: the real sum moves by U - L = 1
    assert _loop_sum(d2) - _loop_sum(d1) == 16.0 == e.mechanism.rounding_worst_case
    # exhaustive check of the worst case at n = 8 by a plain loop over every ordering and replacement
    n = 8
    sums = {}
    for code in range(2**n):
        sums[code] = _loop_sum([L + ((code >> (n - 1 - i)) & 1) for i in range(n)])
    worst = max(abs(sums[c] - sums[c ^ (1 << p)]) for c in range(2**n) for p in range(n))
    by_ones: dict[int, list[float]] = {}
    for c, s in sums.items():
        by_ones.setdefault(c.bit_count(), []).append(s)
    for k, v in by_ones.items():  # multiset neighbours in any order (k and k' = k, k +- 1 ones)
        for k2 in (k - 1, k, k + 1):
            if k2 in by_ones:
                worst = max(worst, max(v) - min(by_ones[k2]))
    assert lb.float_sum_worst_case(8)[0] == worst == 8.0
    assert e.true_epsilon == pytest.approx(16 * e.claimed_epsilon)
    fixed = _entry("float_sum_rounding_fixed")
    assert fixed.mechanism.sensitivity_used == pytest.approx(1 + 2 * 16**2 * (L + 1) / 2**52)


def test_rr_bool_true_epsilon():
    assert lb.rr_bool_true_epsilon(0.75) == pytest.approx(math.log(13))
    assert _entry("rr_bool").claimed_epsilon == pytest.approx(math.log(3))


def test_gaussian_formulas_against_scipy():
    for mu in (0.5, 1.0, 2.0):
        for eps in (0.5, 2.0, 4.0):
            ref = stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)
            assert lb.gaussian_exact_delta(eps, mu) == pytest.approx(ref, rel=1e-9, abs=1e-15)
    e, f = _entry("gaussian_replace_one"), _entry("gaussian_replace_one_fixed")
    assert lb.gaussian_exact_delta(e.true_epsilon, 1.0) == pytest.approx(1e-5, rel=1e-6)
    assert e.true_epsilon == pytest.approx(4.377, abs=1e-3) and f.true_epsilon == pytest.approx(1.993, abs=1e-3)
    # the RDP claim is never below the tight claim for the sensitivity it assumed (C)
    assert e.claimed_epsilon >= f.true_epsilon and e.claimed_epsilon == pytest.approx(2.166, abs=1e-3)


def test_variance_sensitivity_by_brute_force():
    # replace-one sensitivity of the sample variance (ddof 1) of data in [0, 1]: (U - L)^2 / n
    n, grid = 4, np.linspace(0.0, 1.0, 5)
    worst = 0.0
    for d in np.array(np.meshgrid(*[grid] * n)).reshape(n, -1).T:
        v = np.var(d, ddof=1)
        for b in grid:
            d2 = d.copy()
            d2[0] = b
            worst = max(worst, abs(np.var(d2, ddof=1) - v))
    assert worst == pytest.approx(1.0 / n)
    assert _entry("covariance_no_clip_fixed").true_epsilon == pytest.approx(0.5)


def test_linreg_sensitivity_is_diffprivlibs():
    # The released library's own code: record the sensitivity it gives LaplaceFolded for X_i X_i.
    lr = pytest.importorskip("diffprivlib.models.linear_regression")
    seen = []

    class Recorder:
        def __init__(self, *, epsilon, sensitivity, **kw):
            seen.append(sensitivity)

        def randomise(self, value):
            return value

    orig = lr.LaplaceFolded
    lr.LaplaceFolded = Recorder
    try:
        X, y = np.full((5, 1), 3.0), np.full(5, 1.0)
        lr._construct_regression_obj(X, y, (np.array([2.0]), np.array([4.0])), (np.array([0.0]), np.array([1.0])),
                                     1.5, 0.0, None)
    finally:
        lr.LaplaceFolded = orig
    # seen = [y^2 coefficient, X_0 X_0 coefficient]
    assert seen[1] == _entry("linreg_diag_sensitivity").mechanism.sensitivity_used == 4.0
    assert _entry("linreg_diag_sensitivity_fixed").mechanism.sensitivity_used == 16.0


# -- samplers against their exact laws --------------------------------------------------------

@pytest.mark.statistical
@pytest.mark.parametrize("name", ["rr_bool", "rr_bool_fixed"])
def test_rr_law(name):
    p, n = 0.75, 20_000
    for x in (0, 1):
        out = _entry(name).mechanism.sample(x, size=n, rng=11 + x)
        if name == "rr_bool":
            p_same = p + (1 - p) * (p if x == 1 else 1 - p)
        else:
            p_same = p
        k = int(np.sum(out == x))
        assert set(np.unique(out)) <= {0, 1}
        assert stats.binomtest(k, n, p_same).pvalue > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["geometric_unclamped", "geometric_unclamped_fixed"])
def test_geometric_law(name):
    e, n, a = _entry(name), 20_000, math.exp(-1.0)
    x = 4  # = max: the unclamped release reaches 4 + 4, the clamped one stays in [0, 4]
    out = e.mechanism.sample(x, size=n, rng=3)
    z = np.arange(-60, 61)
    pz = (1 - a) / (1 + a) * a ** np.abs(z)
    vals = np.clip(x + np.clip(z, -4, 4), 0, 4) if name.endswith("_fixed") else x + np.clip(z, -4, 4)
    support = np.unique(vals)
    probs = np.array([pz[vals == v].sum() for v in support])
    obs = np.array([np.sum(out == v) for v in support])
    assert obs.sum() == n and probs.sum() == pytest.approx(1.0)
    assert stats.chisquare(obs, probs / probs.sum() * n).pvalue > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["count_threshold_truncation", "count_threshold_truncation_fixed"])
def test_thresholded_count_law(name):
    # a one-unit partition is released (not NaN) exactly when 1 + Z >= the (truncated or rounded-up)
    # threshold: the release frequency against threshold_delta, and the released values' law against
    # the conditional two-sided geometric (binomial and chi-square tests at ALPHA)
    e, n, a = _entry(name), 200_000, math.exp(-1.0)
    tau = e.mechanism.threshold
    cut = math.ceil(tau) if name.endswith("_fixed") else int(tau)
    p = lb.threshold_delta(1.0, cut)
    assert p == pytest.approx(a ** (cut - 1) / (1 + a))
    assert (p <= 0.01) == name.endswith("_fixed")  # the fix meets the claimed delta, the bug does not
    out = e.mechanism.sample(np.zeros(1), size=n, rng=5)
    released = out[~np.isnan(out)]
    assert stats.binomtest(released.size, n, p).pvalue > ALPHA
    vals = np.arange(cut, cut + 6)
    probs = (1 - a) / (1 + a) * a ** (vals - 1) / p  # P[1 + Z = v | 1 + Z >= cut], v = cut .. cut + 5
    obs = np.array([np.sum(released == v) for v in vals] + [np.sum(released > vals[-1])])
    probs = np.append(probs, 1 - probs.sum())
    assert stats.chisquare(obs, probs * released.size).pvalue > ALPHA
    # an absent partition is never released
    assert np.isnan(e.mechanism.sample(np.zeros(0), size=1000, rng=6)).all()


@pytest.mark.statistical
def test_float_sum_noise_law():
    # The release is fl(s + Y), Y ~ Laplace(b), s = 2^56: round-to-nearest is monotone, so
    # P[out <= g] = F_Y(g + h(g) - s) for a representable g, h(g) = half the gap to the next double
    # (8 above 2^56, 4 below). Chi-square over the cells between 41 such thresholds.
    e = _entry("float_sum_rounding")
    d = e.pairs[0][0]
    s = _loop_sum(d)
    assert s == 2.0**56
    b = e.mechanism.sensitivity_used / e.claimed_epsilon
    n = 20_000
    out = e.mechanism.sample(d, size=n, rng=4)
    offsets = np.arange(-20, 21) * 16.0  # s + 16 j is a double on both sides of 2^56
    gaps = np.array([np.nextafter(s + o, np.inf) - (s + o) for o in offsets])
    cdf = stats.laplace.cdf((offsets + gaps / 2) / b)
    probs = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
    obs = np.bincount(np.searchsorted(s + offsets, out, side="left"), minlength=offsets.size + 1)
    assert stats.chisquare(obs, probs * n).pvalue > ALPHA
    # and the outputs are doubles of that grid only
    assert np.all(np.where(out >= s, (out - s) % 16, (s - out) % 8) == 0)


# -- the audit: bugs flagged, twins not (fixed seed, alpha = 1e-3) ------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_audit_flags_bugs_and_passes_twins(name):
    e = _entry(name)
    pairs = [V.Pair(d1, d2, f"pair {i}") for i, (d1, d2) in enumerate(e.pairs)]
    v = V.search(e.mechanism, generator=pairs, budget=BUDGET.get(name.removesuffix("_fixed"), 50_000),
                 alpha=1e-3, rng=SEED)
    assert v.violated == e.broken, v.summary
    if e.broken and math.isfinite(e.true_epsilon):
        assert v.epsilon_lower <= e.true_epsilon * 1.05  # sound (up to the 1e-3 error the audit allows)
    if name == "float_laplace":
        assert v.support_violation  # the bit-pattern event has probability 0 under one input


# -- the config -------------------------------------------------------------------------------

def test_config_audits_every_entry_on_its_pairs():
    import yaml

    from dpharness.bench.cli import main
    from dpharness.verifiers.statistical.alpha import split_alpha

    path = "configs/audit_library_bugs.yaml"
    assert main(["validate", path]) == 0
    with open(path, encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    # family_alpha split evenly over the audits: each audit runs at the 1e-3 this file's tests assume.
    assert split_alpha(cfg["family_alpha"], len(cfg["audits"])) == pytest.approx(1e-3)
    assert cfg["family_split"] == "audits" and cfg["quick"]["max_samples"] <= 200_000
    by_id = {a["id"]: a for a in cfg["audits"]}
    assert set(by_id) == set(NAMES)
    for name in NAMES:
        a, e = by_id[name], _entry(name)
        assert a["mechanism"] == {"suite": e.qualified} and a["pairs"] == "suite"
        assert a["expect"] == ("broken" if e.broken else "correct")
        assert max(a["samples"]) <= 1_000_000
        assert a.get("float_events", False) == e.mechanism.float_events
