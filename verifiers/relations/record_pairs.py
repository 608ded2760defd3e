"""Datasets of records edited one record at a time: :class:`RecordEdit`, the base of ``add_remove``
and ``replace_one``, and their ``records`` and ``labels`` generators (row records:
:mod:`verifiers.relations.row_pairs`)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dpharness.verifiers.input_domains import FiniteValues
from dpharness.verifiers.relations.base import Relation
from dpharness.verifiers.relations.pairs import Pair, data_key
from dpharness.verifiers.relations.probe import admits_missing, bounds, domain_of, example_data
from dpharness.verifiers.relations.records import is_frame
from dpharness.verifiers.relations.row_pairs import row_pairs, row_space


def _record_bases(a: float, b: float) -> list[tuple[np.ndarray, str]]:
    m = 0.5 * (a + b)
    out = []
    for n in (1, 2, 3, 5, 6):
        out.append((np.full(n, m), f"n={n} all at the centre"))
        out.append((np.full(n, a), f"n={n} all at the lower bound"))
        if n >= 2:
            out.append((np.linspace(a, b, n), f"n={n} evenly spread"))
            out.append((np.array([a] * (n // 2) + [b] * (n - n // 2)), f"n={n} split between the bounds"))
        if n >= 3:
            out.append((np.array([a] + [m] * (n - 2) + [b]), f"n={n} duplicates at the centre"))
    return out


def scalar_record_pairs(a: float, b: float, adds: bool, example: np.ndarray | None, missing: bool = False) -> list[Pair]:
    """Scalar records in [a, b]: a record added at a bound, the centre or beyond, or the median or
    largest removed (``adds``); else the median, smallest or largest moved to a bound or beyond.
    Then (:func:`edge_record_pairs`) the edges shipped code breaks on: records below the lower
    bound, larger datasets, ties at the upper bound, float rounding boundaries and, when
    ``missing`` records are admitted, NaN records."""
    m, w = 0.5 * (a + b), b - a
    bases = _record_bases(a, b)
    if example is not None:
        bases.insert(0, (example, "example data"))
    if adds:
        # last, so that the pairs before keep their positions: a release on no records at all
        # (a mean of nothing is NaN, a median raises) is where shipped code most often breaks
        bases.append((np.zeros(0), "n=0 empty dataset"))
    out: list[Pair] = []
    for base, lab in bases:
        x = np.sort(base)
        n = x.size
        med = (n + 1) // 2 - 1  # lower median index
        if adds:
            for v, vl in ((a, "lower bound"), (b, "upper bound"), (m, "centre"), (b + w, "beyond the upper bound")):
                out.append(Pair(x, np.sort(np.append(x, v)), f"{lab}; add a record {vl if vl.startswith('beyond') else 'at the ' + vl}"))
            if n >= 2:
                out.append(Pair(x, np.delete(x, med), f"{lab}; remove the median record"))
                out.append(Pair(x, np.delete(x, n - 1), f"{lab}; remove the largest record"))
        else:
            for i, v, vl in ((med, b, "median -> upper bound"), (med, a, "median -> lower bound"),
                             (0, b, "smallest -> upper bound"), (n - 1, a, "largest -> lower bound"),
                             (med, b + w, "median -> beyond the upper bound")):
                y = x.copy()
                y[i] = v
                out.append(Pair(x, np.sort(y), f"{lab}; replace {vl}"))
    # after the patterns above, so that their positions (and the searches built on them) stay
    return out + edge_record_pairs(a, b, adds, missing)


def _rounding_point(a: float, b: float) -> tuple[float, float] | None:
    """(p, q): the power of two of largest magnitude in [a, b] and the float next to it towards
    the centre (q in [a, b]), or None when [a, b] holds no nonzero power of two. Sums and means
    of values at a binade's edge round differently from values one ulp inside it."""
    m = 0.5 * (a + b)
    best = None
    for end in (a, b):
        if end == 0 or not np.isfinite(end):
            continue
        p = float(np.copysign(2.0 ** np.floor(np.log2(abs(end))), end))
        if a <= p <= b and (best is None or abs(p) > abs(best)):
            best = p
    if best is None:
        return None
    q = float(np.nextafter(best, m))
    return (best, q) if a <= q <= b and q != best else None


