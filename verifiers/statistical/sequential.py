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
"""

from __future__ import annotations

import bisect
import math
import time
from typing import Any

import numpy as np
from scipy.special import expit, ndtri

from dpharness.verifiers import bounds
from dpharness.verifiers import events as _events
from dpharness.verifiers.statistical import parallel as _parallel
from dpharness.verifiers.statistical import batch as _st
from dpharness.verifiers.events import Event
from dpharness.verifiers.statistical.draws import FIRST_CHUNK
from dpharness.verifiers.statistical.batch import (CERTIFY, SELECT, Choice, candidates_for, count_draws, detectable_epsilon, draw, is_finite,
                          selection_score, shrink_level, stream, SEQUENTIAL, check_sequential)
from dpharness.verifiers.verdict import Verdict, Witness, summarize

__all__ = ["sequential_audit", "sequential_certify", "EProcess", "schedule", "next_batch", "check_sequential",
           "FIRST", "FIRST_CERT", "GROWTH", "FAST_GROWTH", "FAST_MIN", "FAST_LOOKS", "MIN_BATCH", "FINE",
           "HORIZON", "STALL", "WINDOW",
           "RESELECT", "RESELECT_LARGE", "RESELECT_ROWS", "POOL_CAP", "POOL_SHARE", "POOL_FLOOR", "LOGIT_GRID",
           "BROAD", "SHRINK", "TOP_K", "INTERVAL_PENALTY", "TAILS_EACH", "CELL"]

# Every constant below is read when a function runs (not bound at definition time), so setting
# e.g. ``verifiers.sequential.BROAD`` changes later audits.

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


def _lse(t: np.ndarray, axis: int | None = None) -> Any:
    """ln sum exp(t) (along ``axis``); -inf for an empty or all -inf sum.

    Not ``scipy.special.logsumexp``: that costs ~70 us per call against ~4 us here, and it runs at
    every look, where it was a visible share of a small audit's wall time."""
    if axis is None:
        if t.size == 0:
            return -math.inf
        mx = float(t.max())
        if not math.isfinite(mx):
            return mx
        return mx + math.log(float(np.exp(t - mx).sum()))
    mx = t.max(axis=axis, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(t - mx).sum(axis=axis)) + np.squeeze(mx, axis=axis)


def schedule(budget: int, first_cert: int | None = None, growth: float | None = None) -> list[int]:
    """Fixed batch sizes per dataset: first_cert, x growth, ..., the last one cut to the budget
    (the audit itself sizes its batches with :func:`next_batch`)."""
    first_cert = FIRST_CERT if first_cert is None else first_cert
    growth = GROWTH if growth is None else growth
    out: list[int] = []
    left = int(budget)
    size = float(max(1, first_cert))
    while left > 0:
        n = min(left, max(1, int(round(size))))
        out.append(n)
        left -= n
        size *= growth
    return out


def next_batch(prev: int, left: int, log_m: float, rate: float, threshold: float, seen: int = 0,
               progress: float = math.inf, first_cert: int | None = None, growth: float | None = None,
               budget: int | None = None) -> int:
    """Size of the next batch, from the past only: ``prev`` (the last batch, 0 before the first),
    ``left`` (budget still unused), ``log_m`` (ln M at the claim now), ``rate`` (predicted growth
    of ln M at the claim per draw per dataset of the event about to be used; <= 0: none),
    ``seen`` (draws per dataset so far, selection included), ``progress`` (growth of ln M at the
    claim since the look at WINDOW x ``seen`` draws).

    With h = (ln(1/alpha) - ln M)/rate the predicted draws still needed, a violation is "near"
    when h <= min(left, HORIZON x seen) and ln M has not fallen lately (progress > STALL: the
    prediction alone is optimistic, the event was picked for its counts, and on a correct mechanism
    ln M drifts down).
    Near: max(MIN_BATCH, min(GROWTH x prev, FINE x h)), finer as M at the claim nears 1/alpha, so a
    stop overshoots the crossing by about FINE of the draws it needed. Otherwise (e.g. a correct
    mechanism) the batches grow by g = (budget/FIRST_CERT)^(1/FAST_LOOKS), within [FAST_MIN,
    FAST_GROWTH] (``budget``: the certification budget; FAST_GROWTH without it), so the budget is
    reached in about FAST_LOOKS looks (O(log budget) when g is capped).
    """
    first_cert = FIRST_CERT if first_cert is None else first_cert
    growth = GROWTH if growth is None else growth
    gap = max(threshold - log_m, 0.0)
    if prev <= 0:
        n = first_cert
    elif rate > 0 and gap <= rate * min(left, HORIZON * max(seen, 1)) and progress > STALL:
        n = max(MIN_BATCH, min(int(math.ceil(prev * growth)), int(round(FINE * gap / rate))))
    else:
        g = FAST_GROWTH
        if budget is not None:
            g = min(FAST_GROWTH, max(FAST_MIN, (max(budget, 1) / max(first_cert, 1)) ** (1.0 / FAST_LOOKS)))
        n = int(math.ceil(prev * g))
    return int(max(1, min(n, left)))


