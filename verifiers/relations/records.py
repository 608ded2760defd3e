"""Records as rows, and the one NaN-aware key of a value or record.

A record dataset is a 1-D array (one record per entry), a 2-D array (one record per row) or a
pandas DataFrame (one record per row). Records are compared as multisets of hashable keys, so a
comparison is a ``Counter`` of keys, linear in the data. ``float('nan') != float('nan')`` would
make every NaN record distinct, so every float NaN maps to the one key :data:`NAN_KEY`: the
relations (:mod:`verifiers.relations`), the input metrics of privacy maps (:mod:`verifiers.claims`)
and the input domains (:mod:`verifiers.input_domains`) all key values here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["NAN_KEY", "is_nan", "value_key", "record_keys", "is_frame", "nan_mask", "Records", "records_of",
           "record_pair", "RECORDS_ACCEPTED"]


class _NaN:
    """The one key every float NaN maps to (so that NaN values / cells compare equal)."""

    def __repr__(self) -> str:
        return "nan"


NAN_KEY = _NaN()


def is_nan(x: Any) -> bool:
    """Whether ``x`` is a float NaN (Python or numpy)."""
    return isinstance(x, (float, np.floating)) and x != x


def value_key(x: Any) -> Any:
    """A hashable key for one value or record: numpy scalars to Python, arrays/lists/tuples to
    tuples (recursively), every float NaN to :data:`NAN_KEY`."""
    if isinstance(x, np.ndarray):
        x = x.item() if x.ndim == 0 else x.tolist()
    elif isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, (list, tuple)):
        return tuple(value_key(v) for v in x)
    if is_nan(x):
        return NAN_KEY
    return x


def is_frame(d: Any) -> bool:
    return hasattr(d, "columns") and hasattr(d, "to_numpy") and hasattr(d, "iloc")


_is_nan_object = np.frompyfunc(is_nan, 1, 1)


def nan_mask(a: np.ndarray) -> np.ndarray | None:
    """Where ``a`` holds a float NaN (None when its dtype cannot hold one)."""
    if a.dtype.kind in "fc":
        return np.isnan(a)
    if a.dtype.kind == "O":
        return _is_nan_object(a).astype(bool) if a.size else np.zeros(a.shape, dtype=bool)
    return None


def record_keys(a: np.ndarray) -> list:
    """One hashable key per record of ``a`` (1-D: the values; 2-D: row tuples): the keys of
    :func:`value_key` with one difference, that numpy scalars in an object array stay what they
    are (they hash and compare as their Python values). Linear in the number of cells: only NaN
    cells and container cells (lists, tuples, arrays in an object array) are touched one by one."""
    keys = a.tolist()
    mask = nan_mask(a)
    if mask is not None and mask.any():
        if a.ndim == 1:
            for i in np.flatnonzero(mask):
                keys[i] = NAN_KEY
        else:
            for i, j in zip(*np.nonzero(mask)):
                keys[i][j] = NAN_KEY
    if a.dtype.kind == "O" and a.size:  # a container cell is keyed as a tuple (NaN inside canonicalised)
        nested = np.frompyfunc(lambda x: isinstance(x, (list, tuple, np.ndarray)), 1, 1)(a).astype(bool)
        if a.ndim == 1:
            for i in np.flatnonzero(nested):
                keys[i] = value_key(keys[i])
        else:
            for i, j in zip(*np.nonzero(nested)):
                keys[i][j] = value_key(keys[i][j])
    return keys if a.ndim == 1 else [tuple(r) for r in keys]


@dataclass(frozen=True, eq=False)
class Records:
    """The records of one dataset: ``array`` 1-D (scalar records) or 2-D (one record per row),
    ``columns`` a DataFrame's column labels."""

    array: np.ndarray
    columns: list | None

    @property
    def n(self) -> int:
        return int(self.array.shape[0])

    @property
    def width(self) -> int | None:
        return None if self.array.ndim == 1 else int(self.array.shape[1])


RECORDS_ACCEPTED = "a 1-D array of records, a 2-D array (one record per row) or a pandas DataFrame"


def records_of(d: Any, name: str) -> Records:
    """The records of a dataset; ``ValueError`` saying what is accepted otherwise."""
    if is_frame(d):
        return Records(d.to_numpy(), list(d.columns))
    if d is None:
        raise ValueError(f"{name} is missing (got None); pass {RECORDS_ACCEPTED}")
    try:
        a = np.asarray(d)
    except ValueError as exc:  # ragged rows
        raise ValueError(f"{name} must be {RECORDS_ACCEPTED}; numpy could not read it: {exc}") from None
    if a.ndim == 0:
        raise ValueError(f"{name} must be {RECORDS_ACCEPTED}, got a scalar {d!r}")
    if a.ndim > 2:
        raise ValueError(f"{name} must be {RECORDS_ACCEPTED}, got shape {a.shape}")
    return Records(a, None)


def record_pair(d1: Any, d2: Any) -> tuple[list, list] | str:
    """The record keys of both datasets, aligned (a DataFrame's columns by name), or why they
    cannot be compared."""
    try:
        r1, r2 = records_of(d1, "d1"), records_of(d2, "d2")
    except ValueError as exc:
        return str(exc)
    if r1.n and r2.n and r1.width != r2.width:
        what = {None: "scalars"}
        return (f"records of d1 are {what.get(r1.width, f'rows of {r1.width}')} but records of d2 are "
                f"{what.get(r2.width, f'rows of {r2.width}')}")
    if r1.columns is not None and r2.columns is not None and r1.columns != r2.columns:
        if sorted(map(str, r1.columns)) != sorted(map(str, r2.columns)) or len(set(r2.columns)) != len(r2.columns):
            return f"the DataFrames have different columns: {r1.columns} and {r2.columns}"
        r2 = records_of(d2[r1.columns], "d2")  # same columns in another order: compare by name
    return record_keys(r1.array), record_keys(r2.array)
