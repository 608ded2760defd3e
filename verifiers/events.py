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
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .projection import Projection, fit_projection

__all__ = ["Event", "Candidates", "real_candidates", "finite_candidates", "vector_candidates", "concat",
           "THRESHOLD_CAP", "TAIL_KEEP", "threshold_gap", "VECTOR_INTERVAL_WIDTH", "ROW_LABEL_CAP"]

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

    ``kind`` is one of ``"le"`` (v <= hi), ``"ge"`` (v >= lo), ``"interval"`` (lo <= v <= hi),
    ``"outside"`` (v < lo or v > hi), ``"atom"`` (v == lo exactly), ``"set"`` (the output is one
    of ``values``, for finite outputs of any type; for label rows each value is a row tuple),
    ``"nan"`` (v is NaN: "no answer") or ``"pattern"`` (the row's NaN pattern is one of
    ``values``, tuples of 0/1 with 1 = NaN).

    What ``v`` is: the output itself for scalar outputs; coordinate ``coord`` of the (flattened)
    row for vector outputs when ``coord >= 0``; the learned score ``projection.score(row)`` when
    ``projection`` is set (:mod:`verifiers.projection`).
    """

    kind: str
    lo: float = -math.inf
    hi: float = math.inf
    values: tuple = ()
    coord: int = -1
    projection: Projection | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"event kind must be one of {', '.join(_KINDS)}, got {self.kind!r}")

    def contains(self, y: Any) -> np.ndarray:
        """Boolean mask: which outputs ``y`` are in the event (sample axis first; rows for vectors)."""
        y = np.asarray(y)
        if self.kind == "set":
            if y.ndim >= 2:
                return _rows_in(y.reshape(y.shape[0], -1), self.values)
            return np.isin(y, np.asarray(self.values, dtype=y.dtype if y.dtype != object else None))
        if self.kind == "pattern":
            pat = np.isnan(y.reshape(y.shape[0], -1).astype(np.float64)).astype(np.int8)
            return _rows_in(pat, self.values)
        if self.projection is not None:
            v = self.projection.score(y)
        elif self.coord >= 0:
            v = y.reshape(y.shape[0], -1)[:, self.coord]
        else:
            v = y
        yf = np.asarray(v).astype(np.float64)
        if self.kind == "nan":
            return np.isnan(yf)
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
        v = "y" if self.coord < 0 else f"y[{self.coord}]"
        if self.projection is not None:
            v = "s(y)"
        if self.kind == "le":
            s = f"{{{v} <= {_fmt(self.hi)}}}"
        elif self.kind == "ge":
            s = f"{{{v} >= {_fmt(self.lo)}}}"
        elif self.kind == "interval":
            s = f"{{{_fmt(self.lo)} <= {v} <= {_fmt(self.hi)}}}"
        elif self.kind == "outside":
            s = f"{{{v} < {_fmt(self.lo)} or {v} > {_fmt(self.hi)}}}"
        elif self.kind == "atom":
            s = f"{{{v} == {_fmt(self.lo)}}}"
        elif self.kind == "nan":
            s = f"{{{v} is NaN (no answer)}}"
        elif self.kind == "pattern":
            pats = ", ".join("".join("-" if b else "x" for b in p) for p in self.values[:4])
            more = f", ... ({len(self.values)} patterns)" if len(self.values) > 4 else ""
            s = f"{{answer pattern of y in {{{pats}{more}}} (x answered, - no answer)}}"
        else:
            vals = ", ".join(_fmt(x) for x in self.values[:8])
            more = f", ... ({len(self.values)} outputs)" if len(self.values) > 8 else ""
            s = f"{{y in {{{vals}{more}}}}}"
        return s if self.projection is None else f"{s}, s = {self.projection}"


def _row_keys(*arrays: np.ndarray) -> list[np.ndarray] | None:
    """One int64 key per row, the same encoding for every array given (mixed-radix digits of the
    integer coordinates), or None when the rows are not small integers (then rows are compared
    through ``np.unique(axis=0)``, which is several times slower)."""
    if any(a.dtype.kind not in "biuf" for a in arrays):
        return None
    both = np.concatenate([a.reshape(a.shape[0], -1) for a in arrays])
    if both.size == 0:
        return None
    if both.dtype.kind == "f":
        if not np.all(np.isfinite(both)) or not np.array_equal(both, np.round(both)):
            return None
    lo = both.min(axis=0).astype(np.int64)
    span = both.max(axis=0).astype(np.int64) - lo + 1
    if float(np.sum(np.log2(span.astype(np.float64)))) > 62:
        return None
    weights = np.concatenate([[1], np.cumprod(span[:-1])]).astype(np.int64)
    return [(a.reshape(a.shape[0], -1).astype(np.int64) - lo) @ weights for a in arrays]


def _rows_in(rows: np.ndarray, values: tuple) -> np.ndarray:
    """Which rows (2-D array) equal one of ``values`` (row tuples), vectorised."""
    if not values:
        return np.zeros(rows.shape[0], dtype=bool)
    if rows.dtype == object:
        vs = set(values)
        return np.fromiter((tuple(r) in vs for r in rows.tolist()), dtype=bool, count=rows.shape[0])
    vals = np.asarray(values, dtype=rows.dtype).reshape(len(values), -1)
    if vals.shape[1] != rows.shape[1]:
        return np.zeros(rows.shape[0], dtype=bool)
    keys = _row_keys(vals, rows)
    if keys is not None:
        return np.isin(keys[1], keys[0])
    _, inv = np.unique(np.concatenate([vals, rows]), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    return np.isin(inv[len(vals):], inv[: len(vals)])


@dataclass(frozen=True, eq=False)
class Candidates:
    """Candidate events with their selection counts under D (``c1``) and D' (``c2``).

    Event ``i`` is produced lazily by :meth:`event` (there can be thousands). A block of
    candidates may be about one coordinate of vector outputs (``coord``) or about a learned score
    (``projection``); :func:`concat` joins blocks (``parts``)."""

    c1: np.ndarray
    c2: np.ndarray
    kinds: np.ndarray  # index into _KINDS
    lo: np.ndarray
    hi: np.ndarray
    sets: tuple = ()  # for finite unions: sets[i] is a tuple of outputs (kinds == set)
    coord: int = -1
    projection: Projection | None = None
    parts: tuple = ()  # ((offset, Candidates), ...) when this is a concatenation

    def __len__(self) -> int:
        return int(self.c1.size)

    def event(self, i: int) -> Event:
        if self.parts:
            offsets = [o for o, _ in self.parts]
            j = int(np.searchsorted(offsets, i, side="right")) - 1
            off, part = self.parts[j]
            return part.event(i - off)
        kind = _KINDS[int(self.kinds[i])]
        if kind in ("set", "pattern"):
            return Event(kind, values=self.sets[i], coord=self.coord)
        return Event(kind, lo=float(self.lo[i]), hi=float(self.hi[i]), coord=self.coord, projection=self.projection)


_KINDS = ("le", "ge", "interval", "outside", "atom", "set", "nan", "pattern")
_K = {k: i for i, k in enumerate(_KINDS)}


def concat(blocks: list[Candidates]) -> Candidates:
    """One candidate list made of several blocks (event ``i`` comes from the block holding it)."""
    blocks = [b for b in blocks if len(b)]
    if not blocks:
        z = np.zeros(0, dtype=np.int64)
        return Candidates(c1=z, c2=z, kinds=z, lo=np.zeros(0), hi=np.zeros(0))
    if len(blocks) == 1:
        return blocks[0]
    offsets = np.cumsum([0] + [len(b) for b in blocks[:-1]])
    c1 = np.concatenate([b.c1 for b in blocks]).astype(np.int64)
    c2 = np.concatenate([b.c2 for b in blocks]).astype(np.int64)
    nan = np.full(c1.size, np.nan)
    return Candidates(c1=c1, c2=c2, kinds=np.zeros(c1.size, dtype=np.int64), lo=nan, hi=nan,
                      parts=tuple((int(o), b) for o, b in zip(offsets, blocks)))


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


def _set_candidates(n1: np.ndarray, n2: np.ndarray, labels: list, kind: str = "set", coord: int = -1) -> Candidates:
    """Every label on its own and prefix unions of labels ranked by empirical ratio (both ways)."""
    k = len(labels)
    c1 = [n1]
    c2 = [n2]
    sets: list[tuple] = [(v,) for v in labels]
    if k > 1:
        # Unions: for each direction, labels sorted by the smoothed ratio, longest first useful.
        for num, den in ((n1, n2), (n2, n1)):
            order = np.argsort(-(np.log(num + 0.5) - np.log(den + 0.5)), kind="stable")[: min(k - 1, UNION_CAP)]
            if order.size < 2:
                continue
            c1.append(np.cumsum(n1[order])[1:])
            c2.append(np.cumsum(n2[order])[1:])
            vl = [labels[int(i)] for i in order]
            sets.extend(tuple(vl[: j + 1]) for j in range(1, order.size))
    c1a = np.concatenate(c1).astype(np.int64)
    c2a = np.concatenate(c2).astype(np.int64)
    nan = np.full(c1a.size, np.nan)
    return Candidates(c1=c1a, c2=c2a, kinds=np.full(c1a.size, _K[kind]), lo=nan, hi=nan, sets=tuple(sets),
                      coord=coord)


def finite_candidates(y1: np.ndarray, y2: np.ndarray) -> Candidates:
    """Every output on its own, and prefix unions of outputs ranked by empirical ratio (both ways).

    Outputs may be label rows (2-D arrays, one row per draw): each distinct row is one label."""
    y1 = np.asarray(y1)
    y2 = np.asarray(y2)
    if y1.ndim >= 2:
        return _row_candidates(y1.reshape(y1.shape[0], -1), y2.reshape(y2.shape[0], -1), "set")
    vals, inv = np.unique(np.concatenate([y1, y2]), return_inverse=True)
    inv = inv.reshape(-1)
    k = vals.size
    n1 = np.bincount(inv[: y1.size], minlength=k)
    n2 = np.bincount(inv[y1.size:], minlength=k)
    return _set_candidates(n1, n2, vals.tolist())


def _row_candidates(r1: np.ndarray, r2: np.ndarray, kind: str, cap: int | None = None) -> Candidates | None:
    """Every distinct row as a label (with unions); None when there are more than ``cap`` of them
    (counted before any label tuple is built)."""
    both = np.concatenate([r1, r2])
    if both.dtype == object:
        labels_all = [tuple(r) for r in both.tolist()]
        uniq = sorted(set(labels_all), key=repr)
        index = {v: i for i, v in enumerate(uniq)}
        inv = np.fromiter((index[v] for v in labels_all), dtype=np.int64, count=len(labels_all))
        labels = uniq
    else:
        keys = _row_keys(both)
        if keys is not None:
            _, first, inv = np.unique(keys[0], return_index=True, return_inverse=True)
            vals = both[first]
        else:
            vals, inv = np.unique(both, axis=0, return_inverse=True)
        if cap is not None and len(vals) > cap:
            return None
        inv = inv.reshape(-1)
        labels = [tuple(r) for r in vals.tolist()]
    k = len(labels)
    n1 = np.bincount(inv[: len(r1)], minlength=k)
    n2 = np.bincount(inv[len(r1):], minlength=k)
    return _set_candidates(n1, n2, labels, kind=kind)


#: Rows at most this wide also get interval events per coordinate (wider rows: thresholds, atoms).
VECTOR_INTERVAL_WIDTH = 4
#: Label rows are counted as labels only while the selection draws hold at most this many
#: distinct rows: beyond it (20-bit RAPPOR reports: up to 2^20 labels) single labels are seen a
#: handful of times each, their thousands of candidates only dilute the selection, and the
#: learned score on the row's coordinates takes over.
ROW_LABEL_CAP = 2048


def _coordinate_candidates(y1: np.ndarray, y2: np.ndarray, j: int, intervals: bool) -> list[Candidates]:
    """Thresholds/atoms (and intervals) on coordinate j of real rows, NaN ("no answer") apart."""
    a, b = y1[:, j].astype(np.float64), y2[:, j].astype(np.float64)
    na, nb = np.isnan(a), np.isnan(b)
    out: list[Candidates] = []
    if na.any() or nb.any():
        one = np.ones(1)
        out.append(Candidates(c1=np.array([int(na.sum())]), c2=np.array([int(nb.sum())]),
                              kinds=np.array([_K["nan"]]), lo=one * np.nan, hi=one * np.nan, coord=j))
    a, b = a[~na], b[~nb]
    if a.size + b.size:
        out.append(replace(real_candidates(a, b, intervals=intervals), coord=j))
    return out


def vector_candidates(y1: np.ndarray, y2: np.ndarray, finite: bool, events: str = "all") -> Candidates:
    """Candidate events for vector outputs (rows of ``y1``/``y2``, shape ``(n, d)``).

    Real rows: per-coordinate thresholds, atoms (intervals too for rows of at most
    :data:`VECTOR_INTERVAL_WIDTH` coordinates) and "no answer" (NaN) atoms; the row's answer
    pattern (which coordinates are NaN) as labels with their unions; and thresholds of the learned
    score :func:`verifiers.projection.fit_projection`. Label rows: every row as a label (with
    unions), every coordinate's values, and the learned score on one-hot coordinates — which is
    what replaces label counting when the label space is huge (RAPPOR's bit vectors).
    """
    y1 = np.asarray(y1).reshape(len(y1), -1)
    y2 = np.asarray(y2).reshape(len(y2), -1)
    d = y1.shape[1]
    blocks: list[Candidates] = []
    numeric = y1.dtype.kind in "biuf" and y2.dtype.kind in "biuf"
    if finite:
        rows = _row_candidates(y1, y2, "set", cap=ROW_LABEL_CAP if numeric else None)
        if rows is not None:
            blocks.append(rows)
        if d > 1 and numeric:
            for j in range(d):
                part = finite_candidates(y1[:, j], y2[:, j])
                blocks.append(_single_values(part, j))
    else:
        intervals = events == "all" and d <= VECTOR_INTERVAL_WIDTH
        for j in range(d):
            blocks.extend(_coordinate_candidates(y1, y2, j, intervals))
        p1 = np.isnan(y1.astype(np.float64)).astype(np.int8)
        p2 = np.isnan(y2.astype(np.float64)).astype(np.int8)
        if p1.any() or p2.any():
            blocks.append(_row_candidates(p1, p2, "pattern"))
    if numeric and d > 1:
        proj = fit_projection(y1, y2, "finite" if finite else "real")
        if proj is not None:
            s1, s2 = proj.score(y1), proj.score(y2)
            blocks.append(replace(real_candidates(s1, s2, intervals=False), projection=proj))
    return concat(blocks)


def _single_values(c: Candidates, coord: int) -> Candidates:
    """The single-value events of a finite candidate list, for one coordinate of label rows
    (stored as atoms on that coordinate, so the event reads the coordinate, not the row)."""
    k = sum(1 for st in c.sets if len(st) == 1)
    vals = np.array([float(st[0]) for st in c.sets[:k]]) if k else np.zeros(0)
    return Candidates(c1=c.c1[:k], c2=c.c2[:k], kinds=np.full(k, _K["atom"]), lo=vals, hi=vals, coord=coord)
