"""Anytime-valid audits: draw in adaptive batches, stop as soon as a violation is certified.

docs/auditing.md, "Anytime-valid audits". ``audit(..., sequential=True)`` and
``search(..., sequential=True)`` dispatch here.

The test. For an event E chosen *before* a batch (from earlier draws only) and a direction, a batch
of n draws per dataset gives counts K1 (numerator dataset) and K2 (denominator dataset), binomial
(n, p1) and (n, p2) and independent. For a fixed alternative pi_j and a null value
pi0 = e^eps / (1 + e^eps), put x = pi_j/pi0 and y = (1 - pi_j)/(1 - pi0). If pi_j >= pi0 and the
mechanism is (eps, delta)-DP on the pair (p1 <= e^eps p2 + delta for *every* event and both
directions), then with 1 + u <= e^u

    E[x^K1 y^K2] = (1 + p1(x - 1))^n (1 + p2(y - 1))^n <= exp(n[(x - 1)p1 + (y - 1)p2])
                 <= exp(n (x - 1) delta),

because (x - 1) e^eps + (y - 1) = 0. So the batch factor
``F = sum_j w_j x_j^K1 y_j^K2 exp(-n (x_j - 1) delta)`` (weights w_j >= 0 summing to <= 1, over the
alternatives pi_j >= pi0, all chosen before the batch) has conditional expectation <= 1 under the
null, whatever event, direction, weights *or batch size n* were chosen from the past. The running
product M_t(eps) = F_1 ... F_t is a non-negative supermartingale, and by Ville's inequality
P[sup_t M_t(eps) >= 1/alpha] <= alpha: the test can be looked at after every batch and stopped at
any time (optional stopping) without losing its level.

The bound. The confidence sequence is the set of eps never rejected so far; the true loss of the
pair lies in it at all times with probability >= 1 - alpha, so its infimum is a time-uniform lower
confidence bound. It is computed on cells [a, b] of eps: a cell is rejected when a *lower bound* of
M over the whole cell (pi0 -> b in the numerator's term, pi0 -> a in the other two) has reached
1/alpha at some look, and ``epsilon_lower`` is the left end of the first cell never rejected. No
monotonicity in eps is needed: the cell holding the true eps is never rejected with probability
>= 1 - alpha. ``violated`` is ``epsilon_lower > claimed eps`` (for (eps, delta) claims also
``delta_lower > claimed delta``, from the same family at the claimed eps, where M is decreasing in
delta so the bound is found by bisection).

Batches and looks. Nothing above needs n fixed in advance: each batch size is a function of the
past (:func:`next_batch`). Batches grow by FAST_GROWTH while no violation is "near" (a correct
mechanism reaches its budget in O(log budget) looks), and are cut to FINE of the predicted draws
still needed when one is (ln M at the claim on track to reach ln(1/alpha) within HORIZON x the
draws seen), so a stop overshoots the crossing by a few per cent.

Selection. A first batch of ``first`` draws per dataset is used for selection only. The event and
direction are chosen again whenever the pooled draws have grown by RESELECT (the first
``pool_limit`` rows per dataset are pooled), by the predicted growth of ln M at the claim
(:func:`choose`); intervals of scalar outputs must promise INTERVAL_PENALTY times more than the
best other event, and a two-tailed event counts only if each tail alone looks like a violation in
the same direction (fewer noise-fitted candidates, less winner's curse). The weights w_j are
centred on the chosen event's estimated conditional proportion (a discretised normal in logit
space, mixed with a fixed broad part). All of this is a function of earlier draws only, so no alpha
is split between selection rounds or batch sizes.

Cost. For delta = 0 the cell bound of alternative j is ``u_j - v_c`` with
u_j = ln w_j + K1 ln pi_j + K2 ln(1 - pi_j) and v_c = K1 ln b_c + K2 ln(1 - a_c) whenever
pi_j >= b_c (and ln w_j when pi_j <= a_c): the log-sum over the alternatives of every cell is a
suffix (prefix) cumulative log-sum-exp over the sorted alternatives, plus the few alternatives that
fall inside the cell. One batch costs O(cells + alternatives), not their product, and gives the
same numbers. The selection score is computed exactly (Clopper–Pearson) only for the TOP_K best
candidates of a closed-form (Wilson) pre-score.

Modules: this one holds the tuning constants and runs the audit; :mod:`.eprocess` (the test
martingale and its weights), :mod:`.pacing` (batch sizes) and :mod:`.reselect` (the event of the
next batches) read the constants from here when they run.
"""

