"""``score_monotone``: as ``score_linf``, with every entry moving in the same direction (counting
queries under add/remove); the ``scores`` generator moves them so."""

from __future__ import annotations

from dpharness.verifiers.relations.score_linf import ScoreLinf


class ScoreMonotone(ScoreLinf):
    name = "score_monotone"
    metric = "linf_monotone_distance"
    monotone = True


RELATION = ScoreMonotone()
