"""Events on real outputs: one-sided thresholds anywhere *including the tails* (every distinct
observed value near both ends), intervals and their complements on a tail-dense grid, and atoms
(exact output values, e.g. clipping bounds or a mechanism that forgot its noise). Support events
("seen under D, never under D'") are thresholds at the extremes or atoms.

Two families: ``real`` (thresholds, atoms, and NaN as the atom "no answer") and ``intervals``
(intervals and their complements). Both read the output, or each coordinate of vector rows; when
both are selected the intervals sit inside the real block, between the thresholds and the atoms.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import numpy as np

from dpharness.verifiers.events.core import Candidates, Event, empty, fmt
from dpharness.verifiers.events.families import Draws, Family, register

__all__ = ["real_candidates", "real_with_nan", "threshold_gap", "THRESHOLD_CAP", "TAIL_KEEP", "INTERVAL_POINTS",
           "VECTOR_INTERVAL_WIDTH", "ValueEvent", "AtMost", "AtLeast", "Interval", "Outside", "Atom", "NoAnswer",
           "REAL", "INTERVALS"]

#: At most this many threshold points per side type ("<=" and ">="); beyond it, the TAIL_KEEP
#: smallest and largest distinct values are all kept and the middle is subsampled evenly.
THRESHOLD_CAP = 1024
TAIL_KEEP = 256
#: Points of the grid on which intervals (and their complements) are formed.
INTERVAL_POINTS = 40
#: Rows at most this wide also get interval events per coordinate (wider rows: thresholds, atoms).
VECTOR_INTERVAL_WIDTH = 4


# --------------------------------------------------------------------------------------------
# the events

class ValueEvent(Event):
    """An event on one real value per draw: the output, coordinate ``coord`` of the row, or the
    learned score ``projection.score(row)``."""

    def value(self, y: np.ndarray) -> np.ndarray:
        if self.projection is not None:
            v = self.projection.score(y)
        elif self.coord >= 0:
            v = y.reshape(y.shape[0], -1)[:, self.coord]
        else:
            v = y
        return np.asarray(v).astype(np.float64)

    def contains(self, y: Any) -> np.ndarray:
        return self.test(self.value(np.asarray(y)))

    def test(self, v: np.ndarray) -> np.ndarray:
        """Which values ``v`` (float64) are in the set."""
        raise NotImplementedError

    @property
    def var(self) -> str:
        """How the description names the value."""
        if self.projection is not None:
            return "s(y)"
        return "y" if self.coord < 0 else f"y[{self.coord}]"


class AtMost(ValueEvent):
    """{v <= hi}."""

    kinds = ("le",)

    def test(self, v: np.ndarray) -> np.ndarray:
        return v <= self.hi

    def describe(self) -> str:
        return f"{{{self.var} <= {fmt(self.hi)}}}"

    def probability(self, cdf: Callable[[np.ndarray], np.ndarray]) -> float:
        """P[v in the event] under the law of v with this CDF."""
        return float(cdf(np.array([self.hi]))[0])


class AtLeast(ValueEvent):
    """{v >= lo}."""

    kinds = ("ge",)

    def test(self, v: np.ndarray) -> np.ndarray:
        return v >= self.lo

    def describe(self) -> str:
        return f"{{{self.var} >= {fmt(self.lo)}}}"

    def probability(self, cdf: Callable[[np.ndarray], np.ndarray]) -> float:
        """P[v in the event] under the law of v with this CDF (1 - P[v < lo])."""
        return 1.0 - float(cdf(np.nextafter(np.array([self.lo]), -np.inf))[0])


class Interval(ValueEvent):
    """{lo <= v <= hi}."""

    kinds = ("interval",)

    def test(self, v: np.ndarray) -> np.ndarray:
        return (v >= self.lo) & (v <= self.hi)

    def describe(self) -> str:
        return f"{{{fmt(self.lo)} <= {self.var} <= {fmt(self.hi)}}}"


class Outside(ValueEvent):
    """{v < lo or v > hi}: the complement of an interval (two tails)."""

    kinds = ("outside",)

    def test(self, v: np.ndarray) -> np.ndarray:
        return (v < self.lo) | (v > self.hi)

    def describe(self) -> str:
        return f"{{{self.var} < {fmt(self.lo)} or {self.var} > {fmt(self.hi)}}}"


class Atom(ValueEvent):
    """{v == lo} exactly."""

    kinds = ("atom",)

    def test(self, v: np.ndarray) -> np.ndarray:
        return v == self.lo

    def describe(self) -> str:
        return f"{{{self.var} == {fmt(self.lo)}}}"

    def probability(self, cdf: Callable[[np.ndarray], np.ndarray]) -> float:
        """P[v == lo] under the law of v with this CDF (its jump at lo)."""
        t = np.array([self.lo])
        return float(cdf(t)[0]) - float(cdf(np.nextafter(t, -np.inf))[0])


class NoAnswer(ValueEvent):
    """{v is NaN}: "no answer"."""

    kinds = ("nan",)

    def test(self, v: np.ndarray) -> np.ndarray:
        return np.isnan(v)

    def describe(self) -> str:
        return f"{{{self.var} is NaN (no answer)}}"


# --------------------------------------------------------------------------------------------
# candidates

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


def real_candidates(y1: np.ndarray, y2: np.ndarray, intervals: bool = True, thresholds: bool = True) -> Candidates:
    """Thresholds (both sides, tails kept) and atoms, and (unless ``intervals=False``) intervals
    and their complements on a tail-dense grid; ``thresholds=False`` leaves the intervals alone."""
    s1 = np.sort(np.asarray(y1, dtype=np.float64))
    s2 = np.sort(np.asarray(y2, dtype=np.float64))
    pooled = np.concatenate([s1, s2])
    u, cnt = np.unique(pooled, return_counts=True)
    parts = []

    def cnt_le(s: np.ndarray, t: np.ndarray) -> np.ndarray:
        return np.searchsorted(s, t, side="right")

    def cnt_lt(s: np.ndarray, t: np.ndarray) -> np.ndarray:
        return np.searchsorted(s, t, side="left")

    if thresholds:
        t = _threshold_points(u)
        inf = np.full(t.size, np.inf)
        parts.append((cnt_le(s1, t), cnt_le(s2, t), np.full(t.size, "le"), -inf, t))
        parts.append((s1.size - cnt_lt(s1, t), s2.size - cnt_lt(s2, t), np.full(t.size, "ge"), t, inf))
    g = _interval_grid(u)
    if intervals and g.size >= 2:
        i, j = np.triu_indices(g.size, k=1)
        a, b = g[i], g[j]
        in1 = cnt_le(s1, b) - cnt_lt(s1, a)
        in2 = cnt_le(s2, b) - cnt_lt(s2, a)
        parts.append((in1, in2, np.full(a.size, "interval"), a, b))
        parts.append((s1.size - in1, s2.size - in2, np.full(a.size, "outside"), a, b))
    atoms = u[cnt >= 2] if thresholds else u[:0]
    if atoms.size:
        parts.append((cnt_le(s1, atoms) - cnt_lt(s1, atoms), cnt_le(s2, atoms) - cnt_lt(s2, atoms),
                      np.full(atoms.size, "atom"), atoms, atoms))
    if not parts:
        return empty()
    c1, c2, kinds, lo, hi = (np.concatenate(x) for x in zip(*parts))
    return Candidates(c1=c1.astype(np.int64), c2=c2.astype(np.int64), kinds=kinds, lo=lo, hi=hi)


def real_with_nan(a: np.ndarray, b: np.ndarray, intervals: bool = True, coord: int = -1,
                  thresholds: bool = True) -> list[Candidates]:
    """Real events of one value per draw (the output, or coordinate ``coord`` of rows) with NaN ("no
    answer") as an atom of its own: a NaN block when either side has NaN (with the thresholds), then
    the thresholds, atoms (and intervals) of the numbers."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    na, nb = np.isnan(a), np.isnan(b)
    out: list[Candidates] = []
    if thresholds and (na.any() or nb.any()):
        one = np.ones(1)
        out.append(Candidates(c1=np.array([int(na.sum())]), c2=np.array([int(nb.sum())]), kinds=np.array(["nan"]),
                              lo=one * np.nan, hi=one * np.nan, coord=coord))
    a, b = a[~na], b[~nb]
    if a.size + b.size:
        out.append(replace(real_candidates(a, b, intervals=intervals, thresholds=thresholds), coord=coord))
    return out


def _per_value(d: Draws, intervals: bool, thresholds: bool) -> list[Candidates]:
    """The real blocks of the output, or of every coordinate of rows (intervals only on rows of at
    most VECTOR_INTERVAL_WIDTH coordinates)."""
    if not d.rows:
        return real_with_nan(d.y1, d.y2, intervals=intervals, thresholds=thresholds)
    r1, r2 = d.flat
    iv = intervals and d.width <= VECTOR_INTERVAL_WIDTH
    out: list[Candidates] = []
    for j in range(d.width):
        out.extend(real_with_nan(r1[:, j], r2[:, j], iv, coord=j, thresholds=thresholds))
    return out


# --------------------------------------------------------------------------------------------
# the families

class Real(Family):
    """Thresholds {v <= t}, {v >= t} at observed values (both tails kept), atoms {v == t} at values
    seen twice, and "no answer" {v is NaN}: of the output, or of every coordinate of rows."""

    name = "real"
    order = 10
    laws = ("real",)
    presets = ("all", "thresholds")

    def candidates(self, d: Draws) -> list[Candidates]:
        return _per_value(d, intervals=INTERVALS.name in d.families, thresholds=True)


class Intervals(Family):
    """Intervals {lo <= v <= hi} and their complements on a tail-dense grid of observed values (per
    coordinate on rows of at most VECTOR_INTERVAL_WIDTH coordinates). With ``real`` selected too they
    are built inside its block (after the thresholds, before the atoms), as they always were."""

    name = "intervals"
    order = 11
    laws = ("real",)
    presets = ("all",)

    def candidates(self, d: Draws) -> list[Candidates]:
        if REAL.name in d.families:
            return []
        return _per_value(d, intervals=True, thresholds=False)


REAL = register(Real())
INTERVALS = register(Intervals())
