"""The checks and the pair search every caller uses: :func:`check_neighbours`,
:func:`are_neighbours` and :func:`pairs_for`, dispatched through the relation objects.

Generators do not search a random box: they build the patterns that break mechanisms --
ties and far-apart leaders with gap sweeps (in units of sensitivity/epsilon) moved in every
direction (all up, leader down and the rest up, converge/diverge), StatDP-style vectors
([1]*k vs [2]*k, [1]*k vs [0, 2, ..., 2]); for records: constant and duplicate-heavy datasets,
data at and beyond the declared bounds, and the records nearest the median changed. Every
generated pair is checked against the relation and against the mechanism itself (datasets the
mechanism rejects with ``ValueError`` are dropped).
"""

from __future__ import annotations

from typing import Any

from dpharness.verifiers.relations.pairs import Pair, PairList, dedupe
from dpharness.verifiers.relations.probe import accepts, domain_of
from dpharness.verifiers.relations.registry import families, generator, get, relation_of

__all__ = ["why_not", "are_neighbours", "check_neighbours", "family_of", "pairs_for"]


def why_not(d1: Any, d2: Any, claim: Any) -> str | None:
    """Why ``d1, d2`` are not neighbours under ``claim.neighbours`` (and its input domain), or None."""
    return get(claim.neighbours).why_not(d1, d2, claim)


def are_neighbours(d1: Any, d2: Any, claim: Any) -> bool:
    """True when ``d1`` and ``d2`` are neighbours under ``claim.neighbours``."""
    return why_not(d1, d2, claim) is None


def check_neighbours(d1: Any, d2: Any, claim: Any) -> None:
    """Raise ``ValueError`` saying why ``d1, d2`` are not neighbours under the declared relation."""
    get(claim.neighbours).check(d1, d2, claim)


def family_of(mechanism: Any) -> str:
    """The generator family ``"auto"`` picks for ``mechanism``."""
    return get(mechanism.claim.neighbours).family_for(mechanism)


def pairs_for(mechanism: Any, generator: Any = "auto") -> list[Pair]:
    """Neighbouring pairs to search for ``mechanism``.

    ``generator`` is ``"auto"`` (the family of ``claim.neighbours``), a family name in
    :data:`FAMILIES`, a callable ``generator(mechanism) -> iterable of (d1, d2)`` or an iterable of
    ``(d1, d2)`` pairs. Every pair is checked against the declared relation (``ValueError``
    naming the pair otherwise) and pairs the mechanism rejects are dropped. Under a privacy-map
    claim (:mod:`verifiers.claims`) the relation it names generates the pairs and each pair is
    held to the map: a listed pair must be at a finite distance where the map is valid
    (``ValueError`` naming it), a generated pair that is not is dropped and reported in ``skipped``.
    """
    claim = mechanism.claim
    rel = relation_of(claim)
    if isinstance(generator, str):
        return rel.admitted(_generated(mechanism, generator, rel.base), claim)
    items = list(generator(mechanism)) if callable(generator) else list(generator)
    out = []
    for i, it in enumerate(items):
        p = it if isinstance(it, Pair) else Pair(it[0], it[1], f"pair {i}")
        rel.admit(p.d1, p.d2, claim, f"pair {i}")
        out.append(p)
    if not out:
        raise ValueError("generator produced no pairs")
    return out


def _generated(mechanism: Any, name: str, rel: Any) -> PairList:
    """The pairs of generator family ``name`` that are neighbours under ``rel``, inside the input
    domain, and that the mechanism accepts (``skipped``: those it raised on)."""
    claim = mechanism.claim
    fam = rel.family_for(mechanism) if name == "auto" else name
    known = families()
    if fam not in known:
        raise ValueError(f"generator must be 'auto', one of {', '.join(known)}, a callable or a list of pairs; got {name!r}")
    raw = generator(fam)(mechanism, rel)
    failures: list[dict] = []
    # a domain declared on the mechanism but not in its claim still bounds what is generated
    dom = domain_of(mechanism)
    own = None if dom is getattr(claim, "input_domain", None) else dom
    keep = PairList(p for p in dedupe(raw) if rel.why_not(p.d1, p.d2, claim) is None
                    and rel.why_not_domain(p.d1, p.d2, own) is None
                    and accepts(mechanism, p.d1, failures, p.label) and accepts(mechanism, p.d2, failures, p.label))
    keep.skipped = failures
    if not keep:
        first = f"; it raised on {failures[0]['pair']}: {failures[0]['error']}" if failures else ""
        inside = f" inside the input domain {dom}" if dom is not None else ""
        raise ValueError(f"generator {fam!r} produced no pair{inside} that {type(mechanism).__name__} accepts{first}")
    return keep
