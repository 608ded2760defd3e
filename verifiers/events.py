"""Events: the sets of outputs whose probabilities under D and D' the verifier compares.

docs/auditing.md, "Event families": one-sided thresholds anywhere *including the tails* (every distinct
observed value near both ends), intervals and their complements, atoms (exact output values, e.g.
clipping bounds or a mechanism that forgot its noise), support events ("seen under D, never under
D'", which are thresholds at the extremes or atoms), and for finite output sets every output and the
unions of outputs ranked by their empirical ratio.

Candidate events are built from the *selection* samples only; the chosen event is then a fixed set
that the certification samples are counted against (:meth:`Event.contains`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Event", "Candidates", "real_candidates", "finite_candidates", "THRESHOLD_CAP", "TAIL_KEEP", "threshold_gap"]

#: At most this many threshold points per side type ("<=" and ">="); beyond it, the TAIL_KEEP
#: smallest and largest distinct values are all kept and the middle is subsampled evenly.
THRESHOLD_CAP = 1024
TAIL_KEEP = 256
#: Points of the grid on which intervals (and their complements) are formed.
INTERVAL_POINTS = 40
#: For finite outputs, unions are prefixes (by empirical ratio) of at most this many outputs.
UNION_CAP = 256


def _fmt(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.6g}"
    return repr(x.item() if hasattr(x, "item") else x)


@dataclass(frozen=True)
class Event:
    """A fixed set of outputs.

    ``kind`` is one of ``"le"`` (y <= hi), ``"ge"`` (y >= lo), ``"interval"`` (lo <= y <= hi),
    ``"outside"`` (y < lo or y > hi), ``"atom"`` (y == lo exactly) or ``"set"`` (y in ``values``,
    for finite outputs of any type).
    """

    kind: str
    lo: float = -math.inf
    hi: float = math.inf
    values: tuple = ()

    def __post_init__(self) -> None:
        if self.kind not in ("le", "ge", "interval", "outside", "atom", "set"):
            raise ValueError(f"event kind must be le, ge, interval, outside, atom or set, got {self.kind!r}")

    def contains(self, y: Any) -> np.ndarray:
        """Boolean mask: which outputs ``y`` (1-D array) are in the event."""
        y = np.asarray(y)
        if self.kind == "set":
            return np.isin(y, np.asarray(self.values, dtype=y.dtype if y.dtype != object else None))
        yf = y.astype(np.float64)
        if self.kind == "le":
            return yf <= self.hi
        if self.kind == "ge":
            return yf >= self.lo
        if self.kind == "interval":
            return (yf >= self.lo) & (yf <= self.hi)
        if self.kind == "outside":
            return (yf < self.lo) | (yf > self.hi)
        return yf == self.lo

    def count(self, y: Any) -> int:
        return int(np.count_nonzero(self.contains(y)))

    def __str__(self) -> str:
        if self.kind == "le":
            return f"{{y <= {_fmt(self.hi)}}}"
        if self.kind == "ge":
            return f"{{y >= {_fmt(self.lo)}}}"
        if self.kind == "interval":
            return f"{{{_fmt(self.lo)} <= y <= {_fmt(self.hi)}}}"
        if self.kind == "outside":
            return f"{{y < {_fmt(self.lo)} or y > {_fmt(self.hi)}}}"
        if self.kind == "atom":
            return f"{{y == {_fmt(self.lo)}}}"
        vals = ", ".join(_fmt(v) for v in self.values[:8])
        more = f", ... ({len(self.values)} outputs)" if len(self.values) > 8 else ""
        return f"{{y in {{{vals}{more}}}}}"


@dataclass(frozen=True, eq=False)
class Candidates:
    """Candidate events with their selection counts under D (``c1``) and D' (``c2``).

    Event ``i`` is produced lazily by :meth:`event` (there can be thousands)."""

    c1: np.ndarray
    c2: np.ndarray
    kinds: np.ndarray  # index into _KINDS
    lo: np.ndarray
    hi: np.ndarray
    sets: tuple = ()  # for finite unions: sets[i] is a tuple of outputs (kinds == set)

    def __len__(self) -> int:
        return int(self.c1.size)

    def event(self, i: int) -> Event:
        kind = _KINDS[int(self.kinds[i])]
        if kind == "set":
            return Event("set", values=self.sets[i])
        return Event(kind, lo=float(self.lo[i]), hi=float(self.hi[i]))


_KINDS = ("le", "ge", "interval", "outside", "atom", "set")
_K = {k: i for i, k in enumerate(_KINDS)}


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


def finite_candidates(y1: np.ndarray, y2: np.ndarray) -> Candidates:
    """Every output on its own, and prefix unions of outputs ranked by empirical ratio (both ways)."""
    y1 = np.asarray(y1)
    y2 = np.asarray(y2)
    vals, inv = np.unique(np.concatenate([y1, y2]), return_inverse=True)
    inv = inv.reshape(-1)
    k = vals.size
    n1 = np.bincount(inv[: y1.size], minlength=k)
    n2 = np.bincount(inv[y1.size:], minlength=k)
    c1 = [n1]
    c2 = [n2]
    sets: list[tuple] = [(v,) for v in vals.tolist()]
    if k > 1:
        # Unions: for each direction, outputs sorted by the smoothed ratio, longest first useful.
        for num, den in ((n1, n2), (n2, n1)):
            order = np.argsort(-(np.log(num + 0.5) - np.log(den + 0.5)), kind="stable")[: min(k - 1, UNION_CAP)]
            if order.size < 2:
                continue
            c1.append(np.cumsum(n1[order])[1:])
            c2.append(np.cumsum(n2[order])[1:])
            vl = vals[order].tolist()
            sets.extend(tuple(vl[: j + 1]) for j in range(1, order.size))
    c1a = np.concatenate(c1).astype(np.int64)
    c2a = np.concatenate(c2).astype(np.int64)
    nan = np.full(c1a.size, np.nan)
    return Candidates(c1=c1a, c2=c2a, kinds=np.full(c1a.size, _K["set"]), lo=nan, hi=nan, sets=tuple(sets))