from __future__ import annotations

import bisect
import math
import time
from typing import Any

import numpy as np
from scipy.special import expit

from dpharness.verifiers import bounds
from dpharness.verifiers.statistical import parallel as _parallel
from dpharness.verifiers.events import Event
from dpharness.verifiers.statistical.draws import FIRST_CHUNK
from dpharness.verifiers.statistical.batch import (CERTIFY, SELECT, Choice, count_draws, detectable_epsilon, draw, is_finite,
                          stream, SEQUENTIAL, check_sequential)
from dpharness.verifiers.statistical.eprocess import EProcess, local_weights
from dpharness.verifiers.statistical.pacing import next_batch, pace, schedule
from dpharness.verifiers.statistical.reselect import choose
from dpharness.verifiers.verdict import Verdict, Witness, summarize

__all__ = ["sequential_audit", "sequential_certify", "EProcess", "schedule", "next_batch", "check_sequential",
           "local_weights", "choose",
           "FIRST", "FIRST_CERT", "GROWTH", "FAST_GROWTH", "FAST_MIN", "FAST_LOOKS", "MIN_BATCH", "FINE",
           "HORIZON", "STALL", "WINDOW",
           "RESELECT", "RESELECT_LARGE", "RESELECT_ROWS", "POOL_CAP", "POOL_SHARE", "POOL_FLOOR", "LOGIT_GRID",
           "BROAD", "SHRINK", "TOP_K", "INTERVAL_PENALTY", "TAILS_EACH", "CELL"]

# Every constant below is read when a function runs (not bound at definition time), here and in
# the modules this one imports, so setting e.g. ``verifiers.sequential.BROAD`` changes
# later audits.

#: Draws per dataset of the selection batch (at most 30 % of the budget).
FIRST = 40
#: Size of the first certification batch per dataset.
FIRST_CERT = 10
#: Growth of the batch size while a violation looks within reach of the budget ...
GROWTH = 1.1
#: ... and while it does not (a correct mechanism: few, large batches): the growth that reaches the
#: budget in FAST_LOOKS looks, within [FAST_MIN, FAST_GROWTH] (small budgets grow gently: a broken
#: mechanism whose evidence is still building keeps re-selecting often).
FAST_GROWTH = 4.0
FAST_MIN = 2.0
FAST_LOOKS = 7
#: Smallest batch, and the share of the predicted draws still needed to reach 1/alpha that one
#: batch may take (batches get finer as M at the claim nears 1/alpha; see :func:`next_batch`).
MIN_BATCH = 3
FINE = 0.05
#: "Near": the predicted draws still needed are at most HORIZON x the draws seen so far, and ln M
#: at the claim has grown by more than STALL since the look at WINDOW x the draws seen.
HORIZON = 3.0
STALL = -0.5
WINDOW = 0.25
#: The event is chosen again when the pooled draws have grown by RESELECT since the last choice
#: (RESELECT_LARGE once the pool holds RESELECT_ROWS rows per dataset: a choice costs O(pool), so
#: the total selection work stays within a few times one choice on the final pool).
RESELECT = 1.1
RESELECT_LARGE = 1.5
RESELECT_ROWS = 2_000
#: Rows per dataset kept for re-selection: the first min(POOL_CAP, max(POOL_FLOOR,
#: POOL_SHARE x draws per dataset)) (the fixed audit selects on 30 %); later batches are only counted.
POOL_CAP = 200_000
POOL_SHARE = 0.3
POOL_FLOOR = 5_000
#: Alternatives pi_j = expit(theta_j): logit grid, fine up to 10, then geometric to 40 (support
#: violations need pi_j very close to 1).
LOGIT_GRID = np.concatenate([np.arange(0.0, 10.0, 0.05), np.geomspace(10.5, 40.0, 16)])
#: Share of the batch weights on the fixed broad part (the rest is centred on the estimate).
BROAD = 0.25
#: Shrinkage level of the selection frequencies (None: :func:`verifiers.statistical.batch.shrink_level`).
SHRINK: float | None = 0.35
#: An interval {lo <= y <= hi} (scalar outputs) is chosen over the best other event only when its
#: predicted growth is this many times larger (math.inf: never; 1: no preference). Hundreds of
#: two-ended candidates add more winner's curse than power where the violation is one-sided.
INTERVAL_PENALTY = 4.0
#: A two-tailed event {y < lo or y > hi} is a candidate only when each tail alone looks like a
#: violation in the same direction (see :func:`choose`).
TAILS_EACH = True
#: Candidates per direction whose selection score is computed exactly (the best of the pre-score).
TOP_K = 48
#: Cell width of the confidence sequence in eps (logit of pi0) up to claim + 4, then geometric.
CELL = 0.005