class EProcess:
    """The mixture e-process M_t(eps) of the module docstring, kept on cells of eps.

    ``update(k_num, k_den, n, weights)`` adds one batch (counts of the batch's event in its
    direction, draws per dataset, weights on :data:`LOGIT_GRID` chosen before the batch);
    ``epsilon_lower`` is the left end of the first cell never rejected; ``delta_lower`` (for
    delta > 0) the running sup of {delta' : M_s(eps_claim, delta') >= 1/alpha}; ``log_e_claim``
    is ln M_t at (eps_claim, delta_claim) exactly.
    """

    def __init__(self, alpha: float, epsilon: float, delta: float = 0.0, grid: np.ndarray | None = None,
                 cell: float | None = None):
        grid = LOGIT_GRID if grid is None else grid
        cell = CELL if cell is None else cell
        self.alpha = float(alpha)
        self.eps_c = float(epsilon)
        self.delta = float(delta)
        self.theta = np.asarray(grid, dtype=np.float64)
        if self.theta.ndim != 1 or np.any(np.diff(self.theta) <= 0):
            raise ValueError("grid must be a strictly increasing 1-D array of logits")
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
        # Which alternatives are above (pi_j >= b), below (pi_j <= a) or inside each cell; the
        # same comparisons as a direct evaluation, by bisection on the sorted pi.
        self._ge = np.searchsorted(self.pi, self.b, side="left")
        # (pi_j >= b wins when a cell is so narrow that a == b in floating point)
        self._le = np.minimum(np.searchsorted(self.pi, self.a, side="right"), self._ge)
        width = np.maximum(self._ge - self._le, 0)
        self._inside = []
        for k in range(int(width.max()) if width.size else 0):
            cells = np.flatnonzero(width > k)
            self._inside.append((cells, self._le[cells] + k))
        # ln M at the claim, kept exactly
        pi_c = expit(self.eps_c)
        self._up_c = self.pi > pi_c
        self._lx_c = self.log_pi - math.log(pi_c)
        self._ly_c = self.log_1m - math.log(expit(-self.eps_c))
        self._dx_c = self.pi / pi_c - 1.0
        self.log_e_claim = 0.0

    def update(self, k_num: int, k_den: int, n: int, weights: np.ndarray) -> None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != self.pi.shape:
            raise ValueError(f"weights must have one entry per alternative ({self.pi.size}), got shape {w.shape}")
        if np.any(w < 0) or w.sum() > 1.0 + 1e-9:
            raise ValueError("weights must be >= 0 and sum to <= 1")
        k1, k2 = int(k_num), int(k_den)
        with np.errstate(divide="ignore"):
            lw = np.log(w)
        # the point value at the claim
        t = np.where(self._up_c, lw + k1 * self._lx_c + k2 * self._ly_c - n * self.delta * self._dx_c, lw)
        self.log_e_claim += _lse(t)
        # cells left of the first cell never rejected no longer matter (they stay rejected)
        bad = np.flatnonzero(~self.rejected)
        s0 = int(bad[0]) if bad.size else self.lo.size
        f = self._cells_delta0(k1, k2, lw) if self.delta == 0 else self._cells_matrix(k1, k2, n, w, s0)
        self.cum[s0:] = self.cum[s0:] + f[s0:]
        self.rejected[s0:] |= self.cum[s0:] >= self.threshold
        self.batches.append((k1, k2, int(n), w))
        if self.delta > 0:
            self._delta_lb = max(self._delta_lb, self._delta_at_claim())

    def _cells_delta0(self, k1: int, k2: int, lw: np.ndarray) -> np.ndarray:
        """Lower bound of each cell's log factor, delta = 0: separable, O(cells + alternatives).
        An alternative below the cell bets nothing there: max(pi_j, pi0) = pi0, factor exactly 1
        (at most 1 where pi_j falls inside the cell)."""
        u = lw + (k1 * self.log_pi + k2 * self.log_1m)  # finite terms: -inf only where w_j = 0
        acc = np.empty(u.size + 1)
        acc[-1] = -np.inf
        np.logaddexp.accumulate(u[::-1], out=acc[-2::-1])  # acc[j] = ln sum_{i >= j} e^{u_i}
        pre = np.empty(u.size + 1)
        pre[0] = -np.inf
        np.logaddexp.accumulate(lw, out=pre[1:])  # pre[j] = ln sum_{i < j} w_i
        v = k1 * self.log_b + k2 * self.log_1ma
        f = np.logaddexp(acc[self._ge] - v, pre[self._le])
        for cells, j in self._inside:
            f[cells] = np.logaddexp(f[cells], np.minimum(u[j] - v[cells], lw[j]))
        return f

    def _cells_matrix(self, k1: int, k2: int, n: int, w: np.ndarray, s0: int) -> np.ndarray:
        """Lower bound of each cell's log factor for delta > 0 (cells from s0 on; the others -inf)."""
        out = np.full(self.lo.size, -np.inf)
        if w.max() <= 0:
            return out
        keep = np.flatnonzero(w > 1e-12 * w.max())
        lw = np.log(w[keep])[None, :]
        pj = self.pi[keep][None, :]
        a, b = self.a[s0:, None], self.b[s0:, None]
        t = (lw + k1 * (self.log_pi[keep][None, :] - self.log_b[s0:, None])
             + k2 * (self.log_1m[keep][None, :] - self.log_1ma[s0:, None]))
        t = t - n * self.delta * (pj / a - 1.0)
        t = np.where(pj >= b, t, np.where(pj <= a, lw, np.minimum(t, lw)))
        mx = t.max(axis=1, keepdims=True)
        out[s0:] = np.log(np.exp(t - mx).sum(axis=1)) + mx[:, 0]
        return out

    def _stacked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        k1 = np.array([b[0] for b in self.batches], dtype=np.float64)
        k2 = np.array([b[1] for b in self.batches], dtype=np.float64)
        n = np.array([b[2] for b in self.batches], dtype=np.float64)
        w = np.array([np.asarray(b[3], dtype=np.float64) for b in self.batches]).reshape(len(self.batches), -1)
        return k1, k2, n, w

    def log_e(self, epsilon: float, delta: float | None = None) -> float:
        """ln M_t at the point (epsilon, delta) exactly (not on cells): the test statistic."""
        if not self.batches:
            return 0.0
        return self._log_e(self._stacked(), epsilon, self.delta if delta is None else float(delta))

    def _log_e(self, st: tuple, epsilon: float, dl: float) -> float:
        k1, k2, n, w = st
        pi0 = expit(epsilon)
        ok = self.pi > pi0
        with np.errstate(divide="ignore"):
            lw = np.log(w)
        t = (lw[:, ok] + k1[:, None] * (self.log_pi[ok] - math.log(pi0))
             + k2[:, None] * (self.log_1m[ok] - math.log(expit(-epsilon)))
             - n[:, None] * dl * (self.pi[ok] / pi0 - 1.0))
        # alternatives at or below pi0 bet nothing: factor 1
        cash = w[:, ~ok].sum(axis=1)
        with np.errstate(divide="ignore"):
            t = np.concatenate([t, np.log(cash)[:, None]], axis=1)
        return float(np.sum(_lse(t, axis=1)))

    def _delta_at_claim(self) -> float:
        """sup{delta' in [0, 1] : ln M_t(eps_c, delta') >= ln(1/alpha)}; M decreases in delta'."""
        st = self._stacked()
        if self._log_e(st, self.eps_c, 0.0) < self.threshold:
            return 0.0
        lo, hi = 0.0, 1.0
        if self._log_e(st, self.eps_c, hi) >= self.threshold:
            return 1.0
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if self._log_e(st, self.eps_c, mid) >= self.threshold:
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


