"""The search's final event: its *type* chosen on a held-out half of the selection draws.

Ranking pairs needs every selection draw, and every candidate event's score is computed on the
draws that built it. For most types (a threshold of the output, of a learned score, an interval)
that costs little, but a union of outputs sorted by their ratio in those draws is scored on the very
draws that sorted it, and wins the selection on luck (docs/auditing.md, "How the search spends its
selection draws"). :func:`held_out_choices` therefore scores each type's best event on a half of
the draws it was not built from, keeps the type that does best there, and chooses that type's
event on all the selection draws. Every step uses selection draws only, so the certification
keeps its level.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpharness.verifiers.events import Candidates
from dpharness.verifiers.statistical.batch import (Choice, _candidates, _choose, best_choices, choose_with_real,
                                                   selection_score)

__all__ = ["held_out_choices", "HOLDOUT_MIN"]

#: Selection draws per dataset below which the event type is not chosen on a held-out half.
HOLDOUT_MIN = 2000


def _types(cand: Candidates) -> np.ndarray:
    """Each candidate's type: its event kind, marked when it thresholds a learned score."""
    parts = cand.parts or ((0, cand),)
    lab = np.empty(len(cand), dtype=object)
    for off, part in parts:
        tag = "/score" if part.projection is not None else ""
        lab[off:off + len(part)] = [str(k) + tag for k in part.kinds]
    return lab


def held_out_choices(y1: np.ndarray, y2: np.ndarray, *, finite: bool, n_cert: int, alpha: float,
                     delta: float = 0.0, events: Any = "all", epsilon: float | None = None,
                     context: Any = None) -> tuple[Choice, Choice | None]:
    """:func:`best_choices` with the event's *type* chosen on a held-out half: each type's best
    event on the first half of the selection draws is scored on the second, the type scoring best
    there wins, and the event is then chosen among that type's candidates on all the selection
    draws. Types whose events are built from the draws that score them (unions of outputs sorted
    by their ratio) otherwise win on their selection score and certify less than a smoother type
    (a threshold of the learned score) would."""
    n = int(np.shape(y1)[0])
    if n < 2 * HOLDOUT_MIN:
        return best_choices(y1, y2, finite=finite, n_cert=n_cert, alpha=alpha, delta=delta, events=events,
                            epsilon=epsilon, context=context)
    h = n // 2
    na, ca, ga = _candidates(y1[:h], y2[:h], finite, events, None, context)
    la = _types(ca)
    best: tuple[float, str] | None = None
    for t in dict.fromkeys(la):
        ch = _choose(ca, la == t, n_sel=na, n_cert=n_cert, alpha=alpha, delta=delta, epsilon=epsilon, gamma=ga)
        if not np.isfinite(ch.score):
            continue
        k1 = int(np.count_nonzero(ch.event.contains(y1[h:])))
        k2 = int(np.count_nonzero(ch.event.contains(y2[h:])))
        num, den = (k1, k2) if ch.direction == "d1>d2" else (k2, k1)
        s = float(selection_score(np.array([num]), np.array([den]), n - h, n_cert, alpha, delta)[0])
        if best is None or s > best[0]:
            best = (s, t)
    n_sel, cand, gamma = _candidates(y1, y2, finite, events, None, context)
    mask = _types(cand) == best[1] if best is not None else None
    if mask is not None and not mask.any():  # the type found on the half has no candidate on the whole
        mask = None
    return choose_with_real(cand, mask, n_sel=n_sel, n_cert=n_cert, alpha=alpha, delta=delta, epsilon=epsilon,
                            gamma=gamma)
