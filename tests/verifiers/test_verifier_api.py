"""The verifier's public API: audit, search, exact, wrap and the frozen Verdict."""

import dataclasses
import inspect
import math

import numpy as np
import pytest

from dpharness import verifiers
from dpharness.verifiers.controls import zoo

VERDICT_FIELDS = ["epsilon_claimed", "delta_claimed", "epsilon_lower", "epsilon_estimate", "delta_lower", "violated",
                  "witness", "support_violation", "detectable_epsilon", "blind_delta", "summary"]


def test_signatures_are_the_contract():
    a = inspect.signature(verifiers.audit).parameters
    assert list(a)[:3] == ["mechanism", "d1", "d2"]
    assert a["samples"].kind is inspect.Parameter.KEYWORD_ONLY and a["samples"].default is inspect.Parameter.empty
    assert a["alpha"].default == 0.05 and a["rng"].default is None
    s = inspect.signature(verifiers.search).parameters
    assert list(s)[0] == "mechanism"
    assert s["generator"].default == "auto" and s["budget"].default is inspect.Parameter.empty
    assert s["alpha"].default == 0.05 and s["rng"].default is None
    assert list(inspect.signature(verifiers.exact).parameters) == ["mechanism", "d1", "d2"]
    w = inspect.signature(verifiers.wrap).parameters
    assert w["delta"].default == 0.0 and w["kind"].default == "real"
    assert all(w[k].kind is inspect.Parameter.KEYWORD_ONLY for k in ("epsilon", "delta", "neighbours", "kind"))


