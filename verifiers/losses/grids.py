"""Exact comparison of two laws on one grid (:class:`mechanisms.laws.GridRunsLaw`), for
:mod:`verifiers.exact`: run by run, never enumerating the grid.

On each segment between merged run ends both log pmfs are constant (uniform runs) or linear in
the grid index (geometric runs), so the log ratio is linear there: its maximum is at a segment end
and the hockey-stick sum is a difference of geometric sums past one crossing point. Results go
into ``acc``, the accumulator of :mod:`verifiers.losses.compare` (``see``, ``support``, ``delta``).
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np

from dpharness.mechanisms.laws import log_geometric_sum

__all__ = ["same_grid", "compare_grids", "see_atoms"]


def see_atoms(acc: Any, la: np.ndarray, lb: np.ndarray, label: Any) -> None:
    """Feed the accumulator the pointwise log ratios of two atom log-probability arrays (both
    directions; an atom impossible under the first law gives no loss) and record the atoms that
    only one law can produce (a support violation, infinite loss). ``label(j)`` names atom j."""
    with np.errstate(invalid="ignore"):
        fwd = np.where(np.isneginf(la), -np.inf, la - lb)
        bwd = np.where(np.isneginf(lb), -np.inf, lb - la)
    for d, arr in ((0, fwd), (1, bwd)):
        if arr.size:
            j = int(np.argmax(arr))
            acc.see(d, float(arr[j]), ("atom", label(j)))
    acc.support[0] |= bool(np.any(np.isfinite(la) & np.isneginf(lb)))
    acc.support[1] |= bool(np.any(np.isfinite(lb) & np.isneginf(la)))


def same_grid(g1: Any, g2: Any) -> int | None:
    if not math.isclose(g1.step, g2.step, rel_tol=1e-12):
        return None
    off = (g2.origin - g1.origin) / g1.step
    k = round(off)
    return int(k) if abs(off - k) <= 1e-9 * max(1.0, abs(off)) else None


def compare_grids(g1: Any, g2: Any, acc: Any, eps: float | None) -> None:
    off = same_grid(g1, g2)
    f1, c1 = np.asarray(g1.first, np.int64), np.asarray(g1.count, np.int64)
    f2, c2 = np.asarray(g2.first, np.int64) + off, np.asarray(g2.count, np.int64)  # type: ignore[operator]
    cuts = np.unique(np.concatenate([f1, f1 + c1, f2, f2 + c2]))
    s, e = cuts[:-1], cuts[1:]

    def per_point(first: np.ndarray, count: np.ndarray, log_mass: np.ndarray) -> np.ndarray:
        r = np.searchsorted(first, s, side="right") - 1
        rc = np.clip(r, 0, first.size - 1)
        inside = (r >= 0) & (s < first[rc] + count[rc]) & (count[rc] > 0)
        with np.errstate(divide="ignore"):
            lp = log_mass[rc] - np.log(np.maximum(count[rc], 1).astype(np.float64))
        return np.where(inside, lp, -np.inf)

    if getattr(g1, "log_ratio", None) is not None or getattr(g2, "log_ratio", None) is not None:
        _compare_geometric_grids(g1, g2, off, s, e, acc, eps)  # type: ignore[arg-type]
        return
    la = per_point(f1, c1, np.asarray(g1.log_mass, np.float64))
    lb = per_point(f2, c2, np.asarray(g2.log_mass, np.float64))
    n = (e - s).astype(np.float64)
    see_atoms(acc, la, lb, lambda j: float(g1.values(s[j])))
    if eps is not None:
        pa, pb = np.exp(la), np.exp(lb)
        acc.delta[0] += float(np.sum(n * np.maximum(pa - math.exp(eps) * pb, 0.0)))
        acc.delta[1] += float(np.sum(n * np.maximum(pb - math.exp(eps) * pa, 0.0)))


def _segment_log_pmf(g: Any, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log pmf at grid index k of g, log ratio of the run holding k); -inf / 0 outside every run."""
    first = np.asarray(g.first, np.int64)
    count = np.asarray(g.count, np.int64)
    r = np.searchsorted(first, k, side="right") - 1
    rc = np.clip(r, 0, first.size - 1)
    inside = (r >= 0) & (k < first[rc] + count[rc]) & (count[rc] > 0)
    lp = g.log_pmf_offset(rc, np.where(inside, k - first[rc], 0))
    ratio = np.asarray(g.ratios, np.float64)[rc]
    return np.where(inside, lp, -np.inf), np.where(inside, ratio, 0.0)


def _log_geom_range(lp0: np.ndarray, ratio: np.ndarray, n: np.ndarray) -> np.ndarray:
    """log sum_{i<n} exp(lp0 + ratio i) (n >= 1; -inf where lp0 = -inf or n = 0)."""
    with np.errstate(invalid="ignore"):
        peak = np.maximum(ratio * np.maximum(n - 1, 0), 0.0)
        out = lp0 + peak + log_geometric_sum(ratio, np.maximum(n, 1))
    return np.where(np.isneginf(lp0) | (n <= 0), -np.inf, out)


