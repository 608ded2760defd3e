"""Floating-point representation events (verifiers.events.floats): exact labels, the Sterbenz leak of a
textbook float Laplace, float-safe releases that pass, and soundness with float events on."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpharness import verifiers
from dpharness.testing import assert_dp
from dpharness.verifiers.statistical import batch as statistical
from dpharness.verifiers.events import Event, float_candidates, float_labels
from dpharness.verifiers.events.bits import INF, NAN, ZERO


def _brute_label(x: float) -> tuple[int, int, int]:
    """(sign, binade, low) from the exact rational value of the double (no bit tricks)."""
    sign = 1 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return (0, NAN, NAN)
    if math.isinf(x):
        return (sign, INF, INF)
    if x == 0.0:
        return (sign, ZERO, ZERO)
    f = Fraction(abs(x))
    num, den = f.numerator, f.denominator
    low = -(den.bit_length() - 1) if den > 1 else (num & -num).bit_length() - 1
    # den is a power of two and num is odd when den > 1 (reduced fraction)
    return (sign, math.frexp(x)[1], low)


def test_float_labels_match_the_exact_rational_value():
    rng = np.random.default_rng(3)
    xs = np.concatenate([
        rng.laplace(0, 1, 300), rng.normal(0, 1e-300, 50), rng.normal(0, 1e300, 50),
        np.arange(-20, 21, dtype=np.float64), 2.0 ** np.arange(-1074, 1024, 37),
        [5e-324, -5e-324, 2.2250738585072014e-308, 1.0 - 2**-53, 0.1, 1 / 3, 0.0, -0.0,
         np.inf, -np.inf, np.nan, np.finfo(float).max],
    ])
    got = float_labels(xs)
    want = np.array([_brute_label(float(x)) for x in xs])
    np.testing.assert_array_equal(got, want)


def test_candidate_counts_are_the_event_counts():
    rng = np.random.default_rng(1)
    y1 = rng.laplace(0, 1, 3000)
    y2 = 1.0 + rng.laplace(0, 1, 3000)
    cand = float_candidates(y1, y2)
    assert len(cand) > 20
    for i in np.linspace(0, len(cand) - 1, 25).astype(int):
        ev = cand.event(int(i))
        assert ev.kind == "float"
        assert ev.count(y1) == cand.c1[i] and ev.count(y2) == cand.c2[i], str(ev)


def test_sterbenz_event_is_exactly_one_sided():
    # x = 1: every output in (0, 1/4) is 1 + Y with Y in [-1, -3/4], computed exactly (Sterbenz), so
    # a multiple of 2^-53; x = 0: the output Y in [1/8, 1/4) has its last bit at 2^-55 half the time
    rng = np.random.default_rng(0)
    y0 = rng.laplace(0, 1, 200_000)
    y1 = 1.0 + rng.laplace(0, 1, 200_000)
    low1 = float_labels(y1)[:, 2]
    assert np.all(low1[(y1 > 0) & (y1 < 0.25)] >= -53)
    low0 = float_labels(y0)[:, 2]
    assert np.mean(low0[(y0 > 0) & (y0 < 0.25)] < -53) > 0.3


def _textbook(eps: float = 1.0):
    return verifiers.wrap(lambda d, n, rng: float(d) + rng.laplace(0, 1.0 / eps, size=n), epsilon=eps,
                          neighbours="value", name="textbook_laplace")


def _geometric(eps: float = 1.0):
    # two-sided geometric (discrete Laplace) P[z] ~ exp(-eps |z|): difference of two geometrics on {0, 1, ...}
    p = 1.0 - math.exp(-eps)

    def fn(d, n, rng):
        return float(d) + (rng.geometric(p, size=n) - rng.geometric(p, size=n)).astype(np.float64)

    return verifiers.wrap(fn, epsilon=eps, neighbours="value", name="geometric")


def _grid_laplace(eps: float = 1.0, step: float = 2.0**-8):
    # a real Laplace release rounded to a power-of-two grid: post-processing of the ideal Laplace, and
    # (for grid-aligned inputs) exactly so in floating point too -- every output is a multiple of step
    def fn(d, n, rng):
        return float(d) + np.round(rng.laplace(0, 1.0 / eps, size=n) / step) * step

    return verifiers.wrap(fn, epsilon=eps, neighbours="value", name="grid_laplace")


def test_textbook_float_laplace_is_a_support_violation_with_float_events():
    m = _textbook()
    off = verifiers.audit(m, 0.0, 1.0, samples=200_000, alpha=1e-3, rng=7)
    assert not off.violated  # the real value is 1-DP: no event on it can see the leak
    # 10^5 draws per dataset on average (Poisson-sized certification): well within the 2 * 10^5 target
    on = verifiers.audit(m, 0.0, 1.0, samples=100_000, alpha=1e-3, rng=7, float_events=True)
    # the leak is seen both by the output's bit labels and by reachability from the data (the value
    # 0 or 1 plus numpy's Laplace); either family may win
    assert on.violated and on.support_violation and on.witness.event.kind in ("float", "reachable")
    assert on.witness.selection_samples + max(on.witness.draws) <= 200_000
    assert "bits of y" in on.summary or "laplace sampler" in on.summary
    only_bits = verifiers.audit(m, 0.0, 1.0, samples=100_000, alpha=1e-3, rng=7, events={"floats"})
    assert only_bits.violated


@pytest.mark.parametrize("make", [_geometric, _grid_laplace])
def test_float_safe_releases_pass_the_float_audit(make):
    v = verifiers.audit(make(), 0.0, 1.0, samples=200_000, alpha=1e-3, rng=11, float_events=True)
    assert not v.violated, v.summary


def _dpsniper_float_laplace(data, n, rng):
    """DP-Sniper's floating-point experiment: np.random.laplace(loc=x, scale=1/0.1) on one float."""
    return rng.laplace(float(np.asarray(data).ravel()[0]), 10.0, n)


