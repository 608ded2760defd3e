"""Events on whole vector rows: "no answer" (NaN) patterns and thresholds of a learned score. The
family ``vector``; per-coordinate events of rows belong to ``real`` (thresholds, atoms, NaN),
``intervals`` and ``finite`` (label rows and each coordinate's values), and :func:`vector_candidates`
joins them all as the audit does."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from dpharness.verifiers.projection import fit_projection
from dpharness.verifiers.events.core import Candidates, LabelEvent, _rows_in
from dpharness.verifiers.events.families import Draws, Family, build_candidates, event_families, register
from dpharness.verifiers.events.finite import ROW_LABEL_CAP, row_candidates
from dpharness.verifiers.events.real import VECTOR_INTERVAL_WIDTH, real_candidates

__all__ = ["vector_candidates", "VECTOR_INTERVAL_WIDTH", "ROW_LABEL_CAP", "AnswerPattern", "VECTOR"]


class AnswerPattern(LabelEvent):
    """The row's NaN pattern is one of ``values`` (tuples of 0/1, 1 = NaN: "no answer")."""

    kinds = ("pattern",)

    def contains(self, y: Any) -> np.ndarray:
        y = np.asarray(y)
        pat = np.isnan(y.reshape(y.shape[0], -1).astype(np.float64)).astype(np.int8)
        return _rows_in(pat, self.values)

    def describe(self) -> str:
        pats = ", ".join("".join("-" if b else "x" for b in p) for p in self.values[:4])
        more = f", ... ({len(self.values)} patterns)" if len(self.values) > 4 else ""
        return f"{{answer pattern of y in {{{pats}{more}}} (x answered, - no answer)}}"


class Vector(Family):
    """Rows only: the answer pattern (which coordinates are NaN) as labels with their unions (real
    rows with a NaN), and thresholds of the learned score :func:`verifiers.projection.fit_projection`
    (numeric rows of two or more coordinates)."""

    name = "vector"
    order = 30
    laws = ("real", "finite")
    presets = ("all", "thresholds")

    def candidates(self, d: Draws) -> list[Candidates]:
        if not d.rows:
            return []
        y1, y2 = d.flat
        out: list[Candidates] = []
        if not d.finite:
            p1 = np.isnan(y1.astype(np.float64)).astype(np.int8)
            p2 = np.isnan(y2.astype(np.float64)).astype(np.int8)
            if p1.any() or p2.any():
                out.append(row_candidates(p1, p2, "pattern"))
        if d.numeric and d.width > 1:
            proj = fit_projection(y1, y2, "finite" if d.finite else "real")
            if proj is not None:
                s1, s2 = proj.score(y1), proj.score(y2)
                out.append(replace(real_candidates(s1, s2, intervals=False), projection=proj))
        return out


VECTOR = register(Vector())


def vector_candidates(y1: np.ndarray, y2: np.ndarray, finite: bool, events: Any = "all") -> Candidates:
    """Candidate events for vector outputs (rows of ``y1``/``y2``, shape ``(n, d)``) of the families
    ``events`` (default: "all"; opt-in families such as floats only when named).

    Real rows: per-coordinate thresholds, atoms (intervals too for rows of at most
    :data:`VECTOR_INTERVAL_WIDTH` coordinates) and "no answer" (NaN) atoms; the row's answer
    pattern (which coordinates are NaN) as labels with their unions; and thresholds of the learned
    score :func:`verifiers.projection.fit_projection`. Label rows: every row as a label (with
    unions), every coordinate's values, and the learned score on one-hot coordinates — which is
    what replaces label counting when the label space is huge (RAPPOR's bit vectors).
    """
    y1 = np.asarray(y1).reshape(len(y1), -1)
    y2 = np.asarray(y2).reshape(len(y2), -1)
    return build_candidates(y1, y2, finite, event_families(events))
