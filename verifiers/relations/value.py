"""``value``: scalars with |f - f'| <= the sensitivity (default 1); the ``values`` generator."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpharness.verifiers.input_domains import FiniteValues, Interval
from dpharness.verifiers.relations.base import Relation, sensitivity_of
from dpharness.verifiers.relations.pairs import Pair
from dpharness.verifiers.relations.probe import domain_of, unit


def scalars(rel: str, d1: Any, d2: Any) -> tuple[float, float] | str:
    """Both datasets as floats, or why they are not scalars."""
    a, b = np.asarray(d1, dtype=np.float64), np.asarray(d2, dtype=np.float64)
    if a.size != 1 or b.size != 1:
        return f"{rel} data must be scalars, got shapes {a.shape} and {b.shape}"
    return float(a.reshape(())), float(b.reshape(()))


def value_pairs(mechanism: Any, relation: Relation) -> list[Pair]:
    """f = 0 vs +-sensitivity, pairs at and beyond the declared bounds, large values, and pairs at
    the ends and centre of an interval domain or between consecutive values of a finite one."""
    sens, _ = unit(mechanism)
    out = [Pair(0.0, sens, "f=0 vs f=+sens"), Pair(0.0, -sens, "f=0 vs f=-sens")]
    lo, hi = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
    if lo is not None and hi is not None:
        out += [Pair(float(lo), float(lo) + sens, "at lower bound"), Pair(float(hi), float(hi) - sens, "at upper bound"),
                Pair(float(lo) - sens, float(lo), "beyond lower bound")]
    out.append(Pair(1e6, 1e6 + sens, "large values"))
    dom = domain_of(mechanism)
    if isinstance(dom, Interval):  # pairs at the ends and the centre of the domain (others are filtered)
        m = 0.5 * (dom.lo + dom.hi)
        out += [Pair(dom.lo, dom.lo + sens, "at the lower end of the domain"),
                Pair(dom.hi, dom.hi - sens, "at the upper end of the domain"),
                Pair(m, m + sens, "at the centre of the domain"), Pair(dom.lo, dom.hi, "domain ends")]
    elif isinstance(dom, FiniteValues):  # consecutive values (and the extremes) that are within sens
        v = [x for x in dom.ordered() if isinstance(x, (int, float)) and not isinstance(x, bool)]
        out += [Pair(x, y, f"values {x!r} vs {y!r}") for x, y in zip(v, v[1:])]
        if len(v) > 2:
            out.append(Pair(v[0], v[-1], f"values {v[0]!r} vs {v[-1]!r}"))
    return out


class Value(Relation):
    name = "value"
    family = "values"
    metric = "absolute_distance"
    default_for = ("absolute_distance",)
    finite_under = ("absolute_distance", "discrete_distance")
    generators = {"values": value_pairs}

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:
        xy = scalars(self.name, d1, d2)
        if isinstance(xy, str):
            return xy
        x, y = xy
        sens, tol = sensitivity_of(claim)
        return None if abs(x - y) <= sens + tol else f"|d1 - d2| = {abs(x - y):g} exceeds the sensitivity {sens:g}"


RELATION = Value()
