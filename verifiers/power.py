"""Power of the verifier, by computation: the probability that a real violation is flagged.

Two guarantees, both exact or provably conservative (no Monte Carlo):

* :func:`certification_power` -- replaying a known witness (``audit(..., event=E, direction=d)``):
  the certification draws Poisson(lam) outputs per dataset, so the event counts are independent
  K1 ~ Poisson(lam p_num), K2 ~ Poisson(lam p_den); the detecting region is, for each k2, a tail
  k1 >= kmin(k2) (the bound is increasing in k1), so P[detect] = sum_k2 P[K2 = k2] P[K1 >= kmin(k2)]
  exactly (tails beyond 1e-17 are counted as failures).

* :func:`audit_power` -- the automatic audit (selection + certification), for a mechanism whose
  output law is known exactly (finite ``log_prob``; a CDF for real outputs). Let E* be a witness
  event with true probabilities (p_num, p_den). The candidate events the selection can pick are
  data dependent (thresholds at observed values, ...), so they are *bracketed* by a fixed grid:
  for real outputs, the extended grid -inf = g_0 < g_1 < ... < g_G < g_{G+1} = +inf (mixture
  quantiles, dense in the tails, with every atom of the laws included); a threshold {y <= t} with
  t in the open cell (g_{j-1}, g_j) lies between the grid events (-inf, g_{j-1}] and (-inf, g_j)
  and t = g_j is a grid event itself (likewise for {y >= t}), so its selection counts and true
  probabilities lie between theirs; an atom can
  only be a candidate where a law has an atom (elsewhere a repeated value has probability 0).
  This covers ``audit(..., events="thresholds")``; data-dependent intervals are not covered (a
  narrow interval inside one grid cell cannot be bracketed from inside). For finite outputs every
  subset is its own cell (``events="all"``). With probability >= 1 - eta:

  1. E*'s selection counts are >= the eta/4-quantile of Bin(n_sel, p_num) and <= the
     (1 - eta/4)-quantile of Bin(n_sel, p_den) (a fixed event: exact binomial quantiles); and
  2. every grid event's count is inside its exact binomial quantiles at level eta/(4 N) per side
     and dataset (Bonferroni over the N grid events; the counts of complements follow).

  On that event, the selected candidate has score (:func:`verifiers.statistical.selection_score`)
  >= s0 = S(E*'s count bounds), so it lies in a cell whose score upper bound
  S(outer upper quantile of the numerator, inner lower quantile of the denominator) is >= s0; its
  truths satisfy x >= x_inner, y <= y_outer, and the certification detects with probability >=
  D(x_inner, y_outer) (D is increasing in x, decreasing in y). The minimum of D over all such
  cells -- over both directions, every shrinkage level the candidate count allows and every alpha
  split of (epsilon, delta) claims; computed on the Pareto frontier of worst (x_inner, y_outer),
  grouped, each group bounded by its worst corner -- gives P[detect] >= 1 - eta - (1 - min D).
  ``slack`` covers a witness threshold that falls between candidate thresholds when the candidate
  list is capped (:func:`verifiers.events.threshold_gap`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable

import numpy as np
from scipy import stats

from . import bounds
from .events import THRESHOLD_CAP, finite_candidates, real_candidates, threshold_gap
from .statistical import ALPHA_SPLITS, DEFAULT_SELECTION, selection_score, shrink_level

__all__ = ["certification_power", "audit_power", "split_sizes", "possible_shrinks"]

def _prange(mu: float) -> tuple[int, int]:
    """Counts outside [lo, hi] have total Poisson(mu) probability far below 1e-17 (10 standard
    deviations plus 40); the sums below treat them as failures, so the results stay lower bounds."""
    if mu <= 0:
        return 0, 0
    w = 10.0 * math.sqrt(mu) + 40.0
    return max(0, int(mu - w)), int(mu + w) + 1


def _kmin_pure(k2: np.ndarray, kmax: int, epsilon: float, alpha: float) -> np.ndarray:
    """Smallest k1 in [1, kmax] with conditional_epsilon_lower(k1, k2) > epsilon (kmax + 1 if none)."""
    lo = np.zeros(k2.size, dtype=np.int64)  # invariant: lo does not detect (k1 = 0 never does)
    hi = np.full(k2.size, kmax + 1, dtype=np.int64)  # hi detects, or is the sentinel kmax + 1
    for _ in range(64):
        todo = hi - lo > 1
        if not todo.any():
            break
        mid = (lo + hi) // 2
        det = np.asarray(bounds.conditional_epsilon_lower(mid, k2, alpha)) > epsilon
        hi = np.where(todo & det, mid, hi)
        lo = np.where(todo & ~det, mid, lo)
    return hi


def certification_power(p_num: float, p_den: float, lam: float, epsilon: float, *, alpha1: float,
                        alpha2: float = 0.0, delta: float = 0.0) -> float:
    """P[the certification of an event with probabilities (p_num, p_den) flags epsilon], for
    Poisson(lam) draws per dataset: the conditional bound at alpha1 (pure claims, delta = 0) or the
    Garwood product bound at (alpha1, alpha2) with delta."""
    mu1, mu2 = lam * p_num, lam * p_den
    lo2, hi2 = _prange(mu2)
    k2 = np.arange(lo2, hi2 + 1)
    pmf2 = stats.poisson.pmf(k2, mu2) if mu2 > 0 else np.ones(1)
    _, hi1 = _prange(mu1)
    if delta == 0.0:
        kmin = _kmin_pure(k2, hi1, epsilon, alpha1)
    else:
        lo1, _ = _prange(mu1)
        k1 = np.arange(lo1, hi1 + 1)
        low = np.asarray(bounds.poisson_lower(k1, alpha1)) / lam
        thr = delta + math.exp(epsilon) * np.asarray(bounds.poisson_upper(k2, alpha2)) / lam
        idx = np.searchsorted(low, thr, side="right")  # below lo1 counts as not detecting (conservative)
        kmin = np.where(idx < k1.size, k1[np.minimum(idx, k1.size - 1)], hi1 + 1)
    p_hit = stats.poisson.sf(kmin - 1, mu1) if mu1 > 0 else (kmin <= 0).astype(np.float64)
    return float(np.clip(np.sum(pmf2 * p_hit), 0.0, 1.0))


def split_sizes(samples: int, selection: float = DEFAULT_SELECTION) -> tuple[int, int]:
    """(n_sel, expected n_cert) exactly as :func:`verifiers.audit` splits ``samples``."""
    n_sel = max(1, int(round(samples * float(selection))))
    return n_sel, samples - n_sel


@lru_cache(maxsize=256)
def possible_shrinks(n_sel: int, kind: str, k: int | None = None, atoms: int = 0,
                     intervals: bool = True) -> tuple[float, ...]:
    """Shrinkage levels the selection can use: from the candidate count of ``n_sel`` continuous
    outputs per dataset (plus ``atoms`` repeated values), or of 1..k observed finite outputs."""
    if kind == "finite":
        out = set()
        for j in range(1, (k or 1) + 1):
            y = np.arange(j)
            out.add(shrink_level(2 * len(finite_candidates(y, y))))
        return tuple(sorted(out))
    out = set()
    for a in range(0, atoms + 1):
        y = np.arange(2 * n_sel, dtype=np.float64)
        y[: 2 * a] = np.repeat(np.arange(a, dtype=np.float64), 2)
        out.add(shrink_level(2 * len(real_candidates(y[:n_sel], y[n_sel:], intervals=intervals))))
    return tuple(sorted(out))


def _law_functions(mechanism: Any, data: Any) -> tuple[Callable, list[float]]:
    """(cdf, atoms) of the real output law of ``mechanism`` on ``data``."""
    if hasattr(mechanism, "cdf") and not hasattr(mechanism, "distribution"):
        return (lambda y: np.asarray(mechanism.cdf(data, y), dtype=np.float64)), []
    law = mechanism.distribution(data)
    kind = getattr(law, "law", "")
    if kind == "grid_runs" and int(np.sum(law.count)) == 1:
        v = float(law.values(law.first[0]))
        return (lambda y, v=v: (np.asarray(y, dtype=np.float64) >= v).astype(np.float64)), [v]
    if kind == "location_scale":
        atoms = [float(law.lower), float(law.upper)] if law.clipped else []
        return (lambda y: np.asarray(law.cdf(y), dtype=np.float64)), atoms
    if kind == "piecewise":
        return (lambda y: np.asarray(law.cdf(y), dtype=np.float64)), []
    raise ValueError(f"audit_power needs a continuous law, a point mass or a clipped location-scale law, got {law!r}")


def _quantile_grid(cdfs: list[Callable], atoms: list[float], size: int) -> np.ndarray:
    """Points where the mixture CDF crosses tail-dense levels, plus every atom."""
    half = size // 2
    q = np.geomspace(1e-12, 0.5, half)
    levels = np.unique(np.concatenate([q, 1.0 - q]))
    mix = lambda x: np.mean([c(x) for c in cdfs], axis=0)  # noqa: E731
    lo, hi = -1.0, 1.0
    while mix(np.array(lo)) > levels[0]:
        lo *= 2.0
    while mix(np.array(hi)) < levels[-1]:
        hi *= 2.0
    a = np.full(levels.size, lo)
    b = np.full(levels.size, hi)
    for _ in range(80):
        m = 0.5 * (a + b)
        below = mix(m) < levels
        a = np.where(below, m, a)
        b = np.where(below, b, m)
    return np.unique(np.concatenate([b, np.asarray(atoms, dtype=np.float64)]))


def audit_power(mechanism: Any, witness: Any, *, samples: int, alpha: float = 0.05,
                selection: float = DEFAULT_SELECTION, eta: float = 5e-7, grid: int = 400) -> float:
    """Lower bound on P[``audit(mechanism, witness.d1, witness.d2, samples=samples, alpha=alpha,
    events=...)`` is violated] (module docstring): the default ``events="all"`` for finite
    outputs, ``events="thresholds"`` for real outputs. ``witness`` has ``d1, d2, event,
    direction, p_num, p_den`` (a :class:`verifiers.zoo.ZooWitness`); its event must be a
    threshold, an atom or a finite set."""
    claim = mechanism.claim
    eps, delta = float(claim.epsilon), float(claim.delta)
    finite = getattr(mechanism, "kind", "real") == "finite"
    if witness.event.kind not in ("le", "ge", "atom", "set"):
        raise ValueError(f"the witness event must be a threshold, an atom or a finite set, got {witness.event.kind!r}")
    n_sel, n_cert = split_sizes(samples, selection)
    # Cells: (x_in, x_out) under d1 and (y_in, y_out) under d2 for every bracketing cell.
    if finite:
        sup = np.asarray(mechanism.support(witness.d1))
        if not np.array_equal(sup, np.asarray(mechanism.support(witness.d2))):
            raise ValueError("audit_power needs the same support under d1 and d2")
        P1 = np.exp(mechanism.log_prob(witness.d1))
        P2 = np.exp(mechanism.log_prob(witness.d2))
        k = sup.size
        if k > 12:
            raise ValueError(f"audit_power enumerates subsets: k = {k} outputs is too many (<= 12)")
        masks = ((np.arange(1, 2**k - 1)[:, None] >> np.arange(k)[None, :]) & 1).astype(bool)
        m1, m2 = masks @ P1, masks @ P2
        in1 = out1 = np.clip(m1, 0, 1)
        in2 = out2 = np.clip(m2, 0, 1)
        n_events = masks.shape[0]
        shrinks = possible_shrinks(n_sel, "finite", k)
        slack = 0.0
    else:
        F1, at1 = _law_functions(mechanism, witness.d1)
        F2, at2 = _law_functions(mechanism, witness.d2)
        g = _quantile_grid([F1, F2], at1 + at2, grid)
        atoms = np.array(sorted(set(at1 + at2)), dtype=np.float64)
        parts1, parts2 = [], []
        for F, parts in ((F1, parts1), (F2, parts2)):
            right = np.concatenate([[0.0], F(g), [1.0]])  # P[Y <= g_j] on the extended grid
            left = np.concatenate([[0.0], F(np.nextafter(g, -np.inf)), [1.0]])  # P[Y < g_j]
            # "le", t in the open cell (g_{j-1}, g_j): inner (-inf, g_{j-1}], outer (-inf, g_j)
            parts.append((right[:-1], left[1:]))
            # "le", t = g_j exactly (j = 1..G): the event (-inf, g_j] itself
            parts.append((right[1:-1], right[1:-1]))
            # "ge", t in (g_i, g_{i+1}): inner [g_{i+1}, inf), outer (g_i, inf)
            parts.append((1.0 - left[1:], 1.0 - right[:-1]))
            # "ge", t = g_i exactly
            parts.append((1.0 - left[1:-1], 1.0 - left[1:-1]))
            # atoms: only the law's own atoms can repeat (elsewhere a repeat has probability 0)
            if atoms.size:
                mass = F(atoms) - F(np.nextafter(atoms, -np.inf))
                parts.append((mass, mass))
        in1 = np.clip(np.concatenate([a for a, _ in parts1]), 0, 1)
        out1 = np.clip(np.concatenate([b for _, b in parts1]), 0, 1)
        in2 = np.clip(np.concatenate([a for a, _ in parts2]), 0, 1)
        out2 = np.clip(np.concatenate([b for _, b in parts2]), 0, 1)
        n_events = in1.size
        shrinks = possible_shrinks(n_sel, "real", None, int(atoms.size), intervals=False)
        slack = float(threshold_gap(2 * n_sel) + 1) if 2 * n_sel > THRESHOLD_CAP else 0.0
    eta_cells = eta / (4.0 * n_events)  # per side, per dataset: 4 uses

    def q_hi(p: np.ndarray) -> np.ndarray:
        return np.where(p > 0, stats.binom.isf(eta_cells, n_sel, np.clip(p, 0, 1)), 0.0)

    def q_lo(p: np.ndarray) -> np.ndarray:
        return np.where(p < 1, stats.binom.ppf(eta_cells, n_sel, np.clip(p, 0, 1)), float(n_sel))

    hi1, hi2 = q_hi(out1), q_hi(out2)
    lo1, lo2 = q_lo(in1), q_lo(in2)
    c_num = float(stats.binom.ppf(eta / 4.0, n_sel, witness.p_num)) if witness.p_num < 1 else float(n_sel)
    c_den = float(stats.binom.isf(eta / 4.0, n_sel, witness.p_den)) if witness.p_den > 0 else 0.0
    c_num, c_den = max(c_num - slack, 0.0), min(c_den + slack, float(n_sel))
    splits = [(alpha, 0.0)] if delta == 0.0 else [(alpha * w, alpha * (1 - w)) for w in ALPHA_SPLITS]
    worst = 1.0
    for gamma in shrinks:
        s0 = float(selection_score(c_num, c_den, n_sel, n_cert, alpha, delta, shrink=gamma))
        if not (s0 >= 0.0):
            return 0.0
        pts = []
        for hn, ld, xn, yd in ((hi1, lo2, in1, out2), (hi2, lo1, in2, out1)):
            sel = selection_score(hn, ld, n_sel, n_cert, alpha, delta, shrink=gamma) >= s0
            pts.append(np.stack([xn[sel], yd[sel]], axis=1))
        P = np.concatenate(pts)
        if P.size == 0:
            return 0.0  # not even E*'s cell is selectable: the bound cannot be computed
        # Pareto frontier of worst points (small x, large y): sort by x, keep running max of y
        order = np.lexsort((-P[:, 1], P[:, 0]))
        P = P[order]
        keep = P[:, 1] > np.maximum.accumulate(np.concatenate([[-1.0], P[:-1, 1]]))
        F = P[keep]
        groups = np.array_split(np.arange(F.shape[0]), min(40, F.shape[0]))
        for grp in groups:
            x_lo, y_hi = F[grp[0], 0], F[grp[-1], 1]  # worst corner of the group
            if x_lo <= 0 or y_hi >= 1:
                return 0.0
            for a1, a2 in splits:
                worst = min(worst, certification_power(x_lo, y_hi, n_cert, eps, alpha1=a1, alpha2=a2, delta=delta))
                if worst <= 0:
                    return 0.0
    return max(0.0, 1.0 - eta - (1.0 - worst))