def edge_record_pairs(a: float, b: float, adds: bool, missing: bool) -> list[Pair]:
    """Scalar-record pairs at the edges where shipped code breaks (appended after the classic
    patterns): a record below the lower bound (clipping on one side only), sized datasets (n=10,
    calibrations that divide by n), ties at the upper bound, a record one ulp from a power of
    two (float rounding), and, when ``missing`` (NaN records are in the domain): NaN records
    added, a NaN replacing a value and a value replacing a NaN, and mostly-NaN datasets -- a
    sensitivity divided by a size that counts the NaNs is too small for the values that remain."""
    m, w = 0.5 * (a + b), b - a
    nan = float("nan")
    out: list[Pair] = []

    def arr(*v: float) -> np.ndarray:
        return np.array(v, dtype=np.float64)

    split3, spread10 = arr(a, a, b), np.linspace(a, b, 10)
    rnd = _rounding_point(a, b)
    if adds:
        out += [Pair(np.zeros(0), arr(a - w), "n=0 empty dataset; add a record below the lower bound"),
                Pair(split3, np.sort(np.append(split3, a - w)), "n=3 split between the bounds; add a record below "
                     "the lower bound"),
                Pair(spread10, np.sort(np.append(spread10, b)), "n=10 evenly spread; add a record at the upper bound"),
                Pair(np.full(4, b), np.full(5, b), "n=4 tied at the upper bound; add one more tie")]
        if rnd is not None:
            p, q = rnd
            out.append(Pair(np.full(3, p), np.sort(arr(p, p, p, q)), f"n=3 at the power of two {p:g}; add a record "
                            "one ulp inside it"))
        if missing:
            mostly = arr(a, nan, nan, nan)
            out += [Pair(np.zeros(0), arr(nan), "n=0 empty dataset; add a missing record"),
                    Pair(split3, np.append(split3, nan), "n=3 split between the bounds; add a missing record"),
                    Pair(mostly, np.append(mostly, b), "n=4 mostly missing (one at the lower bound); add a record at "
                         "the upper bound"),
                    Pair(arr(nan, nan, nan), arr(nan, nan, nan, b), "n=3 all missing; add a record at the upper bound"),
                    Pair(arr(nan, nan, nan), arr(nan, nan, nan, a), "n=3 all missing; add a record at the lower bound"),
                    Pair(arr(nan, nan, nan), arr(nan, nan, nan, nan), "n=3 all missing; add a missing record")]
        return out
    out += [Pair(split3, arr(a - w, a, b), "n=3 split between the bounds; replace median -> below the lower bound"),
            Pair(arr(m), arr(a - w), "n=1 at the centre; replace it -> below the lower bound"),
            Pair(spread10, np.sort(np.append(spread10[1:], b)), "n=10 evenly spread; replace smallest -> upper bound"),
            Pair(np.full(10, a), np.append(np.full(9, a), b), "n=10 all at the lower bound; replace one -> upper bound"),
            Pair(np.full(4, b), arr(a, b, b, b), "n=4 tied at the upper bound; replace one -> lower bound")]
    if rnd is not None:
        p, q = rnd
        out.append(Pair(np.full(3, p), np.sort(arr(p, p, q)), f"n=3 at the power of two {p:g}; replace one -> one ulp "
                        "inside it"))
    if missing:
        out += [Pair(arr(a, nan, nan, nan), arr(b, nan, nan, nan), "n=4 mostly missing; replace the one value lower "
                     "-> upper bound"),
                Pair(arr(a, b, nan, nan, nan, nan), arr(a, a, nan, nan, nan, nan), "n=6 two values, four missing; "
                     "replace the upper -> lower bound"),
                Pair(arr(nan, nan, nan), arr(b, nan, nan), "n=3 all missing; replace one -> upper bound"),
                Pair(arr(nan, nan, nan), arr(a, nan, nan), "n=3 all missing; replace one -> lower bound"),
                Pair(arr(a, m, b), arr(a, b, nan), "n=3 evenly spread; replace the centre -> missing"),
                Pair(arr(nan), arr(b), "n=1 missing; replace it -> upper bound"),
                Pair(arr(a, nan), arr(b, nan), "n=2 one missing; replace lower -> upper bound")]
    return out


