"""Row records (2-D arrays, DataFrames) for the ``records`` generator: the row space of a
mechanism (rows at the lower and upper bounds, the centre, one telling extra row, the example
rows and DataFrame columns) and at most :data:`MAX_ROW_PAIRS` pairs built from it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpharness.verifiers.input_domains import BitVectors, FiniteValues, Interval
from dpharness.verifiers.relations.pairs import Pair, data_key
from dpharness.verifiers.relations.probe import admits_missing, domain_of, example_data
from dpharness.verifiers.relations.records import is_frame

__all__ = ["MAX_ROW_PAIRS", "CLASSIC_ROW_PAIRS", "RowSpace", "row_space", "row_pairs"]

#: Most pairs of the classic row patterns (bounds, centre, duplicates, example rows).
CLASSIC_ROW_PAIRS = 40
#: Most pairs the records generator builds for row records (2-D arrays / DataFrames): the classic
#: patterns, then at most 12 edge patterns (below the bounds, ties, sized, missing rows).
MAX_ROW_PAIRS = CLASSIC_ROW_PAIRS + 12


@dataclass(frozen=True, eq=False)
class RowSpace:
    """The rows a records generator for row records builds from: one row at the lower bounds,
    at the upper bounds and at the centre (per column), one more telling row (``extra``: beyond
    the bounds, a one-hot bit vector, ...), the example rows, and the DataFrame columns."""

    lo: np.ndarray
    hi: np.ndarray
    mid: np.ndarray
    extra: np.ndarray | None
    extra_label: str
    example: np.ndarray | None = None
    columns: list | None = None
    dtypes: Any = None
    #: a row below the lower bounds (numeric rows; a label column keeps its first class), or None
    below: np.ndarray | None = None
    #: NaN rows are records of the domain (the label column of a supervised model keeps a class)
    missing: bool = False
    #: the last column is a label taking these values (a supervised model's classes), or None
    classes: tuple | None = None


def _column_points(col: np.ndarray | None, lo: Any, hi: Any) -> tuple[Any, Any, Any, Any]:
    """(lower, upper, centre, beyond) of one column: the given bounds, else the column's range
    (numbers) or its first / last / middle distinct values (categories; nothing lies beyond)."""
    if lo is not None and hi is not None and math.isfinite(float(lo)) and math.isfinite(float(hi)):
        a, b = float(lo), float(hi)
    elif col is None or col.size == 0:
        a, b = 0.0, 1.0
    else:
        try:
            x = col.astype(np.float64)
        except (TypeError, ValueError):
            uniq = sorted({v for v in col.tolist() if v == v}, key=lambda v: (type(v).__name__, str(v)))
            if not uniq:
                return None, None, None, None
            return uniq[0], uniq[-1], uniq[(len(uniq) - 1) // 2], None
        x = x[np.isfinite(x)]
        a, b = (float(x.min()), float(x.max())) if x.size else (0.0, 1.0)
        if b <= a:
            a, b = a - 1.0, a + 1.0
    m = 0.5 * (a + b)
    if col is not None and col.dtype.kind in "iu":
        m = float(math.floor(m))  # integer columns stay integral
    return a, b, m, b + (b - a)


def row_space(mechanism: Any) -> RowSpace | None:
    """The row space of a mechanism whose records are rows, or None when they are scalars."""
    dom = domain_of(mechanism)
    ex = example_data(mechanism)
    frame = ex if is_frame(ex) else None
    rows = None
    if frame is not None:
        rows = frame.to_numpy()
    elif ex is not None:
        try:
            e = np.asarray(ex)
        except (TypeError, ValueError):
            e = None
        if e is not None and e.ndim == 2 and e.shape[1] >= 1:
            rows = e
    if rows is not None and rows.shape[0] > 10_000:
        rows = None  # too large to copy into every pair: build from bounds only
    cols = list(frame.columns) if frame is not None else None
    dtypes = frame.dtypes.to_dict() if frame is not None else None
    declared = getattr(mechanism, "columns", None)  # DataFrame column names declared on the mechanism
    if cols is None and declared is not None and not isinstance(declared, str) and len(list(declared)):
        cols = list(declared)
        if rows is not None and rows.shape[1] != len(cols):
            rows = None
    if isinstance(dom, BitVectors):
        n = dom.length
        z = np.zeros(n)
        e = z.copy()
        e[0] = 1.0
        ok = rows is not None and rows.shape[1] == n and bool(dom.contains_each(rows).all())
        return RowSpace(z, np.ones(n), (np.arange(n) < n // 2).astype(float), e, "a one-hot row",
                         rows if ok else None, cols if ok else None, dtypes if ok else None)
    if isinstance(dom, FiniteValues) and all(isinstance(v, tuple) for v in dom.values):
        v = dom.values
        if len({len(t) for t in v}) != 1:
            return None
        table = np.array([list(t) for t in v], dtype=object if any(isinstance(c, str) for t in v for c in t) else None)
        ok = rows is not None and rows.shape[1] == table.shape[1] and bool(dom.contains_each(rows).all())
        k = len(v)
        return RowSpace(table[0], table[-1], table[(k - 1) // 2], table[1] if k > 2 else None, "the second value",
                         rows if ok else None, cols if ok else None, dtypes if ok else None)
    lo_a, hi_a = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
    width = rows.shape[1] if rows is not None else (len(cols) if cols is not None else None)
    if width is None and getattr(mechanism, "width", None) is not None:  # declared number of columns
        width = int(mechanism.width)
    for b in (lo_a, hi_a):
        if b is not None and np.ndim(b) == 1:
            if width is not None and len(b) != width:
                return None  # bounds do not describe these rows
            width = len(b)
    if width is None:
        return None
    if isinstance(dom, Interval):
        lo_a, hi_a = (dom.lo if lo_a is None else lo_a), (dom.hi if hi_a is None else hi_a)
    lo_c = np.broadcast_to(np.asarray(lo_a if lo_a is not None else [None] * width, dtype=object), (width,))
    hi_c = np.broadcast_to(np.asarray(hi_a if hi_a is not None else [None] * width, dtype=object), (width,))
    pts = [_column_points(None if rows is None else rows[:, j], lo_c[j], hi_c[j]) for j in range(width)]
    if any(p[0] is None for p in pts):
        return None
    numeric = all(isinstance(p[0], float) for p in pts)
    dt = np.float64 if numeric else object
    lo, hi, mid = (np.array([p[i] for p in pts], dtype=dt) for i in range(3))
    classes = getattr(mechanism, "classes", None)
    classes = tuple(classes) if classes is not None and not isinstance(classes, str) and len(classes) else None
    if classes is not None:  # a supervised model's label column: its values are the classes, none beyond
        c = classes
        pts[-1] = (float(c[0]), float(c[-1]), float(c[(len(c) - 1) // 2]), float(c[-1])) if numeric else \
            (c[0], c[-1], c[(len(c) - 1) // 2], None)
        lo, hi, mid = (np.array([p[i] for p in pts], dtype=dt) for i in range(3))
    beyond = None
    if dom is None and any(p[3] is not None for p in pts):  # nothing lies beyond a category: keep its last
        beyond = np.array([p[1] if p[3] is None else p[3] for p in pts], dtype=dt)
    below = None
    if dom is None and numeric:  # as far below the lower bounds as "beyond" is above the upper ones
        below = np.array([p[0] - (p[1] - p[0]) for p in pts], dtype=dt)
        if classes is not None:
            below[-1] = lo[-1]
    return RowSpace(lo, hi, mid, beyond, "beyond the upper bounds", rows, cols, dtypes, below,
                    admits_missing(mechanism) and numeric, classes)


def row_pairs(space: RowSpace, adds: bool) -> list[Pair]:
    """At most :data:`MAX_ROW_PAIRS` pairs of row datasets: empty (add_remove), one row at the
    centre, rows at both bounds, lower / centre / upper, duplicates at the centre or at the lower
    bound, and the example rows; a row is added at a bound, the centre or the extra row, or the
    first or last row removed (add_remove), or a row replaced by one at the other bound, the
    extra row or the centre (replace_one)."""
    lo, hi, mid, extra = space.lo, space.hi, space.mid, space.extra
    width = lo.shape[0]
    dt = object if object in (lo.dtype, hi.dtype, mid.dtype) else np.float64

    def stack(rs: list[np.ndarray]) -> np.ndarray:
        return np.array(rs, dtype=dt).reshape(len(rs), width)

    bases: list[tuple[np.ndarray, str]] = []
    if adds:
        bases.append((stack([]), "no records"))
    bases += [(stack([mid]), "one row at the centre"), (stack([lo, hi]), "rows at the lower and upper bounds"),
              (stack([lo, mid, hi]), "rows at the lower bound, centre and upper bound"),
              (stack([mid] * 4), "four duplicate rows at the centre"), (stack([lo] * 3), "three rows at the lower bound")]
    if space.example is not None and space.example.shape[0]:
        bases.insert(0, (space.example, "example rows"))
    added = [(lo, "at the lower bounds"), (hi, "at the upper bounds"), (mid, "at the centre")]
    if extra is not None:
        added.append((extra, space.extra_label))
    out: list[Pair] = []
    for x0, lab in bases:
        x = x0.astype(dt)
        n = x.shape[0]
        if adds:
            for r, rl in added:
                out.append(Pair(x, np.concatenate([x, stack([r])]), f"{lab}; add a row {rl}"))
            if n >= 1:
                out.append(Pair(x, np.delete(x, 0, axis=0), f"{lab}; remove the first row"))
            if n >= 2:
                out.append(Pair(x, np.delete(x, n - 1, axis=0), f"{lab}; remove the last row"))
        else:
            if n == 0:
                continue
            reps = [(0, hi, "first row -> upper bounds"), (n - 1, lo, "last row -> lower bounds"),
                    (n // 2, mid, "middle row -> centre")]
            if extra is not None:
                reps.append((n // 2, extra, f"middle row -> {space.extra_label}"))
            for i, r, rl in reps:
                y = x.copy()
                y[i] = r
                out.append(Pair(x, y, f"{lab}; replace {rl}"))
    out = [p for p in out if data_key(p.d1) != data_key(p.d2)][:CLASSIC_ROW_PAIRS]
    # after the classic patterns, so that their positions (and the searches built on them) stay
    out += [p for p in _edge_row_pairs(space, adds, stack) if data_key(p.d1) != data_key(p.d2)][:MAX_ROW_PAIRS - len(out)]
    if space.columns is None:
        return out
    return [Pair(_frame(p.d1, space), _frame(p.d2, space), p.label) for p in out]


def _edge_row_pairs(space: RowSpace, adds: bool, stack: Any) -> list[Pair]:
    """The edge patterns of row records (after the classic ones): one-row datasets, ties at the
    upper bounds, a sized dataset (n=10: calibrations dividing by n), a row below the lower
    bounds (clipping on one side only) and, when NaN rows are records of the domain, a missing
    row added or replacing one, and a mostly-missing dataset."""
    lo, hi, mid, below = space.lo, space.hi, space.mid, space.below
    ten = stack([lo, hi] * 5)
    out: list[Pair] = []
    if adds:
        out += [Pair(stack([hi] * 3), stack([hi] * 4), "three rows tied at the upper bounds; add one more tie"),
                Pair(ten, stack([lo, hi] * 5 + [hi]), "ten rows alternating between the bounds; add a row at the upper "
                     "bounds")]
        if below is not None:
            out += [Pair(stack([]), stack([below]), "no records; add a row below the lower bounds"),
                    Pair(stack([lo, hi]), stack([lo, hi, below]), "rows at the lower and upper bounds; add a row below "
                         "the lower bounds")]
    else:
        out += [Pair(stack([lo]), stack([hi]), "one row at the lower bounds; replace it -> upper bounds"),
                Pair(stack([hi] * 3), stack([lo, hi, hi]), "three rows tied at the upper bounds; replace one -> lower "
                     "bounds"),
                Pair(ten, stack([hi, hi] + [lo, hi] * 4), "ten rows alternating between the bounds; replace the first "
                     "-> upper bounds")]
        if below is not None:
            out += [Pair(stack([mid]), stack([below]), "one row at the centre; replace it -> below the lower bounds"),
                    Pair(stack([lo, hi]), stack([below, hi]), "rows at the lower and upper bounds; replace the first -> "
                         "below the lower bounds")]
    if space.missing:
        gap = np.full(lo.shape[0], np.nan)
        if space.classes is not None:
            gap[-1] = hi[-1]  # the label is known, its features missing
        if adds:
            out += [Pair(stack([lo, hi]), stack([lo, hi, gap]), "rows at the lower and upper bounds; add a missing row"),
                    Pair(stack([lo, gap, gap]), stack([lo, gap, gap, hi]), "one row at the lower bounds, two missing; add "
                         "a row at the upper bounds")]
        else:
            out += [Pair(stack([lo, hi]), stack([lo, gap]), "rows at the lower and upper bounds; replace the last -> "
                         "missing"),
                    Pair(stack([lo, gap, gap, gap]), stack([hi, gap, gap, gap]), "one row at the lower bounds, three "
                         "missing; replace it -> upper bounds")]
    return out


def _frame(a: np.ndarray, space: RowSpace) -> Any:
    """Rows as a DataFrame with the example's columns and, where they fit, its dtypes."""
    import pandas as pd

    df = pd.DataFrame(a, columns=space.columns)
    try:
        return df.astype(space.dtypes)
    except (TypeError, ValueError):  # a generated value the example's dtype cannot hold
        return df.infer_objects()