#: A certification batch of more rows than this is drawn and counted in blocks of bounded memory
#: (:func:`verifiers.statistical.batch.count_draws`); smaller batches are one draw, as always.
BATCH_SPLIT = 2**22


def _batch(mechanism: Any, data: Any, n: int, seed: int, key: tuple, event: Event) -> tuple[int, np.ndarray]:
    """Hits of ``event`` in ``n`` fresh draws (role ``key``), and the draws (or, for a batch above
    BATCH_SPLIT, the first FIRST_CHUNK of them: all the pool can keep of it is its first rows)."""
    if _parallel.active() is not None:  # keyed chunks on the sampler's workers (verifiers.statistical.parallel)
        if n <= BATCH_SPLIT:
            z = _parallel.sample_draws(mechanism, data, n, seed, key)
            return event.count(z), z
        head = _parallel.sample_draws(mechanism, data, FIRST_CHUNK, seed, (*key, 0))
        return event.count(head) + _parallel.sample_count(mechanism, data, n - FIRST_CHUNK, seed, (*key, 1),
                                                          event), head
    rng = stream(seed, *key)
    if n <= BATCH_SPLIT:
        z = draw(mechanism, data, n, rng)
        return event.count(z), z
    head = draw(mechanism, data, FIRST_CHUNK, rng)
    return event.count(head) + count_draws(mechanism, data, n - FIRST_CHUNK, rng, event), head


class _Pool:
    """The first ``limit`` rows per dataset, kept as chunks and joined only when selecting."""

    def __init__(self, y1: list[np.ndarray], y2: list[np.ndarray], limit: int):
        self.c1 = [np.asarray(y) for y in y1]
        self.c2 = [np.asarray(y) for y in y2]
        self.limit = int(limit)
        self.rows = int(sum(np.shape(y)[0] for y in self.c1))
        self._joined: tuple[np.ndarray, np.ndarray] | None = None

    def add(self, z1: np.ndarray, z2: np.ndarray) -> None:
        room = self.limit - self.rows
        if room <= 0:
            return
        self.c1.append(z1[:room])
        self.c2.append(z2[:room])
        self.rows += min(room, int(np.shape(z1)[0]))
        self._joined = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._joined is None:
            if not self.c1:
                self._joined = (np.zeros(0), np.zeros(0))
            else:
                self._joined = (np.concatenate(self.c1), np.concatenate(self.c2))
                self.c1, self.c2 = [self._joined[0]], [self._joined[1]]
        return self._joined


