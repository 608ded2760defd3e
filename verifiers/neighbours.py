"""Neighbouring dataset pairs: legality checks and generators per family
(docs/auditing.md, "Neighbour relations and pair generators").

The declared relation (``claim.neighbours``) decides what a legal pair is:

``value``           scalars with |f - f'| <= sensitivity (default 1);
``bit``             scalars in {0, 1};
``score_linf``      arrays of one shape, every entry moving by at most the sensitivity, in any
                    direction (entries equal to -inf must stay -inf);
``score_monotone``  as ``score_linf`` with every entry moving in the same direction;
``add_remove``      record datasets whose multisets differ by exactly one added record;
``replace_one``     record datasets of equal size whose multisets differ in one record;
``one_differ``      query vectors of one shape, exactly one coordinate moving by at most the
                    sensitivity (histograms; StatDP's ONE_DIFFER);
``privacy_unit``    records (2-D array or DataFrame) with a unit-id column; neighbours differ in
                    all records of one unit, at most ``claim.max_contributions`` of them;
``local``           any two inputs of the declared ``claim.input_domain`` (local DP).

Record datasets are 1-D arrays (one record per entry), 2-D arrays (one record per row) or
pandas DataFrames (one record per row; two DataFrames are compared column by column name, a
DataFrame and an array by position). Records are compared as multisets of rows in linear time,
and a NaN cell equals a NaN cell in the same column. A declared input domain
(:mod:`verifiers.input_domains`) must contain every record (record relations) or the whole input
(every other relation), and the generators only build data inside it.

Generators do not search a random box: they build the patterns that break mechanisms --
ties and far-apart leaders with gap sweeps (in units of sensitivity/epsilon) moved in every
direction (all up, leader down and the rest up, converge/diverge), StatDP-style vectors
([1]*k vs [2]*k, [1]*k vs [0, 2, ..., 2]); for records: constant and duplicate-heavy datasets,
data at and beyond the declared bounds, and the records nearest the median changed. Every
generated pair is checked against the relation and against the mechanism itself (datasets the
mechanism rejects with ``ValueError`` are dropped).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from dpharness.verifiers.input_domains import NAN_KEY, BitVectors, FiniteValues, Interval

__all__ = ["Pair", "check_neighbours", "are_neighbours", "pairs_for", "FAMILIES", "unit_records"]

FAMILIES = ("values", "bits", "scores", "records", "labels", "histograms", "units", "local")

#: Relations whose datasets are collections of records (a declared input domain holds each record).
RECORD_RELATIONS = ("add_remove", "replace_one", "privacy_unit")

#: Most pairs the records generator builds for row records (2-D arrays / DataFrames).
MAX_ROW_PAIRS = 40


@dataclass(frozen=True, eq=False)
class Pair:
    d1: Any
    d2: Any
    label: str = ""


def _is_frame(d: Any) -> bool:
    return hasattr(d, "columns") and hasattr(d, "to_numpy") and hasattr(d, "iloc")


_is_nan_object = np.frompyfunc(lambda x: isinstance(x, (float, np.floating)) and x != x, 1, 1)


def _nan_mask(a: np.ndarray) -> np.ndarray | None:
    """Where ``a`` holds a float NaN (None when its dtype cannot hold one)."""
    if a.dtype.kind in "fc":
        return np.isnan(a)
    if a.dtype.kind == "O":
        return _is_nan_object(a).astype(bool) if a.size else np.zeros(a.shape, dtype=bool)
    return None


def record_keys(a: np.ndarray) -> list:
    """One hashable key per record of ``a`` (1-D: the values; 2-D: row tuples), every NaN cell
    mapped to one shared key so that NaN records compare equal. Linear in the number of cells:
    a multiset comparison is then a ``Counter`` of keys, not a pairwise match."""
    keys = a.tolist()
    mask = _nan_mask(a)
    if mask is not None and mask.any():
        if a.ndim == 1:
            for i in np.flatnonzero(mask):
                keys[i] = NAN_KEY
        else:
            for i, j in zip(*np.nonzero(mask)):
                keys[i][j] = NAN_KEY
    return keys if a.ndim == 1 else [tuple(r) for r in keys]


@dataclass(frozen=True, eq=False)
class _Records:
    array: np.ndarray       # 1-D (scalar records) or 2-D (one record per row)
    columns: list | None    # a DataFrame's column labels

    @property
    def n(self) -> int:
        return int(self.array.shape[0])

    @property
    def width(self) -> int | None:
        return None if self.array.ndim == 1 else int(self.array.shape[1])


_RECORDS_ACCEPTED = "a 1-D array of records, a 2-D array (one record per row) or a pandas DataFrame"


def _records(d: Any, name: str) -> _Records:
    """The records of a dataset; ``ValueError`` saying what is accepted otherwise."""
    if _is_frame(d):
        return _Records(d.to_numpy(), list(d.columns))
    if d is None:
        raise ValueError(f"{name} is missing (got None); pass {_RECORDS_ACCEPTED}")
    try:
        a = np.asarray(d)
    except ValueError as exc:  # ragged rows
        raise ValueError(f"{name} must be {_RECORDS_ACCEPTED}; numpy could not read it: {exc}") from None
    if a.ndim == 0:
        raise ValueError(f"{name} must be {_RECORDS_ACCEPTED}, got a scalar {d!r}")
    if a.ndim > 2:
        raise ValueError(f"{name} must be {_RECORDS_ACCEPTED}, got shape {a.shape}")
    return _Records(a, None)


def _record_pair(d1: Any, d2: Any) -> tuple[list, list] | str:
    """The record keys of both datasets, aligned (a DataFrame's columns by name), or why they
    cannot be compared."""
    try:
        r1, r2 = _records(d1, "d1"), _records(d2, "d2")
    except ValueError as exc:
        return str(exc)
    if r1.n and r2.n and r1.width != r2.width:
        what = {None: "scalars"}
        return (f"records of d1 are {what.get(r1.width, f'rows of {r1.width}')} but records of d2 are "
                f"{what.get(r2.width, f'rows of {r2.width}')}")
    if r1.columns is not None and r2.columns is not None and r1.columns != r2.columns:
        if sorted(map(str, r1.columns)) != sorted(map(str, r2.columns)) or len(set(r2.columns)) != len(r2.columns):
            return f"the DataFrames have different columns: {r1.columns} and {r2.columns}"
        r2 = _records(d2[r1.columns], "d2")  # same columns in another order: compare by name
    return record_keys(r1.array), record_keys(r2.array)


def _domain_of(mechanism: Any) -> Any:
    """The mechanism's declared input domain (attribute, else its claim's), or None."""
    dom = getattr(mechanism, "input_domain", None)
    return dom if dom is not None else getattr(mechanism.claim, "input_domain", None)


def _outside(d: Any, name: str, dom: Any, rel: str) -> str | None:
    """Why ``d`` is not in the input domain ``dom`` (records one by one under record relations)."""
    if rel in RECORD_RELATIONS:
        try:
            a = d.to_numpy() if _is_frame(d) else np.asarray(d)
        except ValueError:
            return f"{name} is not an array of records"
        if a.ndim == 0:
            a = a.reshape(1)
        each = getattr(dom, "contains_each", None)
        inside = np.asarray(each(a), dtype=bool) if each is not None else np.fromiter(
            (bool(dom.contains(r)) for r in a), dtype=bool, count=a.shape[0])
        if inside.all():
            return None
        i = int(np.flatnonzero(~inside)[0])
        return f"record {i} of {name} ({np.asarray(a[i]).tolist()!r}) is not in the input domain {dom}"
    if dom.contains(d):
        return None
    from dpharness.verifiers.verdict import format_data
    try:
        shown = format_data(d)
    except (TypeError, ValueError):
        shown = repr(d)
    return f"{name}={shown} is not in the input domain {dom}"


def _why_not_domain(d1: Any, d2: Any, dom: Any, rel: str) -> str | None:
    if dom is None:
        return None
    return _outside(d1, "d1", dom, rel) or _outside(d2, "d2", dom, rel)


def _why_not(d1: Any, d2: Any, claim: Any) -> str | None:
    why = _why_not_relation(d1, d2, claim)
    if why is None:
        rel = claim.neighbours
        why = _why_not_domain(d1, d2, getattr(claim, "input_domain", None), rel)
    return why


def _why_not_relation(d1: Any, d2: Any, claim: Any) -> str | None:
    rel = claim.neighbours
    sens = 1.0 if claim.sensitivity is None else float(claim.sensitivity)
    tol = 1e-9 * max(1.0, sens)
    if rel in ("value", "bit"):
        a, b = np.asarray(d1, dtype=np.float64), np.asarray(d2, dtype=np.float64)
        if a.size != 1 or b.size != 1:
            return f"{rel} data must be scalars, got shapes {a.shape} and {b.shape}"
        x, y = float(a.reshape(())), float(b.reshape(()))
        if rel == "bit":
            return None if x in (0.0, 1.0) and y in (0.0, 1.0) else f"bits must be 0 or 1, got {x!r} and {y!r}"
        return None if abs(x - y) <= sens + tol else f"|d1 - d2| = {abs(x - y):g} exceeds the sensitivity {sens:g}"
    if rel in ("score_linf", "score_monotone"):
        a, b = np.asarray(d1, dtype=np.float64), np.asarray(d2, dtype=np.float64)
        if a.shape != b.shape:
            return f"score vectors must have the same shape, got {a.shape} and {b.shape}"
        both_ninf = np.isneginf(a) & np.isneginf(b)
        if np.any(np.isneginf(a) != np.isneginf(b)):
            return "an entry is -inf in one dataset and finite in the other"
        diff = np.where(both_ninf, 0.0, b - a)
        if np.any(~np.isfinite(diff)):
            return "score vectors must be finite (or -inf in both)"
        worst = float(np.max(np.abs(diff))) if diff.size else 0.0
        if worst > sens + tol:
            return f"an entry moves by {worst:g}, more than the sensitivity {sens:g}"
        if rel == "score_monotone" and np.any(diff > tol) and np.any(diff < -tol):
            return "score_monotone neighbours must move every entry in the same direction"
        return None
    if rel == "add_remove":
        keys = _record_pair(d1, d2)
        if isinstance(keys, str):
            return keys
        r1, r2 = keys
        big, small = (r1, r2) if len(r1) > len(r2) else (r2, r1)
        if len(big) != len(small) + 1:
            return f"add_remove neighbours differ in size by exactly 1, got sizes {len(r1)} and {len(r2)}"
        extra = Counter(big) - Counter(small)
        return None if sum(extra.values()) == 1 else "the smaller dataset is not the larger one minus one record"
    if rel == "replace_one":
        keys = _record_pair(d1, d2)
        if isinstance(keys, str):
            return keys
        r1, r2 = keys
        if len(r1) != len(r2):
            return f"replace_one neighbours have equal sizes, got {len(r1)} and {len(r2)}"
        diff = Counter(r1) - Counter(r2)
        return None if sum(diff.values()) <= 1 else f"{sum(diff.values())} records differ (at most 1 allowed)"
    if rel == "one_differ":
        a, b = np.asarray(d1, dtype=np.float64), np.asarray(d2, dtype=np.float64)
        if a.shape != b.shape or a.ndim == 0:
            return f"one_differ data are query vectors of one shape, got shapes {a.shape} and {b.shape}"
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            return "one_differ query vectors must be finite"
        moved = np.flatnonzero(np.abs(b - a) > tol * 1e-3)
        if moved.size != 1:
            return f"exactly one coordinate may move, {moved.size} moved"
        step = float(abs(b.reshape(-1)[moved[0]] - a.reshape(-1)[moved[0]]))
        return None if step <= sens + tol else f"coordinate {int(moved[0])} moves by {step:g}, more than the sensitivity {sens:g}"
    if rel == "privacy_unit":
        return _why_not_units(d1, d2, claim)
    if rel == "local":
        return None  # any two inputs of the declared domain (checked by _why_not_domain)
    return f"unknown neighbour relation {rel!r}"


def unit_records(d: Any, claim: Any, name: str = "data") -> tuple[list[tuple], int]:
    """The records of a privacy-unit dataset as row tuples, and the index of the unit-id column.

    Accepts a 2-D array (records as rows) or a pandas DataFrame; ``claim.unit_column`` is a column
    index or, for a DataFrame, a column name."""
    col = claim.unit_column
    if hasattr(d, "columns") and hasattr(d, "to_numpy"):
        if isinstance(col, str):
            if col not in list(d.columns):
                raise ValueError(f"{name} has no unit column {col!r}; columns: {list(d.columns)}")
            col = list(d.columns).index(col)
        a = d.to_numpy()
    else:
        if isinstance(col, str):
            raise ValueError(f"unit_column {col!r} is a name, but {name} is an array: give a column index")
        a = np.asarray(d)
    if a.ndim != 2:
        raise ValueError(f"{name} must be records with a unit-id column (a 2-D array or a DataFrame), got shape {a.shape}")
    if not 0 <= int(col) < a.shape[1]:
        raise ValueError(f"unit_column {col} is outside the {a.shape[1]} columns of {name}")
    return record_keys(a), int(col)


def _why_not_units(d1: Any, d2: Any, claim: Any) -> str | None:
    try:
        r1, col = unit_records(d1, claim, "d1")
        r2, _ = unit_records(d2, claim, "d2")
    except ValueError as exc:
        return str(exc)
    big, small = (r1, r2) if len(r1) > len(r2) else (r2, r1)
    extra = Counter(big) - Counter(small)
    if sum(extra.values()) != len(big) - len(small) or not extra:
        return "the smaller dataset is not the larger one minus the records of one privacy unit"
    units = {r[col] for r in extra}
    if len(units) != 1:
        return f"the records that differ belong to {len(units)} privacy units, not one"
    u = next(iter(units))
    if any(r[col] == u for r in small):
        return f"unit {u!r} keeps records in the smaller dataset: neighbours differ in all records of one unit"
    n_u = sum(extra.values())
    if n_u > claim.max_contributions:
        return f"unit {u!r} holds {n_u} records, more than max_contributions={claim.max_contributions}"
    return None


def are_neighbours(d1: Any, d2: Any, claim: Any) -> bool:
    """True when ``d1`` and ``d2`` are neighbours under ``claim.neighbours``."""
    return _why_not(d1, d2, claim) is None


def check_neighbours(d1: Any, d2: Any, claim: Any) -> None:
    """Raise ``ValueError`` saying why ``d1, d2`` are not neighbours under the declared relation."""
    why = _why_not(d1, d2, claim)
    if why is not None:
        raise ValueError(f"d1 and d2 are not {claim.neighbours} neighbours: {why}")


# --------------------------------------------------------------------------------------------
# generators

def _accepts(mechanism: Any, data: Any, failures: list | None = None, label: str = "") -> bool:
    """Whether the mechanism takes ``data``: ValueError/TypeError/IndexError mean "not a dataset it
    accepts" (dropped silently); any other exception is a failure on a generated input, dropped
    and recorded in ``failures`` (reported by the search)."""
    try:
        mechanism.sample(data, size=1, rng=0)
    except (ValueError, TypeError, IndexError):
        return False
    except Exception as exc:
        if failures is None:
            raise
        failures.append({"pair": label, "error": f"{type(exc).__name__}: {exc}"[:300]})
        return False
    return True


class PairList(list):
    """The generated pairs, with ``skipped``: the pairs dropped because the mechanism raised on them."""

    skipped: list[dict]


def _example_data(mechanism: Any) -> Any:
    ex = getattr(type(mechanism), "example", None)
    if ex is None:
        return None
    try:
        _, data = ex()
    except Exception:
        return None
    return data


def _unit(mechanism: Any) -> tuple[float, float]:
    claim = mechanism.claim
    sens = 1.0 if claim.sensitivity is None else float(claim.sensitivity)
    return sens, float(claim.epsilon)


def _value_pairs(mechanism: Any) -> list[Pair]:
    sens, _ = _unit(mechanism)
    out = [Pair(0.0, sens, "f=0 vs f=+sens"), Pair(0.0, -sens, "f=0 vs f=-sens")]
    lo, hi = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
    if lo is not None and hi is not None:
        out += [Pair(float(lo), float(lo) + sens, "at lower bound"), Pair(float(hi), float(hi) - sens, "at upper bound"),
                Pair(float(lo) - sens, float(lo), "beyond lower bound")]
    out.append(Pair(1e6, 1e6 + sens, "large values"))
    dom = _domain_of(mechanism)
    if isinstance(dom, Interval):  # pairs at the ends and the centre of the domain (others are filtered)
        m = 0.5 * (dom.lo + dom.hi)
        out += [Pair(dom.lo, dom.lo + sens, "at the lower end of the domain"),
                Pair(dom.hi, dom.hi - sens, "at the upper end of the domain"),
                Pair(m, m + sens, "at the centre of the domain"), Pair(dom.lo, dom.hi, "domain ends")]
    elif isinstance(dom, FiniteValues):  # consecutive values (and the extremes) that are within sens
        v = [x for x in dom.ordered() if isinstance(x, (int, float)) and not isinstance(x, bool)]
        out += [Pair(x, y, f"values {x!r} vs {y!r}") for x, y in zip(v, v[1:])]
        if len(v) > 2:
            out.append(Pair(v[0], v[-1], f"values {v[0]!r} vs {v[-1]!r}"))
    return out


def _score_moves(base: np.ndarray, s: float, monotone: bool) -> list[tuple[np.ndarray, str]]:
    flat = base.reshape(-1)
    k = flat.size
    moves: list[tuple[np.ndarray, str]] = []
    top = int(np.argmax(flat))
    order = np.argsort(-flat, kind="stable")
    second = int(order[1]) if k > 1 else top
    up = np.full(k, s)
    moves.append((up, "all up"))
    e = np.zeros(k)
    e[top] = s
    moves.append((e, "leader up"))
    if k > 1:
        e = np.zeros(k)
        e[second] = s
        moves.append((e, "runner-up up"))
        e = np.full(k, s)
        e[top] = 0.0
        moves.append((e, "all but leader up"))
        if not monotone:
            e = np.full(k, s)
            e[top] = -s
            moves.append((e, "leader down, others up"))
            e = np.full(k, -s)
            e[top] = s
            moves.append((e, "leader up, others down"))
            e = np.zeros(k)
            e[top], e[second] = -s, s
            moves.append((e, "top two converge"))
        if k >= 4:
            # half the queries up and half down (StatDP's "half half" / "X shape" patterns): what
            # threshold mechanisms (sparse vector) are most sensitive to, since answers below and
            # above the threshold then move to opposite sides of it
            half = np.where(np.arange(k) < k // 2, s, 0.0 if monotone else -s)
            moves.append((half, "first half up" if monotone else "first half up, rest down"))
            if not monotone:
                moves.append((-half, "first half down, rest up"))
    return [((flat + m).reshape(base.shape), lab) for m, lab in moves]


def _lengths(mechanism: Any, preferred: tuple[int, ...]) -> list[int]:
    """Query-vector lengths to generate: the declared ``length`` attribute, else the preferred
    lengths the mechanism accepts, else the first other lengths it accepts (a black box built for
    DP-Sniper's 10 queries takes nothing else)."""
    length = getattr(mechanism, "length", None)
    if length is not None:
        return [int(length)]
    ok = [k for k in preferred if _accepts(mechanism, np.zeros(k), [])]
    if ok:
        return ok
    return [k for k in (1, 2, 3, 4, 5, 10, 20, 50, 100) if _accepts(mechanism, np.zeros(k), [])][:2]


def _score_pairs(mechanism: Any, monotone: bool) -> list[Pair]:
    sens, eps = _unit(mechanism)
    unit = sens * max(1.0, 1.0 / eps)
    gaps = [0.0, 1.0, 2.0, 4.0, 8.0]
    bases: list[tuple[np.ndarray, str]] = []
    ex = _example_data(mechanism)
    if ex is not None:
        a = np.asarray(ex, dtype=np.float64)
        if a.size and np.all(np.isfinite(a)):
            bases.append((a, "example"))
            if a.ndim >= 1 and a.size > 1:
                bases.append((np.zeros_like(a), "example shape, ties"))
    for k in _lengths(mechanism, (2, 5)):
        for g in gaps:
            b = np.zeros(k)
            b[0] = g * unit
            bases.append((b, f"k={k}, leader gap {g:g}*sens/eps" if g else f"k={k}, ties"))
    for k in _lengths(mechanism, (5,)):
        if k > 1:
            bases.append((np.concatenate([[0.0], np.full(k - 1, -8.0 * unit)]), f"k={k}, one candidate far ahead"))
    out: list[Pair] = []
    dom = _domain_of(mechanism)
    for b, lab in bases:
        if (dom is not None and not dom.contains(b)) or not _accepts(mechanism, b):
            continue
        for d2, mv in _score_moves(b, sens, monotone):
            out.append(Pair(b, d2, f"{lab}; {mv}"))
    return out


def _bounds(mechanism: Any) -> tuple[float, float]:
    """Scalar record bounds: the declared ``lower``/``upper``, else an interval input domain, else
    the example data's range, else [0, 1]."""
    lo, hi = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
    if (lo is not None and hi is not None and np.ndim(lo) == 0 and np.ndim(hi) == 0
            and math.isfinite(float(lo)) and math.isfinite(float(hi))):
        return float(lo), float(hi)
    dom = _domain_of(mechanism)
    if isinstance(dom, Interval):
        return dom.lo, dom.hi
    ex = _example_data(mechanism)
    if ex is not None and not _is_frame(ex):
        a = np.asarray(ex)
        if a.ndim == 1 and a.size and np.issubdtype(a.dtype, np.number):
            lo_, hi_ = float(np.min(a)), float(np.max(a))
            return (lo_, hi_) if hi_ > lo_ else (lo_ - 1.0, lo_ + 1.0)
    return 0.0, 1.0


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


def _record_pairs(mechanism: Any, relation: str) -> list[Pair]:
    """Records pairs: rows when the mechanism's example data, bounds or input domain are
    row-shaped, category records for a finite domain of scalars, else scalar records."""
    rows = _row_space(mechanism)
    if rows is not None:
        return _row_pairs(rows, relation)
    dom = _domain_of(mechanism)
    if isinstance(dom, FiniteValues):
        return _category_record_pairs(dom, relation)
    a, b = _bounds(mechanism)
    example = None
    ex = _example_data(mechanism)
    if ex is not None and not _is_frame(ex):
        e = np.asarray(ex)
        if e.ndim == 1 and e.size and np.issubdtype(e.dtype, np.number) and e.size <= 10_000:
            example = np.sort(e.astype(np.float64))
    return _scalar_record_pairs(a, b, relation, example)


def _scalar_record_pairs(a: float, b: float, relation: str, example: np.ndarray | None) -> list[Pair]:
    m, w = 0.5 * (a + b), b - a
    bases = _record_bases(a, b)
    if example is not None:
        bases.insert(0, (example, "example data"))
    if relation == "add_remove":
        # last, so that the pairs before keep their positions: a release on no records at all
        # (a mean of nothing is NaN, a median raises) is where shipped code most often breaks
        bases.append((np.zeros(0), "n=0 empty dataset"))
    out: list[Pair] = []
    for base, lab in bases:
        x = np.sort(base)
        n = x.size
        med = (n + 1) // 2 - 1  # lower median index
        if relation == "add_remove":
            for v, vl in ((a, "lower bound"), (b, "upper bound"), (m, "centre"), (b + w, "beyond the upper bound")):
                out.append(Pair(x, np.sort(np.append(x, v)), f"{lab}; add a record at the {vl}"))
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
    return out


def _category_record_pairs(dom: FiniteValues, relation: str) -> list[Pair]:
    """The scalar record patterns built on the positions 0..K-1 of the domain's values (lower
    bound = first value, centre = middle value), then mapped to the values; patterns that leave
    the domain (beyond the upper bound) are dropped."""
    vals = dom.ordered()
    k = len(vals)
    lut = np.array(vals, dtype=object if any(isinstance(v, tuple) for v in vals) else None)
    out: list[Pair] = []
    for p in _scalar_record_pairs(0.0, float(k - 1), relation, None):
        i1, i2 = np.rint(p.d1), np.rint(p.d2)
        if (i1.size and (i1.min() < 0 or i1.max() > k - 1)) or (i2.size and (i2.min() < 0 or i2.max() > k - 1)):
            continue
        d1, d2 = lut[i1.astype(np.intp)], lut[i2.astype(np.intp)]
        if _data_key(d1) != _data_key(d2):  # a replacement snapped onto the value it replaced
            out.append(Pair(d1, d2, p.label))
    return out


@dataclass(frozen=True, eq=False)
class _RowSpace:
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


def _row_space(mechanism: Any) -> _RowSpace | None:
    """The row space of a mechanism whose records are rows, or None when they are scalars."""
    dom = _domain_of(mechanism)
    ex = _example_data(mechanism)
    frame = ex if _is_frame(ex) else None
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
        return _RowSpace(z, np.ones(n), (np.arange(n) < n // 2).astype(float), e, "a one-hot row",
                         rows if ok else None, cols if ok else None, dtypes if ok else None)
    if isinstance(dom, FiniteValues) and all(isinstance(v, tuple) for v in dom.values):
        v = dom.values
        if len({len(t) for t in v}) != 1:
            return None
        table = np.array([list(t) for t in v], dtype=object if any(isinstance(c, str) for t in v for c in t) else None)
        ok = rows is not None and rows.shape[1] == table.shape[1] and bool(dom.contains_each(rows).all())
        k = len(v)
        return _RowSpace(table[0], table[-1], table[(k - 1) // 2], table[1] if k > 2 else None, "the second value",
                         rows if ok else None, cols if ok else None, dtypes if ok else None)
    lo_a, hi_a = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
    width = rows.shape[1] if rows is not None else (len(cols) if cols is not None else None)
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
    beyond = None
    if dom is None and any(p[3] is not None for p in pts):  # nothing lies beyond a category: keep its last
        beyond = np.array([p[1] if p[3] is None else p[3] for p in pts], dtype=dt)
    return _RowSpace(lo, hi, mid, beyond, "beyond the upper bounds", rows, cols, dtypes)


def _row_pairs(space: _RowSpace, relation: str) -> list[Pair]:
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
    if relation == "add_remove":
        bases.append((stack([]), "no records"))
    bases += [(stack([mid]), "one row at the centre"), (stack([lo, hi]), "rows at the lower and upper bounds"),
              (stack([lo, mid, hi]), "rows at the lower bound, centre and upper bound"),
              (stack([mid] * 4), "four duplicate rows at the centre"), (stack([lo] * 3), "three rows at the lower bound")]
    if space.example is not None and space.example.shape[0]:
        bases.insert(0, (space.example, "example rows"))
    adds = [(lo, "at the lower bounds"), (hi, "at the upper bounds"), (mid, "at the centre")]
    if extra is not None:
        adds.append((extra, space.extra_label))
    out: list[Pair] = []
    for x0, lab in bases:
        x = x0.astype(dt)
        n = x.shape[0]
        if relation == "add_remove":
            for r, rl in adds:
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
    out = [p for p in out if _data_key(p.d1) != _data_key(p.d2)][:MAX_ROW_PAIRS]
    if space.columns is None:
        return out
    return [Pair(_frame(p.d1, space), _frame(p.d2, space), p.label) for p in out]


def _frame(a: np.ndarray, space: _RowSpace) -> Any:
    import pandas as pd

    df = pd.DataFrame(a, columns=space.columns)
    try:
        return df.astype(space.dtypes)
    except (TypeError, ValueError):  # a generated value the example's dtype cannot hold
        return df.infer_objects()


def _label_pairs(mechanism: Any) -> list[Pair]:
    cands = list(getattr(mechanism, "candidates"))
    c0, c1 = cands[0], cands[1 % len(cands)]
    out: list[Pair] = []
    for n0, n1 in ((0, 0), (1, 0), (2, 2), (4, 0), (4, 2), (8, 0)):
        base = np.array([c0] * n0 + [c1] * n1, dtype=object if not np.isscalar(c0) or isinstance(c0, str) else None)
        for v in (c0, c1, cands[-1]):
            out.append(Pair(base, np.append(base, v), f"{n0}x{c0!r}, {n1}x{c1!r}; add {v!r}"))
    return out


def _histogram_pairs(mechanism: Any) -> list[Pair]:
    """one_differ pairs: flat, peaked and example-shaped query vectors, one coordinate moved by
    the sensitivity in both directions (the leader, a runner-up, an empty bin)."""
    sens, eps = _unit(mechanism)
    unit = sens * max(1.0, 1.0 / eps)
    dom = _domain_of(mechanism)
    length = dom.length if isinstance(dom, BitVectors) else getattr(mechanism, "length", None)
    ks = [int(length)] if length is not None else _lengths(mechanism, (1, 2, 5, 10))
    bases: list[tuple[np.ndarray, str]] = []
    ex = _example_data(mechanism)
    if ex is not None:
        try:
            a = np.asarray(ex, dtype=np.float64)
        except (TypeError, ValueError):
            a = np.zeros(0)
        if a.ndim >= 1 and a.size and np.all(np.isfinite(a)):
            bases.append((a, "example"))
            ks = sorted(set(ks) | {a.size}) if length is None else ks
    for k in ks:
        bases.append((np.zeros(k), f"k={k}, all zero"))
        bases.append((np.ones(k), f"k={k}, all one"))
        if k > 1:
            b = np.zeros(k)
            b[0] = 4.0 * unit
            bases.append((b, f"k={k}, one bin far ahead"))
    if isinstance(dom, BitVectors):  # one-hot and half/half vectors: their bit flips stay in the domain
        bases += [(r, f"bit vector, {lab}") for r, lab in dom.representatives()[2:]]
    out: list[Pair] = []
    for b, lab in bases:
        flat = b.reshape(-1)
        idx = {0: "first", flat.size - 1: "last", int(np.argmax(flat)): "largest"}
        for i, where in idx.items():
            for sgn, way in ((1.0, "up"), (-1.0, "down")):
                e = flat.copy()
                e[i] += sgn * sens
                out.append(Pair(b, e.reshape(b.shape), f"{lab}; {where} bin {way}"))
    return out


def _unit_pairs(mechanism: Any) -> list[Pair]:
    """privacy_unit pairs: records (unit id, value) in a few units; add a unit holding
    max_contributions records at the bounds / the centre / beyond, or remove the largest unit."""
    claim = mechanism.claim
    mc = int(claim.max_contributions)
    col = claim.unit_column if isinstance(claim.unit_column, int) else 0
    a, b = _bounds(mechanism)
    m, w = 0.5 * (a + b), b - a

    def records(units: list[tuple[int, float, int]]) -> np.ndarray:
        rows = []
        for u, v, c in units:
            for _ in range(c):
                r = [v, v]
                r[col] = float(u)
                rows.append(r)
        return np.array(rows, dtype=np.float64).reshape(-1, 2)

    bases = [([], "empty"), ([(1, m, 1)], "one unit at the centre"),
             ([(1, a, mc), (2, b, mc)], "two full units at the bounds"),
             ([(1, m, mc), (2, m, 1), (3, a, 1)], "three units, one full")]
    out: list[Pair] = []
    for units, lab in bases:
        x = records(units)
        for v, vl in ((a, "lower bound"), (b, "upper bound"), (m, "centre"), (b + w, "beyond the upper bound")):
            for c in sorted({1, mc}):
                y = np.concatenate([x, records([(99, v, c)])])
                out.append(Pair(x, y, f"{lab}; add a unit of {c} record(s) at the {vl}"))
        if units:
            big = max(units, key=lambda t: t[2])
            rest = [t for t in units if t is not big]
            out.append(Pair(x, records(rest), f"{lab}; remove unit {big[0]} ({big[2]} records)"))
    return out


def _data_key(d: Any) -> tuple:
    # every value in full: numpy's and pandas' reprs elide the middle of large data, which would
    # make two datasets differing there look like one
    cols = tuple(map(repr, d.columns)) if _is_frame(d) else None
    a = d.to_numpy() if _is_frame(d) else np.asarray(d)
    return (a.tobytes() if a.dtype != object else repr(a.tolist()), a.dtype.str, a.shape, cols)


def _dedupe(pairs: Iterable[Pair]) -> list[Pair]:
    seen: set = set()
    out = []
    for p in pairs:
        key = (_data_key(p.d1), _data_key(p.d2))
        if key in seen:
            continue
        seen.add(key)
        out.append(p)
    return out


def merge_swaps(pairs: Iterable[Pair]) -> tuple[list[Pair], int]:
    """The pairs with every later repeat of a pair or of its swap (d2, d1) removed, and how many
    were removed.

    An audit of (d1, d2) scores every event in both directions, so it is exactly the audit of
    (d2, d1): searching both only splits the selection draws between two copies of one test.
    """
    items = list(pairs)
    seen: set = set()
    out = []
    for p in items:
        k1, k2 = _data_key(p.d1), _data_key(p.d2)
        if (k1, k2) in seen or (k2, k1) in seen:
            continue
        seen.add((k1, k2))
        out.append(p)
    return out, len(items) - len(out)


def _local_pairs(mechanism: Any) -> list[Pair]:
    """local pairs: any two elements of the input domain are neighbours, so the pairs are the
    domain's telling ones -- every two values of a finite domain (a spread subset of 20 values
    beyond that), for bit vectors all zeros vs all ones, one-hot vectors, single-bit flips and
    half/half patterns, for an interval its ends, centre and quarters."""
    dom = _domain_of(mechanism)
    if dom is None:
        raise ValueError("the local generator needs an input domain: declare it, e.g. wrap(..., "
                         "input_domain=['a', 'b', 'c']), input_domain={'bits': 8} or {'interval': [0, 1]} (the "
                         "library adapters take input_domain= too: a library object may not state its categories)")
    make = getattr(dom, "local_pairs", None)
    if make is None:
        raise ValueError(f"the local generator cannot list elements of the input domain {dom!r}: use a "
                         "FiniteValues, BitVectors or Interval domain, or pass the pairs")
    return [Pair(x, y, lab) for x, y, lab in make()]


def family_of(mechanism: Any) -> str:
    rel = mechanism.claim.neighbours
    if rel == "local":
        return "local"
    if rel == "value":
        return "values"
    if rel == "bit":
        return "bits"
    if rel in ("score_linf", "score_monotone"):
        return "scores"
    if rel == "one_differ":
        return "histograms"
    if rel == "privacy_unit":
        return "units"
    if getattr(mechanism, "candidates", None) is not None:
        return "labels"
    return "records"


def pairs_for(mechanism: Any, generator: Any = "auto") -> list[Pair]:
    """Neighbouring pairs to search for ``mechanism``.

    ``generator`` is ``"auto"`` (the family of ``claim.neighbours``), a family name in
    :data:`FAMILIES`, a callable ``generator(mechanism) -> iterable of (d1, d2)`` or an iterable of
    ``(d1, d2)`` pairs. Every pair is checked against the declared relation (``ValueError``
    naming the pair otherwise) and pairs the mechanism rejects are dropped.
    """
    claim = mechanism.claim
    if isinstance(generator, str):
        fam = family_of(mechanism) if generator == "auto" else generator
        if fam not in FAMILIES:
            raise ValueError(f"generator must be 'auto', one of {', '.join(FAMILIES)}, a callable or a list of pairs; got {generator!r}")
        if fam == "values":
            raw = _value_pairs(mechanism)
        elif fam == "bits":
            raw = [Pair(0, 1, "bit 0 vs 1")]
        elif fam == "scores":
            raw = _score_pairs(mechanism, claim.neighbours == "score_monotone")
        elif fam == "labels":
            raw = _label_pairs(mechanism)
        elif fam == "histograms":
            raw = _histogram_pairs(mechanism)
        elif fam == "units":
            if claim.neighbours != "privacy_unit":
                raise ValueError(f"the units generator needs privacy_unit neighbours, the claim says {claim.neighbours!r}")
            raw = _unit_pairs(mechanism)
        elif fam == "local":
            raw = _local_pairs(mechanism)
        else:
            if claim.neighbours not in ("add_remove", "replace_one"):
                raise ValueError(f"the records generator needs add_remove or replace_one neighbours, the claim says {claim.neighbours!r}")
            raw = _record_pairs(mechanism, claim.neighbours)
        failures: list[dict] = []
        # a domain declared on the mechanism but not in its claim still bounds what is generated
        dom = _domain_of(mechanism)
        own = None if dom is getattr(claim, "input_domain", None) else dom
        keep = PairList(p for p in _dedupe(raw) if are_neighbours(p.d1, p.d2, claim)
                        and _why_not_domain(p.d1, p.d2, own, claim.neighbours) is None
                        and _accepts(mechanism, p.d1, failures, p.label) and _accepts(mechanism, p.d2, failures, p.label))
        keep.skipped = failures
        if not keep:
            first = f"; it raised on {failures[0]['pair']}: {failures[0]['error']}" if failures else ""
            inside = f" inside the input domain {dom}" if dom is not None else ""
            raise ValueError(f"generator {fam!r} produced no pair{inside} that {type(mechanism).__name__} accepts{first}")
        return keep
    items = list(generator(mechanism)) if callable(generator) else list(generator)
    out = []
    for i, it in enumerate(items):
        p = it if isinstance(it, Pair) else Pair(it[0], it[1], f"pair {i}")
        why = _why_not(p.d1, p.d2, claim)
        if why is not None:
            raise ValueError(f"pair {i} is not a pair of {claim.neighbours} neighbours: {why}")
        out.append(p)
    if not out:
        raise ValueError("generator produced no pairs")
    return out

