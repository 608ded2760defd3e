"""``add_remove``: record datasets whose multisets differ by exactly one added record (unbounded
DP); the ``records`` and ``labels`` generators (:mod:`verifiers.relations.record_pairs`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from dpharness.verifiers.relations.record_pairs import RecordEdit
from dpharness.verifiers.relations.records import record_pair


class AddRemove(RecordEdit):
    name = "add_remove"
    metric = "symmetric_distance"
    default_for = ("symmetric_distance", "insert_delete_distance")
    finite_under = ("symmetric_distance", "insert_delete_distance", "discrete_distance")
    adds = True

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:
        keys = record_pair(d1, d2)
        if isinstance(keys, str):
            return keys
        r1, r2 = keys
        big, small = (r1, r2) if len(r1) > len(r2) else (r2, r1)
        if len(big) != len(small) + 1:
            return f"add_remove neighbours differ in size by exactly 1, got sizes {len(r1)} and {len(r2)}"
        extra = Counter(big) - Counter(small)
        return None if sum(extra.values()) == 1 else "the smaller dataset is not the larger one minus one record"


RELATION = AddRemove()
