"""Input metrics: distances between two inputs, the ``d_in`` of privacy maps (:mod:`verifiers.claims`).

Records are the elements of a 1-D array, the rows of a 2-D array or of a DataFrame, and a NaN
record equals a NaN record (:func:`verifiers.relations.records.record_keys`):

``symmetric_distance``      size of the multiset symmetric difference of the records (adding or
                            removing one record: 1, replacing one: 2) -- OpenDP's SymmetricDistance;
``insert_delete_distance``  the same for ordered datasets: fewest insertions and deletions
                            (n1 + n2 - 2 LCS) -- OpenDP's InsertDeleteDistance;
``change_distance``         records replaced between two datasets of equal size, as multisets
                            (symmetric distance / 2; infinite when the sizes differ) -- OpenDP's
                            ChangeOneDistance;
``hamming_distance``        positions that differ between two ordered datasets of equal size --
                            OpenDP's HammingDistance;
``absolute_distance``       |a - b| for scalars;
``l1_distance``, ``l2_distance``, ``linf_distance``
                            norms of the difference of two vectors of one shape;
``linf_monotone_distance``  the L-inf distance when every coordinate moves in the same direction
                            (infinite otherwise) -- OpenDP's ``linf_distance(monotonic=True)``;
``discrete_distance``       0 if the inputs are equal, else 1 (local DP, randomized response).

A relation's ``metric`` (:class:`verifiers.relations.Relation`) is the one under which its
neighbours are at distance 1.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from dpharness.verifiers.relations.records import record_keys, value_key

__all__ = ["INPUT_METRICS", "RECORD_METRICS", "distance"]

INPUT_METRICS: tuple[str, ...] = (
    "symmetric_distance", "insert_delete_distance", "change_distance", "hamming_distance",
    "absolute_distance", "l1_distance", "l2_distance", "linf_distance", "linf_monotone_distance",
    "discrete_distance",
)
#: Metrics on datasets of records (the rest are on scalars, vectors or whole inputs).
RECORD_METRICS = ("symmetric_distance", "insert_delete_distance", "change_distance", "hamming_distance")


def _records(d: Any, name: str) -> list:
    """The records of a dataset as hashable keys: elements of a 1-D array, rows of a 2-D array
    or of a DataFrame (NaN canonicalised)."""
    try:
        a = d.to_numpy(dtype=object) if _is_frame(d) else np.asarray(d)
    except ValueError as exc:  # ragged rows
        raise ValueError(f"{name} must be records (a 1-D array, a 2-D array or a DataFrame): {exc}") from None
    if a.ndim == 0:
        raise ValueError(f"{name} must be a dataset of records (a 1-D array, a 2-D array with one record per row, "
                         f"or a DataFrame), got the scalar {d!r}")
    if a.ndim > 2:
        raise ValueError(f"{name} must be records as a 1-D array, a 2-D array (one record per row) or a DataFrame, "
                         f"got shape {a.shape}")
    return record_keys(a)


def _is_frame(d: Any) -> bool:
    return hasattr(d, "columns") and hasattr(d, "to_numpy")


def _aligned(d1: Any, d2: Any) -> Any:
    """``d2`` with its columns in the order of ``d1`` when both are DataFrames (records are
    compared column by column name); ``ValueError`` when their columns differ."""
    if not (_is_frame(d1) and _is_frame(d2)) or list(d1.columns) == list(d2.columns):
        return d2
    if sorted(map(str, d1.columns)) != sorted(map(str, d2.columns)):
        raise ValueError(f"the DataFrames have different columns: {list(d1.columns)} and {list(d2.columns)}")
    return d2[list(d1.columns)]


def _lcs(r1: list, r2: list) -> int:
    """Length of the longest common subsequence, one numpy pass per record of ``r1``:
    row i of the DP is the running maximum of max(prev[j], prev[j-1] + match[j])."""
    if not r1 or not r2:
        return 0
    codes: dict = {}
    c1 = np.array([codes.setdefault(k, len(codes)) for k in r1])
    c2 = np.array([codes.setdefault(k, len(codes)) for k in r2])
    prev = np.zeros(c2.size + 1, dtype=np.int64)
    for x in c1:
        cand = np.maximum(prev[1:], prev[:-1] + (c2 == x))
        prev = np.concatenate([[0], np.maximum.accumulate(cand)])
    return int(prev[-1])


def _symmetric(r1: list, r2: list) -> int:
    c1, c2 = Counter(r1), Counter(r2)
    return sum((c1 - c2).values()) + sum((c2 - c1).values())


def _vectors(d1: Any, d2: Any, metric: str) -> tuple[np.ndarray, np.ndarray] | None:
    try:
        a, b = np.asarray(d1, dtype=np.float64), np.asarray(d2, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{metric} needs numeric data: {exc}") from None
    if a.shape != b.shape:
        return None
    return a, b


def _coordinate_gaps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| per coordinate, 0 where both are equal (NaN equals NaN, inf equals inf)."""
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore"):
        gap = np.abs(b - a)
    return np.where(same, 0.0, np.where(np.isnan(gap), np.inf, gap))


def _equal(d1: Any, d2: Any) -> bool:
    if isinstance(d1, str) or isinstance(d2, str):
        return isinstance(d1, str) and isinstance(d2, str) and d1 == d2
    if hasattr(d1, "columns") and hasattr(d1, "to_numpy"):
        d1 = d1.to_numpy(dtype=object)
    if hasattr(d2, "columns") and hasattr(d2, "to_numpy"):
        d2 = d2.to_numpy(dtype=object)
    a, b = np.asarray(d1), np.asarray(d2)
    if a.shape != b.shape:
        return False
    return value_key(a) == value_key(b)


def distance(metric: str, d1: Any, d2: Any) -> float:
    """The distance between ``d1`` and ``d2`` under ``metric`` (one of :data:`INPUT_METRICS`);
    ``math.inf`` when the two inputs are not comparable under it (e.g. sizes differ under
    ``change_distance``)."""
    if metric not in INPUT_METRICS:
        raise ValueError(f"input_metric must be one of {', '.join(INPUT_METRICS)}; got {metric!r}")
    if metric in RECORD_METRICS:
        d2 = _aligned(d1, d2)
        r1, r2 = _records(d1, "d1"), _records(d2, "d2")
        if metric == "symmetric_distance":
            return float(_symmetric(r1, r2))
        if metric == "insert_delete_distance":
            return float(len(r1) + len(r2) - 2 * _lcs(r1, r2))
        if len(r1) != len(r2):
            return math.inf
        if metric == "change_distance":
            return _symmetric(r1, r2) / 2.0
        return float(sum(k1 != k2 for k1, k2 in zip(r1, r2)))
    if metric == "discrete_distance":
        return 0.0 if _equal(d1, d2) else 1.0
    ab = _vectors(d1, d2, metric)
    if ab is None:
        return math.inf
    a, b = ab
    if metric == "absolute_distance":
        if a.size != 1:
            raise ValueError(f"absolute_distance is for scalars, got data of shape {a.shape}")
        return float(_coordinate_gaps(a.reshape(-1), b.reshape(-1))[0])
    gap = _coordinate_gaps(a.reshape(-1), b.reshape(-1))
    if gap.size == 0:
        return 0.0
    if metric == "l1_distance":
        return float(np.sum(gap))
    if metric == "l2_distance":
        return float(np.sqrt(np.sum(gap * gap)))
    if metric == "linf_monotone_distance":
        with np.errstate(invalid="ignore"):
            step = (b - a).reshape(-1)[gap > 0]
        if np.any(step > 0) and np.any(step < 0):
            return math.inf
    return float(np.max(gap))

