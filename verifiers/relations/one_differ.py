"""``one_differ``: query vectors of one shape, exactly one coordinate moving by at most the
sensitivity (histograms; StatDP's ONE_DIFFER); the ``histograms`` generator."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpharness.verifiers.input_domains import BitVectors
from dpharness.verifiers.relations.base import Relation, sensitivity_of
from dpharness.verifiers.relations.pairs import Pair
from dpharness.verifiers.relations.probe import domain_of, example_data, lengths, unit


def histogram_pairs(mechanism: Any, relation: Relation) -> list[Pair]:
    """one_differ pairs: flat, peaked and example-shaped query vectors, one coordinate moved by
    the sensitivity in both directions (the leader, a runner-up, an empty bin)."""
    sens, eps = unit(mechanism)
    step = sens * max(1.0, 1.0 / eps)
    dom = domain_of(mechanism)
    length = dom.length if isinstance(dom, BitVectors) else getattr(mechanism, "length", None)
    ks = [int(length)] if length is not None else lengths(mechanism, (1, 2, 5, 10))
    bases: list[tuple[np.ndarray, str]] = []
    ex = example_data(mechanism)
    if ex is not None:
        try:
            a = np.asarray(ex, dtype=np.float64)
        except (TypeError, ValueError):
            a = np.zeros(0)
        if a.ndim >= 1 and a.size and np.all(np.isfinite(a)):
            bases.append((a, "example"))
            ks = sorted(set(ks) | {a.size}) if length is None else ks
    for k in ks:
        bases.append((np.zeros(k), f"k={k}, all zero"))
        bases.append((np.ones(k), f"k={k}, all one"))
        if k > 1:
            b = np.zeros(k)
            b[0] = 4.0 * step
            bases.append((b, f"k={k}, one bin far ahead"))
    if isinstance(dom, BitVectors):  # one-hot and half/half vectors: their bit flips stay in the domain
        bases += [(r, f"bit vector, {lab}") for r, lab in dom.representatives()[2:]]
    out: list[Pair] = []
    for b, lab in bases:
        flat = b.reshape(-1)
        idx = {0: "first", flat.size - 1: "last", int(np.argmax(flat)): "largest"}
        for i, where in idx.items():
            for sgn, way in ((1.0, "up"), (-1.0, "down")):
                e = flat.copy()
                e[i] += sgn * sens
                out.append(Pair(b, e.reshape(b.shape), f"{lab}; {where} bin {way}"))
    return out


class OneDiffer(Relation):
    name = "one_differ"
    family = "histograms"
    metric = "l1_distance"
    default_for = ("l1_distance", "l2_distance")
    finite_under = ("l1_distance", "l2_distance", "linf_distance", "linf_monotone_distance", "discrete_distance")
    generators = {"histograms": histogram_pairs}

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:
        sens, tol = sensitivity_of(claim)
        a, b = np.asarray(d1, dtype=np.float64), np.asarray(d2, dtype=np.float64)
        if a.shape != b.shape or a.ndim == 0:
            return f"one_differ data are query vectors of one shape, got shapes {a.shape} and {b.shape}"
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            return "one_differ query vectors must be finite"
        moved = np.flatnonzero(np.abs(b - a) > tol * 1e-3)
        if moved.size != 1:
            return f"exactly one coordinate may move, {moved.size} moved"
        step = float(abs(b.reshape(-1)[moved[0]] - a.reshape(-1)[moved[0]]))
        return None if step <= sens + tol else f"coordinate {int(moved[0])} moves by {step:g}, more than the sensitivity {sens:g}"


RELATION = OneDiffer()
