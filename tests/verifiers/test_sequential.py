"""Anytime-valid audits (verifiers.sequential): the e-process against its definition, coverage of the
confidence sequence, stopping times, soundness under optional stopping, bad input, audit configs."""

import math

import numpy as np
import pytest
import yaml
from scipy import stats
from scipy.special import expit

from dpharness import verifiers
from dpharness.verifiers.statistical import sequential as sq
from dpharness.verifiers.controls import zoo


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


def _cells_direct(ep, k1, k2, n, w):
    """Each cell's lower bound of ln F, alternative by alternative (the definition, O(cells x alternatives))."""
    pj = expit(sq.LOGIT_GRID)[None, :]
    a, b = ep.a[:, None], ep.b[:, None]
    with np.errstate(divide="ignore"):
        lw = np.log(w)[None, :]
    log_1ma = np.log(expit(-ep.lo))[:, None]  # ln(1 - a) without cancellation
    t = lw + k1 * (np.log(pj) - np.log(b)) + k2 * (np.log(expit(-sq.LOGIT_GRID))[None, :] - log_1ma)
    t = t - n * ep.delta * (pj / a - 1.0)
    t = np.where(pj >= b, t, np.where(pj <= a, lw, np.minimum(t, lw)))
    mx = np.max(t, axis=1, keepdims=True)
    return np.log(np.exp(t - mx).sum(axis=1)) + mx[:, 0]


@pytest.mark.parametrize("eps,delta", [(1.0, 0.0), (0.5, 0.0), (3.3, 0.0), (1.0, 0.002)])
def test_cell_update_matches_the_definition(eps, delta):
    """The O(cells + alternatives) update (delta = 0: cumulative log-sum-exp over the sorted
    alternatives) gives the cell bounds of the definition, including cells so narrow that a == b
    in floating point and weights that are exactly 0."""
    rng = np.random.default_rng(11)
    ep = sq.EProcess(0.05, eps, delta)
    cum = np.zeros(ep.lo.size)
    for _ in range(8):
        n = int(rng.integers(1, 2000))
        p2 = rng.uniform(0, 0.3)
        k1, k2 = rng.binomial(n, min(1.0, p2 * math.exp(rng.uniform(-1, 4)))), rng.binomial(n, p2)
        w = sq.local_weights(rng.uniform(-1, 12), rng.uniform(0, 300), eps) * (rng.random(sq.LOGIT_GRID.size) < 0.7)
        live = ~ep.rejected
        ep.update(k1, k2, n, w)
        cum[live] += _cells_direct(ep, k1, k2, n, w)[live]
        assert np.allclose(ep.cum[live], cum[live], rtol=1e-9, atol=1e-9)
    assert ep.log_e_claim == pytest.approx(ep.log_e(eps), rel=1e-9, abs=1e-9)


def test_next_batch_rules():
    thr = math.log(20)
    assert sq.next_batch(0, 1000, 0.0, 0.0, thr) == sq.FIRST_CERT
    # nothing predicted (or predicted beyond the budget): grow fast
    assert sq.next_batch(40, 10**6, 0.0, 0.0, thr, seen=100) == math.ceil(40 * sq.FAST_GROWTH)
    assert sq.next_batch(40, 50, 0.0, 1e-6, thr, seen=100) == 50  # never past the budget
    # near (3 nats at 0.01 per draw: 300 draws to go, seen 200): FINE x 300 = 15, at most GROWTH x prev
    assert sq.next_batch(40, 10**4, 0.0, 0.01, thr, seen=200) == max(sq.MIN_BATCH, round(sq.FINE * thr / 0.01))
    assert sq.next_batch(10, 10**4, 0.0, 0.01, thr, seen=200) == math.ceil(10 * sq.GROWTH)
    # almost there: the smallest batch
    assert sq.next_batch(40, 10**4, thr - 0.01, 0.01, thr, seen=200) == sq.MIN_BATCH
    # predicted near, but ln M has been falling: not trusted
    assert sq.next_batch(40, 10**4, 0.0, 0.01, thr, seen=200, progress=sq.STALL - 1) == math.ceil(40 * sq.FAST_GROWTH)


@pytest.mark.slow
def test_coverage_with_adaptive_batch_sizes():
    """Batch sizes chosen from the running e-value (next_batch, fed an optimistic predicted rate) keep
    the level: at the least favourable null the running bound exceeds the true eps on at most alpha
    of the paths (same threshold as above)."""
    alpha, eps, p2, paths = 0.1, 1.0, 0.1, 300
    p1 = math.exp(eps) * p2
    rng = np.random.default_rng(20240602)
    bad = 0
    for _ in range(paths):
        ep = sq.EProcess(alpha, eps, cell=0.02)
        t1 = t2 = done = n = 0
        while done < 800:
            w = sq.local_weights(math.log((t1 + 0.5) / (t2 + 0.5)) + 0.3, t1 + t2, eps)
            n = sq.next_batch(n, 800 - done, ep.log_e_claim, 0.02, ep.threshold, seen=done + 20)
            k1, k2 = rng.binomial(n, p1), rng.binomial(n, p2)
            ep.update(k1, k2, n, w)
            t1, t2, done = t1 + k1, t2 + k2, done + n
            if ep.epsilon_lower > eps:
                bad += 1
                break
    assert bad <= stats.binom.ppf(1 - 1e-4, paths, alpha)


