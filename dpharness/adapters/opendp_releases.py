"""OpenDP inputs and releases that are not plain numbers (docs/adapters.md, "OpenDP: inputs and
releases"): what :mod:`dpharness.adapters.opendp_` hands a measurement and how its outputs become
the rows the events read.

Inputs
    * ``MapDomain`` (``HashMap<K, V>``, the partitioned counts of the threshold and ALP
      measurements): our data are a vector of per-partition values; coordinate ``i`` becomes the
      key ``partition_key(i)`` and a coordinate equal to 0 is left out (a partition the data do
      not hold: OpenDP's ``L01InfDistance`` / ``L02InfDistance`` compare a missing key as a 0).
    * ``BitVectorDomain`` (``BitVector``, RAPPOR-style reports): our data are a 0/1 vector,
      packed into bytes (``numpy.packbits``) as OpenDP takes them.

Releases (one row per call, every row of one mechanism the same shape)
    * a ``dict`` (``HashMap``): one coordinate per key of a key list fixed when the mechanism is
      adapted (sorted); a key missing from a release is NaN, an atom every event family tells
      apart from a number; a key outside the list is dropped (a fixed projection: post-processing,
      so a violation found is the measurement's own).
    * ``None`` (e.g. ``make_select_private_candidate`` when no candidate passes): NaN.
    * ``bytes`` (a bit vector): its bits (``numpy.unpackbits``).
    * a ``Queryable`` (compositions, privacy filters, ``make_alp_queryable``): driven by a fixed
      interaction script, the list of ``queries`` (sub-measurements or query values) asked in
      order; the release is the vector of answers (each answer shaped as above).
    * a tuple or list: its items, each shaped as above.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["partition_key", "map_types", "to_map", "to_bitvector", "is_queryable", "drive", "dict_keys", "shape_releases",
           "with_script", "script_of", "SCRIPT_ATTRIBUTE", "MISSING"]

#: What a missing key or a ``None`` release becomes: NaN, an atom of its own for every event family.
MISSING = math.nan
_INT_TYPES = ("i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize")
_MAP = re.compile(r"^HashMap<\s*([^,]+?)\s*,\s*(.+?)\s*>$")


def map_types(carrier: str) -> tuple[str, str] | None:
    """The key and value types of a ``HashMap<K, V>`` carrier, else None."""
    found = _MAP.match(str(carrier))
    return (found.group(1), found.group(2)) if found else None


def partition_key(i: int, key_type: str) -> Any:
    """The key of partition ``i``: the integer itself for integer keys, ``"k<i>"`` for strings."""
    if key_type in _INT_TYPES:
        return int(i)
    if key_type == "bool":
        return bool(i)
    return f"k{int(i)}"


def to_map(data: Any, carrier: str) -> dict:
    """A vector of per-partition values as the ``HashMap`` of ``carrier``: coordinate ``i`` is
    the key :func:`partition_key` ``(i)``; zeros are left out (a partition the data do not hold).
    Integer values are floored: the floors of two values are at most ``ceil`` of their distance
    apart, and the maps of integer metrics are read at that ``ceil`` (:class:`opendp_._OpenDPMap`)."""
    key_type, value_type = map_types(carrier) or ("String", "f64")
    a = np.asarray(data.to_numpy() if hasattr(data, "to_numpy") else data, dtype=np.float64).reshape(-1)
    out: dict = {}
    for i, v in enumerate(a.tolist()):
        if v == 0:
            continue
        if value_type in _INT_TYPES:  # floor: |floor(a) - floor(b)| <= ceil(|a - b|), where integer maps are read
            v = int(math.floor(v))
        out[partition_key(i, key_type)] = v
    return out


def to_bitvector(data: Any) -> np.ndarray:
    """A 0/1 vector as OpenDP's ``BitVector`` (bytes, most significant bit first)."""
    a = np.asarray(data.to_numpy() if hasattr(data, "to_numpy") else data).reshape(-1)
    if a.size and not np.all((a == 0) | (a == 1)):
        raise ValueError(f"a bit vector holds 0s and 1s, got {a[:8].tolist()}")
    return np.packbits(a.astype(np.uint8))


def is_queryable(obj: Any) -> bool:
    """An OpenDP ``Queryable`` (what compositions, privacy filters and ALP release)."""
    return type(obj).__name__ in ("Queryable", "OdometerQueryable") and callable(obj)


