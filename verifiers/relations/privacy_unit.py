"""``privacy_unit``: records (a 2-D array or a DataFrame) with a unit-id column; neighbours differ
in all records of one unit, at most ``claim.max_contributions`` of them (user-level DP); the
``units`` generator."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from dpharness.verifiers.relations.base import Relation
from dpharness.verifiers.relations.pairs import Pair
from dpharness.verifiers.relations.probe import bounds
from dpharness.verifiers.relations.records import record_keys

__all__ = ["PrivacyUnit", "unit_records", "unit_pairs"]


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


def unit_pairs(mechanism: Any, relation: Relation) -> list[Pair]:
    """privacy_unit pairs: records (unit id, value) in a few units; add a unit holding
    max_contributions records at the bounds / the centre / beyond, or remove the largest unit."""
    if not isinstance(relation, PrivacyUnit):
        raise ValueError(f"the units generator needs privacy_unit neighbours, the claim says {mechanism.claim.neighbours!r}")
    claim = mechanism.claim
    mc = int(claim.max_contributions)
    col = claim.unit_column if isinstance(claim.unit_column, int) else 0
    a, b = bounds(mechanism)
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


class PrivacyUnit(Relation):
    name = "privacy_unit"
    family = "units"
    records = True
    generators = {"units": unit_pairs}

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:
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


RELATION = PrivacyUnit()
