"""The registry of neighbour relations: name -> :class:`Relation` object, and family name ->
generator.

Every module of this package that defines ``RELATION`` (a :class:`Relation` instance) is a
relation: the registry finds it (the built-in relations first, in the order of :data:`BUILTIN`,
then any other module by name), so adding a relation is adding one module. A name the registry
does not know gives an :class:`UnknownRelation`, under which no pair is legal.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from dpharness.mechanisms.base import register_neighbours
from dpharness.verifiers.relations.base import Generator, Relation
from dpharness.verifiers.relations.pairs import Pair

__all__ = ["BUILTIN", "UnknownRelation", "register", "discover", "get", "relation_of", "names", "families", "generator"]

#: The relation modules shipped, in the order their generator families are listed.
BUILTIN = ("value", "bit", "score_linf", "score_monotone", "add_remove", "replace_one", "one_differ", "privacy_unit",
           "local")


class UnknownRelation(Relation):
    """A name no relation module registers (a duck-typed claim): no pair is legal; ``auto``
    generates records (or labels), which then refuse it."""

    family = "records"

    def __init__(self, name: str) -> None:
        self.unknown = name

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:
        return f"unknown neighbour relation {self.unknown!r}"

    def family_for(self, mechanism: Any) -> str:
        return "labels" if getattr(mechanism, "candidates", None) is not None else "records"

    def pairs(self, mechanism: Any) -> list[Pair]:
        return generator(self.family_for(mechanism))(mechanism, self)

    def __repr__(self) -> str:
        return f"<unknown relation {self.unknown!r}>"


_RELATIONS: dict[str, Relation] = {}
_FAMILIES: dict[str, Generator] = {}
_found = False


def register(relation: Relation) -> Relation:
    """Add ``relation`` (and its generator families) to the registry; claims may then name it."""
    if not isinstance(relation, Relation) or not relation.name or relation.family not in relation.generators:
        raise TypeError(f"a relation is a Relation with a name and a generator family among its generators (to "
                        f"reuse another relation's, list it: generators = {{'histograms': histogram_pairs}}), got "
                        f"{relation!r}")
    known = _RELATIONS.get(relation.name)
    if known is not None and type(known) is not type(relation):
        raise ValueError(f"neighbour relation {relation.name!r} is already registered ({known!r})")
    _RELATIONS[relation.name] = relation
    for fam, gen in relation.generators.items():
        _FAMILIES.setdefault(fam, gen)
    register_neighbours(relation.name)
    return relation


def discover() -> None:
    """Import every relation module of the package once (the built-ins first) and register it."""
    global _found
    if _found:
        return
    _found = True
    package = __name__.rpartition(".")[0]
    others = sorted(m.name for m in pkgutil.iter_modules(importlib.import_module(package).__path__))
    for name in (*BUILTIN, *(n for n in others if n not in BUILTIN)):
        rel = getattr(importlib.import_module(f"{package}.{name}"), "RELATION", None)
        if isinstance(rel, Relation):
            register(rel)


def get(name: str) -> Relation:
    """The relation called ``name`` (an :class:`UnknownRelation` when none is)."""
    discover()
    rel = _RELATIONS.get(name)
    return rel if rel is not None else UnknownRelation(name)


def relation_of(claim: Any) -> Relation:
    """The relation a claim's pairs are searched and admitted under: a privacy-map claim's own
    (``claim.relation``, which wraps the relation it names), else the one ``claim.neighbours`` names."""
    rel = getattr(claim, "relation", None)
    return rel if isinstance(rel, Relation) else get(claim.neighbours)


def names() -> tuple[str, ...]:
    """The registered relation names."""
    discover()
    return tuple(_RELATIONS)


def families() -> tuple[str, ...]:
    """The generator family names, in the order of the relations that bring them."""
    discover()
    return tuple(_FAMILIES)


def generator(family: str) -> Generator:
    """The generator of ``family`` (``KeyError`` when no relation brings it)."""
    discover()
    return _FAMILIES[family]