def _dpsniper_float_fixed(data, n, rng):
    """Its fixed variant (Mironov's snapping as DP-Sniper wrote it): B = 100, scale (1 + B 2^-49)/0.1,
    Lambda = 16 (the smallest power of two >= scale), clamp, add sign * scale * ln(u), round, clamp."""
    b, scale, lam = 100.0, (1.0 + 100.0 * 2.0 ** -49) / 0.1, 16.0
    loc = min(b, max(-b, float(np.asarray(data).ravel()[0])))
    sign = 1 - 2 * rng.integers(0, 2, n)
    return np.clip(np.round((loc + sign * scale * np.log(rng.random(n))) / lam) * lam, -b, b)


def test_dpsniper_floating_point_experiment():
    # DP-Sniper (S&P 2021) certifies 0.252 against the claim 0.1 on [1] vs [0] with a classifier on the
    # 64 output bits, and 0.098 on the fixed variant. Float events give a support violation on its
    # own pairs ([1] vs [0], [1] vs [2], swapped) from a search of 4 * 10^5 calls; the fixed one passes.
    pairs = [([1.0], [0.0]), ([0.0], [1.0]), ([1.0], [2.0]), ([2.0], [1.0])]
    bad = verifiers.wrap(_dpsniper_float_laplace, epsilon=0.1, neighbours="one_differ")
    v = verifiers.search(bad, generator=pairs, budget=400_000, alpha=1e-3, rng=1, float_events=True)
    assert v.violated and v.support_violation and v.epsilon_lower > 2.0
    fixed = verifiers.wrap(_dpsniper_float_fixed, epsilon=0.1, neighbours="one_differ")
    w = verifiers.search(fixed, generator=pairs, budget=400_000, alpha=1e-3, rng=1, float_events=True)
    assert not w.violated, w.summary


def test_float_events_in_search_sequential_and_assert_dp():
    m = _textbook()
    v = verifiers.search(m, budget=100_000, alpha=1e-3, rng=2, float_events=True)
    assert v.violated and v.support_violation
    s = verifiers.audit(m, 0.0, 1.0, samples=100_000, alpha=1e-3, rng=2, float_events=True, sequential=True)
    assert s.violated and s.calls < 2 * 100_000
    with pytest.raises(AssertionError, match="bits of y|laplace sampler"):
        assert_dp(lambda d, n, rng: float(d) + rng.laplace(0, 1.0, size=n), 0.0, 1.0, epsilon=1.0,
                  neighbours="value", budget=100_000, alpha=1e-3, rng=3, float_events=True)


