"""What a pair search shares across its candidate pairs: one draw stream per distinct dataset, and
groups of pairs that move their data the same way, ranked on their pooled draws.

Why (docs/auditing.md, "How the search spends its selection draws"):

* **Shared draws.** A mechanism's output law is a function of its input only, so draws under a
  dataset serve every candidate pair that contains that dataset. Generated pairs share their bases
  (nine moves of one score vector all start from it), which then costs one stream instead of nine.
* **Pooled ranking.** When a pair's effect is small, a few thousand draws per pair cannot tell it
  from the winner's curse of the pairs without one. Pairs that apply the same *move* (the sign
  pattern of d2 - d1: "first half down, rest up", "all up", ...) to different bases tend to share
  their leak; their draws pooled are draws of the mixture pair (the bases' laws averaged, and the
  moved bases' laws averaged). By joint convexity the mixture's privacy loss on any event is at
  most the best pair's of the group, so a group's pooled score is a conservative estimate of its
  best member's, from as many draws as the group has pairs: the first rounds rank groups, and only
  then pairs within the surviving groups. Every decision is made on selection draws, so the
  certified bound keeps its level whatever is pooled.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from dpharness.verifiers.relations.pairs import data_key

__all__ = ["dataset_index", "move_groups"]


def dataset_index(pairs: Sequence[Any]) -> tuple[list[Any], list[tuple[int, int]]]:
    """The distinct datasets of ``pairs`` (first occurrence order) and each pair's two indices."""
    index: dict[tuple, int] = {}
    data: list[Any] = []
    of: list[tuple[int, int]] = []
    for p in pairs:
        ij = []
        for d in (p.d1, p.d2):
            k = data_key(d)
            if k not in index:
                index[k] = len(data)
                data.append(d)
            ij.append(index[k])
        of.append((ij[0], ij[1]))
    return data, of


def _move(p: Any) -> tuple | None:
    """The sign pattern of ``d2 - d1`` for numeric arrays of one shape with two or more entries."""
    try:
        a = np.asarray(p.d1)
        b = np.asarray(p.d2)
    except (TypeError, ValueError):  # ragged or exotic data: no move to compare
        return None
    if a.shape != b.shape or a.size < 2 or a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
        return None
    with np.errstate(invalid="ignore"):
        diff = b.astype(np.float64) - a.astype(np.float64)
    if not np.all(np.isfinite(diff) | (np.isneginf(a) & np.isneginf(b))):
        return None
    sign = np.sign(np.nan_to_num(diff, nan=0.0)).astype(np.int8)
    return (a.shape, sign.tobytes())


def move_groups(pairs: Sequence[Any]) -> list[int]:
    """A group id per pair: pairs a generator labelled ``"<base>; <move>"`` share one per move (the
    same move on vectors of different lengths too); other pairs of numeric vectors that move by the
    same sign pattern share one; every other pair is a group of its own."""
    ids: dict[tuple, int] = {}
    out = []
    for p in pairs:
        label = str(getattr(p, "label", "") or "")
        mv = _move(p)
        if "; " in label and mv is not None:
            key: tuple = ("named", label.rsplit("; ", 1)[1])
        else:
            key = ("move", mv) if mv is not None else ("pair", len(out))
        out.append(ids.setdefault(key, len(ids)))
    return out

