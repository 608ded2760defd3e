"""Anytime-valid audits: draw in growing batches, stop as soon as a violation is certified.

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
null, whatever event, direction or weights were chosen from the past. The running product
M_t(eps) = F_1 ... F_t is a non-negative supermartingale, and by Ville's inequality
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

Selection. A first batch of ``first`` draws per dataset is used for selection only. After every
batch the event and direction are chosen again (:func:`verifiers.statistical.best_choice`) on every
draw seen so far (capped at POOL_CAP rows per dataset), and the weights w_j are centred on the
chosen event's estimated conditional proportion (a discretised normal in logit space, mixed with a
fixed broad part). All of this is predictable, so no alpha is split between selection rounds.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from scipy.special import expit, logsumexp

from . import bounds
from .events import Event
from .statistical import (CERTIFY, SELECT, Choice, best_choice, candidates_for, detectable_epsilon, draw, is_finite,
                          shrink_level, stream, SEQUENTIAL, check_sequential)
from .verdict import Verdict, Witness, summarize

__all__ = ["sequential_audit", "sequential_certify", "EProcess", "schedule", "check_sequential",
           "FIRST", "GROWTH", "POOL_CAP", "LOGIT_GRID"]

#: Draws per dataset of the selection batch (at most 30 % of the budget).
FIRST = 40
#: Size of the first certification batch per dataset, and the growth of the next ones.
FIRST_CERT = 10
GROWTH = 1.1
#: The event is chosen again when the draws seen have grown by this factor since the last choice.
RESELECT = 1.1
#: Rows per dataset kept for re-selection (the first ones drawn; later batches are only counted).
POOL_CAP = 200_000
#: Alternatives pi_j = expit(theta_j): logit grid, fine up to 10, then geometric to 40 (support
#: violations need pi_j very close to 1).
LOGIT_GRID = np.concatenate([np.arange(0.0, 10.0, 0.05), np.geomspace(10.5, 40.0, 16)])
#: Share of the batch weights on the fixed broad part (the rest is centred on the estimate).
BROAD = 0.25
#: Shrinkage level of the selection frequencies (None: :func:`verifiers.statistical.shrink_level`).
SHRINK: float | None = 0.25
#: Cell width of the confidence sequence in eps (logit of pi0) up to claim + 4, then geometric.
CELL = 0.005


def schedule(budget: int, first_cert: int = FIRST_CERT, growth: float = GROWTH) -> list[int]:
    """Certification batch sizes per dataset: first_cert, x growth, ..., the last one cut to the budget."""
    out: list[int] = []
    left = int(budget)
    size = float(max(1, first_cert))
    while left > 0:
        n = min(left, max(1, int(round(size))))
        out.append(n)
        left -= n
        size *= growth
    return out


class EProcess:
    """The mixture e-process M_t(eps) of the module docstring, kept on cells of eps.

    ``update(k_num, k_den, n, weights)`` adds one batch (counts of the batch's event in its
    direction, draws per dataset, weights on :data:`LOGIT_GRID` chosen before the batch);
    ``epsilon_lower`` is the left end of the first cell never rejected; ``delta_lower`` (for
    delta > 0) the running sup of {delta' : M_s(eps_claim, delta') >= 1/alpha}.
    """

    def __init__(self, alpha: float, epsilon: float, delta: float = 0.0, grid: np.ndarray = LOGIT_GRID,
                 cell: float = CELL):
        self.alpha = float(alpha)
        self.eps_c = float(epsilon)
        self.delta = float(delta)
        self.theta = np.asarray(grid, dtype=np.float64)
        self.pi = expit(self.theta)
        self.log_pi = np.log(self.pi)
        self.log_1m = np.log(expit(-self.theta))  # ln(1 - pi) without cancellation
        top = self.eps_c + 4.0
        fine = np.arange(0.0, top + cell / 2, cell)
        # the claim is a cell edge, so the cells next to it are exact
        fine = np.unique(np.concatenate([fine, [self.eps_c]]))
        coarse = np.geomspace(top, max(top + 1.0, float(self.theta[-1])), 120)[1:]
        edges = np.concatenate([fine, coarse])
        self.lo, self.hi = edges[:-1], edges[1:]
        self.a, self.b = expit(self.lo), expit(self.hi)
        self.log_b = np.log(self.b)
        self.log_1ma = np.log(expit(-self.lo))
        self.cum = np.zeros(self.lo.size)
        self.rejected = np.zeros(self.lo.size, dtype=bool)
        self.batches: list[tuple[int, int, int, np.ndarray]] = []
        self._delta_lb = 0.0
        self.threshold = math.log(1.0 / self.alpha)

    def update(self, k_num: int, k_den: int, n: int, weights: np.ndarray) -> None:
        w = np.asarray(weights, dtype=np.float64)
        if np.any(w < 0) or w.sum() > 1.0 + 1e-9:
            raise ValueError("weights must be >= 0 and sum to <= 1")
        keep = np.flatnonzero(w > 1e-12 * w.max()) if w.max() > 0 else np.zeros(0, dtype=int)
        lw = np.log(w[keep])[None, :]
        pj = self.pi[keep][None, :]
        # cells left of the first cell never rejected no longer matter (they stay rejected)
        bad = np.flatnonzero(~self.rejected)
        s0 = int(bad[0]) if bad.size else self.lo.size
        a, b = self.a[s0:, None], self.b[s0:, None]
        # lower bound of each alternative's log factor over each cell [a, b]
        t = (lw + k_num * (self.log_pi[keep][None, :] - self.log_b[s0:, None])
             + k_den * (self.log_1m[keep][None, :] - self.log_1ma[s0:, None]))
        if self.delta > 0:
            t = t - n * self.delta * (pj / a - 1.0)
        # An alternative below the cell bets nothing there: max(pi_j, pi0) = pi0, factor exactly 1
        # (at most 1 where pi_j falls inside the cell).
        t = np.where(pj >= b, t, np.where(pj <= a, lw, np.minimum(t, lw)))
        if t.shape[1]:
            mx = t.max(axis=1, keepdims=True)
            f = np.log(np.exp(t - mx).sum(axis=1)) + mx[:, 0]
        else:
            f = np.full(t.shape[0], -np.inf)
        self.cum[s0:] = self.cum[s0:] + f
        self.rejected[s0:] |= self.cum[s0:] >= self.threshold
        self.batches.append((int(k_num), int(k_den), int(n), w))
        if self.delta > 0:
            self._delta_lb = max(self._delta_lb, self._delta_at_claim())

    def log_e(self, epsilon: float, delta: float | None = None) -> float:
        """ln M_t at the point (epsilon, delta) exactly (not on cells): the test statistic."""
        dl = self.delta if delta is None else float(delta)
        pi0 = expit(epsilon)
        lp0, l1p0 = math.log(pi0), math.log(expit(-epsilon))
        ok = self.pi > pi0
        total = 0.0
        for k1, k2, n, w in self.batches:
            with np.errstate(divide="ignore"):
                t = (np.log(w[ok]) + k1 * (self.log_pi[ok] - lp0) + k2 * (self.log_1m[ok] - l1p0)
                     - n * dl * (self.pi[ok] / pi0 - 1.0))
            cash = float(w[~ok].sum())  # alternatives at or below pi0 bet nothing: factor 1
            t = np.append(t, math.log(cash) if cash > 0 else -math.inf)
            total += float(logsumexp(t))
        return total

    def _delta_at_claim(self) -> float:
        """sup{delta' in [0, 1] : ln M_t(eps_c, delta') >= ln(1/alpha)}; M decreases in delta'."""
        if self.log_e(self.eps_c, 0.0) < self.threshold:
            return 0.0
        lo, hi = 0.0, 1.0
        if self.log_e(self.eps_c, hi) >= self.threshold:
            return 1.0
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if self.log_e(self.eps_c, mid) >= self.threshold:
                lo = mid
            else:
                hi = mid
        return lo

    @property
    def epsilon_lower(self) -> float:
        bad = np.flatnonzero(~self.rejected)
        if bad.size == 0:
            return float(self.hi[-1])
        return float(self.lo[bad[0]])

    @property
    def delta_lower(self) -> float:
        return float(self._delta_lb)