def test_mechanism_default_and_bad_values():
    m = verifiers.wrap(lambda d, n, rng: float(d) + rng.laplace(0, 1.0, size=n), epsilon=1.0,
                       neighbours="value", float_events=True)
    assert statistical.resolve_float_events(m, None) is True
    assert statistical.resolve_float_events(m, False) is False
    assert verifiers.audit(m, 0.0, 1.0, samples=50_000, alpha=1e-3, rng=1).violated  # the default is used
    with pytest.raises(TypeError, match="float_events"):
        verifiers.audit(m, 0.0, 1.0, samples=100, rng=1, float_events="yes")
    with pytest.raises(TypeError, match="float_events"):
        verifiers.wrap(lambda d, n, rng: np.zeros(n), epsilon=1.0, float_events=1)


def test_float_events_on_vector_rows_and_finite_outputs():
    def rows(d, n, rng):
        return np.stack([float(d) + rng.laplace(0, 1.0, size=n), np.zeros(n)], axis=1)

    m = verifiers.wrap(rows, epsilon=1.0, neighbours="value")
    v = verifiers.audit(m, 0.0, 1.0, samples=100_000, alpha=1e-3, rng=4, float_events=True)
    assert v.violated and v.witness.event.kind == "float" and v.witness.event.coord == 0
    # finite outputs have no float events: the flag changes nothing
    rr = verifiers.wrap(lambda d, n, rng: (rng.random(n) < (0.5 + 0.1 * d)).astype(int), epsilon=1.0,
                        neighbours="bit", kind="finite")
    a = verifiers.audit(rr, 0, 1, samples=5000, rng=5)
    b = verifiers.audit(rr, 0, 1, samples=5000, rng=5, float_events=True)
    assert a.epsilon_lower == b.epsilon_lower


def test_event_string_names_the_bits():
    ev = Event("float", values=((1, 0, -52), (0, -1, -54)))
    assert str(ev) == "{bits of y: -[2^-1, 2^0), lowest set bit 2^-52; +[2^-2, 2^-1), lowest set bit 2^-54}"
    assert ev.contains(np.array([-0.75, 0.25 + 2**-54, 0.25])).tolist() == [False, True, False]
    lattice = Event("float", values=((0, -54),))
    assert lattice.contains(np.array([0.25 + 2**-54, 3 * 2**-54, 0.25])).tolist() == [True, True, False]


# -- soundness (thorough tier) -----------------------------------------------------------------

SEEDS = 200
ALPHA = 0.05


def _registered(name: str):
    def make():
        from dpharness import mechanisms

        return mechanisms.registry.get(name).example()[0]

    make.__name__ = name
    return make


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("make", [_geometric, _grid_laplace, _registered("snapping"), _registered("discrete_laplace")],
                         ids=["geometric", "grid_laplace", "snapping", "discrete_laplace"])
def test_float_events_keep_the_false_violation_rate(make):
    # Tight controls (true loss = the claim on the pair 0 vs 1): each audit is a level-ALPHA test, so
    # over SEEDS independent seeds the false violations are at most Bin(SEEDS, ALPHA); fail only above
    # its 1 - 1e-6 quantile (17 of 200), so a sound verifier fails this with probability < 1e-6.
    m = make()
    flagged = sum(verifiers.audit(m, 0.0, 1.0, samples=20_000, alpha=ALPHA, rng=1000 + s, float_events=True).violated
                  for s in range(SEEDS))
    limit = int(stats.binom.isf(1e-6, SEEDS, ALPHA))
    assert flagged <= limit, f"{flagged} false violations in {SEEDS} seeds (limit {limit})"


def test_float_events_per_coordinate_of_rows_up_to_the_width_cap():
    # 8 coordinates (wider than the interval events' 4): the textbook leak in coordinate 0 is found
    d = 8

    def textbook_rows(x, n, rng):
        return np.asarray(x, dtype=float)[None, :] + rng.laplace(0.0, 1.0, (n, d))

    m = verifiers.wrap(textbook_rows, epsilon=1.0, neighbours="one_differ")
    e0 = np.eye(d)[0]
    v = verifiers.audit(m, np.zeros(d), e0, samples=100_000, alpha=1e-3, rng=0, float_events=True)
    assert v.violated and v.support_violation and v.witness.event.kind == "float"
    assert not verifiers.audit(m, np.zeros(d), e0, samples=100_000, alpha=1e-3, rng=0).violated