def local_weights(centre: float, m: float, eps_c: float, grid: np.ndarray | None = None,
                  broad: float | None = None) -> np.ndarray:
    """Weights on the alternatives for the next batch: a discretised normal in logit space at the
    event's estimated log ratio ``centre`` with the sd of a logit estimated from ``m`` hits, mixed
    with a fixed broad part centred just above the claim (sum 1)."""
    grid = LOGIT_GRID if grid is None else grid
    broad = BROAD if broad is None else broad
    p = float(expit(centre))
    sd = max(0.08, 1.0 / math.sqrt((m + 1.0) * max(p * (1 - p), 1e-6)))
    loc = np.exp(-0.5 * ((grid - centre) / sd) ** 2)
    br = 1.0 / (1.0 + ((grid - eps_c - 0.5) / 1.0) ** 2)
    loc = loc / loc.sum() if loc.sum() > 0 else br / br.sum()
    return (1 - broad) * loc + broad * br / br.sum()


def _kl(p: np.ndarray, q: float) -> np.ndarray:
    """KL(Bern(p) || Bern(q)) elementwise (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(p / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
    return a + b


def _wilson(k: np.ndarray, n: float, level: float, upper: bool) -> np.ndarray:
    """Closed-form stand-in for the one-sided Clopper–Pearson bound at ``level`` (Wilson score
    bound with continuity correction; exact at k = 0 and k = n). Only ranks candidates."""
    k = np.asarray(k, dtype=np.float64)
    z = float(ndtri(1.0 - level))
    kk = np.clip(k + (0.5 if upper else -0.5), 0.0, n)
    ph = kk / n
    s = z * np.sqrt(np.maximum(ph * (1 - ph) / n + z * z / (4 * n * n), 0.0))
    c = (ph + z * z / (2 * n) + (s if upper else -s)) / (1 + z * z / n)
    if upper:
        return np.where(k <= 0, -math.expm1(math.log(level) / n), np.where(k >= n, 1.0, np.clip(c, 0.0, 1.0)))
    return np.where(k <= 0, 0.0, np.where(k >= n, math.exp(math.log(level) / n), np.clip(c, 0.0, 1.0)))


def _count_below(y: np.ndarray, t: np.ndarray) -> np.ndarray:
    """#{y < t_k} for each k, in O(len(y) log len(t)) (no sort of y)."""
    order = np.argsort(t, kind="stable")
    ts = t[order]
    idx = np.searchsorted(ts, np.asarray(y, dtype=np.float64), side="right")  # how many t_k <= y
    below = np.cumsum(np.bincount(idx, minlength=ts.size + 1))[:ts.size]  # y < ts[k] iff idx <= k
    out = np.empty(ts.size, dtype=np.int64)
    out[order] = below
    return out


