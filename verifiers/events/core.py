"""The event objects the verifier certifies, and candidate lists with their selection counts.

An :class:`Event` is a fixed set of outputs; a :class:`Candidates` list holds many of them (built
lazily) with their counts on the selection draws. Every kind of event is a subclass owned by the
module of its family (:mod:`.real`, :mod:`.finite`, :mod:`.vector`, :mod:`.floats`, :mod:`.shape`)
with its own ``contains`` and ``describe``; ``Event(kind, ...)`` builds the subclass registered for
``kind``, so nothing here knows the kinds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np

from dpharness.verifiers.projection import Projection

__all__ = ["Event", "LabelEvent", "Candidates", "concat", "empty", "event_kinds", "event_class", "to_plain",
           "from_plain"]

#: kind -> the Event subclass that implements it (filled as the family modules define their classes).
_CLASSES: dict[str, type[Event]] = {}


def fmt(x: Any) -> str:
    """A value as event descriptions show it (6 significant digits for floats)."""
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.6g}"
    return repr(x.item() if hasattr(x, "item") else x)


def event_kinds() -> tuple[str, ...]:
    """Every registered event kind, in the order their classes were defined."""
    return tuple(_CLASSES)


def event_class(kind: str) -> type[Event]:
    """The Event subclass of ``kind`` (``ValueError`` listing the kinds otherwise)."""
    cls = _CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"event kind must be one of {', '.join(_CLASSES)}, got {kind!r}")
    return cls


def to_plain(x: Any) -> Any:
    """``x`` as JSON values, losslessly: tuples and arrays as lists, numpy scalars as Python ones,
    non-finite floats as ``{"float": "inf"}`` (``"-inf"``, ``"nan"``: JSON has no such numbers, and a
    bare string would be confused with a string label); a float keeps every bit (``json`` writes the
    shortest repr that reads back to the same double)."""
    if isinstance(x, np.ndarray):
        return [to_plain(v) for v in x.tolist()]
    if isinstance(x, (tuple, list)):
        return [to_plain(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        f = float(x)
        return f if math.isfinite(f) else {"float": "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")}
    return x


def from_plain(x: Any, as_tuple: bool = True) -> Any:
    """The inverse of :func:`to_plain`: ``{"float": ...}`` as floats, lists as tuples (event fields)
    or, with ``as_tuple=False``, as lists (data for an array)."""
    if isinstance(x, list):
        items = [from_plain(v, as_tuple) for v in x]
        return tuple(items) if as_tuple else items
    if isinstance(x, dict) and set(x) == {"float"}:
        return float(x["float"])
    return x


@dataclass(frozen=True, repr=False)
class Event:
    """A fixed set of outputs.

    ``kind`` names the subclass that says what the set is, e.g. ``"le"`` (v <= hi), ``"ge"``
    (v >= lo), ``"interval"``, ``"outside"``, ``"atom"``, ``"nan"`` (:mod:`.real`), ``"set"`` (the
    output is one of ``values``: :mod:`.finite`), ``"pattern"`` (:mod:`.vector`), ``"float"``
    (:mod:`.floats`), ``"shape"`` (:mod:`.shape`); :func:`event_kinds` lists them all.

    What ``v`` is: the output itself for scalar outputs; coordinate ``coord`` of the (flattened)
    row for vector outputs when ``coord >= 0``; the learned score ``projection.score(row)`` when
    ``projection`` is set (:mod:`verifiers.projection`).
    """

    kind: str
    lo: float = -math.inf
    hi: float = math.inf
    values: tuple = ()
    coord: int = -1
    projection: Projection | None = None

    #: The kinds a subclass implements (registered when the subclass is defined).
    kinds: ClassVar[tuple[str, ...]] = ()

    def __new__(cls, kind: Any = None, *args: Any, **kwargs: Any) -> Event:
        # Event("le", ...) is the subclass registered for "le"; no kind (unpickling) keeps cls
        target = _CLASSES.get(kind, cls) if isinstance(kind, str) else cls
        if not issubclass(target, cls):
            raise ValueError(f"{cls.__name__} has kinds {', '.join(cls.kinds)}, got {kind!r}")
        return object.__new__(target)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for k in cls.__dict__.get("kinds", ()):
            if k in _CLASSES and _CLASSES[k].__qualname__ != cls.__qualname__:
                raise ValueError(f"event kind {k!r} is already defined by {_CLASSES[k].__qualname__}")
            _CLASSES[k] = cls

    def __post_init__(self) -> None:
        event_class(self.kind)

    def __repr__(self) -> str:
        # one spelling for every kind, as the plain dataclass had it
        return "Event(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)) + ")"

    def __str__(self) -> str:
        s = self.describe()
        return s if self.projection is None else f"{s}, s = {self.projection}"

    def contains(self, y: Any) -> np.ndarray:
        """Boolean mask: which outputs ``y`` are in the event (sample axis first; rows for vectors)."""
        raise NotImplementedError

    def describe(self) -> str:
        """The set in words and symbols, e.g. ``{y <= 0.5}``."""
        raise NotImplementedError

    def count(self, y: Any) -> int:
        return int(np.count_nonzero(self.contains(y)))

    def to_json(self) -> str:
        """The whole event as one line of JSON (every bound, label and projection weight, nothing
        cut): :meth:`from_json` rebuilds an equal event, so a witness replays from a file."""
        spec = {f.name: to_plain(getattr(self, f.name)) for f in fields(self) if f.name != "projection"}
        if self.projection is not None:
            spec["projection"] = {f.name: to_plain(getattr(self.projection, f.name)) for f in fields(self.projection)}
        return json.dumps(spec, separators=(",", ":"), allow_nan=False)

    @staticmethod
    def from_json(text: str | dict) -> Event:
        """The event :meth:`to_json` wrote (a JSON string or the parsed mapping)."""
        spec = dict(json.loads(text) if isinstance(text, str) else text)
        proj = spec.pop("projection", None)
        kwargs = {k: from_plain(v) for k, v in spec.items()}
        if proj is not None:
            kwargs["projection"] = Projection(**{k: from_plain(v) for k, v in proj.items()})
        kind = kwargs.pop("kind")
        return Event(kind, **kwargs)

    @classmethod
    def at(cls, cand: Candidates, i: int) -> Event:
        """Candidate ``i`` of a block whose events are bounds on a value (``lo``/``hi``)."""
        return cls(str(cand.kinds[i]), lo=float(cand.lo[i]), hi=float(cand.hi[i]), coord=cand.coord,
                   projection=cand.projection)


class LabelEvent(Event):
    """An event given by the labels it holds (``values``), not by bounds on a value."""

    @classmethod
    def at(cls, cand: Candidates, i: int) -> Event:
        return cls(str(cand.kinds[i]), values=cand.sets[i], coord=cand.coord)


def _row_keys(*arrays: np.ndarray) -> list[np.ndarray] | None:
    """One int64 key per row, the same encoding for every array given (mixed-radix digits of the
    integer coordinates), or None when the rows are not small integers (then rows are compared
    through ``np.unique(axis=0)``, which is several times slower)."""
    if any(a.dtype.kind not in "biuf" for a in arrays):
        return None
    both = np.concatenate([a.reshape(a.shape[0], -1) for a in arrays])
    if both.size == 0:
        return None
    if both.dtype.kind == "f":
        if not np.all(np.isfinite(both)) or not np.array_equal(both, np.round(both)):
            return None
    lo = both.min(axis=0).astype(np.int64)
    span = both.max(axis=0).astype(np.int64) - lo + 1
    if float(np.sum(np.log2(span.astype(np.float64)))) > 62:
        return None
    weights = np.concatenate([[1], np.cumprod(span[:-1])]).astype(np.int64)
    return [(a.reshape(a.shape[0], -1).astype(np.int64) - lo) @ weights for a in arrays]


def _rows_in(rows: np.ndarray, values: tuple) -> np.ndarray:
    """Which rows (2-D array) equal one of ``values`` (row tuples), vectorised."""
    if not values:
        return np.zeros(rows.shape[0], dtype=bool)
    if rows.dtype == object:
        vs = set(values)
        return np.fromiter((tuple(r) in vs for r in rows.tolist()), dtype=bool, count=rows.shape[0])
    vals = np.asarray(values, dtype=rows.dtype).reshape(len(values), -1)
    if vals.shape[1] != rows.shape[1]:
        return np.zeros(rows.shape[0], dtype=bool)
    keys = _row_keys(vals, rows)
    if keys is not None:
        return np.isin(keys[1], keys[0])
    _, inv = np.unique(np.concatenate([vals, rows]), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    return np.isin(inv[len(vals):], inv[: len(vals)])


@dataclass(frozen=True, eq=False)
class Candidates:
    """Candidate events with their selection counts under D (``c1``) and D' (``c2``).

    Event ``i`` is produced lazily by :meth:`event` (there can be thousands) from its kind
    (``kinds[i]``, an event kind name) and the block's arrays. A block of candidates may be about
    one coordinate of vector outputs (``coord``) or about a learned score (``projection``);
    :func:`concat` joins blocks (``parts``)."""

    c1: np.ndarray
    c2: np.ndarray
    kinds: np.ndarray  # the event kind of each candidate
    lo: np.ndarray
    hi: np.ndarray
    sets: tuple = ()  # for label events: sets[i] is a tuple of labels
    coord: int = -1
    projection: Projection | None = None
    parts: tuple = ()  # ((offset, Candidates), ...) when this is a concatenation

    def __len__(self) -> int:
        return int(self.c1.size)

    def event(self, i: int) -> Event:
        if self.parts:
            offsets = [o for o, _ in self.parts]
            j = int(np.searchsorted(offsets, i, side="right")) - 1
            off, part = self.parts[j]
            return part.event(i - off)
        return event_class(str(self.kinds[i])).at(self, i)


def labelled(c1: Any, c2: Any, kind: str, sets: tuple, coord: int = -1) -> Candidates:
    """A block of label events of one kind: candidate i holds the labels ``sets[i]``."""
    c1 = np.asarray(c1, dtype=np.int64)
    nan = np.full(c1.size, np.nan)
    return Candidates(c1=c1, c2=np.asarray(c2, dtype=np.int64), kinds=np.full(c1.size, kind), lo=nan, hi=nan,
                      sets=tuple(sets), coord=coord)


def empty() -> Candidates:
    """A candidate list with no candidates."""
    z = np.zeros(0, dtype=np.int64)
    return Candidates(c1=z, c2=z, kinds=np.zeros(0, dtype=str), lo=np.zeros(0), hi=np.zeros(0))


def concat(blocks: list[Candidates]) -> Candidates:
    """One candidate list made of several blocks (event ``i`` comes from the block holding it)."""
    blocks = [b for b in blocks if len(b)]
    if not blocks:
        return empty()
    if len(blocks) == 1:
        return blocks[0]
    offsets = np.cumsum([0] + [len(b) for b in blocks[:-1]])
    c1 = np.concatenate([b.c1 for b in blocks]).astype(np.int64)
    c2 = np.concatenate([b.c2 for b in blocks]).astype(np.int64)
    nan = np.full(c1.size, np.nan)
    return Candidates(c1=c1, c2=c2, kinds=np.concatenate([b.kinds for b in blocks]), lo=nan, hi=nan,
                      parts=tuple((int(o), b) for o, b in zip(offsets, blocks)))
