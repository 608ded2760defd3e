"""Events on vector outputs (one row per draw): per-coordinate thresholds, atoms and intervals,
"no answer" (NaN) atoms and answer patterns, label rows, and thresholds of a learned score."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dpharness.verifiers.projection import fit_projection
from dpharness.verifiers.events.core import _K, Candidates, concat
from dpharness.verifiers.events.finite import finite_candidates, row_candidates
from dpharness.verifiers.events.real import real_candidates, real_with_nan

__all__ = ["vector_candidates", "VECTOR_INTERVAL_WIDTH", "ROW_LABEL_CAP"]

#: Rows at most this wide also get interval events per coordinate (wider rows: thresholds, atoms).
VECTOR_INTERVAL_WIDTH = 4
#: Label rows are counted as labels only while the selection draws hold at most this many
#: distinct rows: beyond it (20-bit RAPPOR reports: up to 2^20 labels) single labels are seen a
#: handful of times each, their thousands of candidates only dilute the selection, and the
#: learned score on the row's coordinates takes over.
ROW_LABEL_CAP = 2048


def _coordinate_candidates(y1: np.ndarray, y2: np.ndarray, j: int, intervals: bool) -> list[Candidates]:
    """Thresholds/atoms (and intervals) on coordinate j of real rows, NaN ("no answer") apart."""
    return real_with_nan(y1[:, j], y2[:, j], intervals, coord=j)


def vector_candidates(y1: np.ndarray, y2: np.ndarray, finite: bool, events: str = "all") -> Candidates:
    """Candidate events for vector outputs (rows of ``y1``/``y2``, shape ``(n, d)``).

    Real rows: per-coordinate thresholds, atoms (intervals too for rows of at most
    :data:`VECTOR_INTERVAL_WIDTH` coordinates) and "no answer" (NaN) atoms; the row's answer
    pattern (which coordinates are NaN) as labels with their unions; and thresholds of the learned
    score :func:`verifiers.projection.fit_projection`. Label rows: every row as a label (with
    unions), every coordinate's values, and the learned score on one-hot coordinates — which is
    what replaces label counting when the label space is huge (RAPPOR's bit vectors).
    """
    y1 = np.asarray(y1).reshape(len(y1), -1)
    y2 = np.asarray(y2).reshape(len(y2), -1)
    d = y1.shape[1]
    blocks: list[Candidates] = []
    numeric = y1.dtype.kind in "biuf" and y2.dtype.kind in "biuf"
    if finite:
        rows = row_candidates(y1, y2, "set", cap=ROW_LABEL_CAP if numeric else None)
        if rows is not None:
            blocks.append(rows)
        if d > 1 and numeric:
            for j in range(d):
                part = finite_candidates(y1[:, j], y2[:, j])
                blocks.append(_single_values(part, j))
    else:
        intervals = events == "all" and d <= VECTOR_INTERVAL_WIDTH
        for j in range(d):
            blocks.extend(_coordinate_candidates(y1, y2, j, intervals))
        p1 = np.isnan(y1.astype(np.float64)).astype(np.int8)
        p2 = np.isnan(y2.astype(np.float64)).astype(np.int8)
        if p1.any() or p2.any():
            blocks.append(row_candidates(p1, p2, "pattern"))
    if numeric and d > 1:
        proj = fit_projection(y1, y2, "finite" if finite else "real")
        if proj is not None:
            s1, s2 = proj.score(y1), proj.score(y2)
            blocks.append(replace(real_candidates(s1, s2, intervals=False), projection=proj))
    return concat(blocks)


def _single_values(c: Candidates, coord: int) -> Candidates:
    """The single-value events of a finite candidate list, for one coordinate of label rows
    (stored as atoms on that coordinate, so the event reads the coordinate, not the row)."""
    k = sum(1 for st in c.sets if len(st) == 1)
    vals = np.array([float(st[0]) for st in c.sets[:k]]) if k else np.zeros(0)
    return Candidates(c1=c.c1[:k], c2=c.c2[:k], kinds=np.full(k, _K["atom"]), lo=vals, hi=vals, coord=coord)

