"""The event objects the verifier certifies, and candidate lists with their selection counts.

An :class:`Event` is a fixed set of outputs; a :class:`Candidates` list holds many of them (built
lazily) with their counts on the selection draws. The families that build candidate lists live in
the sibling modules: :mod:`.real` (thresholds, intervals, atoms), :mod:`.finite` (outputs and their
unions), :mod:`.vector` (coordinates, answer patterns, learned scores) and :mod:`.floats` (the binary
representation of released doubles).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpharness.verifiers.projection import Projection

__all__ = ["Event", "Candidates", "concat", "KINDS"]

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
    ``"nan"`` (v is NaN: "no answer"), ``"pattern"`` (the row's NaN pattern is one of
    ``values``, tuples of 0/1 with 1 = NaN) or ``"float"`` (the bit-pattern label of v is one of
    ``values``: :func:`verifiers.events.bits.float_labels`) or ``"shape"`` (the output's shape,
    sample axis removed, is one of ``values``: an output whose width depends on the dataset).

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
        if self.kind == "shape":
            return np.full(y.shape[0] if y.ndim else 1, tuple(y.shape[1:]) in self.values)
        if self.kind == "float":
            from dpharness.verifiers.events.bits import contains

            return contains(self.values, y.reshape(y.shape[0], -1)[:, self.coord] if self.coord >= 0 else y)
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
        elif self.kind == "shape":
            shapes = " or ".join("a scalar" if not sh else f"a row of {int(np.prod(sh))} coordinates"
                                 for sh in self.values)
            s = f"{{y is {shapes}}}"
        elif self.kind == "float":
            from dpharness.verifiers.events.bits import describe_label

            labs = "; ".join(describe_label(x) for x in self.values[:4])
            more = f"; ... ({len(self.values)} bit patterns)" if len(self.values) > 4 else ""
            s = f"{{bits of {v}: {labs}{more}}}"
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
        if kind in ("set", "pattern", "float", "shape"):
            return Event(kind, values=self.sets[i], coord=self.coord)
        return Event(kind, lo=float(self.lo[i]), hi=float(self.hi[i]), coord=self.coord, projection=self.projection)


KINDS = _KINDS = ("le", "ge", "interval", "outside", "atom", "set", "nan", "pattern", "float", "shape")
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

