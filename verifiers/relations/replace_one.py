"""``replace_one``: record datasets of equal size whose multisets differ in one record (bounded
DP); the ``records`` and ``labels`` generators (:mod:`verifiers.relations.record_pairs`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from dpharness.verifiers.relations.record_pairs import RecordEdit
from dpharness.verifiers.relations.records import record_pair


class ReplaceOne(RecordEdit):
    name = "replace_one"
    metric = "change_distance"
    default_for = ("change_distance", "hamming_distance")
    finite_under = ("symmetric_distance", "insert_delete_distance", "change_distance", "hamming_distance", "discrete_distance")
    adds = False

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:
        keys = record_pair(d1, d2)
        if isinstance(keys, str):
            return keys
        r1, r2 = keys
        if len(r1) != len(r2):
            return f"replace_one neighbours have equal sizes, got {len(r1)} and {len(r2)}"
        diff = Counter(r1) - Counter(r2)
        return None if sum(diff.values()) <= 1 else f"{sum(diff.values())} records differ (at most 1 allowed)"


RELATION = ReplaceOne()
