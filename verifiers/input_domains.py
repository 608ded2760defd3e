"""Input domains: the set of values a mechanism's input may take (docs/auditing.md,
"Records as rows, local DP and input domains").

An input domain serves two purposes:

* legality -- under ``neighbours="local"`` (local DP) any two inputs *of the domain* are
  neighbours, so the domain is what the claim quantifies over; under every other relation a
  declared domain additionally requires both datasets to lie in it;
* generation -- the pair generators (:mod:`verifiers.relations`) only build data inside it.

What an element is depends on the relation: for the record relations (``add_remove``,
``replace_one``, ``privacy_unit``) it is one *record* (a scalar, or a row of a 2-D array /
DataFrame) and every record must lie in the domain; for every other relation (``local``,
``value``, ``bit``, ``one_differ``, scores) it is the whole input.

Domains are small frozen (hashable) dataclasses, so they can sit in a
:class:`mechanisms.PrivacyClaim`:

``FiniteValues(values)``  categories, e.g. ``("a", "b", "c")`` (rows: tuples of one length);
``BitVectors(length)``    1-D 0/1 vectors of one length;
``Interval(lo, hi)``      reals in the closed interval [lo, hi] (every cell, for row records).

:func:`parse_domain` reads friendly specs: a list/tuple of values, ``{"values": [...]}``,
``{"bits": 8}``, ``{"interval": [0, 1]}``, or a domain object.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterator

import numpy as np

from dpharness.mechanisms.base import ParamError
from dpharness.verifiers.relations.records import value_key

__all__ = ["InputDomain", "FiniteValues", "BitVectors", "Interval", "parse_domain", "DOMAIN_SPECS",
           "MAX_LOCAL_VALUES"]

#: What :func:`parse_domain` accepts, for error messages.
DOMAIN_SPECS = ("a list or tuple of values", "{'values': [...]}", "{'bits': n}", "{'interval': [lo, hi]}",
                "FiniteValues(...)", "BitVectors(n)", "Interval(lo, hi)")

#: Finite domains up to this many values get every pair of distinct values in the ``local``
#: family; larger ones a spread subset of this many values (all their pairs: at most 190).
MAX_LOCAL_VALUES = 20


@dataclass(frozen=True)
class InputDomain:
    """Base class: ``contains(x)``, ``contains_each(records)``, representatives and local pairs."""

    def contains(self, x: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def contains_each(self, records: np.ndarray) -> np.ndarray:
        """Membership of every record of ``records`` (1-D: scalar records; 2-D: one per row)."""
        a = np.asarray(records)
        if a.ndim == 0:
            return np.array([self.contains(a)])
        return np.fromiter((self.contains(r) for r in a), dtype=bool, count=a.shape[0])

    def representatives(self) -> list[tuple[Any, str]]:  # pragma: no cover - abstract
        """A few labelled elements that matter for auditing (extremes, centre, patterns)."""
        raise NotImplementedError

    def local_pairs(self) -> list[tuple[Any, Any, str]]:  # pragma: no cover - abstract
        """Labelled pairs of distinct elements for the ``local`` generator family."""
        raise NotImplementedError


@dataclass(frozen=True)
class FiniteValues(InputDomain):
    """A finite set of values (categories), in the order given; rows are tuples of one length."""

    values: tuple

    def __post_init__(self) -> None:
        vals = self.values
        if isinstance(vals, (str, bytes)) or not hasattr(vals, "__iter__"):
            raise TypeError(f"FiniteValues needs a list or tuple of values, got {type(vals).__name__} {vals!r}")
        keys = [value_key(v) for v in vals]
        if not keys:
            raise ValueError("an input domain of values must not be empty: give at least one value")
        try:
            seen: dict = {}
            for i, k in enumerate(keys):
                if k in seen:
                    raise ValueError(f"input domain values must be distinct; {vals[i]!r} repeats (positions "
                                     f"{seen[k]} and {i})")
                seen[k] = i
        except TypeError:
            raise TypeError(f"input domain values must be hashable (numbers, strings, tuples), got {vals!r}") from None
        object.__setattr__(self, "values", tuple(keys))

    def __str__(self) -> str:
        shown = ", ".join(map(repr, self.values[:8])) + (", ..." if len(self.values) > 8 else "")
        return f"{{{shown}}}"

    def contains(self, x: Any) -> bool:
        try:
            return value_key(x) in self._set
        except TypeError:  # unhashable input
            return False

    @cached_property
    def _set(self) -> frozenset:
        return frozenset(self.values)

    def contains_each(self, records: np.ndarray) -> np.ndarray:
        a = np.asarray(records)
        if a.ndim == 0:
            return np.array([self.contains(a)])
        s = self._set
        rows = a.tolist()
        return np.fromiter((value_key(r) in s for r in rows), dtype=bool, count=len(rows))

    def ordered(self) -> list:
        """The values sorted when they are all real numbers (so that the first and last are the
        extremes), else in the order given."""
        v = list(self.values)
        if all(isinstance(x, numbers.Real) and not isinstance(x, bool) and x == x for x in v):
            return sorted(v)
        return v

    def spread(self, limit: int = MAX_LOCAL_VALUES) -> list:
        """At most ``limit`` values spread evenly over :meth:`ordered` (first and last included)."""
        v = self.ordered()
        if len(v) <= limit:
            return v
        idx = np.unique(np.round(np.linspace(0, len(v) - 1, limit)).astype(int))
        return [v[i] for i in idx]

    def representatives(self) -> list[tuple[Any, str]]:
        v = self.ordered()
        picks = {0: "first value", len(v) - 1: "last value", (len(v) - 1) // 2: "middle value"}
        return [(v[i], lab) for i, lab in picks.items()]

    def local_pairs(self) -> list[tuple[Any, Any, str]]:
        v = self.spread()
        return [(v[i], v[j], f"{v[i]!r} vs {v[j]!r}") for i in range(len(v)) for j in range(i + 1, len(v))]


@dataclass(frozen=True)
class BitVectors(InputDomain):
    """1-D vectors of ``length`` entries, each 0 or 1 (e.g. a user's item set in local DP)."""

    length: int

    def __post_init__(self) -> None:
        n = self.length
        if isinstance(n, bool) or not isinstance(n, (numbers.Integral, np.integer)) or int(n) < 1:
            raise ValueError(f"bit vectors need a length, an integer >= 1, got {n!r}")
        object.__setattr__(self, "length", int(n))

    def __str__(self) -> str:
        return f"{{0,1}}^{self.length}"

    def contains(self, x: Any) -> bool:
        try:
            a = np.asarray(x)
        except (TypeError, ValueError):
            return False
        if a.shape != (self.length,) or a.dtype.kind not in "biuf":
            return False
        return bool(np.all((a == 0) | (a == 1)))

    def contains_each(self, records: np.ndarray) -> np.ndarray:
        a = np.asarray(records)
        if a.ndim != 2 or a.shape[1] != self.length or a.dtype.kind not in "biuf":
            if a.ndim == 1 and self.length == 1 and a.dtype.kind in "biuf":
                return (a == 0) | (a == 1)
            return np.zeros(a.shape[0] if a.ndim else 1, dtype=bool)
        return np.all((a == 0) | (a == 1), axis=1)

    def _patterns(self) -> Iterator[tuple[np.ndarray, str]]:
        n = self.length
        z, o = np.zeros(n), np.ones(n)
        yield z, "all zeros"
        yield o, "all ones"
        for i, lab in ((0, "first"), (n - 1, "last"), (n // 2, "middle")):
            e = z.copy()
            e[i] = 1.0
            yield e, f"one-hot at the {lab} bit"
        if n >= 2:
            yield (np.arange(n) < n // 2).astype(float), "first half ones"
            yield (np.arange(n) >= n // 2).astype(float), "second half ones"
            yield (np.arange(n) % 2 == 0).astype(float), "alternating from one"

    def representatives(self) -> list[tuple[Any, str]]:
        return _unique_arrays(list(self._patterns()))

    def local_pairs(self) -> list[tuple[Any, Any, str]]:
        n = self.length
        z, o = np.zeros(n), np.ones(n)
        out: list[tuple[Any, Any, str]] = [(z, o, "all zeros vs all ones")]
        for i, lab in ((0, "first"), (n - 1, "last"), (n // 2, "middle")):
            e = z.copy()
            e[i] = 1.0
            out.append((z, e, f"all zeros vs one-hot at the {lab} bit"))  # also a single-bit flip of zeros
            f = o.copy()
            f[i] = 0.0
            out.append((o, f, f"all ones vs the {lab} bit flipped"))
        if n >= 2:
            e0, e1 = z.copy(), z.copy()
            e0[0], e1[n - 1] = 1.0, 1.0
            out.append((e0, e1, "one-hot first vs one-hot last"))
            h = (np.arange(n) < n // 2).astype(float)
            out.append((h, 1.0 - h, "first half ones vs second half ones"))
            g = h.copy()
            g[0] = 0.0
            out.append((h, g, "first half ones vs its first bit flipped"))
            alt = (np.arange(n) % 2 == 0).astype(float)
            out.append((alt, 1.0 - alt, "alternating vs its complement"))
        return _unique_pairs(out)


@dataclass(frozen=True)
class Interval(InputDomain):
    """Reals in the closed interval [lo, hi] (finite, lo < hi); for row records, every cell."""

    lo: float
    hi: float

    def __post_init__(self) -> None:
        for v, nm in ((self.lo, "lo"), (self.hi, "hi")):
            if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.number)) or not math.isfinite(float(v)):
                raise ValueError(f"interval bound {nm} must be a finite number, got {v!r}")
        if float(self.lo) >= float(self.hi):
            raise ValueError(f"an interval needs lo < hi, got [{self.lo!r}, {self.hi!r}]")
        object.__setattr__(self, "lo", float(self.lo))
        object.__setattr__(self, "hi", float(self.hi))

    def __str__(self) -> str:
        return f"[{self.lo:g}, {self.hi:g}]"

    def contains(self, x: Any) -> bool:
        try:
            a = np.asarray(x)
        except (TypeError, ValueError):
            return False
        if a.size != 1 or a.dtype.kind not in "biuf":
            return False
        v = float(a.reshape(()))
        return self.lo <= v <= self.hi  # False for NaN

    def contains_each(self, records: np.ndarray) -> np.ndarray:
        a = np.asarray(records)
        if a.dtype.kind not in "biuf":
            return np.zeros(a.shape[0] if a.ndim else 1, dtype=bool)
        inside = (a >= self.lo) & (a <= self.hi)
        if a.ndim == 0:
            return inside.reshape(1)
        return inside if a.ndim == 1 else inside.all(axis=tuple(range(1, a.ndim)))

    def points(self) -> list[tuple[float, str]]:
        lo, hi = self.lo, self.hi
        w = hi - lo
        return [(lo, "lower end"), (hi, "upper end"), (lo + w / 2, "centre"), (lo + w / 4, "first quarter"),
                (lo + 3 * w / 4, "third quarter")]

    def representatives(self) -> list[tuple[Any, str]]:
        return self.points()

    def local_pairs(self) -> list[tuple[Any, Any, str]]:
        (lo, _), (hi, _), (m, _), (q1, _), (q3, _) = self.points()
        return [(lo, hi, "lower end vs upper end"), (lo, m, "lower end vs centre"), (m, hi, "centre vs upper end"),
                (q1, q3, "first vs third quarter"), (lo, q1, "lower end vs first quarter"),
                (q3, hi, "third quarter vs upper end")]


def _unique_arrays(items: list[tuple[np.ndarray, str]]) -> list[tuple[np.ndarray, str]]:
    seen: set = set()
    out = []
    for a, lab in items:
        k = a.tobytes()
        if k not in seen:
            seen.add(k)
            out.append((a, lab))
    return out


def _unique_pairs(items: list[tuple[Any, Any, str]]) -> list[tuple[Any, Any, str]]:
    seen: set = set()
    out = []
    for a, b, lab in items:
        k = (np.asarray(a).tobytes(), np.asarray(b).tobytes())
        if k in seen or k[0] == k[1]:
            continue
        seen.add(k)
        out.append((a, b, lab))
    return out


def parse_domain(spec: Any, name: str = "input_domain") -> InputDomain | None:
    """An :class:`InputDomain` from ``spec`` (None stays None).

    Accepts a domain object, a list/tuple/1-D array of values (:class:`FiniteValues`),
    ``{"values": [...]}``, ``{"bits": n}`` (:class:`BitVectors`) or ``{"interval": [lo, hi]}``
    (:class:`Interval`); anything else raises ``ValueError`` listing these forms.
    """
    if spec is None or isinstance(spec, InputDomain):
        return spec
    accepted = "; ".join(DOMAIN_SPECS)
    if isinstance(spec, (list, tuple, np.ndarray)):
        return FiniteValues(tuple(spec.tolist() if isinstance(spec, np.ndarray) else spec))
    if isinstance(spec, dict):
        if len(spec) != 1:
            raise ParamError(name, f"{name} as a dict has exactly one key ('values', 'bits' or 'interval'), got keys "
                             f"{sorted(map(str, spec))}; accepted: {accepted}")
        (key, val), = spec.items()
        if key == "values":
            if isinstance(val, (str, bytes)) or not isinstance(val, (list, tuple, np.ndarray)):
                raise ValueError(f"{name}['values'] must be a list of values, got {val!r}")
            return FiniteValues(tuple(val.tolist() if isinstance(val, np.ndarray) else val))
        if key == "bits":
            return BitVectors(val)
        if key == "interval":
            if not isinstance(val, (list, tuple, np.ndarray)) or len(val) != 2:
                raise ValueError(f"{name}['interval'] must be [lo, hi], got {val!r}")
            return Interval(val[0], val[1])
        raise ParamError(name, f"{name} has an unknown key {key!r}; accepted: {accepted}")
    raise ParamError(name, f"{name} must be one of: {accepted}; got {type(spec).__name__} {spec!r}")
