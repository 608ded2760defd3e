"""The given ``pairs:`` of an audit: datasets checked value by value (no mechanism needed).

A dataset of given ``pairs`` is a number (value/bit data), one label (local data), a list of records or scores (numbers,
labels; ``.nan`` is a record too and NaN records compare equal, ``-inf`` an excluded score, ``+inf``
is refused) or a list of rows (one record per inner list, all of one length). Whether a pair is a
pair of neighbours of the mechanism's declared relation is checked by :func:`bench.audits.build.check`.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from dpharness.bench.config import Ctx

__all__ = ["parse_pairs", "check_dataset"]


def _check_value(c: Ctx, v: Any, path: str) -> Any:
    """One record value or score: a number (finite, NaN -- a missing value; NaN records compare
    equal --, or -inf for an excluded score), a label string or a boolean (a label too: e.g. the
    input of a randomized response)."""
    if isinstance(v, bool):
        return v
    if v is None or isinstance(v, (list, dict)):
        c.error(path, f"must be a number (or a label: text or true/false), got {v!r}")
    if isinstance(v, numbers.Real):
        f = float(v)
        if f == math.inf:
            c.error(path, "must not be +inf (only -inf, an excluded score, is accepted)")
        return v
    if isinstance(v, str):
        try:  # PyYAML reads 1e-3 as text: numeric text is a number here too
            f = float(v)
        except ValueError:
            return v
        return _check_value(c, f, path)
    c.error(path, f"must be a number (or a label: text or true/false), got {v!r}")


def check_dataset(c: Ctx, d: Any, path: str) -> Any:
    """A dataset: a number (value/bit data), one label (text or true/false: the input of a local
    mechanism, e.g. a randomized response), a list of records / scores, or a list of rows (one
    record per inner list, all of one non-zero length)."""
    if isinstance(d, list):
        rows = [isinstance(v, list) for v in d]
        if not any(rows):
            return [_check_value(c, v, f"{path}[{i}]") for i, v in enumerate(d)]
        if not all(rows):
            i = rows.index(False)
            c.error(f"{path}[{i}]", f"must be a row (a list) like the dataset's other records, got {d[i]!r}; a "
                    "dataset is a list of values or a list of rows of one length")
        width = len(d[0])
        for i, row in enumerate(d):
            if not row:
                c.error(f"{path}[{i}]", "must not be an empty row (a record has at least one value)")
            if len(row) != width:
                c.error(f"{path}[{i}]", f"has {len(row)} values but {path}[0] has {width} (the rows of a dataset "
                        "have one length)")
        return [[_check_value(c, v, f"{path}[{i}][{j}]") for j, v in enumerate(row)] for i, row in enumerate(d)]
    return _check_value(c, d, path)


def parse_pairs(c: Ctx, raw: Any) -> Any:
    if raw in ("witness", "search", "suite"):
        return raw
    if not isinstance(raw, list) or not raw:
        c.error("pairs", f"must be witness, search, suite or a non-empty list of [d1, d2] pairs, got {raw!r}")
    out = []
    for i, p in enumerate(raw):
        if not isinstance(p, list) or len(p) != 2:
            c.error(f"pairs[{i}]", f"must be a pair [d1, d2], got {p!r}")
        out.append((check_dataset(c, p[0], f"pairs[{i}][0]"), check_dataset(c, p[1], f"pairs[{i}][1]")))
    return tuple(out)