def sequential_certify(mechanism: Any, d1: Any, d2: Any, *, pool1: list[np.ndarray], pool2: list[np.ndarray],
                       budget: int, alpha: float, seed: int, key: tuple[int, ...], calls_so_far: int,
                       pairs_tried: int, label: str = "", events: Any = "all", first_cert: int | None = None,
                       growth: float | None = None, event: Event | None = None,
                       direction: str | None = None, float_events: bool | None = None) -> Verdict:
    """Certify sequentially with ``budget`` fresh draws per dataset at most, after the selection
    draws ``pool1``/``pool2`` (already drawn, counted in ``calls_so_far``). ``first_cert`` and
    ``growth`` override FIRST_CERT and GROWTH."""
    claim = mechanism.claim
    eps_c, dl_c = float(claim.epsilon), float(claim.delta)
    pi_c = float(expit(eps_c))
    finite = is_finite(mechanism)
    ep = EProcess(alpha, eps_c, dl_c)
    n_sel = int(sum(np.shape(y)[0] for y in pool1))
    limit = min(POOL_CAP, max(POOL_FLOOR, int(math.ceil(POOL_SHARE * (n_sel + budget)))))
    pool = _Pool(pool1, pool2, limit)
    done = 0
    k1_tot = k2_tot = 0  # hits of the batches' events, by dataset
    sel_den_zero = True
    stopped = "budget"
    history: list[dict] = []
    ch: Choice | None = None
    looks = 0
    last_sel = 1
    run_num = run_den = sel_num = sel_den = 0
    centre, m_hits, rate = 0.0, 0.0, 0.0
    done_sel = 0
    n = 0
    trail_seen: list[int] = [n_sel]  # draws seen and ln M at the claim after each look
    trail_lm: list[float] = [0.0]
    t0 = time.perf_counter()
    while done < budget:
        if event is not None:
            # a replayed witness: no selection; the weights follow this event's own counts so far
            dr = direction or "d1>d2"
            kn0, kd0 = (k1_tot, k2_tot) if dr == "d1>d2" else (k2_tot, k1_tot)
            ch = Choice(0.0, event, dr, 0, 0, 0, 0.0)
            centre, m_hits = math.log((kn0 + 0.5) / (kd0 + 0.5)), float(kn0 + kd0)
            rate = pace(kn0, kd0, done, dl_c, pi_c)
        else:
            if ch is None or pool.rows >= (RESELECT if last_sel < RESELECT_ROWS else RESELECT_LARGE) * last_sel:
                y1, y2 = pool.arrays()
                ch, centre, m_hits, _ = choose(y1, y2, finite=finite, epsilon=eps_c, delta=dl_c, events=events,
                                               n_cert=budget - done, alpha=alpha, float_events=float_events)
                last_sel, done_sel = pool.rows, done
                run_num = run_den = 0  # this event's counts in the batches since it was chosen
                sel_num, sel_den = (ch.c1, ch.c2) if ch.direction == "d1>d2" else (ch.c2, ch.c1)
            else:
                # same event: the centre follows its counts on every draw so far (all predictable)
                tn, td = sel_num + run_num, sel_den + run_den
                centre, m_hits = math.log((tn + 0.5) / (td + 0.5)), float(tn + td)
            rate = pace(sel_num + run_num, sel_den + run_den, last_sel + done - done_sel, dl_c, pi_c)
        den_pool = ch.c2 if ch.direction == "d1>d2" else ch.c1
        w = local_weights(centre, m_hits, eps_c)
        half = bisect.bisect_right(trail_seen, (n_sel + done) * WINDOW) - 1
        n = next_batch(n, budget - done, ep.log_e_claim, rate, ep.threshold, seen=n_sel + done,
                       progress=ep.log_e_claim - (trail_lm[half] if half >= 0 else 0.0), first_cert=first_cert,
                       growth=growth, budget=budget)
        c1, z1 = _batch(mechanism, d1, n, seed, (*key, CERTIFY, 0, looks), ch.event)
        c2, z2 = _batch(mechanism, d2, n, seed, (*key, CERTIFY, 1, looks), ch.event)
        kn, kd = (c1, c2) if ch.direction == "d1>d2" else (c2, c1)
        ep.update(kn, kd, n, w)
        if event is None:
            run_num, run_den = run_num + kn, run_den + kd
        done += n
        looks += 1
        k1_tot += c1
        k2_tot += c2
        if den_pool > 0 or kd > 0:
            sel_den_zero = False
        trail_seen.append(n_sel + done)
        trail_lm.append(ep.log_e_claim)
        history.append({"look": looks, "draws": done, "event": str(ch.event), "direction": ch.direction,
                        "counts": [c1, c2], "epsilon_lower": ep.epsilon_lower, "log_e": ep.log_e_claim})
        violated = ep.epsilon_lower > eps_c or (dl_c > 0 and ep.delta_lower > dl_c)
        if violated:
            stopped = "violation"
            break
        if event is None:
            pool.add(z1, z2)
    assert ch is not None
    eps_lb = ep.epsilon_lower
    dl_lb = ep.delta_lower if dl_c > 0 else 0.0
    violated = bool(eps_lb > eps_c or (dl_c > 0 and dl_lb > dl_c))
    num, den = (k1_tot, k2_tot) if ch.direction == "d1>d2" else (k2_tot, k1_tot)
    lam = float(max(done, 1))
    if dl_c == 0.0:
        est = 0.0 if num == 0 else (math.inf if den == 0 else max(math.log(num / den), 0.0))
    else:
        p1, p2 = num / lam, den / lam
        est = 0.0 if p1 <= dl_c else (math.inf if p2 == 0 else max(math.log((p1 - dl_c) / p2), 0.0))
    support = bool(violated and sel_den_zero)
    w_ = Witness(d1=d1, d2=d2, direction=ch.direction, event=ch.event, counts=(k1_tot, k2_tot), samples=budget,
                 seed=seed, selection_counts=(ch.c1, ch.c2), selection_samples=n_sel, alpha_split=(alpha, 0.0),
                 pair_label=label, draws=(done, done))
    fields = dict(
        epsilon_claimed=eps_c, delta_claimed=dl_c, epsilon_lower=float(eps_lb), epsilon_estimate=float(est),
        delta_lower=float(dl_lb), violated=violated, witness=w_, support_violation=support,
        detectable_epsilon=detectable_epsilon(float(max(budget, 1)), float(alpha), eps_c, dl_c),
        blind_delta=bounds.blind_delta(max(budget, 1), alpha), alpha=alpha,
        calls=calls_so_far + 2 * done, pairs_tried=pairs_tried, neighbours=claim.neighbours,
    )
    fields["summary"] = summarize(fields) + (
        f" Anytime-valid sequential audit: stopped at look {looks} ({stopped}) after {done} of {budget} "
        f"certification draws per dataset; the counts are summed over the batches' events (the last one shown).")
    v = Verdict(**fields)
    v.extra.update({"sequential": True, "looks": looks, "stopped": stopped, "budget_per_dataset": budget,
                    "draws_per_dataset": n_sel + done, "history": history,
                    "seconds": time.perf_counter() - t0})
    return v


