"""The exact windowed sampler of the Duff median and quantile mechanisms (:mod:`mechanisms.medians`).

For large n the sampler never sorts the whole array: it selects a rank window of +-K around the
target rank in O(n) (``np.partition`` or one comparison pass), computes the exact weights inside
the window, and handles the two outer regions by exact rejection sampling from an envelope
(:func:`_sample_window`). The draws have exactly the law ``distribution(data)`` whatever K is; K
only decides speed, and the caller falls back to the full sort when the window cannot be shown
to make the outer regions negligible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import special

from dpharness.mechanisms.domains import Grid
from dpharness.mechanisms.duff_utility import (
    cost_lower_bound_left,
    cost_lower_bound_right,
    distinct_sorted,
    duff_cost,
    runs_and_points,
    target_rank,
)
from dpharness.mechanisms.laws import sample_index

__all__ = ["WindowProposal", "window_proposal", "DuffLike", "WINDOW_MIN_N", "MAX_OUTSIDE"]

#: The windowed sampler is used above this n; below it the full sort is as fast.
WINDOW_MIN_N = 4096
#: Accept a window only if the expected number of O(n) outside proposals over all draws is below this.
MAX_OUTSIDE = 1e-3


class DuffLike(Protocol):
    """What the windowed sampler reads from a Duff mechanism (:class:`mechanisms.medians.DuffMedian`)."""

    epsilon: float
    lower: float
    upper: float
    definition: str
    q: float

    @property
    def ratio(self) -> tuple[int, int]: ...

    @property
    def grid(self) -> Grid | None: ...


def _window_half_width(n: int, q: float, epsilon: float, nd: int) -> int | None:
    """Rank half-width K of the window, or None when the full sort is the better plan.

    Outside the window the cost is >= K / max(q, 1-q) (:mod:`.duff_utility` bounds), so the outer
    regions' envelope mass is about range/spacing * exp(-epsilon K / (2 max(q, 1-q))). K is chosen
    to make that ~e^-30 / (n * draws); the exact check in :func:`_sample_window` decides.
    """
    if nd == 0 or n < WINDOW_MIN_N:
        return None
    qq = max(q, 1.0 - q)
    K = int(math.ceil(2.0 * qq * (math.log(n) + math.log1p(nd) + 30.0) / epsilon)) + 2
    if 2 * K + 1 > n // 4:
        return None
    return K


def _rank_window(x: np.ndarray, s: int, t: int) -> np.ndarray:
    """The order statistics x_(s) <= ... <= x_(t) (1-based ranks), sorted, in O(n) expected time.

    Large arrays: estimate the values of ranks s and t from a strided subsample (2^16 records),
    take a margin of 5 standard deviations of the subsample rank, and collect the candidates in
    [lo, hi] with one comparison pass; the candidates hold ranks s..t exactly when
    #{x < lo} <= s - 1 and #{x < lo} + #candidates >= t (checked; the order of the data can only
    make the check fail, never the result wrong). Otherwise, or for smaller arrays: partition at
    s - 1, then partition the upper part at t - s (two single-kth partitions; numpy's multi-kth
    partition is several times slower on this pattern).
    """
    n = x.size
    if n >= 2**17:
        stride = n // 2**16
        sub = x[::stride]
        ms = sub.size
        delta = int(math.ceil(2.5 * math.sqrt(ms))) + 4
        i_lo = int(math.floor((s - 1) / n * ms)) - delta
        i_hi = int(math.ceil(t / n * ms)) + delta
        ks = [k for k in (i_lo, i_hi) if 0 <= k < ms]
        ps = np.partition(sub, ks) if ks else sub
        lo = ps[i_lo] if i_lo >= 0 else -np.inf
        hi = ps[i_hi] if i_hi < ms else np.inf
        below = x < lo
        nb = int(np.count_nonzero(below))
        if nb <= s - 1:
            keep = np.logical_not(below, out=below)
            keep &= x <= hi
            cand = x[keep]
            if nb + cand.size >= t:
                return _window_of(cand, s - 1 - nb, t - 1 - nb)
    return _window_of(x, s - 1, t - 1)


def _window_of(v: np.ndarray, i: int, j: int) -> np.ndarray:
    """Sorted v[i..j] of the sorted order (0-based, inclusive) by two single-kth partitions."""
    p = np.partition(v, i)
    r = p[i:]
    r.partition(j - i)
    return np.sort(r[: j - i + 1])


@dataclass(frozen=True, eq=False)
class WindowProposal:
    """The proposal of the windowed sampler: exact window pieces plus two envelope regions.

    Pieces 0..nwin-1 are the exact window pieces (gaps of the continuous domain: start ``lo``,
    length ``width``; or grid runs/points: first index ``lo``, ``width`` points), with unnormalised
    log weights ``log_weight`` (the same weights as in ``distribution(data)``). Pieces nwin and
    nwin+1 are the regions left of x_(s) and right of x_(t) with envelope log weights, whose cost
    lower bounds are ``cost_bound``. ``s``, ``t``: the 1-based ranks bounding the window.
    """

    grid: Grid | None
    s: int
    t: int
    lo: np.ndarray
    width: np.ndarray
    log_weight: np.ndarray
    nwin: int
    cost_bound: np.ndarray

    def outside_fraction(self) -> float:
        """Probability that a proposal falls in an envelope region (an upper bound on the true
        outer mass)."""
        lw = self.log_weight
        if not np.isfinite(lw[self.nwin:]).any():
            return 0.0
        return float(np.exp(special.logsumexp(lw[self.nwin:]) - special.logsumexp(lw)))


def window_proposal(mech: DuffLike, x: np.ndarray, K: int) -> WindowProposal:
    """Build the :class:`WindowProposal` for ranks c-K..c+K around the target rank c (O(n))."""
    n = x.size
    a, b = mech.ratio
    eps = mech.epsilon
    c = target_rank(n, mech.q, mech.definition)
    s, t = max(1, c - K), min(n, c + K)
    win = _rank_window(x, s, t)
    g = mech.grid
    if g is None:
        w = np.clip(win, mech.lower, mech.upper)
        i = np.arange(s, t, dtype=np.int64)
        cost = duff_cost(i, 0, n - i, a, b, mech.definition).astype(np.float64)
        with np.errstate(divide="ignore"):
            lw_win = np.log(w[1:] - w[:-1]) - 0.5 * eps * cost
        lo = np.concatenate((w[:-1], [mech.lower, w[-1]]))
        width = np.concatenate((w[1:] - w[:-1], [w[0] - mech.lower, mech.upper - w[-1]]))
        a_left, b_right = s - 1, t
    else:
        vals, cnt = distinct_sorted(g.snap(win))
        k_s, k_t = int(vals[0]), int(vals[-1])
        # multiplicities of the boundary values outside the window (one comparison pass each)
        nl_eq = (s - 1) - g.count_below(x, k_s)
        nr_eq = g.count_below(x, k_t + 1) - t
        E = cnt.astype(np.int64)
        E[0] += nl_eq
        E[-1] += nr_eq
        L0 = s - 1 - nl_eq
        L = L0 + np.concatenate(([0], np.cumsum(E)[:-1]))
        first, count, LL, EE = runs_and_points(vals, E, L, n)
        cost = duff_cost(LL, EE, n - LL - EE, a, b, mech.definition).astype(np.float64)
        with np.errstate(divide="ignore"):
            lw_win = np.log(count.astype(np.float64)) - 0.5 * eps * cost
        lo = np.concatenate((first, [0, k_t + 1]))
        width = np.concatenate((count, [k_s, g.size - k_t]))
        # left of k_s at most L0 records are <= o; right of k_t at least L0 + sum(E) are < o
        a_left, b_right = L0, int(L[-1] + E[-1])
    cb = np.array([cost_lower_bound_left(n, a_left, a, b), cost_lower_bound_right(n, b_right, a, b)])
    with np.errstate(divide="ignore"):
        lw_env = np.log(np.asarray(width[-2:], dtype=np.float64)) - 0.5 * eps * cb
    return WindowProposal(g, s, t, lo, width, np.concatenate((lw_win, lw_env)), lw_win.size, cb)


def _sample_window(mech: DuffLike, x: np.ndarray, nd: int, rng: np.random.Generator, K: int,
                   max_outside: float | None = MAX_OUTSIDE) -> np.ndarray | None:
    """Exact draws from ``mech.distribution(x)`` using only a rank window of +-K around the target.

    Ranks s = c-K .. t = c+K are found in O(n) (:func:`_rank_window`) and only those 2K+1 records
    are sorted. Inside [x_(s), x_(t)] the weights are exact (the counts L, E, G of every gap/run/
    point follow from the ranks; on a discrete domain the two boundary values' multiplicities are
    counted with one comparison pass each). The two outer regions, o < x_(s) and o > x_(t), are
    proposed from an envelope: region size x exp(-epsilon c_bound / 2), with c_bound a lower bound
    on the cost anywhere in the region (at most s-1 records are <= o on the left, at least t are
    < o on the right: :func:`.duff_utility.cost_lower_bound_left`/``right``). An outer proposal o
    is accepted with probability exp(-epsilon (cost(o) - c_bound) / 2) <= 1, cost(o) computed
    exactly by counting (O(n)).

    Why this is exact: the proposal density is g = f on the window and g >= f on the outer regions
    (f the unnormalised target exp(epsilon u / 2) times the base measure), and accepting with
    probability f/g (= 1 on the window) is rejection sampling; repeating until acceptance returns
    exactly f normalised, whatever K is. K only controls speed: the call returns None (caller falls
    back to the full sort) when the expected number of O(n) outer proposals over all ``nd`` draws
    exceeds ``max_outside``.
    """
    prop = window_proposal(mech, x, K)
    if max_outside is not None and prop.outside_fraction() * nd > max_outside:
        return None
    n = x.size
    a, b = mech.ratio
    eps = mech.epsilon
    g, lo, width, lw, nwin = prop.grid, prop.lo, prop.width, prop.log_weight, prop.nwin
    out = np.empty(nd, dtype=np.float64)
    pending = np.arange(nd)
    while pending.size:
        j = sample_index(lw, pending.size, rng)
        if g is None:
            val = lo[j] + rng.random(pending.size) * width[j]
        else:
            kk = lo[j] + rng.integers(0, width[j])
        ok = j < nwin
        for r in np.flatnonzero(~ok):  # outer proposals: astronomically rare at the chosen K
            if g is None:
                o = float(val[r])
                lt = int(np.count_nonzero(x < o)) if o > mech.lower else 0
                le = int(np.count_nonzero(x <= o)) if o < mech.upper else n
            else:
                k = int(kk[r])
                lt = g.count_below(x, k)
                le = g.count_below(x, k + 1)
            c_true = float(duff_cost(lt, le - lt, n - le, a, b, mech.definition))
            if rng.random() < math.exp(-0.5 * eps * (c_true - prop.cost_bound[j[r] - nwin])):
                ok[r] = True
        out[pending[ok]] = val[ok] if g is None else g.values(kk[ok])
        pending = pending[~ok]
    return out