def _top(score: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest entries, in increasing index order (ties then go to the first
    candidate, as with a plain argmax)."""
    if score.size <= k:
        return np.arange(score.size)
    return np.sort(np.argpartition(-score, k - 1)[:k])


def _growth(num: np.ndarray, den: np.ndarray, n: int, gamma: float, delta: float, pi_c: float,
            exact: bool) -> tuple[np.ndarray, np.ndarray]:
    """Predicted growth of ln M at the claim per draw per dataset, (p_num + p_den) KL(pi || pi_c),
    with p_num shrunk down and p_den up at level gamma; and pi."""
    if exact:
        lo, up = bounds.cp_unchecked(num, n, gamma, False), bounds.cp_unchecked(den, n, gamma, True)
    else:
        lo, up = _wilson(num, n, gamma, False), _wilson(den, n, gamma, True)
    pn = np.maximum(lo - delta, 0.0)
    tot = pn + up
    pi = np.where(tot > 0, pn / np.maximum(tot, 1e-300), 0.0)
    return np.where(pi > pi_c, tot * _kl(pi, pi_c), 0.0), pi


def _bound_prescore(num: np.ndarray, den: np.ndarray, n: int, gamma: float, n_cert: int, alpha: float,
                    delta: float) -> np.ndarray:
    """:func:`verifiers.statistical.batch.selection_score` with normal approximations throughout (ranking only)."""
    k1 = _wilson(np.minimum(num, n), n, gamma, False) * n_cert
    k2 = _wilson(np.minimum(den, n), n, gamma, True) * n_cert
    z = float(ndtri(1.0 - alpha))
    if delta == 0.0:
        m = np.maximum(k1 + k2, 1e-300)
        pl = np.clip(k1 / m - z * np.sqrt(k1 * k2 / m) / m, 1e-300, 1 - 1e-16)
        return np.where(k1 > 0, np.log(pl) - np.log1p(-pl), -np.inf)
    lo = np.maximum(k1 - z * np.sqrt(k1), 0.0) / n_cert - delta
    up = (k2 + z * np.sqrt(k2) + z * z) / n_cert
    return np.where(lo > 0, np.log(np.maximum(lo, 1e-300)) - np.log(up), -np.inf)


def _bound_choice(cand: Any, n: int, *, n_cert: int, alpha: float, delta: float) -> Choice:
    """:func:`verifiers.statistical.batch.best_choice` on given candidates: maximise
    :func:`verifiers.statistical.batch.selection_score`, computed exactly for the TOP_K best of a
    closed-form pre-score per direction."""
    gamma = _st.SHRINK if _st.SHRINK is not None else shrink_level(2 * len(cand))
    best: Choice | None = None
    for direction, num, den in (("d1>d2", cand.c1, cand.c2), ("d2>d1", cand.c2, cand.c1)):
        keep = np.flatnonzero((num > den) & (num > delta * n))
        if keep.size == 0:
            continue
        sub = keep if keep.size <= TOP_K else keep[_top(_bound_prescore(num[keep], den[keep], n, gamma, n_cert,
                                                                        alpha, delta), TOP_K)]
        if delta == 0.0:  # selection_score's formula, without its input checks
            k1 = bounds.cp_unchecked(np.minimum(num[sub], n), n, gamma, False) * n_cert
            k2 = bounds.cp_unchecked(np.minimum(den[sub], n), n, gamma, True) * n_cert
            s = np.full(sub.size, -np.inf)
            ok = k1 > 0
            pl = bounds.cp_unchecked(k1[ok], k1[ok] + k2[ok], alpha, False)
            with np.errstate(divide="ignore"):
                s[ok] = np.log(pl) - np.log1p(-pl)
        else:
            s = selection_score(num[sub], den[sub], n, n_cert, alpha, delta, shrink=gamma)
        j = int(np.argmax(s))
        if best is None or s[j] > best.score:
            i = int(sub[j])
            best = Choice(float(s[j]), cand.event(i), direction, int(cand.c1[i]), int(cand.c2[i]), n, gamma)
    if best is None:
        # Nothing is more likely under one dataset: certify the most frequent event (bound 0).
        i = int(np.argmax(cand.c1))
        best = Choice(-math.inf, cand.event(i), "d1>d2", int(cand.c1[i]), int(cand.c2[i]), n, gamma)
    return best


def choose(y1: np.ndarray, y2: np.ndarray, *, finite: bool, epsilon: float, delta: float, events: str,
           n_cert: int, alpha: float, float_events: bool = False) -> tuple[Choice, float, float, float]:
    """The event and direction for the next batch, from the pooled draws, the centre (logit) and
    count behind the weights, and the predicted growth rate of ln M at the claim (0: none).

    Score: the expected growth of ln M at the claim per draw per dataset,
    (p_num + p_den) KL(pi || pi_c), pi = p_num/(p_num + p_den), with p_num shrunk to its
    Clopper–Pearson lower bound (minus delta) and p_den to its upper bound at the selection's
    shrinkage level (winner's curse, as in :func:`verifiers.statistical.batch.selection_score`); computed
    exactly for the TOP_K best candidates per direction of the same score with Wilson bounds. For
    scalar real outputs an interval's score is divided by INTERVAL_PENALTY, and a two-tailed event
    scores 0 unless each tail alone has a positive score in the same direction (TAILS_EACH). When
    no event looks like a violation, the bound-maximising choice of
    :func:`verifiers.statistical.batch.best_choice` is used (it tightens the bound of a correct mechanism).
    """
    n = int(np.shape(y1)[0])
    cand = candidates_for(y1, y2, finite, events, float_events)
    gamma = SHRINK if SHRINK is not None else shrink_level(2 * len(cand))
    pi_c = float(expit(epsilon))
    # Scalar outputs: an interval must promise INTERVAL_PENALTY times the growth of the best other
    # event, and a two-tailed event {y < lo or y > hi} counts only if each tail on its own looks
    # like a violation in the same direction (else it is a threshold plus a tail piece fitted to
    # noise: thousands of such candidates feed the winner's curse).
    factor = np.ones(len(cand))
    kinds = _events.KINDS
    scalar = not cand.parts and np.ndim(y1) == 1 and not finite
    outside = np.zeros(len(cand), dtype=bool)
    if scalar and "interval" in kinds and INTERVAL_PENALTY != 1.0:
        factor[cand.kinds == kinds.index("interval")] = 1.0 / INTERVAL_PENALTY
    if scalar and "outside" in kinds and TAILS_EACH:
        outside = cand.kinds == kinds.index("outside")
    best = None
    for direction, num, den in (("d1>d2", cand.c1, cand.c2), ("d2>d1", cand.c2, cand.c1)):
        keep = np.flatnonzero((num > den) & (factor > 0))
        if keep.size == 0:
            continue
        if keep.size > TOP_K:
            pre, _ = _growth(num[keep], den[keep], n, gamma, delta, pi_c, exact=False)
            pre = pre * factor[keep]
            sub = _top(pre, TOP_K)
            if outside.any():  # the best one-tailed candidates too, in case the two-tailed ones fail
                sub = np.union1d(sub, _top(np.where(outside[keep], -np.inf, pre), TOP_K))
            sub = keep[sub]
        else:
            sub = keep
        rate, pi = _growth(num[sub], den[sub], n, gamma, delta, pi_c, exact=True)
        rate = rate * factor[sub]
        two = np.flatnonzero(outside[sub] & (rate > 0))
        if two.size:
            left = [_count_below(y, cand.lo[sub[two]]) for y in (y1, y2)]  # counts of y < lo
            ln, ld = (left[0], left[1]) if direction == "d1>d2" else (left[1], left[0])
            r_left, _ = _growth(ln, ld, n, gamma, 0.0, pi_c, exact=True)
            r_right, _ = _growth(num[sub[two]] - ln, den[sub[two]] - ld, n, gamma, 0.0, pi_c, exact=True)
            rate[two] = np.where((r_left > 0) & (r_right > 0), rate[two], 0.0)
        j = int(np.argmax(rate))
        if rate[j] > 0 and (best is None or rate[j] > best[0]):
            i = int(sub[j])
            best = (float(rate[j]), Choice(float(rate[j]), cand.event(i), direction, int(cand.c1[i]),
                                           int(cand.c2[i]), n, gamma), float(pi[j]))
    if best is not None:
        r, ch, pi = best
        num_c, den_c = (ch.c1, ch.c2) if ch.direction == "d1>d2" else (ch.c2, ch.c1)
        centre = math.log(pi / (1 - pi)) if pi < 1 else float(LOGIT_GRID[-1])
        return ch, centre, float(num_c + den_c), r
    ch = _bound_choice(cand, n, n_cert=max(n_cert, 1), alpha=alpha, delta=delta)
    num_c, den_c = (ch.c1, ch.c2) if ch.direction == "d1>d2" else (ch.c2, ch.c1)
    p = (num_c + 0.5) / (num_c + den_c + 1.0)
    return ch, math.log(p / (1 - p)), float(num_c + den_c), 0.0


def _pace(kn: float, kd: float, rows: float, delta: float, pi_c: float) -> float:
    """Growth of ln M at the claim per draw per dataset that an event seen kn/kd times in ``rows``
    draws per dataset would give if those frequencies were the truth (what sizes the batches);
    inf before any draw."""
    if rows <= 0:
        return math.inf
    pn, pd = max(kn / rows - delta, 0.0), kd / rows
    if pn + pd <= 0:
        return 0.0
    pi = pn / (pn + pd)
    return float((pn + pd) * _kl(np.array([pi]), pi_c)[0]) if pi > pi_c else 0.0


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
                       pairs_tried: int, label: str = "", events: str = "all", first_cert: int | None = None,
                       growth: float | None = None, event: Event | None = None,
                       direction: str | None = None, float_events: bool = False) -> Verdict:
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
    centre, m_hits, pace = 0.0, 0.0, 0.0
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
            pace = _pace(kn0, kd0, done, dl_c, pi_c)
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
            pace = _pace(sel_num + run_num, sel_den + run_den, last_sel + done - done_sel, dl_c, pi_c)
        den_pool = ch.c2 if ch.direction == "d1>d2" else ch.c1
        w = local_weights(centre, m_hits, eps_c)
        half = bisect.bisect_right(trail_seen, (n_sel + done) * WINDOW) - 1
        n = next_batch(n, budget - done, ep.log_e_claim, pace, ep.threshold, seen=n_sel + done,
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
                     events: str = "all", first: int | None = None, event: Event | None = None,
                     direction: str | None = None, float_events: bool = False) -> Verdict:
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
