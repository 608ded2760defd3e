"""Anytime-valid audits (verifiers.sequential): the e-process against its definition, coverage of the
confidence sequence, stopping times, soundness under optional stopping, bad input, audit configs."""

import math

import numpy as np
import pytest
import yaml
from scipy import stats
from scipy.special import expit

from dpharness import verifiers
from dpharness.verifiers import sequential as sq
from dpharness.verifiers import zoo


def _weights(centre=1.8, m=30.0, eps=1.0):
    return sq.local_weights(centre, m, eps)


# ---------------------------------------------------------------------------------------------
# the e-process against its definition


def _brute_log_e(batches, eps, delta=0.0):
    """ln prod_b [cash_b + sum_{pi_j > pi0} w_j x_j^k1 y_j^k2 exp(-n (x_j - 1) delta)], term by term."""
    pi0 = expit(eps)
    total = 0.0
    for k1, k2, n, w in batches:
        f = 0.0
        for pj, wj in zip(expit(sq.LOGIT_GRID), w):
            if pj > pi0:
                f += wj * (pj / pi0) ** k1 * ((1 - pj) / (1 - pi0)) ** k2 * math.exp(-n * (pj / pi0 - 1) * delta)
            else:
                f += wj
        total += math.log(f)
    return total


@pytest.mark.parametrize("delta", [0.0, 0.01])
def test_point_e_value_matches_brute_force(delta):
    ep = sq.EProcess(0.05, 1.0, delta)
    batches = [(3, 1, 10, _weights()), (0, 2, 12, _weights(0.5, 4)), (7, 1, 15, _weights(2.5, 10))]
    for b in batches:
        ep.update(*b)
    for eps in (0.0, 0.4, 1.0, 1.7):
        assert ep.log_e(eps) == pytest.approx(_brute_log_e(batches, eps, delta), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("eps,p2", [(1.0, 0.05), (1.0, 0.2), (0.5, 0.3)])
def test_batch_factor_has_expectation_at_most_one_under_the_null(eps, p2):
    """E[F] <= 1 for one batch, summed exactly over the two binomial laws at the boundary p1 = e^eps p2
    (the least favourable null), for weights centred above the claim."""
    n = 12
    p1 = math.exp(eps) * p2
    w = _weights(eps + 0.8, 20.0, eps)
    pmf1, pmf2 = stats.binom.pmf(np.arange(n + 1), n, p1), stats.binom.pmf(np.arange(n + 1), n, p2)
    ev = 0.0
    ep = sq.EProcess(0.05, eps)
    for k1 in range(n + 1):
        for k2 in range(n + 1):
            ep.batches = [(k1, k2, n, w)]  # the point e-value of this one batch
            ev += pmf1[k1] * pmf2[k2] * math.exp(ep.log_e(eps))
    assert ev <= 1.0 + 1e-12


def test_cell_bound_is_conservative_and_close_to_the_exact_infimum():
    """The cell bound never exceeds the exact infimum of the confidence sequence (found by scanning
    the exact point e-value on a fine grid) and loses little (cells of 0.005)."""
    ep = sq.EProcess(0.05, 1.0)
    history = []
    for b in [(9, 1, 40, _weights()), (12, 2, 50, _weights(2.0, 40)), (15, 3, 60, _weights(2.0, 60))]:
        ep.update(*b)
        history.append(ep.epsilon_lower)
        grid = np.arange(0.0, 2.5, 0.001)
        rejected = np.array([ep.log_e(e) >= math.log(20) for e in grid])
        # running: a point rejected at an earlier look stays rejected; ep.log_e is the current M
        first_kept = grid[np.argmin(rejected)] if not rejected.all() else grid[-1]
        if len(history) == 1:
            exact_inf = first_kept
        else:
            exact_inf = max(exact_inf, first_kept)
        assert ep.epsilon_lower <= exact_inf + 1e-12
        assert ep.epsilon_lower >= exact_inf - 0.05
    assert history == sorted(history)  # the running bound never decreases
    assert history[-1] > 0.3


def test_delta_bound_is_the_root_of_the_monotone_e_value():
    ep = sq.EProcess(0.05, 1.0, 0.001)
    ep.update(40, 2, 60, _weights(2.5, 40))
    d = ep.delta_lower
    assert 0 < d < 1
    assert ep.log_e(1.0, d) >= math.log(20) > ep.log_e(1.0, d + 1e-6)


def test_coverage_over_simulated_binomial_paths():
    """Under the least favourable null (p1 = e^eps p2 exactly), the running lower bound exceeds the
    true eps on at most alpha of the paths, whatever the (predictable) weights. Threshold: the
    (1 - 1e-4) quantile of Bin(paths, alpha), what a sound level-alpha bound cannot exceed except
    with probability 1e-4; fixed seed."""
    alpha, eps, p2, paths = 0.1, 1.0, 0.1, 300
    p1 = math.exp(eps) * p2
    rng = np.random.default_rng(20240601)
    bad = 0
    for _ in range(paths):
        ep = sq.EProcess(alpha, eps, cell=0.02)
        t1 = t2 = 0
        for n in sq.schedule(600, 20, 1.3):
            # weights centred on the running estimate (predictable), deliberately optimistic
            w = sq.local_weights(math.log((t1 + 0.5) / (t2 + 0.5)) + 0.3, t1 + t2, eps)
            k1, k2 = rng.binomial(n, p1), rng.binomial(n, p2)
            ep.update(k1, k2, n, w)
            t1, t2 = t1 + k1, t2 + k2
            if ep.epsilon_lower > eps:
                bad += 1
                break
    assert bad <= stats.binom.ppf(1 - 1e-4, paths, alpha)


def test_schedule_grows_geometrically_and_fits_the_budget():
    s = sq.schedule(1000, 10, 1.1)
    assert sum(s) == 1000 and s[0] == 10
    assert all(b >= a for a, b in zip(s[:-2], s[1:-1]))
    assert len(s) <= math.ceil(math.log(1000 * 0.1 / 10 + 1) / math.log(1.1)) + 2  # logarithmic


# ---------------------------------------------------------------------------------------------
# stopping times (quick tier, fixed seeds)


def _stops(name, samples, seeds, **kw):
    m = zoo.make(name, **kw)
    w = m.witness()
    vs = [verifiers.audit(m, w.d1, w.d2, samples=samples, rng=s, sequential=True) for s in seeds]
    return m, vs


def test_t6_inverted_laplace_stops_within_target():
    """T6 target: median <= 100 draws per dataset over 20 seeds. The earliest possible stop is bounded
    below by the e-process itself: every hit multiplies M by at most max_j pi_j/pi0 <= 1/pi0, so at
    least ln(20)/ln(1/pi0) numerator hits are needed before anything can be certified."""
    m, vs = _stops("laplace_inverted_scale", 200, range(20), epsilon=0.5)
    draws = np.array([v.extra["draws_per_dataset"] for v in vs])
    assert all(v.violated and v.extra["stopped"] == "violation" for v in vs)
    assert np.median(draws) <= 100
    pi0 = expit(0.5)
    for v in vs:
        assert v.epsilon_lower > 0.5
        assert max(v.witness.counts) >= math.log(20) / math.log(1 / pi0)
        assert v.calls == 2 * v.extra["draws_per_dataset"]
        assert v.extra["looks"] == len(v.extra["history"])


def test_t2_rnm_value_stops_before_the_fixed_budget():
    """T2's pair: flagged, and the median stop is below the fixed-budget audit's T2 size (1,500 per
    dataset), which is where the fixed audit certifies it in 85-90 % of seeds."""
    m, vs = _stops("rnm_laplace_value", 1500, range(11))
    draws = np.array([v.extra["draws_per_dataset"] for v in vs])
    assert np.median(draws) < 1500
    assert all(v.epsilon_lower > 1.0 for v in vs if v.violated)


def test_same_seed_same_verdict():
    m = zoo.make("em_missing_half")
    w = m.witness()
    a = verifiers.audit(m, w.d1, w.d2, samples=600, rng=5, sequential=True)
    b = verifiers.audit(m, w.d1, w.d2, samples=600, rng=5, sequential=True)
    assert a.row() == b.row() and a.extra["history"] == b.extra["history"]


def test_correct_mechanism_runs_to_the_budget_at_the_same_draws():
    m = zoo.make("laplace", epsilon=1.0)
    w = m.witness()
    v = verifiers.audit(m, w.d1, w.d2, samples=1000, rng=3, sequential=True)
    assert v.extra["stopped"] == "budget" and not v.violated
    assert v.extra["draws_per_dataset"] == 1000 and v.calls == 2000
    assert 0 <= v.epsilon_lower <= 1.0


def test_search_and_replay_dispatch():
    m = zoo.make("laplace_inverted_scale", epsilon=0.5)
    v = verifiers.search(m, budget=4000, rng=1, sequential=True)
    assert v.extra["sequential"] and v.calls <= 4000 and v.pairs_tried > 1
    w = m.witness()
    r = verifiers.audit(m, w.d1, w.d2, samples=400, rng=2, event=w.event, direction=w.direction, sequential=True)
    assert r.violated and r.witness.event == w.event


# ---------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_bad_sequential_is_refused_by_name(bad):
    m = zoo.make("laplace")
    w = m.witness()
    with pytest.raises(TypeError, match="sequential"):
        verifiers.audit(m, w.d1, w.d2, samples=100, rng=1, sequential=bad)
    with pytest.raises(TypeError, match="sequential"):
        verifiers.search(m, budget=1000, rng=1, sequential=bad)


# ---------------------------------------------------------------------------------------------
# audit configs


def test_audit_config_with_sequential_validates_and_runs(tmp_path, capsys):
    import pandas as pd

    from dpharness.bench.cli import main

    cfg = {"name": "seq", "seed": 3, "alpha": 0.05, "audits": [
        {"id": "inv", "mechanism": {"zoo": "laplace_inverted_scale", "epsilon": 0.5}, "expect": "broken",
         "pairs": "witness", "samples": [200], "repeat": 2, "sequential": True},
        {"id": "lap_search", "mechanism": {"zoo": "laplace", "epsilon": 0.5}, "pairs": "search",
         "samples": [4000], "alpha": 1e-6, "sequential": True}]}
    p = tmp_path / "seq.yaml"
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["validate", str(p)]) == 0
    assert main(["audit", str(p), "--out", str(tmp_path / "out"), "--jobs", "1"]) == 0
    res = pd.read_csv(next((tmp_path / "out").rglob("results.csv")))
    inv = res[res.audit == "inv"]
    assert inv.violated.all() and (inv.sequential_stopped == "violation").all()
    assert (res[res.audit == "lap_search"].sequential_stopped == "budget").all()
    cfg["audits"][0]["sequential"] = "yes"
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    capsys.readouterr()
    assert main(["validate", str(p)]) == 2
    assert "audits[0].sequential" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# soundness under optional stopping (slow tier)

CONTROLS = {"laplace": None, "rnm_laplace": ([0, 0, 0, 0, 0], [-1, 1, 1, 1, 1]), "em": ([8, 0], [9, -1]),
            "permute_and_flip": ([0, 4], [1, 3]), "rnm_exponential": ([0, 0, 0, 0, 0], [-1, 1, 1, 1, 1])}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_soundness_on_tight_controls(name):
    """200 seeds per tight correct control (configs/audit_zoo.yaml's cal_* pairs), sequential stopping
    on, 1,000 draws per dataset: false violations <= the (1 - 1e-4) quantile of Bin(200, 0.05), which a
    sound alpha = 0.05 procedure exceeds with probability < 1e-4."""
    m = zoo.make(name, epsilon=1.0)
    pair = CONTROLS[name]
    d1, d2 = (m.witness().d1, m.witness().d2) if pair is None else (np.asarray(pair[0]), np.asarray(pair[1]))
    false = sum(verifiers.audit(m, d1, d2, samples=1000, rng=10_000 + s, sequential=True).violated
                for s in range(200))
    assert false <= stats.binom.ppf(1 - 1e-4, 200, 0.05)
