"""Neighbouring dataset pairs: :class:`Pair`, the generated :class:`PairList`, and the exact key of
a dataset that repeats and swaps of a pair are recognised by."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from dpharness.verifiers.relations.records import is_frame

__all__ = ["Pair", "PairList", "data_key", "dedupe", "merge_swaps"]


@dataclass(frozen=True, eq=False)
class Pair:
    d1: Any
    d2: Any
    label: str = ""


class PairList(list):
    """The generated pairs, with ``skipped``: the pairs dropped because the mechanism raised on them."""

    skipped: list[dict]


def data_key(d: Any) -> tuple:
    """A dataset's exact key: every value in full (bytes, or the repr of an object array), its dtype,
    shape and DataFrame columns."""
    # every value in full: numpy's and pandas' reprs elide the middle of large data, which would
    # make two datasets differing there look like one
    cols = tuple(map(repr, d.columns)) if is_frame(d) else None
    a = d.to_numpy() if is_frame(d) else np.asarray(d)
    return (a.tobytes() if a.dtype != object else repr(a.tolist()), a.dtype.str, a.shape, cols)


def dedupe(pairs: Iterable[Pair]) -> list[Pair]:
    """The pairs with every later repeat of a pair removed."""
    seen: set = set()
    out = []
    for p in pairs:
        key = (data_key(p.d1), data_key(p.d2))
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
        k1, k2 = data_key(p.d1), data_key(p.d2)
        if (k1, k2) in seen or (k2, k1) in seen:
            continue
        seen.add((k1, k2))
        out.append(p)
    return out, len(items) - len(out)