def sequential_audit(mechanism: Any, d1: Any, d2: Any, *, samples: int, alpha: float, seed: int,
                     events: Any = "all", first: int | None = None, event: Event | None = None,
                     direction: str | None = None, float_events: bool | None = None) -> Verdict:
    """One pair: a selection batch of ``first`` draws per dataset (default min(FIRST, 30 % of
    ``samples``)), then certification batches up to ``samples`` draws per dataset in total.
    With ``event`` (a replayed witness) every draw certifies it; without ``direction`` both
    directions are run on the same draws at alpha/2 each and the higher bound is kept."""
    if event is not None:
        if direction is None:
            vs = [sequential_certify(mechanism, d1, d2, pool1=[], pool2=[], budget=samples, alpha=alpha / 2,
                                     seed=seed, key=(0,), calls_so_far=0, pairs_tried=1, event=event,
                                     direction=dr) for dr in ("d1>d2", "d2>d1")]
            from dpharness.verifiers.statistical.batch import _with_calls

            best = max(vs, key=lambda v: v.epsilon_lower)  # the same draws serve both directions
            return _with_calls(best, max(v.calls for v in vs))
        return sequential_certify(mechanism, d1, d2, pool1=[], pool2=[], budget=samples, alpha=alpha, seed=seed,
                                  key=(0,), calls_so_far=0, pairs_tried=1, event=event, direction=direction)
    n_sel = first if first is not None else max(1, min(FIRST, int(round(0.3 * samples))))
    budget = samples - n_sel
    if budget < 1:
        raise ValueError(f"samples={samples} leaves no certification draws after {n_sel} selection draws")
    y1 = _parallel.sample_draws(mechanism, d1, n_sel, seed, (0, SELECT, 0))
    y2 = _parallel.sample_draws(mechanism, d2, n_sel, seed, (0, SELECT, 1))
    return sequential_certify(mechanism, d1, d2, pool1=[y1], pool2=[y2], budget=budget, alpha=alpha, seed=seed,
                              key=(0,), calls_so_far=2 * n_sel, pairs_tried=1, events=events,
                              float_events=float_events)


# statistical.audit / search.search dispatch here when sequential=True (see statistical.SEQUENTIAL)
SEQUENTIAL.update(audit=sequential_audit, certify=sequential_certify)
