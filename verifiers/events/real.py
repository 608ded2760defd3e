"""Events on real outputs: one-sided thresholds anywhere *including the tails* (every distinct
observed value near both ends), intervals and their complements on a tail-dense grid, and atoms
(exact output values, e.g. clipping bounds or a mechanism that forgot its noise). Support events
("seen under D, never under D'") are thresholds at the extremes or atoms."""

from __future__ import annotations

import numpy as np

from dpharness.verifiers.events.core import _K, Candidates

__all__ = ["real_candidates", "real_with_nan", "threshold_gap", "THRESHOLD_CAP", "TAIL_KEEP", "INTERVAL_POINTS"]

#: At most this many threshold points per side type ("<=" and ">="); beyond it, the TAIL_KEEP
#: smallest and largest distinct values are all kept and the middle is subsampled evenly.
THRESHOLD_CAP = 1024
TAIL_KEEP = 256
#: Points of the grid on which intervals (and their complements) are formed.
INTERVAL_POINTS = 40


def _threshold_points(u: np.ndarray) -> np.ndarray:
    """Distinct values to threshold at: all of them up to THRESHOLD_CAP, else tails + even middle."""
    m = u.size
    if m <= THRESHOLD_CAP:
        return u
    mid = np.unique(np.linspace(TAIL_KEEP, m - TAIL_KEEP - 1, THRESHOLD_CAP - 2 * TAIL_KEEP).round().astype(np.int64))
    idx = np.concatenate([np.arange(TAIL_KEEP), mid, np.arange(m - TAIL_KEEP, m)])
    return u[idx]


def threshold_gap(m: int) -> int:
    """Largest number of consecutive distinct pooled values skipped between candidate thresholds
    (0 when every value is a candidate); used by :mod:`verifiers.power`."""
    if m <= THRESHOLD_CAP:
        return 0
    mid = np.unique(np.linspace(TAIL_KEEP, m - TAIL_KEEP - 1, THRESHOLD_CAP - 2 * TAIL_KEEP).round().astype(np.int64))
    return int(max(np.max(np.diff(mid)) - 1, 0))


def _interval_grid(u: np.ndarray) -> np.ndarray:
    m = u.size
    if m <= INTERVAL_POINTS:
        return u
    half = INTERVAL_POINTS // 2
    q = np.geomspace(1.0 / m, 0.5, half)
    lv = np.concatenate([q, 1.0 - q[::-1]])
    idx = np.unique(np.clip(np.round(lv * (m - 1)).astype(np.int64), 0, m - 1))
    return u[idx]


def real_candidates(y1: np.ndarray, y2: np.ndarray, intervals: bool = True) -> Candidates:
    """Thresholds (both sides, tails kept), atoms, and (unless ``intervals=False``) intervals and
    their complements on a tail-dense grid."""
    s1 = np.sort(np.asarray(y1, dtype=np.float64))
    s2 = np.sort(np.asarray(y2, dtype=np.float64))
    pooled = np.concatenate([s1, s2])
    u, cnt = np.unique(pooled, return_counts=True)
    parts = []

    def cnt_le(s: np.ndarray, t: np.ndarray) -> np.ndarray:
        return np.searchsorted(s, t, side="right")

    def cnt_lt(s: np.ndarray, t: np.ndarray) -> np.ndarray:
        return np.searchsorted(s, t, side="left")

    t = _threshold_points(u)
    inf = np.full(t.size, np.inf)
    parts.append((cnt_le(s1, t), cnt_le(s2, t), np.full(t.size, _K["le"]), -inf, t))
    parts.append((s1.size - cnt_lt(s1, t), s2.size - cnt_lt(s2, t), np.full(t.size, _K["ge"]), t, inf))
    g = _interval_grid(u)
    if intervals and g.size >= 2:
        i, j = np.triu_indices(g.size, k=1)
        a, b = g[i], g[j]
        in1 = cnt_le(s1, b) - cnt_lt(s1, a)
        in2 = cnt_le(s2, b) - cnt_lt(s2, a)
        parts.append((in1, in2, np.full(a.size, _K["interval"]), a, b))
        parts.append((s1.size - in1, s2.size - in2, np.full(a.size, _K["outside"]), a, b))
    atoms = u[cnt >= 2]
    if atoms.size:
        parts.append((cnt_le(s1, atoms) - cnt_lt(s1, atoms), cnt_le(s2, atoms) - cnt_lt(s2, atoms),
                      np.full(atoms.size, _K["atom"]), atoms, atoms))
    c1, c2, kinds, lo, hi = (np.concatenate(x) for x in zip(*parts))
    return Candidates(c1=c1.astype(np.int64), c2=c2.astype(np.int64), kinds=kinds, lo=lo, hi=hi)


def real_with_nan(a: np.ndarray, b: np.ndarray, intervals: bool = True, coord: int = -1) -> list[Candidates]:
    """Real events of one value per draw (the output, or coordinate ``coord`` of rows) with NaN ("no
    answer") as an atom of its own: a NaN block when either side has NaN, then the thresholds, atoms
    (and intervals) of the numbers."""
    from dataclasses import replace

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    na, nb = np.isnan(a), np.isnan(b)
    out: list[Candidates] = []
    if na.any() or nb.any():
        one = np.ones(1)
        out.append(Candidates(c1=np.array([int(na.sum())]), c2=np.array([int(nb.sum())]), kinds=np.array([_K["nan"]]),
                              lo=one * np.nan, hi=one * np.nan, coord=coord))
    a, b = a[~na], b[~nb]
    if a.size + b.size:
        out.append(replace(real_candidates(a, b, intervals=intervals), coord=coord))
    return out
