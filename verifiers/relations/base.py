"""The neighbour relation as an object: :class:`Relation`, the base every relation module extends.

A relation says which two datasets are neighbours (:meth:`Relation.why_not`, relation then
declared input domain), which pairs to search (:meth:`Relation.pairs`, through its generator
family) and, where one exists, the input metric under which its neighbours are at distance 1
(``metric``, used by privacy maps).
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

import numpy as np

from dpharness.verifiers.relations import metrics
from dpharness.verifiers.relations.pairs import Pair
from dpharness.verifiers.relations.records import is_frame

__all__ = ["Relation", "Generator", "sensitivity_of"]

#: A generator family: ``generator(mechanism, relation) -> list of Pair`` (raw: the search keeps the
#: pairs that are legal, inside the input domain and accepted by the mechanism).
Generator = Callable[[Any, "Relation"], list[Pair]]


def sensitivity_of(claim: Any) -> tuple[float, float]:
    """(the claim's sensitivity, default 1; the tolerance comparisons against it allow)."""
    sens = 1.0 if claim.sensitivity is None else float(claim.sensitivity)
    return sens, 1e-9 * max(1.0, sens)


class Relation:
    """One neighbour relation. Subclasses set the class attributes and :meth:`why_not_relation`."""

    #: the name a claim uses (``PrivacyClaim.neighbours``)
    name: ClassVar[str] = ""
    #: the generator family ``pairs_for(mechanism, "auto")`` picks
    family: ClassVar[str] = ""
    #: datasets are collections of records: a declared input domain holds each record (else the whole input)
    records: ClassVar[bool] = False
    #: the input metric (:data:`verifiers.claims.INPUT_METRICS`) under which neighbours are at distance
    #: 1 (one unit of sensitivity), or None
    metric: ClassVar[str | None] = None
    #: the input metrics whose privacy maps use this relation's pairs by default (``metric`` first)
    default_for: ClassVar[tuple[str, ...]] = ()
    #: every input metric under which this relation's pairs are at a finite distance, so a privacy
    #: map over that metric may be audited on them (``default_for`` among them)
    finite_under: ClassVar[tuple[str, ...]] = ()
    #: the generator families this relation brings (``family`` among them), by family name; a
    #: family another relation brings is reused by listing its generator here too
    generators: ClassVar[dict[str, Generator]] = {}

    @property
    def base(self) -> Relation:
        """The relation whose pairs are generated (a privacy map wraps another one)."""
        return self

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:  # pragma: no cover - abstract
        """Why ``d1, d2`` are not neighbours under this relation alone (the domain aside), or None."""
        raise NotImplementedError

    def why_not(self, d1: Any, d2: Any, claim: Any) -> str | None:
        """Why ``d1, d2`` are not neighbours under ``claim`` (the relation, then the claim's input
        domain), or None when they are."""
        why = self.why_not_relation(d1, d2, claim)
        if why is None:
            why = self.why_not_domain(d1, d2, getattr(claim, "input_domain", None))
        return why

    def check(self, d1: Any, d2: Any, claim: Any) -> None:
        """``ValueError`` saying why ``d1, d2`` are not neighbours under ``claim``."""
        why = self.why_not(d1, d2, claim)
        if why is not None:
            raise ValueError(f"d1 and d2 are not {claim.neighbours} neighbours: {why}")

    def admit(self, d1: Any, d2: Any, claim: Any, label: str) -> None:
        """The check of a pair the user listed: ``ValueError`` naming it (``label``) otherwise."""
        why = self.why_not(d1, d2, claim)
        if why is not None:
            raise ValueError(f"{label} is not a pair of {claim.neighbours} neighbours: {why}")

    def admitted(self, pairs: list[Pair], claim: Any) -> list[Pair]:
        """The generated (legal, accepted) pairs a search keeps: all of them."""
        return pairs

    def distance(self, d1: Any, d2: Any) -> float:
        """The distance between ``d1`` and ``d2`` under this relation's ``metric``."""
        if self.metric is None:
            raise ValueError(f"the {self.name} relation has no input metric")
        return metrics.distance(self.metric, d1, d2)

    def family_for(self, mechanism: Any) -> str:
        """The generator family ``"auto"`` picks for ``mechanism``."""
        return self.family

    def pairs(self, mechanism: Any) -> list[Pair]:
        """The raw pairs of this relation's family for ``mechanism`` (:func:`pairs_for` then keeps
        the legal ones inside the input domain that the mechanism accepts)."""
        return self.generators[self.family_for(mechanism)](mechanism, self)

    # -- the input domain -------------------------------------------------------------------

    def why_not_domain(self, d1: Any, d2: Any, dom: Any) -> str | None:
        """Why ``d1`` or ``d2`` is not in the input domain ``dom`` (None: no domain, or both inside)."""
        if dom is None:
            return None
        return self.outside(d1, "d1", dom) or self.outside(d2, "d2", dom)

    def outside(self, d: Any, name: str, dom: Any) -> str | None:
        """Why ``d`` is not in ``dom``: records one by one for record relations, else the whole input."""
        if self.records:
            try:
                a = d.to_numpy() if is_frame(d) else np.asarray(d)
            except ValueError:
                return f"{name} is not an array of records"
            if a.ndim == 0:
                a = a.reshape(1)
            each = getattr(dom, "contains_each", None)
            inside = np.asarray(each(a), dtype=bool) if each is not None else np.fromiter(
                (bool(dom.contains(r)) for r in a), dtype=bool, count=a.shape[0])
            if inside.all():
                return None
            i = int(np.flatnonzero(~inside)[0])
            return f"record {i} of {name} ({np.asarray(a[i]).tolist()!r}) is not in the input domain {dom}"
        if dom.contains(d):
            return None
        from dpharness.verifiers.verdict import format_data

        try:
            shown = format_data(d)
        except (TypeError, ValueError):
            shown = repr(d)
        return f"{name}={shown} is not in the input domain {dom}"

    def __repr__(self) -> str:
        return f"<relation {self.name}>"
