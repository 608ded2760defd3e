"""Events on finite outputs: every output on its own and prefix unions of outputs ranked by their
empirical ratio (both ways); label rows (2-D outputs) count each distinct row as one label, and
each coordinate's values on their own. The family ``finite``."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpharness.verifiers.events.core import Candidates, LabelEvent, _row_keys, _rows_in, fmt, labelled
from dpharness.verifiers.events.families import Draws, Family, register
from dpharness.verifiers.statistical.draws import label_text

__all__ = ["finite_candidates", "set_candidates", "row_candidates", "UNION_CAP", "ROW_LABEL_CAP", "OutputSet",
           "FINITE"]

#: For finite outputs, unions are prefixes (by empirical ratio) of at most this many outputs.
UNION_CAP = 256
#: Label rows are counted as labels only while the selection draws hold at most this many
#: distinct rows: beyond it (20-bit RAPPOR reports: up to 2^20 labels) single labels are seen a
#: handful of times each, their thousands of candidates only dilute the selection, and the
#: learned score on the row's coordinates takes over.
ROW_LABEL_CAP = 2048


class OutputSet(LabelEvent):
    """{y in values}: the output is one of ``values`` (outputs of any type; row tuples for label rows)."""

    kinds = ("set",)

    def contains(self, y: Any) -> np.ndarray:
        y = np.asarray(y)
        if y.ndim >= 2:
            return _rows_in(y.reshape(y.shape[0], -1), self.values)
        text = [v for v in self.values if isinstance(v, str)]
        if y.dtype == object or y.dtype.kind in "US" or text:
            # labels read as text (verifiers.statistical.draws): compare as text on both sides, and
            # never cast the labels to the draws' width ("abcd" is not "abc")
            vs = [v if isinstance(v, str) else str(label_text(np.asarray([v]))[0]) for v in self.values]
            return np.isin(label_text(y), np.asarray(vs, dtype=str))
        values = np.asarray(self.values, dtype=np.float64 if y.dtype.kind == "f" else None)
        hit = np.isin(y, values)
        if y.dtype.kind == "f" and np.isnan(values).any():  # None read as NaN is a label
            hit |= np.isnan(y)
        return hit

    def describe(self) -> str:
        vals = ", ".join(fmt(x) for x in self.values[:8])
        more = f", ... ({len(self.values)} outputs)" if len(self.values) > 8 else ""
        return f"{{y in {{{vals}{more}}}}}"


def set_candidates(n1: np.ndarray, n2: np.ndarray, labels: list, kind: str = "set", coord: int = -1,
                   order_counts: tuple[np.ndarray, np.ndarray] | None = None) -> Candidates:
    """Every label on its own and prefix unions of labels ranked by empirical ratio (both ways).

    ``order_counts`` (counts of the same labels on part of the draws): rank the labels on those,
    and count the unions on ``n1``/``n2`` (all the draws); None ranks on ``n1``/``n2``."""
    k = len(labels)
    c1 = [n1]
    c2 = [n2]
    sets: list[tuple] = [(v,) for v in labels]
    o1, o2 = (n1, n2) if order_counts is None else order_counts
    if k > 1:
        # Unions: for each direction, labels sorted by the smoothed ratio, longest first useful.
        for num, den in ((o1, o2), (o2, o1)):
            order = np.argsort(-(np.log(num + 0.5) - np.log(den + 0.5)), kind="stable")[: min(k - 1, UNION_CAP)]
            if order.size < 2:
                continue
            c1.append(np.cumsum(n1[order])[1:])
            c2.append(np.cumsum(n2[order])[1:])
            vl = [labels[int(i)] for i in order]
            sets.extend(tuple(vl[: j + 1]) for j in range(1, order.size))
    return labelled(np.concatenate(c1), np.concatenate(c2), kind, tuple(sets), coord=coord)


def finite_candidates(y1: np.ndarray, y2: np.ndarray) -> Candidates:
    """Every output on its own, and prefix unions of outputs ranked by empirical ratio (both ways).

    Outputs may be label rows (2-D arrays, one row per draw): each distinct row is one label."""
    y1 = np.asarray(y1)
    y2 = np.asarray(y2)
    if y1.ndim >= 2:
        return row_candidates(y1.reshape(y1.shape[0], -1), y2.reshape(y2.shape[0], -1), "set")
    vals, inv = np.unique(np.concatenate([y1, y2]), return_inverse=True)
    inv = inv.reshape(-1)
    k = vals.size
    n1 = np.bincount(inv[: y1.size], minlength=k)
    n2 = np.bincount(inv[y1.size:], minlength=k)
    return set_candidates(n1, n2, vals.tolist())


def row_candidates(r1: np.ndarray, r2: np.ndarray, kind: str, cap: int | None = None) -> Candidates | None:
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
    i1, i2 = inv[: len(r1)], inv[len(r1):]
    n1 = np.bincount(i1, minlength=k)
    n2 = np.bincount(i2, minlength=k)
    # Rows are many and each is seen a few times: ranked on the draws that count them, the rows
    # seen once or twice under one dataset only lead, and their union is a "support" event the
    # sorting made (it scores far above any real event and decides a pair ranking on noise). So
    # the rows are ranked on every other draw and the unions counted on all of them: a row that
    # led by its own few draws has, on the other half, the counts of an ordinary row
    # (docs/auditing.md, "StatDP's suite at its other claims").
    half = (np.bincount(i1[::2], minlength=k), np.bincount(i2[::2], minlength=k))
    return set_candidates(n1, n2, labels, kind=kind, order_counts=half)


def single_values(c: Candidates, coord: int) -> Candidates:
    """The single-value events of a finite candidate list, for one coordinate of label rows
    (stored as atoms on that coordinate, so the event reads the coordinate, not the row)."""
    k = sum(1 for st in c.sets if len(st) == 1)
    vals = np.array([float(st[0]) for st in c.sets[:k]]) if k else np.zeros(0)
    return Candidates(c1=c.c1[:k], c2=c.c2[:k], kinds=np.full(k, "atom"), lo=vals, hi=vals, coord=coord)


class Finite(Family):
    """Every output (or label row) on its own and prefix unions ranked by their empirical ratio;
    on numeric label rows also every coordinate's single values."""

    name = "finite"
    order = 20
    laws = ("finite",)
    presets = ("all", "thresholds")

    def candidates(self, d: Draws) -> list[Candidates]:
        if not d.rows:
            return [finite_candidates(d.y1, d.y2)]
        r1, r2 = d.flat
        rows = row_candidates(r1, r2, "set", cap=ROW_LABEL_CAP if d.numeric else None)
        out = [] if rows is None else [rows]
        if d.width > 1 and d.numeric:
            out.extend(single_values(finite_candidates(r1[:, j], r2[:, j]), j) for j in range(d.width))
        return out


FINITE = register(Finite())