def local_weights(centre: float, m: float, eps_c: float, grid: np.ndarray = LOGIT_GRID,
                  broad: float = BROAD) -> np.ndarray:
    """Weights on the alternatives for the next batch: a discretised normal in logit space at the
    event's estimated log ratio ``centre`` with the sd of a logit estimated from ``m`` hits, mixed
    with a fixed broad part centred just above the claim (sum 1)."""
    p = float(expit(centre))
    sd = max(0.08, 1.0 / math.sqrt((m + 1.0) * max(p * (1 - p), 1e-6)))
    loc = np.exp(-0.5 * ((grid - centre) / sd) ** 2)
    br = 1.0 / (1.0 + ((grid - eps_c - 0.5) / 1.0) ** 2)
    loc = loc / loc.sum() if loc.sum() > 0 else br / br.sum()
    return (1 - broad) * loc + broad * br / br.sum()


def _counts(choice_event: Event, y: np.ndarray) -> int:
    return int(choice_event.count(y))


def _kl(p: np.ndarray, q: float) -> np.ndarray:
    """KL(Bern(p) || Bern(q)) elementwise (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(p / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
    return a + b


def choose(y1: np.ndarray, y2: np.ndarray, *, finite: bool, epsilon: float, delta: float, events: str,
           n_cert: int, alpha: float) -> tuple[Choice, float, float]:
    """The event and direction for the next batch, from every draw so far, and the centre (logit)
    and count behind the weights.

    Score: the expected growth of ln M at the claim per draw per dataset,
    (p_num + p_den) KL(pi || pi_c), pi = p_num/(p_num + p_den), with p_num shrunk to its
    Clopper–Pearson lower bound (minus delta) and p_den to its upper bound at the selection's
    shrinkage level (winner's curse, as in :func:`verifiers.statistical.selection_score`). When no
    event looks like a violation, the bound-maximising choice of
    :func:`verifiers.statistical.best_choice` is used (it tightens the bound of a correct mechanism).
    """
    n = int(np.shape(y1)[0])
    cand = candidates_for(y1, y2, finite, events)
    gamma = SHRINK if SHRINK is not None else shrink_level(2 * len(cand))
    pi_c = float(expit(epsilon))
    best = None
    for direction, num, den in (("d1>d2", cand.c1, cand.c2), ("d2>d1", cand.c2, cand.c1)):
        keep = np.flatnonzero(num > den)
        if keep.size == 0:
            continue
        pn = np.maximum(np.asarray(bounds.cp_lower(num[keep], n, gamma), dtype=float).reshape(-1) - delta, 0.0)
        pd = np.asarray(bounds.cp_upper(den[keep], n, gamma), dtype=float).reshape(-1)
        tot = pn + pd
        pi = np.where(tot > 0, pn / np.maximum(tot, 1e-300), 0.0)
        rate = np.where(pi > pi_c, tot * _kl(pi, pi_c), 0.0)
        j = int(np.argmax(rate))
        if rate[j] > 0 and (best is None or rate[j] > best[0]):
            i = int(keep[j])
            best = (float(rate[j]), Choice(float(rate[j]), cand.event(i), direction, int(cand.c1[i]),
                                           int(cand.c2[i]), n, gamma), float(pi[j]))
    if best is not None:
        _, ch, pi = best
        num_c, den_c = (ch.c1, ch.c2) if ch.direction == "d1>d2" else (ch.c2, ch.c1)
        return ch, math.log(pi / (1 - pi)) if pi < 1 else float(LOGIT_GRID[-1]), float(num_c + den_c)
    ch = best_choice(y1, y2, finite=finite, n_cert=max(n_cert, 1), alpha=alpha, delta=delta, events=events)
    num_c, den_c = (ch.c1, ch.c2) if ch.direction == "d1>d2" else (ch.c2, ch.c1)
    p = (num_c + 0.5) / (num_c + den_c + 1.0)
    return ch, math.log(p / (1 - p)), float(num_c + den_c)


def sequential_certify(mechanism: Any, d1: Any, d2: Any, *, pool1: list[np.ndarray], pool2: list[np.ndarray],
                       budget: int, alpha: float, seed: int, key: tuple[int, ...], calls_so_far: int,
                       pairs_tried: int, label: str = "", events: str = "all", first_cert: int = FIRST_CERT,
                       growth: float = GROWTH, event: Event | None = None, direction: str | None = None) -> Verdict:
    """Certify sequentially with ``budget`` fresh draws per dataset at most, after the selection
    draws ``pool1``/``pool2`` (already drawn, counted in ``calls_so_far``)."""
    claim = mechanism.claim
    eps_c, dl_c = float(claim.epsilon), float(claim.delta)
    finite = is_finite(mechanism)
    ep = EProcess(alpha, eps_c, dl_c)
    sizes = schedule(budget, first_cert, growth)
    y1 = np.concatenate(pool1) if pool1 else np.zeros(0)
    y2 = np.concatenate(pool2) if pool2 else np.zeros(0)
    n_sel = int(np.shape(y1)[0])
    done = 0
    k1_tot = k2_tot = 0  # hits of the batches' events, by dataset
    sel_den_zero = True
    stopped = "budget"
    history: list[dict] = []
    ch: Choice | None = None
    looks = 0
    last_sel = 1
    run_num = run_den = sel_num = sel_den = 0
    centre, m_hits = 0.0, 0.0
    t0 = time.perf_counter()
    for b, n in enumerate(sizes):
        if event is not None:
            # a replayed witness: no selection; the weights follow this event's own counts so far
            dr = direction or "d1>d2"
            kn0, kd0 = (k1_tot, k2_tot) if dr == "d1>d2" else (k2_tot, k1_tot)
            ch = Choice(0.0, event, dr, 0, 0, 0, 0.0)
            centre, m_hits = math.log((kn0 + 0.5) / (kd0 + 0.5)), float(kn0 + kd0)
        elif ch is None or int(np.shape(y1)[0]) >= RESELECT * last_sel:
            ch, centre, m_hits = choose(y1, y2, finite=finite, epsilon=eps_c, delta=dl_c, events=events,
                                        n_cert=budget - done, alpha=alpha)
            last_sel = int(np.shape(y1)[0])
            run_num = run_den = 0  # this event's counts in the batches since it was chosen
            sel_num, sel_den = (ch.c1, ch.c2) if ch.direction == "d1>d2" else (ch.c2, ch.c1)
        else:
            # same event: the centre follows its counts on every draw so far (all predictable)
            tn, td = sel_num + run_num, sel_den + run_den
            centre, m_hits = math.log((tn + 0.5) / (td + 0.5)), float(tn + td)
        den_pool = ch.c2 if ch.direction == "d1>d2" else ch.c1
        w = local_weights(centre, m_hits, eps_c)
        z1 = draw(mechanism, d1, n, stream(seed, *key, CERTIFY, 0, b))
        z2 = draw(mechanism, d2, n, stream(seed, *key, CERTIFY, 1, b))
        c1, c2 = _counts(ch.event, z1), _counts(ch.event, z2)
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
        history.append({"look": looks, "draws": done, "event": str(ch.event), "direction": ch.direction,
                        "counts": [c1, c2], "epsilon_lower": ep.epsilon_lower})
        violated = ep.epsilon_lower > eps_c or (dl_c > 0 and ep.delta_lower > dl_c)
        if violated:
            stopped = "violation"
            break
        if event is None and int(np.shape(y1)[0]) < POOL_CAP:
            y1 = np.concatenate([y1, z1])
            y2 = np.concatenate([y2, z2])
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
                     events: str = "all", first: int | None = None, event: Event | None = None,
                     direction: str | None = None) -> Verdict:
    """One pair: a selection batch of ``first`` draws per dataset (default min(FIRST, 30 % of
    ``samples``)), then certification batches up to ``samples`` draws per dataset in total.
    With ``event`` (a replayed witness) every draw certifies it; without ``direction`` both
    directions are run on the same draws at alpha/2 each and the higher bound is kept."""
    if event is not None:
        if direction is None:
            vs = [sequential_certify(mechanism, d1, d2, pool1=[], pool2=[], budget=samples, alpha=alpha / 2,
                                     seed=seed, key=(0,), calls_so_far=0, pairs_tried=1, event=event,
                                     direction=dr) for dr in ("d1>d2", "d2>d1")]
            from .statistical import _with_calls

            best = max(vs, key=lambda v: v.epsilon_lower)  # the same draws serve both directions
            return _with_calls(best, max(v.calls for v in vs))
        return sequential_certify(mechanism, d1, d2, pool1=[], pool2=[], budget=samples, alpha=alpha, seed=seed,
                                  key=(0,), calls_so_far=0, pairs_tried=1, event=event, direction=direction)
    n_sel = first if first is not None else max(1, min(FIRST, int(round(0.3 * samples))))
    budget = samples - n_sel
    if budget < 1:
        raise ValueError(f"samples={samples} leaves no certification draws after {n_sel} selection draws")
    y1 = draw(mechanism, d1, n_sel, stream(seed, 0, SELECT, 0))
    y2 = draw(mechanism, d2, n_sel, stream(seed, 0, SELECT, 1))
    return sequential_certify(mechanism, d1, d2, pool1=[y1], pool2=[y2], budget=budget, alpha=alpha, seed=seed,
                              key=(0,), calls_so_far=2 * n_sel, pairs_tried=1, events=events)


# statistical.audit / search.search dispatch here when sequential=True (see statistical.SEQUENTIAL)
SEQUENTIAL.update(audit=sequential_audit, certify=sequential_certify)