def category_record_pairs(dom: FiniteValues, adds: bool) -> list[Pair]:
    """The scalar record patterns built on the positions 0..K-1 of the domain's values (lower
    bound = first value, centre = middle value), then mapped to the values; patterns that leave
    the domain (beyond the upper bound) are dropped."""
    vals = dom.ordered()
    k = len(vals)
    lut = np.array(vals, dtype=object if any(isinstance(v, tuple) for v in vals) else None)
    out: list[Pair] = []
    for p in scalar_record_pairs(0.0, float(k - 1), adds, None):
        i1, i2 = np.rint(p.d1), np.rint(p.d2)
        if (i1.size and (i1.min() < 0 or i1.max() > k - 1)) or (i2.size and (i2.min() < 0 or i2.max() > k - 1)):
            continue
        d1, d2 = lut[i1.astype(np.intp)], lut[i2.astype(np.intp)]
        if data_key(d1) != data_key(d2):  # a replacement snapped onto the value it replaced
            out.append(Pair(d1, d2, p.label))
    return out


def record_pairs(mechanism: Any, adds: bool) -> list[Pair]:
    """Records pairs: rows when the mechanism's example data, bounds or input domain are
    row-shaped, category records for a finite domain of scalars, else scalar records."""
    rows = row_space(mechanism)
    if rows is not None:
        return row_pairs(rows, adds)
    dom = domain_of(mechanism)
    if isinstance(dom, FiniteValues):
        return category_record_pairs(dom, adds)
    a, b = bounds(mechanism)
    example = None
    ex = example_data(mechanism)
    if ex is not None and not is_frame(ex):
        e = np.asarray(ex)
        if e.ndim == 1 and e.size and np.issubdtype(e.dtype, np.number) and e.size <= 10_000:
            example = np.sort(e.astype(np.float64))
    return scalar_record_pairs(a, b, adds, example, admits_missing(mechanism))


def records_family(mechanism: Any, relation: Relation) -> list[Pair]:
    """The ``records`` generator: :func:`record_pairs` for a relation that edits records."""
    if not isinstance(relation, RecordEdit):
        raise ValueError(f"the records generator needs add_remove or replace_one neighbours, the claim says "
                         f"{mechanism.claim.neighbours!r}")
    return record_pairs(mechanism, relation.adds)


def label_pairs(mechanism: Any, relation: Relation) -> list[Pair]:
    """The ``labels`` generator (count utilities): a few records of the first two candidates,
    plus one more record."""
    cands = list(getattr(mechanism, "candidates"))
    c0, c1 = cands[0], cands[1 % len(cands)]
    out: list[Pair] = []
    for n0, n1 in ((0, 0), (1, 0), (2, 2), (4, 0), (4, 2), (8, 0)):
        base = np.array([c0] * n0 + [c1] * n1, dtype=object if not np.isscalar(c0) or isinstance(c0, str) else None)
        for v in (c0, c1, cands[-1]):
            out.append(Pair(base, np.append(base, v), f"{n0}x{c0!r}, {n1}x{c1!r}; add {v!r}"))
    return out


class RecordEdit(Relation):
    """Record datasets one record apart: added or removed (``adds``), else replaced."""

    records = True
    family = "records"
    generators = {"records": records_family, "labels": label_pairs}
    #: neighbours differ by one added record (else by one replaced record)
    adds: ClassVar[bool] = True

    def family_for(self, mechanism: Any) -> str:
        return "labels" if getattr(mechanism, "candidates", None) is not None else "records"
