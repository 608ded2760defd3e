"""What an OpenDP measurement older than 0.7 does not say about itself, inferred from the object
(docs/adapters.md, "Versions tested"): its input metric and output measure from its carrier and
distance types, and (before 0.5, a privacy relation instead of a map) the smallest epsilon its
relation accepts. Split from :mod:`dpharness.adapters.opendp_`, which uses them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpharness.adapters.common import quiet

__all__ = ["legacy_metric", "legacy_measure", "smallest_accepted", "INT_TYPES"]

INT_TYPES = ("i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize")
_INT_TYPES = INT_TYPES


def legacy_metric(meas: Any) -> str:
    """The input metric of a measurement from OpenDP < 0.7, which names only its carrier and
    distance types. Scalars: ``AbsoluteDistance<T>`` measures in T (floats, or an integer equal to
    the carrier), ``DiscreteDistance`` in u32 (booleans, strings, categories); vectors with integer
    distances are datasets under ``SymmetricDistance``. Vectors with float distances (L1, L2 or
    LInf) cannot be told apart: ``input_metric=`` must say."""
    carrier, dist = str(meas.input_carrier_type), str(meas.input_distance_type)
    if carrier.startswith("Vec<"):
        if dist in _INT_TYPES:
            return "symmetric_distance"
        raise ValueError(f"this OpenDP measurement (before 0.7) takes {carrier} at {dist} distances, which may be "
                         "L1, L2 or LInf: pass input_metric='l1_distance', 'l2_distance' or 'linf_distance'")
    if carrier in ("f32", "f64") or carrier == dist:
        return "absolute_distance"
    if dist in _INT_TYPES:
        return "discrete_distance"
    raise ValueError(f"cannot tell the input metric of this OpenDP measurement (before 0.7; {carrier} at {dist} "
                     "distances): pass input_metric=")


def legacy_measure(meas: Any, d_ref: Any) -> str:
    """The output measure of a measurement from OpenDP < 0.7, from its output distance type:
    ``(f64, f64)`` pairs are approximate DP, ``SMDCurve`` a privacy profile. A bare float is pure
    DP or zCDP (0.5 and 0.6 give their Gaussians a rho): maps of pure DP grow linearly in the
    input distance (or stay put), zCDP maps quadratically (rho of noise scaled to d is d^2 times
    rho at 1), so a map that more than triples from d to 2d is read as zCDP. Privacy relations
    (before 0.5) predate zCDP."""
    t = str(meas.output_distance_type)
    if t.startswith("("):
        return "approximate"
    if "SMDCurve" in t:
        return "profile"
    if not hasattr(meas, "map"):
        return "pure"
    try:
        at_d, at_2d = float(quiet(lambda: meas.map(d_ref))), float(quiet(lambda: meas.map(d_ref * 2)))
    except Exception:  # the library's map may raise anything (OpenDPException, ...) at these distances
        return "pure"
    return "zcdp" if at_d > 0 and at_2d > 3 * at_d else "pure"


def smallest_accepted(accepts: Callable[[float], bool], what: str) -> float:
    """The smallest epsilon (to a relative 1e-12) that a privacy relation accepts, from above: the
    value returned is always one the relation accepted, so the claim built from it is the
    library's own (relations are monotone in epsilon)."""
    hi = 1.0
    while not accepts(hi):
        hi *= 2.0
        if hi > 1e12:
            raise ValueError(f"the measurement's privacy relation accepts no epsilon up to 1e12 at {what}")
    lo = 0.0
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        if not lo < mid < hi:
            break
        if accepts(mid):
            hi = mid
        else:
            lo = mid
    return hi
