"""The zoo: every broken mechanism is flagged at its documented budget, every correct control passes.

Budgets are not tuned to the seed: for each broken mechanism the test first *computes* that the
audit at that budget detects the violation with probability >= 1 - 1e-6 (verifiers.power: exact
Poisson sums for a replayed witness, a provable lower bound for the automatic select-then-certify
audit), then runs it once with a fixed seed. A correct control is audited at alpha = 1e-6, so a
false flag on any fixed seed has probability <= 1e-6. The calibration test (slow) checks the
false-violation counts of tight controls over 200 seeds against the binomial bound of a sound test.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpharness import verifiers
from dpharness.verifiers import power
from dpharness.verifiers.controls import zoo

MIN_POWER = 1 - 1e-6

# Automatic audits (selection on a split, then certification; events="thresholds" for real outputs,
# the family power.audit_power analyses) at the witness pair, at budgets where power.audit_power's
# computed lower bound on the detection probability reaches 1 - 1e-6 (bounds at these budgets:
# em_missing_half 1 - 3.3e-7, rnm_monotone_scale 1 - 2.5e-7, rnm_shared_noise and ss_median_local
# 1 - 2.5e-7, laplace_inverted_scale 1 - 4.8e-7, rnm_exponential_value 1 - 4.2e-7,
# rnm_laplace_value 1 - 5.6e-7).
AUTO_BUDGET = {"em_missing_half": 4000, "rnm_monotone_scale": 8000, "rnm_shared_noise": 500, "ss_median_local": 500,
               "laplace_inverted_scale": 8000, "rnm_exponential_value": 24000, "rnm_laplace_value": 96000}
# Support bugs whose automatic audit at the seed below settles on a support event.
SUPPORT_FLAGGED = {"rnm_shared_noise", "ss_median_local"}
# ss_median_big_beta ((epsilon, delta) claim) has no computed bound for the automatic audit: the
# bound takes the worst of the 19 alpha splits the selection may choose, which no budget up to
# 64k overcomes; it has the simulation check below (test_big_beta_automatic_audit_simulated).
# Replaying the documented witness event (audit(..., event=, direction=)): exact power by
# power.certification_power.
REPLAY_BUDGET = {"laplace_inverted_scale": 200, "rnm_laplace_value": 3000, "rnm_exponential_value": 4000,
                 "ss_median_big_beta": 24000, "em_missing_half": 3000, "rnm_monotone_scale": 6000,
                 "rnm_shared_noise": 100, "ss_median_local": 100}


def test_every_broken_mechanism_has_a_budget_and_a_twin():
    broken = zoo.available(broken=True, structured=False)
    assert set(REPLAY_BUDGET) == set(broken)
    assert len(broken) == 8 and len(zoo.available(broken=False, structured=False)) == 7
    for name in broken:
        e = zoo.get(name)
        assert e.twin in zoo.available(broken=False)
        m = zoo.make(name)
        assert m.true_epsilon > m.claim.epsilon  # every positive control really is broken
        w = m.witness()
        assert verifiers.are_neighbours(w.d1, w.d2, m.claim)


@pytest.mark.parametrize("name", sorted(AUTO_BUDGET))
def test_broken_flagged_by_automatic_audit(name):
    m = zoo.make(name)
    w = m.witness()
    n = AUTO_BUDGET[name]
    assert power.audit_power(m, w, samples=n, alpha=0.05) >= MIN_POWER
    v = verifiers.audit(m, w.d1, w.d2, samples=n, alpha=0.05, rng=20240601, events="thresholds")
    assert v.violated and v.epsilon_lower > m.claim.epsilon
    if name in SUPPORT_FLAGGED:
        assert v.support_violation and v.epsilon_estimate == math.inf
    assert v.calls <= 2 * n + 12 * math.sqrt(n)  # Poisson certification around the budget


def test_vectorised_certification_power_matches_scalar():
    # audit_power evaluates the certification power of many cells at once; it must be the same
    # function as certification_power (pure and (epsilon, delta) claims).
    x = np.array([0.5, 0.01, 0.002, 0.3, 1e-4])
    y = np.array([0.07, 0.001, 0.0, 0.29, 5e-5])
    for eps, a1, a2, dl in ((0.5, 0.05, 0.0, 0.0), (1.0, 0.02, 0.03, 1e-3)):
        many = power._detect_many(x, y, 5000.0, eps, a1, a2, dl)
        one = [power.certification_power(a, b, 5000, eps, alpha1=a1, alpha2=a2, delta=dl) for a, b in zip(x, y)]
        assert many == pytest.approx(one, abs=1e-12)


def test_audit_power_bound_grows_with_budget():
    # A lower bound on a detection probability: within [0, 1], 0 where nothing can be claimed
    # (1000 samples of report noisy max's value), and higher at the larger budget.
    m = zoo.make("rnm_laplace_value")
    w = m.witness()
    lo, hi = (power.audit_power(m, w, samples=n, alpha=0.05) for n in (1000, 16000))
    assert lo == 0.0 and 0.99 < hi < 1.0


@pytest.mark.slow
def test_big_beta_automatic_audit_simulated():
    # SIMULATION, not a computed guarantee (see the comment at AUTO_BUDGET): the automatic audit of
    # ss_median_big_beta at 24,000 samples per dataset flags the violation on every one of 400 seeds;
    # if its detection probability were below 0.985, 400 flags out of 400 would have probability
    # < 0.985^400 = 0.0024.
    m = zoo.make("ss_median_big_beta")
    w = m.witness()
    flagged = sum(verifiers.audit(m, w.d1, w.d2, samples=24000, alpha=0.05, rng=3000 + s, events="thresholds").violated
                  for s in range(400))
    assert flagged == 400


@pytest.mark.parametrize("name", ["rnm_shared_noise", "ss_median_local"])
def test_point_mass_bugs_reach_five_under_1000_per_dataset(name):
    # T7, no cap: all m certification draws in the event under d1 and none under d2 give
    # ln(q/(1 - q)), q = alpha^(1/m), which is >= 5 once m >= 446; with 950 samples per dataset the
    # certification draws are Poisson(665), below 446 with probability < 1e-15 (selection: the
    # point mass is seen 285 times vs 0).
    m = zoo.make(name)
    w = m.witness()
    assert stats.poisson.cdf(445, 665) < 1e-15
    v = verifiers.audit(m, w.d1, w.d2, samples=950, alpha=0.05, rng=8)
    assert v.violated and v.support_violation and v.epsilon_lower >= 5.0
    assert max(v.witness.draws) + v.witness.selection_samples <= 1000


@pytest.mark.parametrize("name", sorted(REPLAY_BUDGET))
def test_broken_flagged_on_replayed_witness(name):
    m = zoo.make(name)
    w = m.witness()
    n = REPLAY_BUDGET[name]
    c = m.claim
    a = 0.05
    if c.delta == 0:
        p = power.certification_power(w.p_num, w.p_den, n, c.epsilon, alpha1=a)
    else:
        p = power.certification_power(w.p_num, w.p_den, n, c.epsilon, alpha1=a / 2, alpha2=a / 2, delta=c.delta)
    assert p >= MIN_POWER
    v = verifiers.audit(m, w.d1, w.d2, samples=n, alpha=a, rng=7, event=w.event, direction=w.direction)
    assert v.violated
    if c.delta > 0:
        assert v.delta_lower > c.delta
    assert v.witness.event == w.event and v.witness.direction == w.direction


def test_witness_probabilities_match_sampling():
    # The documented event probabilities (used by the power computations) are the mechanisms' own:
    # each is checked on 20,000 draws per dataset with a 5.5-sigma binomial tolerance
    # (Bonferroni over the 30 comparisons at ~1e-7 each).
    rng = np.random.default_rng(99)
    n = 20000
    for name in zoo.available():
        m = zoo.make(name)
        w = m.witness()
        for d, p in ((w.d1, w.p_d1), (w.d2, w.p_d2)):
            k = w.event.count(np.asarray(m.sample(d, size=n, rng=rng)))
            sd = math.sqrt(max(p * (1 - p), 1e-12) * n)
            assert abs(k - n * p) <= 5.5 * sd + 1, (name, k, n * p)


CONTROLS = [("laplace", {}), ("rnm_laplace", {}), ("rnm_exponential", {}), ("permute_and_flip", {}), ("em", {}),
            ("duff_median", {}), ("ss_median", {"noise": "laplace"}), ("ss_median", {"noise": "cauchy"})]


@pytest.mark.parametrize("name,params", CONTROLS, ids=[f"{n}-{p.get('noise', '')}" for n, p in CONTROLS])
def test_correct_controls_pass_at_alpha_1e6(name, params):
    m = zoo.make(name, **params)
    w = m.witness()
    v = verifiers.audit(m, w.d1, w.d2, samples=20000, alpha=1e-6, rng=5)
    assert not v.violated and v.epsilon_lower <= m.claim.epsilon
    s = verifiers.search(m, budget=20000, alpha=1e-6, rng=6)
    assert not s.violated and s.pairs_tried > 1


def test_tight_control_bound_approaches_claim():
    # Laplace at exactly epsilon: the bound is close to 1 (T5 asks 0.93 at 10^4 per dataset).
    m = zoo.make("laplace", epsilon=1.0)
    v = verifiers.audit(m, 0.0, 1.0, samples=10000, alpha=0.05, rng=12)
    # A certified bound above the true epsilon (1) has probability <= alpha = 0.05 by construction;
    # with this fixed seed the audit gives 0.92, so both sides of the check are meaningful.
    assert not v.violated
    assert 0.85 < v.epsilon_lower <= 1.0
    assert v.epsilon_estimate == pytest.approx(1.0, abs=0.1)


# Tight correct controls (pair loss equal to the claim where the docs say so) and their pairs.
CALIBRATION = [("laplace", {}, 0.0, 1.0), ("rnm_laplace", {}, [0, 0, 0, 0, 0], [-1, 1, 1, 1, 1]),
               ("rnm_exponential", {}, [0, 0, 0, 0, 0], [-1, 1, 1, 1, 1]),
               ("permute_and_flip", {}, [0, 4], [1, 3]), ("em", {}, [8, 0], [9, -1]),
               ("ss_median", {"noise": "laplace"}, None, None)]


@pytest.mark.slow
def test_calibration_false_violations_within_binomial_bound():
    # A sound alpha-level audit flags a correct claim with probability <= alpha on every seed, so
    # over S independent seeds the count is stochastically below Bin(S, alpha). Threshold: the
    # (1 - 1e-6/C) quantile of Bin(S, alpha) per control (Bonferroni over C controls), and the
    # pooled count against the (1 - 1e-6) quantile of Bin(C S, alpha).
    S, alpha, C = 200, 0.05, len(CALIBRATION)
    lim = int(stats.binom.isf(1e-6 / C, S, alpha))
    total = 0
    for name, params, d1, d2 in CALIBRATION:
        m = zoo.make(name, **params)
        if d1 is None:
            w = m.witness()
            d1, d2 = w.d1, w.d2
        false = sum(verifiers.audit(m, np.asarray(d1, dtype=float), np.asarray(d2, dtype=float), samples=1000,
                                    alpha=alpha, rng=1000 + s).violated for s in range(S))
        assert false <= lim, (name, false, lim)
        total += false
    assert total <= int(stats.binom.isf(1e-6, C * S, alpha))
    # ... and the tight controls are tight: some false flags are expected (not a vacuous test)
    assert total >= 1


@pytest.mark.slow
@pytest.mark.parametrize("name,budget", [("laplace", 4000), ("rnm_laplace", 20_000), ("em", 20_000)])
def test_search_calibration_on_tight_controls(name, budget):
    # The pair search selects pair, event and direction on selection draws only -- shared draws of a
    # dataset, pooled group scores and all -- so the whole search is one alpha-level certification:
    # over 200 seeds on a tight correct control the false flags stay below the (1 - 1e-6) quantile of
    # Bin(200, 0.05) (27). The score-vector controls exercise the grouped ranking (84 generated pairs).
    m = zoo.make(name, epsilon=1.0)
    S, alpha = 200, 0.05
    false = sum(verifiers.search(m, budget=budget, alpha=alpha, rng=70000 + s).violated for s in range(S))
    assert false <= int(stats.binom.isf(1e-6, S, alpha))
