"""Choosing the event of the anytime-valid audit's next batches, from the pooled draws: the predicted
growth of ln M at the claim (:mod:`verifiers.statistical.sequential`), exactly for the best
candidates of a closed-form pre-score."""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np
from scipy.special import expit, ndtri

from dpharness.verifiers import bounds
from dpharness.verifiers.events.real import Interval, Outside
from dpharness.verifiers.statistical import batch as _st
from dpharness.verifiers.statistical.batch import Choice, candidates_for, selection_score, shrink_level
from dpharness.verifiers.statistical.pacing import kl

__all__ = ["choose"]


def _tuning() -> Any:
    """:mod:`verifiers.statistical.sequential`, whose constants are read when a function runs (so
    setting e.g. ``sequential.TOP_K`` changes later audits); imported here, not at the top, because
    that module imports this one."""
    return importlib.import_module("dpharness.verifiers.statistical.sequential")


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
    return np.where(pi > pi_c, tot * kl(pi, pi_c), 0.0), pi


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
        top_k = _tuning().TOP_K
        sub = keep if keep.size <= top_k else keep[_top(_bound_prescore(num[keep], den[keep], n, gamma, n_cert,
                                                                        alpha, delta), top_k)]
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


def choose(y1: np.ndarray, y2: np.ndarray, *, finite: bool, epsilon: float, delta: float, events: Any,
           n_cert: int, alpha: float, float_events: bool | None = None) -> tuple[Choice, float, float, float]:
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
    t = _tuning()
    n = int(np.shape(y1)[0])
    cand = candidates_for(y1, y2, finite, events, float_events)
    gamma = t.SHRINK if t.SHRINK is not None else shrink_level(2 * len(cand))
    pi_c = float(expit(epsilon))
    # Scalar outputs: an interval must promise INTERVAL_PENALTY times the growth of the best other
    # event, and a two-tailed event {y < lo or y > hi} counts only if each tail on its own looks
    # like a violation in the same direction (else it is a threshold plus a tail piece fitted to
    # noise: thousands of such candidates feed the winner's curse).
    factor = np.ones(len(cand))
    # (only a single block of candidates: with a NaN or float block the rule is off, as it always was)
    scalar = not cand.parts and np.ndim(y1) == 1 and not finite
    outside = np.zeros(len(cand), dtype=bool)
    if scalar and t.INTERVAL_PENALTY != 1.0:
        factor[cand.kinds == Interval.kinds[0]] = 1.0 / t.INTERVAL_PENALTY
    if scalar and t.TAILS_EACH:
        outside = cand.kinds == Outside.kinds[0]
    best = None
    for direction, num, den in (("d1>d2", cand.c1, cand.c2), ("d2>d1", cand.c2, cand.c1)):
        keep = np.flatnonzero((num > den) & (factor > 0))
        if keep.size == 0:
            continue
        if keep.size > t.TOP_K:
            pre, _ = _growth(num[keep], den[keep], n, gamma, delta, pi_c, exact=False)
            pre = pre * factor[keep]
            sub = _top(pre, t.TOP_K)
            if outside.any():  # the best one-tailed candidates too, in case the two-tailed ones fail
                sub = np.union1d(sub, _top(np.where(outside[keep], -np.inf, pre), t.TOP_K))
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
        centre = math.log(pi / (1 - pi)) if pi < 1 else float(t.LOGIT_GRID[-1])
        return ch, centre, float(num_c + den_c), r
    ch = _bound_choice(cand, n, n_cert=max(n_cert, 1), alpha=alpha, delta=delta)
    num_c, den_c = (ch.c1, ch.c2) if ch.direction == "d1>d2" else (ch.c2, ch.c1)
    p = (num_c + 0.5) / (num_c + den_c + 1.0)
    return ch, math.log(p / (1 - p)), float(num_c + den_c), 0.0
