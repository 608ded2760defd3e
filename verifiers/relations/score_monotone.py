"""``score_monotone``: as ``score_linf``, with every entry moving in the same direction (counting
queries under add/remove); the ``scores`` generator moves them so."""

from __future__ import annotations

from dpharness.verifiers.relations.score_linf import ScoreLinf


class ScoreMonotone(ScoreLinf):
    name = "score_monotone"
    metric = "linf_monotone_distance"
    default_for = ("linf_monotone_distance",)
    finite_under = ("l1_distance", "l2_distance", "linf_distance", "linf_monotone_distance", "discrete_distance")
    monotone = True


RELATION = ScoreMonotone()
