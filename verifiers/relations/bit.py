"""``bit``: scalars in {0, 1} (randomized response); the ``bits`` generator."""

from __future__ import annotations

from typing import Any

from dpharness.verifiers.relations.base import Relation
from dpharness.verifiers.relations.pairs import Pair
from dpharness.verifiers.relations.value import scalars


def bit_pairs(mechanism: Any, relation: Relation) -> list[Pair]:
    return [Pair(0, 1, "bit 0 vs 1")]


class Bit(Relation):
    name = "bit"
    family = "bits"
    metric = "absolute_distance"
    finite_under = ("absolute_distance", "discrete_distance")
    generators = {"bits": bit_pairs}

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:
        xy = scalars(self.name, d1, d2)
        if isinstance(xy, str):
            return xy
        x, y = xy
        return None if x in (0.0, 1.0) and y in (0.0, 1.0) else f"bits must be 0 or 1, got {x!r} and {y!r}"


RELATION = Bit()
