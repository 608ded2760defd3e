"""Neighbouring dataset pairs: legality checks and generators per family
(docs/auditing.md, "Neighbour relations and pair generators").

The declared relation (``claim.neighbours``) decides what a legal pair is:

``value``           scalars with |f - f'| <= sensitivity (default 1);
``bit``             scalars in {0, 1};
``score_linf``      arrays of one shape, every entry moving by at most the sensitivity, in any
                    direction (entries equal to -inf must stay -inf);
``score_monotone``  as ``score_linf`` with every entry moving in the same direction;
``add_remove``      1-D record arrays whose multisets differ by exactly one added record;
``replace_one``     1-D record arrays of equal size whose multisets differ in one record;
``one_differ``      query vectors of one shape, exactly one coordinate moving by at most the
                    sensitivity (histograms; StatDP's ONE_DIFFER);
``privacy_unit``    records (2-D array or DataFrame) with a unit-id column; neighbours differ in
                    all records of one unit, at most ``claim.max_contributions`` of them.

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

__all__ = ["Pair", "check_neighbours", "are_neighbours", "pairs_for", "FAMILIES", "unit_records"]

FAMILIES = ("values", "bits", "scores", "records", "labels", "histograms", "units")


@dataclass(frozen=True, eq=False)
class Pair:
    d1: Any
    d2: Any
    label: str = ""


def _records(d: Any, name: str) -> list:
    a = np.asarray(d)
    if a.ndim == 0:
        raise ValueError(f"{name} must be a 1-D array of records, got a scalar {d!r}")
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of records, got shape {a.shape}")
    return a.tolist()


def _why_not(d1: Any, d2: Any, claim: Any) -> str | None:
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
        r1, r2 = _records(d1, "d1"), _records(d2, "d2")
        big, small = (r1, r2) if len(r1) > len(r2) else (r2, r1)
        if len(big) != len(small) + 1:
            return f"add_remove neighbours differ in size by exactly 1, got sizes {len(r1)} and {len(r2)}"
        extra = Counter(big) - Counter(small)
        return None if sum(extra.values()) == 1 else "the smaller dataset is not the larger one minus one record"
    if rel == "replace_one":
        r1, r2 = _records(d1, "d1"), _records(d2, "d2")
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
    return [tuple(r) for r in a.tolist()], int(col)


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
    except Exception as exc:  # noqa: BLE001 - generated inputs may break a mechanism in any way
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
    except Exception:  # noqa: BLE001 - a missing/abstract example just means no template
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
    for b, lab in bases:
        if not _accepts(mechanism, b):
            continue
        for d2, mv in _score_moves(b, sens, monotone):
            out.append(Pair(b, d2, f"{lab}; {mv}"))
    return out


def _bounds(mechanism: Any) -> tuple[float, float]:
    lo, hi = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
    if lo is not None and hi is not None and math.isfinite(float(lo)) and math.isfinite(float(hi)):
        return float(lo), float(hi)
    ex = _example_data(mechanism)
    if ex is not None:
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
    a, b = _bounds(mechanism)
    m, w = 0.5 * (a + b), b - a
    bases = _record_bases(a, b)
    ex = _example_data(mechanism)
    if ex is not None:
        e = np.asarray(ex)
        if e.ndim == 1 and e.size and np.issubdtype(e.dtype, np.number) and e.size <= 10_000:
            bases.insert(0, (np.sort(e.astype(np.float64)), "example data"))
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
    length = getattr(mechanism, "length", None)
    ks = _lengths(mechanism, (1, 2, 5, 10))
    bases: list[tuple[np.ndarray, str]] = []
    ex = _example_data(mechanism)
    if ex is not None:
        a = np.asarray(ex, dtype=np.float64)
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
    a = np.asarray(d)
    return (a.tobytes() if a.dtype != object else repr(d), a.dtype.str, np.shape(d))


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


def family_of(mechanism: Any) -> str:
    rel = mechanism.claim.neighbours
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
        else:
            if claim.neighbours not in ("add_remove", "replace_one"):
                raise ValueError(f"the records generator needs add_remove or replace_one neighbours, the claim says {claim.neighbours!r}")
            raw = _record_pairs(mechanism, claim.neighbours)
        failures: list[dict] = []
        keep = PairList(p for p in _dedupe(raw) if are_neighbours(p.d1, p.d2, claim)
                        and _accepts(mechanism, p.d1, failures, p.label) and _accepts(mechanism, p.d2, failures, p.label))
        keep.skipped = failures
        if not keep:
            first = f"; it raised on {failures[0]['pair']}: {failures[0]['error']}" if failures else ""
            raise ValueError(f"generator {fam!r} produced no pair that {type(mechanism).__name__} accepts{first}")
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

