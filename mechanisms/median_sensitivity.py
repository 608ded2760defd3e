"""Exact smooth and local sensitivity of the clipped lower median (Nissim-Raskhodnikova-Smith 2007).

Conventions (docs/mechanisms.md)
--------------------------------
Data are clipped to [lower, upper] = [a, b] (values outside are moved to the nearest bound, never
dropped). Sorted clipped data x_1 <= ... <= x_n are *padded*: x_i = a for i <= 0 and x_i = b for
i >= n + 1. The statistic is the lower median x_m, m = ceil(n/2).

Replace-one smooth sensitivity [NRS07 §3.1, Prop. 3.4]::

    S*_beta(x) = max_{k>=0} e^{-k beta} max_{0<=t<=k+1} (x_{m+t} - x_{m+t-k-1})
               = max over pairs i < j with i <= m <= j of (x_j - x_i) e^{-beta (j - i - 1)}.

Add/remove smooth sensitivity (derived here, checked by brute force in the tests). Under
add/remove the local sensitivity of the lower median is ONE adjacent gap: x_m - x_{m-1} for odd n,
x_{m+1} - x_m for even n. A dataset y at add/remove distance d(x, y) has its median gap between two
retained records (or padding) x_i < x_j of x; making them adjacent costs the j - i - 1 removals
between them, and putting the gap at y's median needs #(>= x_j) - #(<= x_i) = (n + 1 - j) - i to be
0 or 1, each further edit moving that difference by one. Hence the distance-weighted maximum is

    S_AR(x) = max over pairs i < j of (x_j - x_i) e^{-beta c(i, j)},
    c(i, j) = (j - i - 1) + dist(i + j, {n, n + 1}) + [i = 0 and j = n + 1],

where the last term keeps every dataset non-empty (the median of an empty dataset is undefined
and the mechanisms reject empty data). Since the penalty grows by two per rank a window is moved
off centre, only *centred* windows (i + j in {n, n + 1}) can win, one per length w = j - i,
plus the pair (1, n + 1) because the centred (0, n + 1) pays the non-empty penalty:

    S_AR(x) = max( max_{w=1..n} (x_{j_w} - x_{i_w}) e^{-beta (w - 1)},
                   (b - x_1) e^{-beta n},  (b - a) e^{-beta (n + 1)} ).

Algorithms
----------
* ``_smooth_sensitivity_pairs``: the O(n^2) pair form (test oracle only).
* Replace-one: NRS07 divide and conquer (the best j for row i is non-decreasing in i because
  log(x_j - x_i) has the Monge property), evaluated level by level with numpy, with the exact early
  stop: any pair with j - i - 1 >= K is worth at most (b - a) e^{-K beta}, so once that is <= the
  best value found, rows below m - K and columns above m + K are never examined, and sub-problems
  whose upper bound (x_U - x_lo) e^{-beta (L - hi - 1)} cannot beat the best are pruned.
* O(n) expected path: select only the order statistics of ranks m - K .. m + K (a deterministic
  strided sample brackets them, one vectorised pass extracts them; ``np.partition`` is the
  fallback), sort that window, compute the window's maximum, and accept it only when
  (b - a) e^{-K beta} <= that maximum, which proves that no pair reaching outside the window can
  matter. Otherwise K is raised to the smallest value certified by the window's maximum (one more
  pass), or the full sort is used. Clipping commutes with order statistics, so only the window is
  clipped.

Sources: K. Nissim, S. Raskhodnikova, A. Smith, "Smooth sensitivity and sampling in private data
analysis", STOC 2007 (full version: Def. 2.1-2.2 smooth bounds, Lemma 2.6/Cor. 2.4 admissible noise,
§3.1 median and its O(n log n) algorithm); constants as in google-research ``dp_multiq``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpharness.mechanisms.base import check_bounds, check_choice, check_data, check_positive

__all__ = [
    "RELATIONS",
    "median_smooth_sensitivity",
    "median_local_sensitivity",
    "clipped_lower_median",
]

#: Neighbour relations the smooth sensitivity is computed for.
RELATIONS = ("replace_one", "add_remove")
_RELATIONS = RELATIONS
#: Below this size the full sort is as fast as any selection.
_SMALL_N = 1 << 15
#: Size of the deterministic strided sample used to bracket the rank window.
_SAMPLE = 1 << 16
#: The windowed path gives up (full sort) when the window would exceed n / _MAX_WINDOW_FRACTION.
_MAX_WINDOW_FRACTION = 8
#: -log of the smallest positive subnormal double, plus margin: e^{-746} rounds to 0.
_LOG_UNDERFLOW = 746.0


# ---------------------------------------------------------------------------------------------
# validation helpers


def _check_inputs(data: Any, lower: Any, upper: Any) -> tuple[np.ndarray, float, float]:
    a, b = check_bounds(lower, upper)
    x = check_data(data)
    return x, a, b


def _check_beta(beta: Any) -> float:
    return check_positive(beta, "beta")


def _lower_median_rank(n: int) -> int:
    """m = ceil(n / 2), 1-based."""
    return (n + 1) // 2


# ---------------------------------------------------------------------------------------------
# order statistics


def _partition_range(arr: np.ndarray, q0: int, q1: int) -> np.ndarray:
    """In place: afterwards arr[q0:q1+1] holds the order statistics of ranks q0..q1 (0-based).

    Two single-kth partitions: numpy's single-kth partition is several times faster than one
    call with two kth values.
    """
    arr.partition(q0)
    if q1 > q0:
        tail = arr[q0 + 1 :]
        tail.partition(q1 - q0 - 1)
    return arr


def _select_sorted(x: np.ndarray, q0: int, q1: int, sample_size: int = _SAMPLE) -> np.ndarray:
    """The order statistics of ranks q0..q1 (0-based, inclusive) of ``x``, sorted. Exact.

    Fast path: a deterministic strided sample of ``x`` gives two pivots that bracket the ranks
    with high probability for data in any non-adversarial order; one vectorised pass counts the
    values below the low pivot and extracts those between the pivots, and the ranks are checked
    exactly before the result is used. When the bracket misses (adversarial order), fall back to
    partitioning a copy of the whole array. ``x`` is never modified.
    """
    n = x.size
    if q0 == 0 and q1 == n - 1:
        return np.sort(x)
    if n > 4 * sample_size:
        step = n // sample_size
        s = x[::step]
        k = s.size
        # The sample rank of a population quantile has sd <= sqrt(k)/2; 6 sd of margin makes a
        # miss (which only costs the fallback) very unlikely for randomly ordered data.
        h = 3 * int(math.isqrt(k)) + 2
        lo_k = (q0 * k) // n - h
        hi_k = -(-(q1 + 1) * k // n) + h
        kth = [kk for kk in (lo_k, hi_k) if 0 <= kk < k]
        sp = np.partition(s, kth) if kth else s
        below_mask = (x < sp[lo_k]) if 0 <= lo_k < k else None
        upto_mask = (x <= sp[hi_k]) if 0 <= hi_k < k else None
        below = 0 if below_mask is None else int(np.count_nonzero(below_mask))
        if below_mask is None:
            cand = x[upto_mask] if upto_mask is not None else x.copy()
        elif upto_mask is None:
            cand = x[~below_mask]
        else:
            # below_mask implies upto_mask, so xor keeps exactly lo <= x <= hi.
            cand = x[np.logical_xor(below_mask, upto_mask)]
        if below <= q0 and q1 < below + cand.size:
            _partition_range(cand, q0 - below, q1 - below)
            return np.sort(cand[q0 - below : q1 - below + 1])
    arr = x.copy()
    _partition_range(arr, q0, q1)
    return np.sort(arr[q0 : q1 + 1])


def _padded_window(x: np.ndarray, p0: int, p1: int, a: float, b: float, sample_size: int) -> np.ndarray:
    """Padded clipped order statistics x_{p0}..x_{p1} (padded 1-based indices, 0 <= p0 < p1 <= n+1)."""
    n = x.size
    q0, q1 = max(p0, 1) - 1, min(p1, n) - 1
    core = np.clip(_select_sorted(x, q0, q1, sample_size), a, b)
    parts = []
    if p0 == 0:
        parts.append(np.array([a]))
    parts.append(core)
    if p1 == n + 1:
        parts.append(np.array([b]))
    return np.concatenate(parts) if len(parts) > 1 else core


def _padded_full(x: np.ndarray, a: float, b: float) -> np.ndarray:
    return np.concatenate(([a], np.clip(np.sort(x), a, b), [b]))


def clipped_lower_median(data: Any, lower: float, upper: float) -> float:
    """Lower median x_(ceil(n/2)) of ``data`` clipped to [lower, upper] (exact selection, O(n))."""
    x, a, b = _check_inputs(data, lower, upper)
    m = _lower_median_rank(x.size)
    return float(np.clip(_select_sorted(x, m - 1, m - 1)[0], a, b))


# ---------------------------------------------------------------------------------------------
# smooth sensitivity on a padded sorted window
#
# A window is an array z with z[t] = x_{p0 + t} for padded indices p0..p1 = p0 + len(z) - 1.


def _certified_k(best: float, width: float, beta: float, cap: int) -> int:
    """Smallest K >= 0 with width * e^{-beta K} <= best in floating point (capped at ``cap``).

    Every pair with cost >= K is then worth at most ``best``. With best == 0 this is the K at
    which the bound underflows to 0.0, so a zero answer is certified in floating point too.
    """
    if best > 0:
        kf = math.log(width / best) / beta
    else:
        kf = (_LOG_UNDERFLOW + math.log(width)) / beta
    if not math.isfinite(kf) or kf >= cap:
        return cap
    k = max(0, math.ceil(kf))
    while k < cap and width * math.exp(-beta * k) > best:
        k += 1
    return k


def _centred_max(z: np.ndarray, p0: int, n: int, beta: float, nonempty_penalty: bool) -> float:
    """Max over centred windows (i + j in {n, n+1}) inside the window of (x_j - x_i) e^{-beta cost}.

    cost = j - i - 1, plus one for the pair (0, n+1) when ``nonempty_penalty`` (add/remove).
    These pairs are exactly the add/remove candidates and a subset of the replace-one pairs.
    """
    p1 = p0 + z.size - 1
    w = np.arange(1, min(n + 1, p1 - p0) + 1)
    s = np.where((n - w) % 2 == 0, n, n + 1)
    i = (s - w) // 2
    j = i + w
    ok = (i >= p0) & (j <= p1)
    i, j, w = i[ok], j[ok], w[ok]
    if i.size == 0:
        return 0.0
    cost = (w - 1).astype(np.float64)
    if nonempty_penalty:
        cost = cost + ((i == 0) & (j == n + 1))
        if p0 <= 1 and p1 == n + 1:
            # (0, n+1) pays the non-empty penalty, so (1, n+1) (cost n) is also a candidate.
            i = np.append(i, 1)
            j = np.append(j, n + 1)
            cost = np.append(cost, float(n))
    vals = (z[j - p0] - z[i - p0]) * np.exp(-beta * cost)
    return float(vals.max())


def _replace_one_dc(z: np.ndarray, r_lo: int, r_hi: int, c_lo: int, c_hi: int, beta: float, best: float) -> float:
    """NRS07 divide and conquer over rows [r_lo, r_hi] x columns [c_lo, c_hi] (window indices).

    Maximises h(i, j) = (z_j - z_i) e^{-beta (j - i - 1)}. For a fixed row the leftmost best column
    is non-decreasing in the row (Monge property of log(z_j - z_i)), so the best column of the
    middle row splits the column range for the two halves. All nodes of one recursion level are
    evaluated in one vectorised step (segmented argmax); a node is dropped when its upper bound
    (z_U - z_lo) e^{-beta max(0, L - hi - 1)} cannot beat ``best`` (exact early stop).
    """
    lo = np.array([r_lo], dtype=np.int64)
    hi = np.array([r_hi], dtype=np.int64)
    L = np.array([c_lo], dtype=np.int64)
    U = np.array([c_hi], dtype=np.int64)
    while lo.size:
        bound = (z[U] - z[lo]) * np.exp(-beta * np.maximum(L - hi - 1, 0))
        keep = bound > best
        if not keep.all():
            lo, hi, L, U = lo[keep], hi[keep], L[keep], U[keep]
            if lo.size == 0:
                break
        mid = (lo + hi) // 2
        lengths = U - L + 1
        offsets = np.zeros(lengths.size, dtype=np.int64)
        np.cumsum(lengths[:-1], out=offsets[1:])
        seg = np.repeat(np.arange(lengths.size), lengths)
        j = np.arange(int(offsets[-1] + lengths[-1]), dtype=np.int64) - offsets[seg] + L[seg]
        i = mid[seg]
        # j - i - 1 = -1 only for i = j = m, whose value is 0 whatever the weight.
        vals = (z[j] - z[i]) * np.exp(-beta * np.maximum(j - i - 1, 0))
        segmax = np.maximum.reduceat(vals, offsets)
        best = max(best, float(segmax.max()))
        hit = np.flatnonzero(vals == segmax[seg])
        hseg = seg[hit]
        first = hit[np.concatenate(([True], hseg[1:] != hseg[:-1]))]
        jstar = j[first]
        left = mid > lo
        right = mid < hi
        lo, hi, L, U = (
            np.concatenate((lo[left], mid[right] + 1)),
            np.concatenate((mid[left] - 1, hi[right])),
            np.concatenate((L[left], jstar[right])),
            np.concatenate((jstar[left], U[right])),
        )
    return best


def _window_sensitivity(z: np.ndarray, p0: int, n: int, beta: float, neighbours: str) -> float:
    """Exact maximum over the pairs lying inside the window (padded indices p0..p0+len(z)-1)."""
    m = _lower_median_rank(n)
    p1 = p0 + z.size - 1
    if neighbours == "add_remove":
        return _centred_max(z, p0, n, beta, nonempty_penalty=True)
    seed = _centred_max(z, p0, n, beta, nonempty_penalty=False)
    return _replace_one_dc(z, 0, m - p0, m - p0, p1 - p0, beta, seed)


def _sensitivity_sorted(z: np.ndarray, n: int, beta: float, width: float, neighbours: str) -> float:
    """Full algorithm on the padded sorted data z = (x_0, ..., x_{n+1}), with the early stop."""
    m = _lower_median_rank(n)
    if neighbours == "add_remove":
        return _centred_max(z, 0, n, beta, nonempty_penalty=True)
    seed = _centred_max(z, 0, n, beta, nonempty_penalty=False)
    k = _certified_k(seed, width, beta, cap=n + 1)
    # Pairs with i < m - k or j > m + k have j - i - 1 >= k: worth at most width e^{-beta k} <= seed.
    return _replace_one_dc(z, max(0, m - k), m, m, min(n + 1, m + k), beta, seed)


def _default_k(beta: float) -> int:
    # The maximiser of e^{-k beta} A^(k) sits near k ~ 1/beta for smooth data and certification
    # needs about log((b - a)/S)/beta; 24/beta covers that for data spread over ~1e-10 of [a, b].
    return max(16, math.ceil(24.0 / beta))


def _median_and_sensitivity(
    x: np.ndarray,
    beta: float,
    a: float,
    b: float,
    neighbours: str,
    *,
    k0: int | None = None,
    small_n: int = _SMALL_N,
    sample_size: int = _SAMPLE,
) -> tuple[float, float]:
    """(clipped lower median, exact smooth sensitivity) for validated data ``x``.

    ``k0``, ``small_n`` and ``sample_size`` only exist so the tests can force every path.
    """
    n = x.size
    m = _lower_median_rank(n)
    width = b - a
    if n > small_n:
        k = _default_k(beta) if k0 is None else int(k0)
        for _ in range(2):
            p0, p1 = max(0, m - k), min(n + 1, m + k)
            if (p1 - p0) * _MAX_WINDOW_FRACTION > n:
                break
            z = _padded_window(x, p0, p1, a, b, sample_size)
            best = _window_sensitivity(z, p0, n, beta, neighbours)
            median = float(z[m - p0])
            # Every pair not inside the window has cost >= k (see module docstring).
            if width * math.exp(-beta * k) <= best:
                return median, best
            k = _certified_k(best, width, beta, cap=n + 1)
    z = _padded_full(x, a, b)
    return float(z[m]), _sensitivity_sorted(z, n, beta, width, neighbours)


# ---------------------------------------------------------------------------------------------
# public functions


def median_smooth_sensitivity(
    data: Any, beta: float, lower: float, upper: float, neighbours: str = "replace_one"
) -> float:
    """Exact beta-smooth sensitivity S*_beta of the lower median of ``data`` clipped to [lower, upper].

    Parameters
    ----------
    data : 1-D array of finite reals (non-empty); values outside [lower, upper] are clipped.
    beta : smoothing parameter, > 0.
    lower, upper : the data bounds (padding values), lower < upper.
    neighbours : ``"replace_one"`` (NRS07 §3.1 formula, the default) or ``"add_remove"`` (the
        exact add/remove smooth sensitivity over non-empty datasets, derived in the module
        docstring; never larger than the replace-one value).

    Returns
    -------
    float
        max_k e^{-k beta} A^(k)(x). Computed exactly in floating point (pair values
        (x_j - x_i) * exp(-beta * cost)); expected O(n) time for large n, O(n log n) worst case.
        Values below the smallest subnormal double round to 0.0.
    """
    x, a, b = _check_inputs(data, lower, upper)
    beta = _check_beta(beta)
    check_choice(neighbours, "neighbours", _RELATIONS)
    return _median_and_sensitivity(x, beta, a, b, neighbours)[1]


def median_local_sensitivity(data: Any, lower: float, upper: float, neighbours: str = "replace_one") -> float:
    """Local sensitivity LS(x) of the clipped lower median (padding a, b).

    replace-one: max(x_{m+1} - x_m, x_m - x_{m-1}); add/remove: x_m - x_{m-1} for odd n and
    x_{m+1} - x_m for even n (non-empty neighbours only). Not a smooth bound: noise scaled to it is
    not differentially private (the verifier's zoo uses it as a broken control).
    """
    x, a, b = _check_inputs(data, lower, upper)
    check_choice(neighbours, "neighbours", _RELATIONS)
    n = x.size
    m = _lower_median_rank(n)
    z = _padded_window(x, m - 1, m + 1, a, b, _SAMPLE)  # (x_{m-1}, x_m, x_{m+1}), padded
    left = float(z[1] - z[0])
    right = float(z[2] - z[1])
    if neighbours == "replace_one":
        return max(left, right)
    return left if n % 2 == 1 else right


def _smooth_sensitivity_pairs(
    data: Any, beta: float, lower: float, upper: float, neighbours: str = "replace_one"
) -> float:
    """O(n^2) definitional twin (tests only): the pair form of the module docstring
    (docs/mechanisms.md, "Smooth-sensitivity median").

    replace-one: max over i < j, i <= m <= j of (x_j - x_i) e^{-beta (j - i - 1)};
    add/remove: max over ALL i < j of (x_j - x_i) e^{-beta c(i, j)} with the general cost
    c(i, j) = (j - i - 1) + dist(i + j, {n, n+1}) + [i = 0, j = n + 1] (no centring shortcut).
    """
    x, a, b = _check_inputs(data, lower, upper)
    beta = _check_beta(beta)
    check_choice(neighbours, "neighbours", _RELATIONS)
    n = x.size
    m = _lower_median_rank(n)
    z = _padded_full(x, a, b)
    if neighbours == "replace_one":
        i = np.arange(m + 1)[:, None]
        j = np.arange(m, n + 2)[None, :]
        ok = i < j
        cost = j - i - 1
    else:
        i = np.arange(n + 2)[:, None]
        j = np.arange(n + 2)[None, :]
        ok = i < j
        s = i + j
        cost = (j - i - 1) + np.maximum(0, np.maximum(n - s, s - (n + 1))) + ((i == 0) & (j == n + 1))
    vals = (z[j] - z[i]) * np.exp(-beta * np.where(ok, cost, 0).astype(np.float64))
    return float(vals[ok].max())