def test_constants_are_read_when_called(monkeypatch):
    """Tuning a module constant changes later calls (nothing is bound at definition time)."""
    w0 = sq.local_weights(2.0, 30.0, 1.0)
    monkeypatch.setattr(sq, "BROAD", 0.9)
    assert not np.allclose(sq.local_weights(2.0, 30.0, 1.0), w0)
    monkeypatch.setattr(sq, "FIRST_CERT", 7)
    assert sq.next_batch(0, 100, 0.0, 0.0, 3.0) == 7
    monkeypatch.setattr(sq, "CELL", 0.05)
    assert sq.EProcess(0.05, 1.0).hi[0] == pytest.approx(0.05)


@pytest.mark.parametrize("tails_each", [True, False])
def test_two_tailed_event_needs_both_tails(monkeypatch, tails_each):
    """{y <= -3} seen 20 vs 3 times: adding the far tail {y > 1} (2 lucky draws vs 0) raises the
    selection score, but that tail alone is no violation, so the threshold is kept (TAILS_EACH);
    when both tails carry the violation the two-tailed event is chosen."""
    monkeypatch.setattr(sq, "TAILS_EACH", tails_each)
    kw = dict(finite=False, epsilon=1.0, delta=0.0, events="all", n_cert=1000, alpha=0.05)
    y1 = np.r_[[-3.0] * 20, np.linspace(0, 1, 30), [9.0, 9.5]]
    y2 = np.r_[[-3.0] * 3, np.linspace(0, 1, 49)]
    ch, _, _, rate = sq.choose(y1, y2, **kw)
    assert rate > 0 and ch.direction == "d1>d2"
    assert ch.event.kind == ("le" if tails_each else "outside")
    y1 = np.r_[[-3.0] * 20, np.linspace(0, 1, 30), [3.0] * 20]
    y2 = np.r_[[-3.0] * 3, np.linspace(0, 1, 64), [3.0] * 3]
    ch, _, _, rate = sq.choose(y1, y2, **kw)
    assert rate > 0 and ch.direction == "d1>d2" and ch.event.kind == "outside"


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
    """T2's pair: flagged, and the median stop is well below the fixed-budget audit's T2 size (1,500
    per dataset, where the fixed audit certifies it in 85-90 % of seeds); 595 on these seeds when
    written (the issue's target, 400, is not met: docs/auditing.md, "Anytime-valid audits")."""
    m, vs = _stops("rnm_laplace_value", 1500, range(11))
    draws = np.array([v.extra["draws_per_dataset"] for v in vs])
    assert np.median(draws) < 1000
    assert sum(v.violated for v in vs) >= 9
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


def test_correct_mechanism_reaches_a_large_budget_in_few_looks():
    """While nothing is near a violation the batches grow by FAST_GROWTH: O(log budget) looks (and as
    many event re-selections at most), so the sequential audit of a correct mechanism costs about what
    the fixed audit does (docs/auditing.md, "What it costs")."""
    m = zoo.make("em")
    w = m.witness()
    v = verifiers.audit(m, w.d1, w.d2, samples=100_000, rng=4, sequential=True)
    assert v.extra["stopped"] == "budget" and v.extra["draws_per_dataset"] == 100_000
    assert v.extra["looks"] <= 2 + math.ceil(math.log(100_000 / sq.FIRST_CERT) / math.log(sq.FAST_GROWTH)) + 4
    assert v.extra["history"][-1]["log_e"] < math.log(20)


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


def test_large_certification_batches_are_drawn_in_blocks(monkeypatch):
    # a sampler that refuses huge batches (the registry's samplers refuse more than 2**28 draws per
    # call) must not stop a sequential audit: batches above BATCH_SPLIT are drawn and counted in
    # blocks of bounded memory. Scaled down here: the sampler refuses more than 20,000 draws.
    from dpharness.verifiers.statistical import sequential as seq
    from dpharness.verifiers.statistical import draws

    calls = []

    def fn(d, n, rng):
        calls.append(n)
        if n > 20_000:
            raise ValueError("size too large: draw in batches")
        return float(d) + rng.laplace(0, 1.0, size=n)  # correct: runs to the end of its budget

    m = verifiers.wrap(fn, epsilon=1.0, neighbours="value")
    monkeypatch.setattr(seq, "BATCH_SPLIT", 20_000)
    monkeypatch.setattr(draws, "CHUNK_BYTES", 20_000 * 8)
    v = verifiers.audit(m, 0.0, 1.0, samples=400_000, alpha=1e-3, rng=5, sequential=True)
    assert not v.violated and v.extra["draws_per_dataset"] == 400_000
    assert max(calls) <= 20_000 and sum(calls) == 2 * 400_000
