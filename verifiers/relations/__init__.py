"""Neighbour relations, one module per relation, as objects (docs/auditing.md, "Neighbour
relations and pair generators").

The declared relation (``claim.neighbours``) decides what a legal pair is:

``value``           scalars with |f - f'| <= sensitivity (default 1);
``bit``             scalars in {0, 1};
``score_linf``      arrays of one shape, every entry moving by at most the sensitivity, in any
                    direction (entries equal to -inf must stay -inf);
``score_monotone``  as ``score_linf`` with every entry moving in the same direction;
``add_remove``      record datasets whose multisets differ by exactly one added record;
``replace_one``     record datasets of equal size whose multisets differ in one record;
``one_differ``      query vectors of one shape, exactly one coordinate moving by at most the
                    sensitivity (histograms; StatDP's ONE_DIFFER);
``privacy_unit``    records (2-D array or DataFrame) with a unit-id column; neighbours differ in
                    all records of one unit, at most ``claim.max_contributions`` of them;
``local``           any two inputs of the declared ``claim.input_domain`` (local DP).

Each is a :class:`Relation` object in the module of its name (``RELATION``), found by the
registry (:mod:`verifiers.relations.registry`): ``get(name)`` returns it, with ``why_not(d1, d2,
claim)``, ``check(d1, d2, claim)``, ``pairs(mechanism)`` (its generator family) and ``metric`` (the
input metric under which its neighbours are at distance 1). Record datasets are 1-D arrays, 2-D
arrays (one record per row) or pandas DataFrames (:mod:`verifiers.relations.records`). A declared
input domain (:mod:`verifiers.input_domains`) must contain every record (record relations) or the
whole input (every other relation), and the generators only build data inside it.
"""

from __future__ import annotations

from typing import Any

from dpharness.verifiers.relations.base import Relation
from dpharness.verifiers.relations.generate import are_neighbours, check_neighbours, family_of, pairs_for, why_not
from dpharness.verifiers.relations.pairs import Pair, PairList, merge_swaps
from dpharness.verifiers.relations.privacy_unit import unit_records
from dpharness.verifiers.relations.registry import UnknownRelation, discover, families, get, names, register, relation_of

__all__ = ["Relation", "UnknownRelation", "Pair", "PairList", "merge_swaps", "why_not", "are_neighbours",
           "check_neighbours", "family_of", "pairs_for", "get", "register", "discover", "relation_of", "names",
           "families", "FAMILIES", "unit_records"]


def __getattr__(name: str) -> Any:
    # FAMILIES is read from the relation modules, which are imported on first use
    if name == "FAMILIES":
        return families()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