def _geometric_delta(la: np.ndarray, ra: np.ndarray, lb: np.ndarray, rb: np.ndarray, n: np.ndarray,
                     eps: float) -> float:
    """sum over segments of sum_{i<n} max(0, p_a(i) - e^eps p_b(i)), with log p_a(i) = la + ra i and
    log p_b(i) = lb + rb i on each segment: exactly, without enumerating.

    D(i) = log p_a(i) - log p_b(i) - eps = d0 + (ra - rb) i is linear, so {D >= 0} is one run of
    consecutive offsets (a prefix or a suffix, one crossing point): both masses over that run are
    geometric sums, and there every term is >= 0, so the difference of the sums is the sum of the
    positive parts.
    """
    live = np.isfinite(la) & (n > 0)
    if not live.any():
        return 0.0
    la, ra, lb, rb, n = la[live], ra[live], lb[live], rb[live], n[live]
    with np.errstate(invalid="ignore"):
        d0 = np.where(np.isneginf(lb), np.inf, la - lb - eps)
    dr = ra - rb
    nf = n.astype(np.float64)
    # offsets i in [lo, hi) with D(i) >= 0
    lo = np.zeros_like(nf)
    hi = nf.copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        root = -d0 / dr  # D(root) = 0
        inc = (dr > 0) & np.isfinite(d0)
        dec = (dr < 0) & np.isfinite(d0)
        lo = np.where(inc, np.clip(np.ceil(root), 0, nf), lo)
        hi = np.where(dec, np.clip(np.floor(root) + 1, 0, nf), hi)
    flat = (dr == 0) & (d0 < 0)
    hi = np.where(flat, lo, hi)
    # rounding of root: drop an end offset whose D is (numerically) < 0
    for _ in range(2):
        bad_lo = (hi > lo) & (d0 + dr * lo < 0) & np.isfinite(d0)
        lo = np.where(bad_lo, lo + 1, lo)
        bad_hi = (hi > lo) & (d0 + dr * (hi - 1) < 0) & np.isfinite(d0)
        hi = np.where(bad_hi, hi - 1, hi)
    m = hi - lo
    keep = m > 0
    if not keep.any():
        return 0.0
    la, ra, lb, rb, lo, m = la[keep], ra[keep], lb[keep], rb[keep], lo[keep], m[keep]
    mp = np.exp(_log_geom_range(la + ra * lo, ra, m))
    with np.errstate(invalid="ignore"):
        mq = np.exp(_log_geom_range(np.where(np.isneginf(lb), -np.inf, lb + rb * lo + eps), rb, m))
    return float(np.sum(np.maximum(mp - mq, 0.0)))


def _compare_geometric_grids(g1: Any, g2: Any, off: int, s: np.ndarray, e: np.ndarray, acc: Any,
                             eps: float | None) -> None:
    """Same-grid comparison when some run is geometric (``log_ratio``).

    On each segment [s, e) between merged run ends, both log pmfs are linear in the grid index, so
    the log ratio is linear too: its maximum over the segment is at s or e - 1, and the hockey-stick
    sum is a difference of geometric sums over the offsets past one crossing point
    (:func:`_geometric_delta`).
    """
    shifted = SimpleNamespace(first=np.asarray(g2.first, np.int64) + off, count=g2.count, ratios=g2.ratios,
                              log_pmf_offset=g2.log_pmf_offset)  # g2 in g1's grid indices
    last = e - 1
    la, ra = _segment_log_pmf(g1, s)
    lb, rb = _segment_log_pmf(shifted, s)
    la_e, _ = _segment_log_pmf(g1, last)
    lb_e, _ = _segment_log_pmf(shifted, last)
    for d, (x, y, xe, ye) in enumerate(((la, lb, la_e, lb_e), (lb, la, lb_e, la_e))):
        with np.errstate(invalid="ignore"):
            at_s = np.where(np.isneginf(x), -np.inf, x - y)
            at_e = np.where(np.isneginf(xe), -np.inf, xe - ye)
        for arr, idx in ((at_s, s), (at_e, last)):
            if arr.size:
                j = int(np.argmax(arr))
                acc.see(d, float(arr[j]), ("atom", float(g1.values(idx[j]))))
    acc.support[0] |= bool(np.any(np.isfinite(la) & np.isneginf(lb)))
    acc.support[1] |= bool(np.any(np.isfinite(lb) & np.isneginf(la)))
    if eps is not None:
        n = (e - s).astype(np.int64)
        acc.delta[0] += _geometric_delta(la, ra, lb, rb, n, eps)
        acc.delta[1] += _geometric_delta(lb, rb, la, ra, n, eps)
