"""The float-safe members: ``snapping`` (mechanisms/snapping.py) and ``discrete_laplace``
(mechanisms/discrete_laplace.py): samplers against their exact laws, grid outputs, calibration,
bad input, and float-event audits (the textbook ``x + Laplace`` is flagged on the same pair).

Thresholds: this file runs STAT_TESTS statistical tests (chi-square goodness of fit, and two
binomial z-tests), each on a fixed seed. For a correct sampler each chi-square statistic is
asymptotically chi-square with (cells - 1) degrees of freedom (cells are pooled so that every
expected count is >= 20, where the approximation is good) and each z statistic standard normal.
Each test rejects above the 1 - FAMILY_ALPHA / STAT_TESTS quantile of its law (two-sided for z),
so by Bonferroni the chance that any of them fails for a correct sampler is at most
FAMILY_ALPHA = 1e-3; the seeds are fixed, so the suite is deterministic.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpharness import mechanisms
from dpharness import verifiers as V
from dpharness.mechanisms.discrete_laplace import (DiscreteLaplace, bernoulli_exp, noise_parameters,
                                                   sample_discrete_laplace)
from dpharness.mechanisms.snapping import (Snapping, _log_exact, _round_half_up, log_correctly_rounded,
                                           sample_uniform_doubles, snap_parameters)
from dpharness.verifiers.events.floats import float_labels

FAMILY_ALPHA = 1e-3
STAT_TESTS = 14  # chi2_check calls (3 + 3 + 4 + 2, parametrised cases included) + 2 binomial z-tests
MIN_EXPECTED = 20.0


def chi2_check(counts: np.ndarray, probs: np.ndarray) -> None:
    """Pool adjacent cells until every expected count is >= MIN_EXPECTED, then compare the chi-square
    statistic with its Bonferroni threshold (module docstring)."""
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    assert abs(probs.sum() - 1.0) < 1e-9
    n = counts.sum()
    pc, pp, acc_c, acc_p = [], [], 0.0, 0.0
    for c, p in zip(counts, probs):
        acc_c += c
        acc_p += p
        if acc_p * n >= MIN_EXPECTED:
            pc.append(acc_c)
            pp.append(acc_p)
            acc_c = acc_p = 0.0
    if acc_p > 0 or acc_c > 0:  # leftover tail joins the last cell
        pc[-1] += acc_c
        pp[-1] += acc_p
    pc, pp = np.array(pc), np.array(pp)
    assert pc.size >= 3, "too few cells for a meaningful test"
    stat = float(np.sum((pc - n * pp) ** 2 / (n * pp)))
    threshold = float(stats.chi2.ppf(1 - FAMILY_ALPHA / STAT_TESTS, df=pc.size - 1))
    assert stat < threshold, (stat, threshold, pc.size)


# --------------------------------------------------------------------------------------------------
# U*: uniform doubles with P[U = u] = ulp(u)


def test_uniform_doubles_binades_and_significands():
    u = sample_uniform_doubles(400_000, np.random.default_rng(1))
    assert u.dtype == np.float64 and np.all((u > 0) & (u < 1))
    # binade e (U in [2^-e, 2^(1-e))) has probability 2^-e; pool e >= 16
    e = -np.frexp(u)[1] + 1
    emax = 16
    counts = np.bincount(np.minimum(e, emax), minlength=emax + 1)[1:]
    probs = np.array([2.0**-k for k in range(1, emax)] + [2.0 ** -(emax - 1)])
    chi2_check(counts, probs)
    # inside a binade the significand is uniform: its top 6 bits over 64 cells (all binades pooled)
    top = (np.frexp(u)[0] * 2 - 1) * 64  # significand 1.m in [1, 2) -> m in [0, 1) -> 64 cells
    chi2_check(np.bincount(top.astype(np.int64), minlength=64), np.full(64, 1 / 64))
    # ... and the last bits too: U* uses every one of the 52 significand bits
    low = (u.view(np.uint64) & np.uint64(0xF)).astype(np.int64)
    chi2_check(np.bincount(low, minlength=16), np.full(16, 1 / 16))


class _ZeroWords(np.random.Generator):
    """A Generator whose first 64-bit words are all zero: drives the sampler into the subnormal
    branch (probability 2^-1022 with a real Generator)."""

    def __init__(self, zero_words: int, mant: int) -> None:
        super().__init__(np.random.PCG64(0))
        self.left, self.mant = zero_words, mant

    def integers(self, low, high, size=None, dtype=np.int64):
        if high == 2**64:
            if self.left > 0:
                self.left -= 1
                return np.zeros(size, dtype=np.uint64)
            return np.full(size, 2**63, dtype=np.uint64)
        return np.full(size, self.mant, dtype=dtype)


def test_uniform_doubles_subnormal_branch():
    u = sample_uniform_doubles(2, _ZeroWords(16, mant=3))  # 16 * 64 >= 1022 zero bits
    assert np.all(u == 3 * 2.0**-1074)
    u = sample_uniform_doubles(1, _ZeroWords(15, mant=0))  # 960 zeros then a 1: a normal binade
    assert u[0] == 2.0 ** -(15 * 64 + 1)


# --------------------------------------------------------------------------------------------------
# LN: correctly rounded logarithm


def test_log_is_correctly_rounded_against_exact_decimal_log():
    rng = np.random.default_rng(2)
    u = np.concatenate([sample_uniform_doubles(2000, rng), 1 - rng.random(200) * 2.0**-40,
                        np.ldexp(1 + rng.random(200), -rng.integers(1, 1070, 200)), [0.5, 0.25, 1e-300, 5e-324]])
    got = log_correctly_rounded(u)
    want = np.array([_log_exact(float(x)) for x in u])
    np.testing.assert_array_equal(got, want)


def test_log_fast_path_agrees_with_exact_on_hard_cases():
    # the draws whose long-double log lies nearest a rounding boundary of the double: the ones the
    # fast path must send to the exact path, and the ones numpy's double log gets wrong
    rng = np.random.default_rng(3)
    u = sample_uniform_doubles(200_000, rng)
    yl = np.log(u.astype(np.longdouble))
    y = yl.astype(np.float64)
    frac = np.abs((yl - y.astype(np.longdouble)) / np.spacing(np.abs(y)).astype(np.longdouble))
    hard = u[np.argsort(-frac.astype(np.float64))[:300]]  # |distance to the double| near half an ulp
    np.testing.assert_array_equal(log_correctly_rounded(hard), [_log_exact(float(x)) for x in hard])
    # numpy's double log is faithful but not correctly rounded: it misses on some of these
    assert np.any(np.log(hard) != log_correctly_rounded(hard))


def test_long_double_log_error_is_within_the_assumed_margin():
    # The one residual assumption of the fast path: the platform's long-double log errs by less
    # than _LOGL_ULPS (4) long-double ulps. Measured here against the 50-digit decimal log.
    from decimal import Decimal, localcontext

    from dpharness.mechanisms import snapping

    if not snapping._LONG_DOUBLE_OK:
        pytest.skip("no extended long double: every log takes the exact path")
    rng = np.random.default_rng(4)
    u = np.concatenate([sample_uniform_doubles(1500, rng), np.ldexp(1 + rng.random(300), -rng.integers(1, 1070, 300))])
    yl = np.log(u.astype(np.longdouble))
    worst = 0.0
    with localcontext() as ctx:
        ctx.prec = 50
        for x, y in zip(u, yl):
            err = (Fraction(Decimal(float(x)).ln()) - Fraction(*y.as_integer_ratio())) / Fraction(
                *np.spacing(abs(y)).as_integer_ratio())
            worst = max(worst, abs(float(err)))
    assert worst < snapping._LOGL_ULPS / 2, worst


def test_log_rejects_non_positive():
    with pytest.raises(ValueError, match="positive finite"):
        log_correctly_rounded(np.array([0.5, 0.0]))


# --------------------------------------------------------------------------------------------------
# snapping


def test_round_half_up_is_exact():
    q = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999999999999994, -0.49999999999999994,
                  -0.5000000000000001, 2.0**51 + 0.5, -(2.0**51) - 0.5, 3.0, -3.0, 1e-300, -1e-300])
    want = [math.floor(Fraction(x) + Fraction(1, 2)) for x in q]
    np.testing.assert_array_equal(_round_half_up(q), want)


def test_snapping_calibration_is_the_smallest_scale_meeting_the_theorem():
    for eps, sens, b in [(1.0, 1.0, 1024.0), (0.3, 3.0, 1e6), (2.5, 0.1, 50.0), (1e-3, 1.0, 1e7)]:
        unit, lam, snap, eb = snap_parameters(eps, sens, b)
        top = Fraction(unit) + Fraction(b) / 2**49
        assert unit >= sens > unit / 2 and math.frexp(unit)[0] == 0.5
        assert top / Fraction(lam) <= Fraction(eps) < top / Fraction(math.nextafter(lam, 0))
        assert snap >= lam > snap / 2 and math.frexp(snap)[0] == 0.5
        assert eb <= eps
    m = mechanisms.make("snapping", epsilon=1.0)
    assert (m.unit, m.snap, m.bound) == (1.0, 2.0, 1024.0) and m.scale == 1 + 2.0**-39
    assert m.claim.epsilon == 1.0 and m.claim.neighbours == "value" and m.claim.sensitivity == 1.0


def test_snapping_outputs_are_multiples_of_the_snap_or_the_bound():
    m = Snapping(epsilon=0.7, sensitivity=3.0, bound=100.0)  # lam = 5.71.., Lam = 8; 100 is not a multiple
    y = m.sample(95.3, size=50_000, rng=5)  # near the bound: some draws clamp to 100
    on_grid = np.mod(y, m.snap) == 0
    assert np.all(on_grid | (np.abs(y) == m.bound)) and np.any(np.abs(y) == m.bound)
    assert np.all(np.abs(y) <= m.bound)
    # in float terms: the lowest set bit of every non-zero, non-bound output is >= Lam = 2^3
    lab = float_labels(y[(y != 0) & on_grid])
    assert lab[:, 2].min() >= 3
    assert not np.any(np.signbit(y) & (y == 0))  # no -0.0


def test_snapping_is_exactly_scale_equivariant():
    # the argument behind the sensitivity != 1 claim: the mechanism for sensitivity 2 is exactly
    # twice the one for sensitivity 1 at half the input and bound, draw by draw
    a = Snapping(epsilon=0.9, sensitivity=1.0, bound=300.0).sample(1.2345, size=5000, rng=6)
    b = Snapping(epsilon=0.9, sensitivity=2.0, bound=600.0).sample(2.469, size=5000, rng=6)
    np.testing.assert_array_equal(2 * a, b)


@pytest.mark.statistical
@pytest.mark.parametrize("f", [0.0, 0.3, 1023.4])
def test_snapping_sampler_matches_its_law(f):
    m, _ = Snapping.example()
    y = m.sample(f, size=200_000, rng=7)
    law = m.distribution(f)
    k = np.rint(y / m.snap).astype(np.int64)
    lo, hi = int(k.min()) - 1, int(k.max()) + 1
    idx = np.arange(lo, hi + 1)
    p = np.exp(law.log_pmf_index(idx))
    p = np.concatenate([[law.cdf(m.snap * (lo - 1))], p, [1 - law.cdf(m.snap * hi)]])
    counts = np.concatenate([[0], np.bincount(k - lo, minlength=idx.size), [0]])
    chi2_check(counts, p / p.sum())


def test_snapping_law_is_normalised_and_exact_mode_holds_the_claim():
    m, _ = Snapping.example()
    for f in (0.0, 0.99, -1024.0, 1024.0, 1023.0, 5000.0):
        law = m.distribution(f)
        assert abs(np.exp(law.log_mass).sum() - 1) < 1e-12
    ex = V.exact(m, 0.0, 1.0)
    assert not ex.violated and 0.99 < ex.epsilon <= 1.0 + 1e-9
    with pytest.raises(ValueError, match="multiple of the snapping step"):
        Snapping(epsilon=1.0, bound=1023.0).distribution(0.0)


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": 0.0}, "epsilon"), ({"epsilon": -1.0}, "epsilon"), ({"epsilon": float("nan")}, "epsilon"),
    ({"epsilon": 1.0, "bound": 0.0}, "bound"), ({"epsilon": 1.0, "bound": -5.0}, "bound"),
    ({"epsilon": 1.0, "bound": float("inf")}, "bound"),
    ({"epsilon": 1.0, "sensitivity": 0.0}, "sensitivity"), ({"epsilon": 1.0, "sensitivity": -1.0}, "sensitivity"),
    ({"epsilon": 1.0, "bound": 0.5}, "bound must satisfy lam < bound"),  # B <= lam
    ({"epsilon": 1.0, "bound": 2.0**47}, "bound must satisfy lam < bound"),  # B >= 2^46 lam
    ({"epsilon": 1e200, "bound": 1.0}, "epsilon must be between"),
    ({"epsilon": 1.0, "sensitivity": 2.0**500}, "sensitivity must be between"),
])
def test_snapping_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Snapping(**kwargs)


@pytest.mark.parametrize("data, match", [(None, "missing"), (float("nan"), "finite"), ([1.0, 2.0], "one real"),
                                         ("x", "one real")])
def test_float_safe_mechanisms_reject_bad_data(data, match):
    for name in ("snapping", "discrete_laplace"):
        m, _ = mechanisms.registry.get(name).example()
        with pytest.raises(ValueError, match=match):
            m.sample(data, size=3, rng=0)


# --------------------------------------------------------------------------------------------------
# discrete Laplace


@pytest.mark.statistical
def test_bernoulli_exp_probabilities():
    rng = np.random.default_rng(8)
    n = 100_000
    for num, den in [(1, 3), (1, 1)]:
        b = bernoulli_exp(np.full(n, num), np.full(n, den), rng)
        p = math.exp(-num / den)
        # one binomial proportion: |z| > the two-sided Bonferroni quantile fails
        z = (b.sum() - n * p) / math.sqrt(n * p * (1 - p))
        assert abs(z) < stats.norm.ppf(1 - FAMILY_ALPHA / (2 * STAT_TESTS)), (num, den, z)
    assert bernoulli_exp(np.zeros(10, np.int64), np.full(10, 7), rng).all()  # exp(0) = 1


@pytest.mark.statistical
@pytest.mark.parametrize("s, t", [(1, 1), (1, 4), (3, 2), (2**10, 3 * 2**9)])
def test_discrete_laplace_sampler_matches_its_law(s, t):
    z = sample_discrete_laplace(200_000, s, t, np.random.default_rng(9))
    assert z.dtype == np.int64
    a = s / t
    L = int(z.__abs__().max()) + 1
    zs = np.arange(-L, L + 1)
    p = (1 - math.exp(-a)) / (1 + math.exp(-a)) * np.exp(-a * np.abs(zs))
    tail = math.exp(-a * (L + 1)) / (1 + math.exp(-a))  # P[Z >= L + 1] = P[Z <= -(L + 1)]
    p = np.concatenate([[tail], p, [tail]])
    counts = np.concatenate([[0], np.bincount(z + L, minlength=zs.size), [0]])
    chi2_check(counts, p / p.sum())


def test_discrete_laplace_calibration():
    for eps, sens, g in [(1.0, 1.0, 1.0), (1.0, 1.0, 0.25), (0.37, 1.5, 0.5), (5.0, 0.1, 2.0**-8), (1e-3, 10.0, 1.0)]:
        m_, s, t = noise_parameters(eps, sens, g)
        assert m_ == math.ceil(Fraction(sens) / Fraction(g))
        loss = Fraction(m_ * s, t)
        assert loss <= Fraction(eps) and loss > Fraction(eps) * (1 - Fraction(1, 2**39))
    # rounding to the grid: 1.5 / 0.5 = 3 steps exactly; 1.2 / 0.5 rounds up to 3 steps as well
    assert DiscreteLaplace(epsilon=1.0, sensitivity=1.5, step=0.5).steps == 3
    assert DiscreteLaplace(epsilon=1.0, sensitivity=1.2, step=0.5).steps == 3
    m = DiscreteLaplace(epsilon=0.5, sensitivity=1.0, step=0.25)
    assert m.epsilon_used <= 0.5 and m.steps * m.decay <= 0.5 + 1e-15


def test_discrete_laplace_rounding_never_exceeds_the_steps():
    # |k0(f) - k0(f')| <= ceil(sensitivity/step) for |f - f'| <= sensitivity, ties and negative f included
    m = DiscreteLaplace(epsilon=1.0, sensitivity=0.75, step=0.5)
    fs = np.concatenate([np.arange(-3, 3, 0.125), np.random.default_rng(10).uniform(-3, 3, 200)])
    for f in fs:
        for d in (0.75, -0.75, 0.5, 0.7499999999999999):
            assert abs(m._index(f) - m._index(f + d)) <= m.steps


def test_discrete_laplace_outputs_are_grid_points():
    m = DiscreteLaplace(epsilon=1.0, sensitivity=1.0, step=2.0**-6)
    y = m.sample(0.123456789, size=50_000, rng=11)
    assert np.all(np.mod(y, 2.0**-6) == 0)
    assert float_labels(y[y != 0])[:, 2].min() >= -6
    bounded = DiscreteLaplace(epsilon=1.0, sensitivity=1.0, step=0.25, bound=2.0)
    yb = bounded.sample(1.9, size=20_000, rng=12)
    assert np.all(np.abs(yb) <= 2.0) and np.any(yb == 2.0) and np.all(np.mod(yb, 0.25) == 0)


@pytest.mark.statistical
@pytest.mark.parametrize("f", [0.3, 1023.9])
def test_discrete_laplace_mechanism_matches_its_law(f):
    m, _ = DiscreteLaplace.example()
    y = m.sample(f, size=200_000, rng=13)
    law = m.distribution(f)
    k = np.rint(y / m.step).astype(np.int64)
    lo, hi = int(k.min()) - 1, int(k.max()) + 1
    p = np.exp(law.log_pmf_index(np.arange(lo, hi + 1)))
    p = np.concatenate([[law.cdf(m.step * (lo - 1))], p, [1 - law.cdf(m.step * hi)]])
    counts = np.concatenate([[0], np.bincount(k - lo, minlength=hi - lo + 1), [0]])
    chi2_check(counts, p / p.sum())


def test_discrete_laplace_law_needs_a_bound():
    with pytest.raises(ValueError, match="only with a bound"):
        DiscreteLaplace(epsilon=1.0).distribution(0.0)
    m, _ = DiscreteLaplace.example()
    assert not V.exact(m, 0.0, 1.0).violated


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": 0.0}, "epsilon"), ({"epsilon": -2.0}, "epsilon"),
    ({"epsilon": 1.0, "step": 0.3}, "step must be a power of two"), ({"epsilon": 1.0, "step": 0.0}, "step"),
    ({"epsilon": 1.0, "step": -0.5}, "step"), ({"epsilon": 1.0, "sensitivity": 0.0}, "sensitivity"),
    ({"epsilon": 1.0, "bound": 0.0}, "bound"), ({"epsilon": 1.0, "bound": -4.0}, "bound"),
    ({"epsilon": 1.0, "step": 0.5, "bound": 1.3}, "bound must be a multiple of step"),
    ({"epsilon": 1.0, "bound": 2.0**60}, "at most 2\\^52 steps"),
    ({"epsilon": 1e-12, "step": 2.0**-20}, "grid steps"),
])
def test_discrete_laplace_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DiscreteLaplace(**kwargs)


# --------------------------------------------------------------------------------------------------
# float-event audits: the float-safe members pass, the textbook Laplace does not


@pytest.mark.parametrize("name", ["snapping", "discrete_laplace"])
def test_float_safe_members_pass_a_float_event_audit(name):
    m, _ = mechanisms.registry.get(name).example()
    assert m.claim.epsilon == 1.0
    v = V.audit(m, 0.0, 1.0, samples=200_000, alpha=1e-3, rng=0, float_events=True)
    assert not v.violated, v.summary


def test_textbook_laplace_is_flagged_on_the_same_pair():
    textbook = V.wrap(lambda d, n, rng: d + rng.laplace(0, 1.0, n), epsilon=1, neighbours="value")
    v = V.audit(textbook, 0.0, 1.0, samples=200_000, alpha=1e-3, rng=0, float_events=True)
    assert v.violated and v.support_violation


def test_float_audit_rows():
    import pandas as pd

    from dpharness.bench.config import load_config
    from dpharness.bench.experiments import float_audit as fa

    cfg = load_config({"name": "fa", "experiment": "float_audit", "seed": 0, "budget": 20_000,
                       "mechanisms": ["exponential", "snapping"]})
    tasks = fa.tasks(cfg.spec)
    assert [t.params["float_events"] for t in tasks] == ["not applicable", "on", "off"]
    rows = pd.DataFrame([r for t in tasks for r in fa.run_task(cfg.spec, t, None)])
    assert rows.loc[0, "kind"] == "finite" and not rows.loc[1, "violated"]
    assert rows.loc[2, "calls"] <= 20_000
    assert "finite output: not applicable" in fa.table(rows, cfg.spec.names)
