"""``local``: any two inputs of the declared ``claim.input_domain`` (local DP); the ``local``
generator lists the domain's telling pairs."""

from __future__ import annotations

from typing import Any

from dpharness.verifiers.relations.base import Relation
from dpharness.verifiers.relations.pairs import Pair
from dpharness.verifiers.relations.probe import domain_of


def local_pairs(mechanism: Any, relation: Relation) -> list[Pair]:
    """local pairs: any two elements of the input domain are neighbours, so the pairs are the
    domain's telling ones -- every two values of a finite domain (a spread subset of 20 values
    beyond that), for bit vectors all zeros vs all ones, one-hot vectors, single-bit flips and
    half/half patterns, for an interval its ends, centre and quarters."""
    dom = domain_of(mechanism)
    if dom is None:
        raise ValueError("the local generator needs an input domain: declare it, e.g. wrap(..., "
                         "input_domain=['a', 'b', 'c']), input_domain={'bits': 8} or {'interval': [0, 1]} (the "
                         "library adapters take input_domain= too: a library object may not state its categories)")
    make = getattr(dom, "local_pairs", None)
    if make is None:
        raise ValueError(f"the local generator cannot list elements of the input domain {dom!r}: use a "
                         "FiniteValues, BitVectors or Interval domain, or pass the pairs")
    return [Pair(x, y, lab) for x, y, lab in make()]


class Local(Relation):
    name = "local"
    family = "local"
    metric = "discrete_distance"
    default_for = ("discrete_distance",)
    finite_under = ("discrete_distance",)
    generators = {"local": local_pairs}

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:
        return None  # any two inputs of the declared domain (checked by why_not_domain)


RELATION = Local()