def test_verdict_fields_frozen_and_witness_replays():
    m = zoo.make("em_missing_half")
    v = verifiers.audit(m, [0.0, 4.0], [1.0, 3.0], samples=4000, rng=21)
    names = [f.name for f in dataclasses.fields(verifiers.Verdict)]
    assert all(f in names for f in VERDICT_FIELDS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.violated = False  # type: ignore[misc]
    assert v.violated and v.epsilon_lower > 1.0 and v.epsilon_estimate >= v.epsilon_lower
    assert v.delta_lower == 0.0  # pure claim
    w = v.witness
    assert w.direction in ("d1>d2", "d2>d1") and w.seed == 21 and w.samples > 0
    assert isinstance(w.event, verifiers.Event) and len(w.counts) == 2
    assert v.blind_delta == pytest.approx(verifiers.blind_delta(w.samples, 0.05))
    assert 0 < v.detectable_epsilon < math.inf
    assert "VIOLATED" in v.summary and str(w.seed) in v.summary
    # Replaying the witness (same seed, its event and direction, its certification size) draws the
    # very same certification samples: same counts and bound.
    r = verifiers.audit(m, w.d1, w.d2, samples=w.samples, rng=w.seed, event=w.event, direction=w.direction)
    assert r.witness.counts == w.counts and r.epsilon_lower == pytest.approx(v.epsilon_lower)
    # Same seed, same verdict; Generators and SeedSequences are accepted
    assert verifiers.audit(m, [0.0, 4.0], [1.0, 3.0], samples=4000, rng=21).epsilon_lower == v.epsilon_lower
    verifiers.audit(m, [0.0, 4.0], [1.0, 3.0], samples=100, rng=np.random.default_rng(1))
    verifiers.audit(m, [0.0, 4.0], [1.0, 3.0], samples=100, rng=np.random.SeedSequence(2))


def test_no_violation_reports_power_and_blind_spot():
    m = zoo.make("em")
    v = verifiers.audit(m, [0.0, 4.0], [1.0, 3.0], samples=2000, alpha=1e-3, rng=2)
    assert not v.violated
    assert "No violation found" in v.summary and "invisible" in v.summary
    assert v.blind_delta == pytest.approx(-math.expm1(math.log(1e-3) / v.witness.samples))


def test_approximate_claim_reports_delta_lower():
    m = zoo.make("ss_median_big_beta")
    w = m.witness()
    v = verifiers.audit(m, w.d1, w.d2, samples=50000, rng=3)
    assert v.delta_claimed == 1e-3
    assert v.violated == (v.delta_lower > v.delta_claimed)
    assert v.violated and v.delta_lower > 1e-3


def test_search_finds_broken_and_counts_calls():
    m = zoo.make("rnm_shared_noise")
    v = verifiers.search(m, budget=4000, rng=4)
    assert v.violated and v.support_violation and v.pairs_tried > 1
    assert v.calls <= 4000
    assert verifiers.are_neighbours(v.witness.d1, v.witness.d2, m.claim)
    # explicit pairs and a family name are accepted as generators
    v2 = verifiers.search(m, generator=[([1.0, 0.0], [0.0, 1.0])], budget=1000, rng=5)
    assert v2.violated and v2.pairs_tried == 1
    assert verifiers.search(m, generator="scores", budget=4000, rng=6).pairs_tried > 1


def test_wrap_plain_function_real_and_finite():
    def noisy_sum(data, size, rng):
        return float(np.sum(data)) + rng.laplace(scale=1.0, size=size)

    mech = verifiers.wrap(noisy_sum, epsilon=0.5, neighbours="add_remove", sensitivity=1.0,
                          attributes={"lower": 0.0, "upper": 1.0})
    assert mech.claim.epsilon == 0.5 and mech.kind == "real" and mech.lower == 0.0
    assert mech.sample([1.0, 0.0], size=3, rng=1).shape == (3,)
    assert np.ndim(mech.sample([1.0], rng=1)) == 0
    # Lap(1) on a sum of records in [0, 1] is 1-DP, claimed 0.5: flagged
    v = verifiers.audit(mech, [0.0, 1.0], [0.0, 1.0, 1.0], samples=4000, rng=7)
    assert v.violated and v.epsilon_lower > 0.5
    assert verifiers.search(mech, budget=20000, rng=8).violated

    def rr(data, size, rng):  # randomized response with e^1 odds: 1-DP
        keep = rng.random(size) < math.e / (1 + math.e)
        return np.where(keep, int(data), 1 - int(data))

    fin = verifiers.wrap(rr, epsilon=1.0, neighbours="bit", kind="finite")
    v = verifiers.audit(fin, 0, 1, samples=20000, alpha=1e-6, rng=9)
    assert not v.violated and v.epsilon_lower > 0.8


def test_wrap_and_audit_reject_bad_input():
    with pytest.raises(TypeError, match="fn must be callable"):
        verifiers.wrap(3, epsilon=1.0)
    with pytest.raises(ValueError, match="kind"):
        verifiers.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0, kind="integer")
    with pytest.raises(ValueError, match="epsilon"):
        verifiers.wrap(lambda d, n, r: np.zeros(n), epsilon=-1.0)
    with pytest.raises(ValueError, match="neighbours"):
        verifiers.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0, neighbours="friends")
    bad = verifiers.wrap(lambda d, n, r: np.zeros(n + 1), epsilon=1.0, neighbours="value")
    with pytest.raises(ValueError, match="must return"):
        verifiers.audit(bad, 0.0, 1.0, samples=100, rng=1)
    ok = verifiers.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0, neighbours="value")
    with pytest.raises(ValueError, match="samples"):
        verifiers.audit(ok, 0.0, 1.0, samples=1, rng=1)
    with pytest.raises(ValueError, match="alpha"):
        verifiers.audit(ok, 0.0, 1.0, samples=100, alpha=0.0, rng=1)
    with pytest.raises(ValueError, match="rng"):
        verifiers.audit(ok, 0.0, 1.0, samples=100, rng=-3)
    with pytest.raises(ValueError, match="not value neighbours.*exceeds the sensitivity"):  # |0 - 5| > 1
        verifiers.audit(ok, 0.0, 5.0, samples=100, rng=1)
    with pytest.raises(ValueError, match="budget"):
        verifiers.search(ok, budget=3, rng=1)
    # NaN is a legal scalar output ("no answer"): always NaN is as private as a constant
    nan = verifiers.wrap(lambda d, n, r: np.full(n, np.nan), epsilon=1.0, neighbours="value")
    assert not verifiers.audit(nan, 0.0, 1.0, samples=100, rng=1).violated


def test_neighbour_relations():
    from dpharness.mechanisms.base import PrivacyClaim

    ar = PrivacyClaim(1.0, neighbours="add_remove")
    assert verifiers.are_neighbours([1, 2], [1, 2, 3], ar) and verifiers.are_neighbours([1, 2, 3], [2, 1], ar)
    assert not verifiers.are_neighbours([1, 2], [1, 3], ar)
    ro = PrivacyClaim(1.0, neighbours="replace_one")
    assert verifiers.are_neighbours([1, 2], [1, 3], ro) and not verifiers.are_neighbours([1, 2], [3, 4], ro)
    sl = PrivacyClaim(1.0, neighbours="score_linf", sensitivity=1.0)
    assert verifiers.are_neighbours([0, 4], [1, 3], sl) and not verifiers.are_neighbours([0, 4], [2, 4], sl)
    sm = PrivacyClaim(1.0, neighbours="score_monotone", sensitivity=1.0)
    assert not verifiers.are_neighbours([0, 4], [1, 3], sm) and verifiers.are_neighbours([0, 4], [1, 5], sm)
    with pytest.raises(ValueError, match="not score_linf neighbours: an entry moves by 2"):
        verifiers.check_neighbours([0, 4], [2, 4], sl)
    # every generated pair is legal under the declared relation
    for name in zoo.available():
        m = zoo.make(name)
        for p in verifiers.pairs_for(m):
            assert verifiers.are_neighbours(p.d1, p.d2, m.claim), (name, p.label)