#: The attribute a measurement releasing a Queryable may carry its interaction script in.
SCRIPT_ATTRIBUTE = "dpharness_queries"


def with_script(measurement: Any, queries: Sequence[Any]) -> Any:
    """``measurement`` carrying its interaction script (the ``queries`` the adapter asks of the
    ``Queryable`` it releases), so a factory of a sweep catalogue can give them."""
    setattr(measurement, SCRIPT_ATTRIBUTE, list(queries))
    return measurement


def script_of(measurement: Any) -> list | None:
    """The interaction script ``measurement`` carries (:func:`with_script`), else None."""
    got = getattr(measurement, SCRIPT_ATTRIBUTE, None)
    return None if got is None else list(got)


def drive(queryable: Any, queries: Sequence[Any]) -> list:
    """The answers of ``queryable`` to ``queries``, asked in order (the interaction script)."""
    return [queryable(q) for q in queries]


def dict_keys(release: Any) -> list:
    """The sorted keys of the dicts in one (shaped or raw) release: the fixed key list of a
    mechanism whose releases are dicts (empty when none is)."""
    found: set = set()

    def visit(r: Any) -> None:
        if isinstance(r, dict):
            found.update(r)
        elif isinstance(r, (list, tuple)):
            for x in r:
                visit(x)

    visit(release)
    return sorted(found, key=lambda k: (str(type(k)), k))


def _flat(r: Any, keys: Sequence[Any]) -> list:
    """One release as a flat list of atoms (see the module's docstring)."""
    if r is None:
        return [MISSING]
    if isinstance(r, dict):
        return [_atom(r.get(k, None)) for k in keys]
    if isinstance(r, (bytes, bytearray)):
        return np.unpackbits(np.frombuffer(bytes(r), dtype=np.uint8)).astype(np.int64).tolist()
    if isinstance(r, np.ndarray) and r.dtype == np.uint8 and r.ndim == 1:
        return np.unpackbits(r).astype(np.int64).tolist()
    if isinstance(r, (list, tuple, np.ndarray)):
        out: list = []
        for x in (r.tolist() if isinstance(r, np.ndarray) else r):
            out.extend(_flat(x, keys))
        return out
    return [_atom(r)]


def _atom(v: Any) -> Any:
    if v is None:
        return MISSING
    if isinstance(v, (dict, list, tuple, bytes, bytearray, np.ndarray)):  # nested: the sorted keys of its own
        flat = _flat(v, dict_keys(v))
        return flat[0] if len(flat) == 1 else tuple(flat)
    return v


def _simple(r: Any) -> bool:
    """A release numpy reads as it is (numbers, strings, booleans, arrays of them)."""
    if r is None or isinstance(r, (dict, bytes, bytearray)):
        return False
    if isinstance(r, (list, tuple)):
        return all(_simple(x) and not isinstance(x, (list, tuple)) for x in r)
    return not (isinstance(r, np.ndarray) and r.dtype == np.uint8 and r.ndim == 1)


def shape_releases(outs: list, keys: Sequence[Any] = ()) -> np.ndarray:
    """The releases of one batch as an array, one row per release (scalars stay a 1-D array):
    dicts on the fixed ``keys``, ``None`` as NaN, bit vectors as bits (module docstring)."""
    if all(_simple(r) for r in outs):
        return np.asarray(outs)
    rows = [_flat(r, keys) for r in outs]
    wide = max(len(r) for r in rows) if rows else 0
    # None among wider releases (no candidate, else (score, candidate)): a row of NaN, one atom
    rows = [[MISSING] * wide if r is None else row for r, row in zip(outs, rows)]
    widths = {len(r) for r in rows}
    if len(widths) > 1:
        raise ValueError(f"the measurement's releases have different lengths ({sorted(widths)}): give the adapter "
                         "keys= (the partitions to read) so every release is read on the same coordinates")
    if widths == {1}:
        rows = [r[0] for r in rows]
    try:
        a = np.asarray(rows)
    except ValueError:  # ragged nested atoms: keep them as labels
        a = np.empty(len(rows), dtype=object)
        a[:] = rows
    if a.dtype == object:  # numbers mixed with NaN from None come back as objects: make them floats
        try:
            a = a.astype(np.float64)
        except (TypeError, ValueError):
            a = a.astype(str)
    return a
