"""Audit DP libraries as they ship: OpenDP measurements, diffprivlib mechanisms, tools and models,
and python-dp aggregations as auditable mechanisms (docs/adapters.md).

* :func:`opendp` -- an OpenDP ``Measurement`` (or a factory building one): its privacy map,
  input metric and output measure are read from the object and become a privacy-map claim
  (:mod:`dpharness.verifiers.claims`), so every audited pair is held to ``measurement.map`` at
  its own distance.
* :func:`diffprivlib_mechanism`, :func:`diffprivlib_tool`, :func:`diffprivlib_model` (or the
  dispatcher :func:`diffprivlib`) -- a diffprivlib mechanism object (epsilon, delta and
  sensitivity read from it), a function of ``diffprivlib.tools`` (epsilon from the arguments)
  or an (unfitted) estimator of ``diffprivlib.models`` (its parameter vector is the release).
* :func:`pydp` -- an aggregation of Google's python-dp (``pydp.algorithms.laplacian``: counts,
  bounded sums, means, variances, quantiles) with its constructor arguments; epsilon, delta and
  the contribution bound are read from the object it builds.
* :func:`adapt` -- picks one of these from where the object comes from.

Each returns a :class:`dpharness.verifiers.WrappedMechanism` that ``verifiers.audit``,
``verifiers.statistical.search`` and ``dpharness.testing.assert_dp`` take as they are. The libraries are
imported when an adapter is built, never when this module is; a missing one raises
:class:`MissingLibrary` (an ``ImportError``) with the install hint. Adapted mechanisms audit
floating-point leaks by default (``float_events=True``): they are third-party float code.

Randomness: diffprivlib (0.6+) is seeded from the audit's generator (an integer ``random_state``
drawn from it), so its audits are reproducible; earlier diffprivlib releases, OpenDP and python-dp
draw from the operating system and cannot be seeded, so their audits are valid but not bit-reproducible
(the adapted object's ``seeded`` attribute says which).

Releases: the same calls work from OpenDP 0.3 and diffprivlib 0.4 on (docs/adapters.md,
"Versions tested"); what an old release does not describe (OpenDP's metric and measure before
0.7, its map before 0.5) is inferred from the object.
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from dpharness.verifiers.claims import ConstantMap, zcdp_to_approx_dp
from dpharness.verifiers.intake import register_recogniser
from dpharness.verifiers.wrap import WrappedMechanism, wrap

__all__ = ["INSTALL_HINT", "MissingLibrary", "require", "opendp", "OPENDP_METRICS", "OPENDP_MEASURES", "DEFAULT_DELTA",
           "diffprivlib", "diffprivlib_mechanism", "diffprivlib_tool", "diffprivlib_model", "TOOL_RELATIONS",
           "MODEL_OUTPUTS", "pydp", "PYDP_ALGORITHMS", "adapt"]

#: How to get the libraries (the ``peers`` extra).
INSTALL_HINT = "pip install 'dpharness[peers]'"


class MissingLibrary(ImportError):
    """A DP library an adapter needs is not installed (or fails to import); the message says how
    to install it."""


def require(module: str, dist: str) -> Any:
    """Import ``module`` of the library ``dist`` (its package-index name), its import-time warnings
    silenced; :class:`MissingLibrary` with the install hint if it cannot be imported."""
    try:
        with warnings.catch_warnings():  # libraries warn on import (deprecations); not ours to show
            warnings.simplefilter("ignore")
            return importlib.import_module(module)
    except ImportError as exc:
        extra = " (diffprivlib 0.6.6 needs scikit-learn<1.9)" if dist == "diffprivlib" else ""
        raise MissingLibrary(f"{dist} is needed for this adapter but cannot be imported ({exc}){extra}; "
                             f"{INSTALL_HINT}") from exc


def _quiet(call: Callable[[], Any]) -> Any:
    """``call()`` with the library's warnings silenced (they come per call, and the test suite
    runs with warnings as errors; whether a release leaks is for the audit to find)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()


def _kind_of(out: Any) -> str:
    """``"real"`` for float outputs, ``"finite"`` for integers, booleans and labels."""
    return "real" if np.asarray(out).dtype.kind in "fc" else "finite"


def _seeds(rng: np.random.Generator, n: int) -> list[int]:
    return [int(s) for s in rng.integers(0, 2**31 - 1, size=n)]


def _as_array(data: Any) -> np.ndarray:
    return data.to_numpy() if hasattr(data, "columns") and hasattr(data, "to_numpy") else np.asarray(data)


def _scalar(data: Any, what: str) -> Any:
    a = np.asarray(data)
    if a.size != 1:
        raise ValueError(f"{what} takes one value as data, got shape {a.shape}")
    return a.reshape(-1)[0].item()


# --------------------------------------------------------------------------------------------
# OpenDP

#: OpenDP input metric (the name before its parameters) -> our input metric.
OPENDP_METRICS: dict[str, str] = {
    "SymmetricDistance": "symmetric_distance",
    "InsertDeleteDistance": "insert_delete_distance",
    "ChangeOneDistance": "change_distance",
    "HammingDistance": "hamming_distance",
    "AbsoluteDistance": "absolute_distance",
    "L1Distance": "l1_distance",
    "L2Distance": "l2_distance",
    "LInfDistance": "linf_distance",
    "DiscreteDistance": "discrete_distance",
}
#: OpenDP output measure -> how its map's value becomes (epsilon, delta).
OPENDP_MEASURES: dict[str, str] = {
    "MaxDivergence": "pure: epsilon",
    "Approximate(MaxDivergence)": "approximate: (epsilon, delta)",
    "FixedSmoothedMaxDivergence": "approximate: (epsilon, delta)",
    "SmoothedMaxDivergence": "privacy profile: epsilon(delta) at the chosen delta",
    "ZeroConcentratedDivergence": "zCDP: rho, converted to epsilon at the chosen delta",
}
#: delta at which privacy profiles (smoothed max divergence) and zCDP are read, unless given.
DEFAULT_DELTA = 1e-6

_INT_TYPES = ("i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize")
_MEASURE_KINDS = {"MaxDivergence": "pure", "FixedSmoothedMaxDivergence": "approximate",
                  "SmoothedMaxDivergence": "profile", "ZeroConcentratedDivergence": "zcdp"}
_OUR_MEASURES = {"pure": "max_divergence", "approximate": "approximate(max_divergence)",
                 "profile": "smoothed_max_divergence", "zcdp": "zero_concentrated_divergence"}


def _is_measurement(obj: Any) -> bool:
    """An OpenDP ``Measurement`` of any release: since 0.7 it describes its domain, metric and
    measure; before, only its carrier and distance types (and before 0.5 it has a privacy
    relation ``check`` instead of a map)."""
    if not callable(obj) or not (hasattr(obj, "map") or hasattr(obj, "check")):
        return False
    return all(hasattr(obj, a) for a in ("input_metric", "output_measure", "input_domain")) or all(
        hasattr(obj, a) for a in ("input_carrier_type", "input_distance_type", "output_distance_type"))


def _describes_itself(meas: Any) -> bool:
    """Whether the measurement carries its input domain, metric and measure (OpenDP 0.7+)."""
    return _attr(meas, "input_metric") is not None and _attr(meas, "output_measure") is not None


def _carrier(meas: Any) -> str:
    dom = _attr(meas, "input_domain")
    return str(dom.carrier_type) if dom is not None else str(meas.input_carrier_type)


def _our_metric(name: str) -> str:
    """``name`` (ours, e.g. "symmetric_distance", or OpenDP's, e.g. "SymmetricDistance()") as ours."""
    head = str(name).split("(")[0].split("<")[0].strip()
    if head in OPENDP_METRICS:
        return OPENDP_METRICS[head]
    ours = set(OPENDP_METRICS.values()) | {"linf_monotone_distance"}
    if head in ours:
        return head
    raise ValueError(f"input_metric {name!r} is not supported; supported: {', '.join(sorted(ours))} "
                     f"(or OpenDP's names: {', '.join(OPENDP_METRICS)})")


def _our_measure(name: str) -> str:
    """``name`` (ours, e.g. "max_divergence", or OpenDP's) as one of pure/approximate/profile/zcdp."""
    text = str(name).strip()
    flat = text.replace(" ", "").lower()
    if flat.startswith("approximate(") and flat[len("approximate("):].startswith(("maxdivergence", "max_divergence")):
        return "approximate"
    head = text.split("(")[0].split("<")[0].strip()
    if head in _MEASURE_KINDS:
        return _MEASURE_KINDS[head]
    for kind, ours in _OUR_MEASURES.items():
        if head == ours or flat == ours:
            return kind
    if head in ("fixed_smoothed_max_divergence",):
        return "approximate"
    raise ValueError(f"output_measure {name!r} is not supported; supported: {', '.join(_OUR_MEASURES.values())} "
                     f"(or OpenDP's names: {', '.join(OPENDP_MEASURES)})")


def _metric_of(meas: Any) -> str:
    text = str(meas.input_metric)
    head = text.split("(")[0].split("<")[0].strip()
    if head not in OPENDP_METRICS:
        raise ValueError(f"OpenDP input metric {text} is not supported; supported: {', '.join(OPENDP_METRICS)}")
    ours = OPENDP_METRICS[head]
    if ours == "linf_distance" and "monotonic" in text:
        ours = "linf_monotone_distance"
    return ours


def _measure_of(meas: Any) -> str:
    text = str(meas.output_measure)
    if text.startswith("Approximate(") and text[len("Approximate("):].startswith("MaxDivergence"):
        return "approximate"
    head = text.split("(")[0].split("<")[0].strip()
    if head not in _MEASURE_KINDS:
        raise ValueError(f"OpenDP output measure {text} is not supported; supported: {', '.join(OPENDP_MEASURES)}")
    return _MEASURE_KINDS[head]


def _legacy_metric(meas: Any) -> str:
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


def _legacy_measure(meas: Any, d_ref: Any) -> str:
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
        at_d, at_2d = float(_quiet(lambda: meas.map(d_ref))), float(_quiet(lambda: meas.map(d_ref * 2)))
    except Exception:
        return "pure"
    return "zcdp" if at_d > 0 and at_2d > 3 * at_d else "pure"


def _attr(obj: Any, name: str) -> Any:
    """``obj.name``, or None when it is missing or the library raises reading it (OpenDP domain
    descriptors raise for types they do not describe, e.g. the bounds of a boolean domain)."""
    if obj is None:
        return None
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _integral_distance(meas: Any, metric: str) -> bool:
    t = _attr(meas, "input_distance_type") or _attr(_attr(meas, "input_metric"), "distance_type")
    if isinstance(t, str) and t:
        return t in _INT_TYPES
    return metric in ("symmetric_distance", "insert_delete_distance", "change_distance", "hamming_distance",
                      "discrete_distance")


class _Measurement:
    """The measurement, or the factory that builds it: a measurement is a pointer into the
    library and does not pickle, a module-level factory does (configs run audits in workers)."""

    def __init__(self, source: Any) -> None:
        if _is_measurement(source):
            self.factory, self._meas = None, source
        elif callable(source):
            self.factory, self._meas = source, None
        else:
            raise TypeError(f"opendp() takes an OpenDP Measurement or a function building one, got "
                            f"{type(source).__name__} {source!r:.80}")

    def get(self) -> Any:
        if self._meas is None:
            meas = self.factory()
            if not _is_measurement(meas):
                raise TypeError(f"the factory {self.factory!r} must return an OpenDP Measurement, got "
                                f"{type(meas).__name__}")
            self._meas = meas
        return self._meas

    def __getstate__(self) -> dict:
        if self.factory is None:
            raise TypeError("an OpenDP Measurement cannot be pickled (it points into the library); to run audits "
                            "in worker processes pass a module-level function that builds it: "
                            "adapters.opendp(make_my_measurement)")
        return {"factory": self.factory}

    def __setstate__(self, state: dict) -> None:
        self.factory, self._meas = state["factory"], None


def _convert_atom(v: Any, carrier: str) -> Any:
    if carrier in ("f64", "f32"):
        return float(v)
    if carrier in _INT_TYPES:
        if isinstance(v, (float, np.floating)) and not float(v).is_integer():
            raise ValueError(f"the measurement takes integers ({carrier}), got {v!r}")
        return int(v)
    if carrier == "bool":
        return bool(v)
    if carrier == "String":
        return str(v)
    return v


def _to_carrier(data: Any, carrier: str) -> Any:
    """Our data (numpy arrays, scalars, DataFrames) as the measurement's carrier type."""
    if carrier.startswith("Vec<") and carrier.endswith(">"):
        a = _as_array(data)
        if a.ndim != 1:
            raise ValueError(f"the measurement takes a 1-D dataset ({carrier}), got shape {a.shape}")
        inner = carrier[4:-1]
        return [_convert_atom(v, inner) for v in a.tolist()]
    if carrier in ("f64", "f32", "bool", "String") or carrier in _INT_TYPES:
        return _convert_atom(_scalar(data, f"the measurement ({carrier})"), carrier)
    return data


class _OpenDPRelease:
    """``size`` releases: ``measurement(data)`` called ``size`` times (OpenDP samples from the
    operating system, so ``rng`` is not used). Data outside the input domain raise ValueError
    (OpenDP 0.7+; earlier releases do not describe their domain)."""

    def __init__(self, source: _Measurement) -> None:
        self.source = source

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        meas = self.source.get()
        dom = _attr(meas, "input_domain")
        x = _to_carrier(data, _carrier(meas))
        member = _attr(dom, "member")
        if member is not None:
            try:
                inside = bool(member(x))
            except Exception as exc:
                raise ValueError(f"data {x!r:.80} cannot be read by the input domain {dom}: {exc}") from None
            if not inside:
                raise ValueError(f"data {x!r:.80} are not in the measurement's input domain {dom}")
        return np.asarray(_quiet(lambda: [meas(x) for _ in range(size)]))


def _smallest_accepted(accepts: Callable[[float], bool], what: str) -> float:
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


class _OpenDPMap:
    """The measurement's privacy map as (epsilon, delta): pure and approximate measures as they
    are, a privacy profile at ``delta``, zCDP's rho converted at ``delta``. A measurement with a
    privacy relation instead of a map (OpenDP < 0.5) is read by bisection: the smallest epsilon
    its ``check(d_in, epsilon)`` (or ``check(d_in, (epsilon, delta))``) accepts."""

    def __init__(self, source: _Measurement, measure: str, delta: float, integral: bool) -> None:
        self.source, self.measure, self.delta, self.integral = source, measure, delta, integral
        self._cache: dict = {}

    def _relation(self, meas: Any, d: Any) -> Any:
        def accepts(eps: float) -> bool:
            d_out = (eps, self.delta) if self.measure == "approximate" else eps
            try:
                return bool(_quiet(lambda: meas.check(d, d_out)))
            except Exception:
                return False

        if self.measure not in ("pure", "approximate"):
            raise ValueError(f"a privacy relation (OpenDP before 0.5) is read for pure or approximate DP, not "
                             f"{_OUR_MEASURES[self.measure]}")
        eps = _smallest_accepted(accepts, f"d_in={d}")
        return (eps, self.delta) if self.measure == "approximate" else eps

    def __call__(self, d_in: Any) -> Any:
        # maps are monotone: an integer distance type is evaluated at the next integer up
        d = math.ceil(float(d_in)) if self.integral else float(d_in)
        if d not in self._cache:
            meas = self.source.get()
            self._cache[d] = _quiet(lambda: meas.map(d)) if hasattr(meas, "map") else self._relation(meas, d)
        out = self._cache[d]
        if self.measure == "pure":
            return float(out)
        if self.measure == "approximate":
            eps, dl = out
            return float(eps), float(dl)
        if self.measure == "profile":
            return float(out.epsilon(self.delta)), self.delta
        return zcdp_to_approx_dp(float(out), self.delta), self.delta

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_cache": {}}


def _example_atom(carrier: str, bounds: tuple | None = None) -> Any:
    if bounds:
        return _convert_atom(bounds[0], carrier)
    return {"bool": False, "String": "a"}.get(carrier, 0.0 if carrier in ("f64", "f32") else 0)


def _opendp_example(meas: Any) -> Any:
    """A member of the input domain built from its description (for inferring the output kind):
    its lower bound, else 0 / False / "a"; three records for a dataset of unknown size."""
    dom = _attr(meas, "input_domain")
    carrier = _carrier(meas)
    if carrier.startswith("Vec<"):
        n = _attr(dom, "size") or 3
        return [_example_atom(carrier[4:-1], _bounds_of(dom) if dom is not None else None)] * int(n)
    return _example_atom(carrier, _bounds_of(dom) if dom is not None else None)


def _bounds_of(dom: Any) -> tuple | None:
    """The (closed) bounds of an atom domain or of a vector domain's elements: the ``bounds``
    attribute (OpenDP 0.13+), else read from the domain's description ``...bounds=[lo, hi]...``."""
    elem = _attr(dom, "element_domain")
    bounds = _attr(elem if elem is not None else dom, "bounds")
    if not bounds:
        found = re.search(r"bounds=\[\s*([^,\]]+),\s*([^\]]+)\]", str(dom))
        if found is None:
            return None
        try:
            bounds = (float(found.group(1)), float(found.group(2)))
        except ValueError:
            return None
    return tuple(bounds) if len(bounds) == 2 and all(isinstance(b, numbers.Real) for b in bounds) else None


def _opendp_attributes(dom: Any, metric: str) -> dict:
    """What the pair generators use: data bounds, vector length."""
    if dom is None:
        return {}
    attrs: dict = {}
    bounds = _bounds_of(dom)
    if bounds:
        attrs["lower"], attrs["upper"] = float(bounds[0]), float(bounds[1])
    size = _attr(dom, "size")
    if size and metric not in ("symmetric_distance", "insert_delete_distance", "change_distance", "hamming_distance"):
        attrs["length"] = int(size)
    return attrs


def opendp(measurement: Any, *, d_in: float = 1, delta: float | None = None, kind: str | None = None,
           example: Any = None, neighbours: str | None = None, input_domain: Any = None, name: str = "",
           attributes: dict | None = None, float_events: bool = True, input_metric: str | None = None,
           output_measure: str | None = None) -> WrappedMechanism:
    """An OpenDP ``Measurement`` as an auditable mechanism whose claim is its own privacy map.

    Works with OpenDP releases from 0.3 on (docs/adapters.md, "Versions tested"): since 0.7 the
    measurement names its input domain, metric and measure; before, only its carrier and distance
    types, from which the metric and measure are inferred; before 0.5 it has a privacy relation
    instead of a map, read by bisection.

    Parameters
    ----------
    measurement
        An OpenDP ``Measurement``, or a function with no arguments that builds one (a module-level
        function or a ``functools.partial`` of one pickles by reference, so the adapted mechanism
        can run in worker processes; a measurement itself does not pickle).
    d_in
        The reference input distance: ``claim.epsilon`` is the map there, and for scalar and
        vector metrics it is the step of the generated pairs (e.g. the sensitivity a value may
        move by).
    delta
        For ``smoothed_max_divergence`` (a privacy profile) and ``zero_concentrated_divergence``
        (rho, converted by :func:`dpharness.verifiers.claims.zcdp_to_approx_dp`): the delta at
        which epsilon is read; default :data:`DEFAULT_DELTA`. For an approximate-DP privacy
        relation (OpenDP < 0.5): the delta at which its smallest epsilon is found. Not used by
        pure or approximate measures with a map, whose maps give (epsilon, delta) themselves.
    kind
        ``"real"`` or ``"finite"``; default: inferred from one release on ``example`` (float
        outputs are real, integers, booleans and strings finite).
    example
        A member of the input domain, for inferring ``kind``; default: built from the domain
        (its bounds, else 0 / False / "a").
    neighbours
        The relation whose pairs :func:`verifiers.statistical.search` generates (default: the metric's,
        :data:`dpharness.verifiers.claims.DEFAULT_RELATION`).
    input_domain, name, attributes, float_events
        As for :func:`dpharness.verifiers.wrap` (bounds and vector lengths of the measurement's
        domain are added to ``attributes``; ``input_domain`` defaults to {False, True} for a
        boolean domain).
    input_metric, output_measure
        Only for measurements of OpenDP < 0.7, which do not name them, where the inference is
        ambiguous (vectors at float distances: L1, L2 or LInf) or to override it; ours or
        OpenDP's names (``"l1_distance"`` or ``"L1Distance"``). A measurement that names its own
        must agree with them.
    """
    require("opendp", "opendp")
    source = _Measurement(measurement)
    meas = source.get()
    if isinstance(d_in, bool) or not isinstance(d_in, numbers.Real) or not 0 < float(d_in) < math.inf:
        raise ValueError(f"d_in must be a finite distance > 0, got {d_in!r}")
    described = _describes_itself(meas)
    metric = _metric_of(meas) if described else (
        _our_metric(input_metric) if input_metric is not None else _legacy_metric(meas))
    if described and input_metric is not None and _our_metric(input_metric) != metric:
        raise ValueError(f"input_metric={input_metric!r} disagrees with the measurement's own {meas.input_metric}")
    integral = _integral_distance(meas, metric)
    d_ref = math.ceil(float(d_in)) if integral else float(d_in)
    measure = _measure_of(meas) if described else (
        _our_measure(output_measure) if output_measure is not None else _legacy_measure(meas, d_ref))
    if described and output_measure is not None and _our_measure(output_measure) != measure:
        raise ValueError(f"output_measure={output_measure!r} disagrees with the measurement's own "
                         f"{meas.output_measure}")
    has_map = hasattr(meas, "map")
    if delta is not None and (measure == "pure" or (measure == "approximate" and has_map)):
        raise ValueError(f"delta is for privacy profiles, zCDP and approximate-DP relations; this measurement's "
                         f"measure ({_OUR_MEASURES[measure]}) gives (epsilon, delta) itself: drop delta")
    dl = DEFAULT_DELTA if delta is None else delta
    if isinstance(dl, bool) or not isinstance(dl, numbers.Real) or not 0 < float(dl) < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    dom = _attr(meas, "input_domain")
    carrier = _carrier(meas)
    release = _OpenDPRelease(source)
    if kind is None:
        probe = _opendp_example(meas) if example is None else example
        try:
            kind = _kind_of(release(probe, 1, np.random.default_rng(0)))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"could not infer the output kind from one release on {probe!r:.60} ({exc}); pass "
                             "kind='real' or 'finite', or example= a member of the input domain") from None
    attrs = {"seeded": False, **_opendp_attributes(dom, metric), **(attributes or {})}  # OpenDP: OS randomness
    if input_domain is None and carrier == "bool":
        input_domain = [False, True]
    if described:
        label = name or f"OpenDP measurement ({meas.input_metric} -> {meas.output_measure})"
    else:
        label = name or f"OpenDP measurement ({carrier}, {metric} -> {_OUR_MEASURES[measure]})"
    privacy_map = _OpenDPMap(source, measure, float(dl), integral)
    return wrap(release, privacy_map=privacy_map, input_metric=metric, neighbours=neighbours, kind=kind,
                sensitivity=d_in, name=label, attributes=attrs, float_events=float_events,
                input_domain=input_domain)


# --------------------------------------------------------------------------------------------
# diffprivlib: mechanisms

_UTILITY_MECHANISMS = ("Exponential", "PermuteAndFlip")
_UNSUPPORTED_MECHANISMS = ("Bingham", "Vector", "ExponentialCategorical", "ExponentialHierarchical", "Uniform")


def _constructor_params(cls: type) -> list[str]:
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return []
    return [p for p, v in sig.parameters.items() if p != "self" and v.kind in (v.KEYWORD_ONLY, v.POSITIONAL_OR_KEYWORD)]


def _recipe(mech: Any) -> tuple[type, dict, bool]:
    """(class, constructor parameters, whether it takes ``random_state``) of a diffprivlib
    mechanism: diffprivlib keeps each constructor parameter as an attribute of the same name. The
    recipe pickles (the object may not: unseeded mechanisms hold the OS entropy source)."""
    cls = type(mech)
    params = _constructor_params(cls)
    kw = {p: getattr(mech, p) for p in params if p != "random_state" and hasattr(mech, p)}
    return cls, kw, "random_state" in params


def _reseeded(recipe: tuple[type, dict, bool], seed: int, **override: Any) -> Any:
    """The mechanism of ``recipe`` rebuilt with ``random_state=seed`` (and ``override``)."""
    cls, kw, seedable = recipe
    kw = {**kw, **override, **({"random_state": seed} if seedable else {})}
    return _quiet(lambda: cls(**kw))


def _is_integer_mechanism(name: str) -> bool:
    return "Geometric" in name or name == "GaussianDiscrete"


class _DplMechanismRelease:
    """``size`` releases of a diffprivlib mechanism on ``data``: the mechanism rebuilt once per
    call with a seed drawn from ``rng``, then ``randomise`` called ``size`` times."""

    def __init__(self, mechanism: Any, mode: str) -> None:
        self.recipe, self.mode = _recipe(mechanism), mode

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        (seed,) = _seeds(rng, 1)
        name = self.recipe[0].__name__
        if self.mode == "utility":
            u = np.asarray(data, dtype=np.float64)
            if u.ndim != 1:
                raise ValueError(f"{name} takes a 1-D utility vector as data, got shape {u.shape}")
            m = _reseeded(self.recipe, seed, utility=u.tolist())  # diffprivlib wants a list
            return np.asarray(_quiet(lambda: [m.randomise() for _ in range(size)]))
        m = _reseeded(self.recipe, seed)
        v = _scalar(data, name)
        if self.mode == "integer":
            if isinstance(v, float) and not v.is_integer():
                raise ValueError(f"{name} takes an integer value, got {v!r}")
            v = int(v)
        elif self.mode == "real":
            v = float(v)
        return np.asarray(_quiet(lambda: [m.randomise(v) for _ in range(size)]))


def diffprivlib_mechanism(mechanism: Any, *, name: str = "", float_events: bool = True) -> WrappedMechanism:
    """A diffprivlib mechanism object (``diffprivlib.mechanisms``) as an auditable mechanism.

    The claim is read from the object: ``epsilon``, ``delta`` and ``sensitivity``. The data is
    what the mechanism randomises, under the relation its calibration assumes:

    * value mechanisms (``Laplace`` and its truncated/folded/bounded variants, ``Gaussian``,
      ``GaussianAnalytic``, ``GaussianDiscrete``, ``Geometric`` and variants, ``Staircase``,
      ``Snapping``, ``LaplaceBoundedNoise``): one number, ``value`` neighbours at distance at most
      ``sensitivity`` (integer data and finite outputs for the geometric and discrete ones);
    * ``Exponential``, ``PermuteAndFlip``: the utility vector (the object's own utility is
      replaced by the data), ``score_linf`` neighbours (``score_monotone`` when ``monotonic``);
    * ``Binary`` (randomised response on two labels): the label, ``local`` neighbours over
      ``{value0, value1}``.
    """
    require("diffprivlib", "diffprivlib")
    cls_name = type(mechanism).__name__
    if not hasattr(mechanism, "randomise") or not hasattr(mechanism, "epsilon"):
        raise TypeError(f"diffprivlib_mechanism takes a diffprivlib mechanism object (e.g. "
                        f"diffprivlib.mechanisms.Laplace(epsilon=1, sensitivity=1)), got {cls_name}")
    if cls_name in _UNSUPPORTED_MECHANISMS:
        raise TypeError(f"diffprivlib {cls_name} is not supported (its input is not a value, a utility vector or a "
                        "label); supported: value mechanisms (Laplace, Gaussian, Geometric, Staircase, Snapping and "
                        "variants), Exponential, PermuteAndFlip, Binary")
    eps, dl = float(mechanism.epsilon), float(getattr(mechanism, "delta", 0.0) or 0.0)
    label = name or f"diffprivlib {cls_name}"
    seeded = {"seeded": _recipe(mechanism)[2]}  # random_state exists from diffprivlib 0.6 on
    if cls_name == "Binary":
        return wrap(_DplMechanismRelease(mechanism, "label"), epsilon=eps, delta=dl, neighbours="local",
                    input_domain=[mechanism.value0, mechanism.value1], kind="finite", name=label,
                    attributes=seeded, float_events=float_events)
    sens = float(mechanism.sensitivity)
    if cls_name in _UTILITY_MECHANISMS:
        rel = "score_monotone" if getattr(mechanism, "monotonic", False) else "score_linf"
        attrs = {**seeded, **({"length": len(mechanism.utility)} if getattr(mechanism, "utility", None) is not None
                              else {})}
        return wrap(_DplMechanismRelease(mechanism, "utility"), epsilon=eps, delta=dl, neighbours=rel,
                    sensitivity=sens, kind="finite", name=label, attributes=attrs, float_events=float_events)
    integer = _is_integer_mechanism(cls_name)
    attrs = dict(seeded)
    lo, hi = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
    if lo is not None and hi is not None and math.isfinite(float(lo)) and math.isfinite(float(hi)):
        attrs.update(lower=float(lo), upper=float(hi))
    return wrap(_DplMechanismRelease(mechanism, "integer" if integer else "real"), epsilon=eps, delta=dl,
                neighbours="value", sensitivity=sens, kind="finite" if integer else "real", name=label,
                attributes=attrs, float_events=float_events)


# --------------------------------------------------------------------------------------------
# diffprivlib: tools

#: The neighbour relation each tool is calibrated for (diffprivlib/tools/utils.py,
#: quantiles.py, histograms.py, 0.6.6): sensitivities divided by the dataset size n and output
#: truncation to [lower n, upper n] take n as public, i.e. replace-one (bounded DP); histograms
#: add Geometric noise of sensitivity 1 to each bin, i.e. add/remove (one record moves one bin).
TOOL_RELATIONS: dict[str, str] = {
    **{t: "replace_one" for t in ("mean", "nanmean", "var", "nanvar", "std", "nanstd", "sum", "nansum",
                                  "count_nonzero", "median", "quantile", "percentile")},
    "histogram": "add_remove",
    "histogramdd": "add_remove",
}
_INTEGER_TOOLS = ("count_nonzero", "histogram", "histogramdd")


def _takes(fn: Callable[..., Any], param: str) -> bool:
    """Whether ``fn`` names ``param`` (diffprivlib's tools swallow unknown keywords with a warning:
    ``random_state`` exists from 0.6 on, and passing it earlier would silently not seed)."""
    try:
        return param in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class _DplToolRelease:
    """``size`` releases of a diffprivlib tool on ``data``: one call per release, each with a
    seed drawn from ``rng`` (diffprivlib 0.6+; earlier tools draw from the operating system) and a
    fresh ``BudgetAccountant`` (the default one records every spend, and its ledger would grow
    with every release)."""

    def __init__(self, tool: str, epsilon: float, kwargs: dict) -> None:
        self.tool, self.epsilon, self.kwargs = tool, epsilon, kwargs

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        fn = getattr(require("diffprivlib.tools", "diffprivlib"), self.tool)
        accountant = require("diffprivlib.accountant", "diffprivlib").BudgetAccountant
        seeded = _takes(fn, "random_state")
        a = _as_array(data)
        out = []
        for s in _seeds(rng, size):
            kw = {**self.kwargs, **({"random_state": s} if seeded else {})}
            r = _quiet(lambda kw=kw: fn(a, epsilon=self.epsilon, accountant=accountant(), **kw))
            out.append(r[0] if isinstance(r, tuple) else r)  # histograms: (counts, edges); the edges are public
        return np.asarray(out)


def diffprivlib_tool(tool: Any, *, epsilon: float, neighbours: str | None = None, kind: str | None = None,
                     name: str = "", float_events: bool = True, **kwargs: Any) -> WrappedMechanism:
    """A function of ``diffprivlib.tools`` (``mean``, ``var``, ``std``, ``sum``, ``count_nonzero``,
    ``median``, ``quantile``, ``percentile``, ``histogram`` ... or its name) as an auditable
    mechanism on datasets of records.

    ``epsilon`` and ``kwargs`` (``bounds=``, ``range=``, ``bins=``, ``quant=`` ...) are passed to
    every call; the claim is epsilon-DP under :data:`TOOL_RELATIONS` of the tool (or
    ``neighbours``, required for other tools). ``kind``: finite for counts and histograms, real
    otherwise, unless given. Histograms release the counts (the bin edges do not depend on the
    data when ``range`` is given). ``bounds``/``range`` become the generators' ``lower``/``upper``.
    """
    tools = require("diffprivlib.tools", "diffprivlib")
    tool_name = tool if isinstance(tool, str) else getattr(tool, "__name__", "")
    if not tool_name or getattr(tools, tool_name, None) is None or (not isinstance(tool, str) and
                                                                     getattr(tools, tool_name) is not tool):
        raise ValueError(f"tool must be a function of diffprivlib.tools or its name (e.g. 'mean'), got {tool!r}")
    rel = neighbours if neighbours is not None else TOOL_RELATIONS.get(tool_name)
    if rel is None:
        raise ValueError(f"no documented neighbour relation for diffprivlib.tools.{tool_name}: pass neighbours= "
                         f"(tools with one: {', '.join(TOOL_RELATIONS)})")
    if kind is None:
        integral = np.issubdtype(np.dtype(kwargs["dtype"]), np.integer) if kwargs.get("dtype") is not None else False
        kind = "finite" if tool_name in _INTEGER_TOOLS or integral else "real"
    attrs: dict = {"seeded": _takes(getattr(tools, tool_name), "random_state")}
    b = kwargs.get("bounds", kwargs.get("range"))
    if b is not None and len(b) == 2 and all(isinstance(x, numbers.Real) for x in b):
        attrs.update(lower=float(b[0]), upper=float(b[1]))
    return wrap(_DplToolRelease(tool_name, float(epsilon), dict(kwargs)), epsilon=epsilon, neighbours=rel, kind=kind,
                name=name or f"diffprivlib.tools.{tool_name}", attributes=attrs, float_events=float_events)


# --------------------------------------------------------------------------------------------
# diffprivlib: models

#: The fitted attributes released by each model (their concatenation, flattened, is the output).
MODEL_OUTPUTS: dict[str, tuple[str, ...]] = {
    "GaussianNB": ("theta_", "var_", "class_count_"),
    "LinearRegression": ("coef_", "intercept_"),
    "LogisticRegression": ("coef_", "intercept_"),
    "KMeans": ("cluster_centers_",),
    "PCA": ("components_", "explained_variance_", "mean_"),
    "StandardScaler": ("mean_", "var_"),
}
_UNSUPERVISED = ("KMeans", "PCA", "StandardScaler")
_OLD_NAMES = {"var_": "sigma_"}  # scikit-learn < 1.0 called GaussianNB's variances sigma_


class _DplModelRelease:
    """``size`` fits of a diffprivlib model on ``data`` (records as rows; the last column is the
    label of a supervised model): each a clone of the model with a seed drawn from ``rng`` and a
    fresh ``BudgetAccountant``; the release is the fitted ``outputs``, flattened into one row."""

    def __init__(self, model: Any, outputs: tuple[str, ...], supervised: bool) -> None:
        self.model, self.outputs, self.supervised = model, outputs, supervised

    def _fit_once(self, X: np.ndarray, y: np.ndarray | None, seed: int) -> np.ndarray:
        from sklearn.base import clone

        accountant = require("diffprivlib.accountant", "diffprivlib").BudgetAccountant
        m = clone(self.model)
        params = m.get_params()
        m.set_params(**{k: v for k, v in (("random_state", seed), ("accountant", accountant())) if k in params})
        _quiet(lambda: m.fit(X, y) if y is not None else m.fit(X))
        parts = []
        for a in self.outputs:
            v = getattr(m, a, None)
            if v is None and a in _OLD_NAMES:
                v = getattr(m, _OLD_NAMES[a], None)
            if v is None:
                raise ValueError(f"{type(m).__name__} has no fitted attribute {a!r}")
            parts.append(np.ravel(np.asarray(v, dtype=np.float64)))
        return np.concatenate(parts)

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        a = np.asarray(_as_array(data), dtype=np.float64)
        if a.ndim != 2 or a.shape[0] == 0 or (self.supervised and a.shape[1] < 2):
            need = "features then the label" if self.supervised else "features"
            raise ValueError(f"{type(self.model).__name__} takes records as rows of a 2-D array or DataFrame "
                             f"({need}), got shape {a.shape}")
        X, y = (a[:, :-1], a[:, -1]) if self.supervised else (a, None)
        return np.stack([self._fit_once(X, y, s) for s in _seeds(rng, size)])


def diffprivlib_model(model: Any, *, outputs: tuple[str, ...] | None = None, supervised: bool | None = None,
                      neighbours: str = "replace_one", name: str = "", float_events: bool = True) -> WrappedMechanism:
    """An unfitted estimator of ``diffprivlib.models`` as an auditable mechanism: the data are
    records as rows (features, then the label for a supervised model), the release is the fitted
    parameter vector (:data:`MODEL_OUTPUTS`, or ``outputs``), the claim ``model.epsilon``-DP.

    diffprivlib does not state the neighbour relation of its models; their calibration divides
    by the public dataset size or truncates at it (e.g. GaussianNB's class counts), i.e. bounded
    DP: ``replace_one`` by default.
    """
    require("diffprivlib", "diffprivlib")
    cls_name = type(model).__name__
    if not (hasattr(model, "fit") and hasattr(model, "get_params") and hasattr(model, "epsilon")):
        raise TypeError(f"diffprivlib_model takes an estimator of diffprivlib.models (e.g. GaussianNB(epsilon=1, "
                        f"bounds=...)), got {cls_name}")
    outs = tuple(outputs) if outputs is not None else MODEL_OUTPUTS.get(cls_name)
    if not outs:
        raise ValueError(f"no default outputs for {cls_name}: pass outputs=(fitted attribute names, ...); "
                         f"defaults exist for {', '.join(MODEL_OUTPUTS)}")
    sup = (cls_name not in _UNSUPERVISED) if supervised is None else bool(supervised)
    return wrap(_DplModelRelease(model, outs, sup), epsilon=float(model.epsilon), neighbours=neighbours,
                kind="real", name=name or f"diffprivlib {cls_name}", float_events=float_events,
                attributes={"seeded": "random_state" in model.get_params()})


def diffprivlib(obj: Any, **kwargs: Any) -> WrappedMechanism:
    """Dispatch to :func:`diffprivlib_mechanism` (a mechanism object), :func:`diffprivlib_tool`
    (a function of ``diffprivlib.tools`` or its name; pass ``epsilon=``) or
    :func:`diffprivlib_model` (an estimator of ``diffprivlib.models``)."""
    module = getattr(obj, "__module__", "") or type(obj).__module__
    if isinstance(obj, str) or (callable(obj) and module.startswith("diffprivlib.tools")):
        return diffprivlib_tool(obj, **kwargs)
    if hasattr(obj, "fit") and hasattr(obj, "get_params"):
        return diffprivlib_model(obj, **kwargs)
    return diffprivlib_mechanism(obj, **kwargs)


# --------------------------------------------------------------------------------------------
# python-dp (Google's differential-privacy library)

#: The aggregations of ``pydp.algorithms.laplacian``: name -> whether the output is a count
#: (an integer whatever ``dtype`` says).
PYDP_ALGORITHMS: dict[str, bool] = {
    "Count": True, "BoundedSum": False, "BoundedMean": False, "BoundedVariance": False,
    "BoundedStandardDeviation": False, "Median": False, "Percentile": False, "Max": False, "Min": False,
}


class _PydpRelease:
    """``size`` results of one python-dp aggregation on ``data`` (one record per entry). One object
    serves every release: ``quick_result`` resets its budget and state before each (python-dp 1.1),
    so the releases are independent. Only the class name and its arguments travel to workers (the
    C++ object does not pickle)."""

    def __init__(self, algorithm: str, params: dict) -> None:
        self.algorithm, self.params = algorithm, params

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        a = _as_array(data)
        if a.ndim != 1:
            raise ValueError(f"python-dp {self.algorithm} takes one number per record (a 1-D list or array), "
                             f"got shape {a.shape}")
        integral = self.params.get("dtype", "int") == "int"
        values = a.astype(np.int64 if integral else np.float64).tolist()  # python-dp takes a list
        m = _quiet(lambda: getattr(require("pydp.algorithms.laplacian", "python-dp"), self.algorithm)(**self.params))
        return np.asarray([m.quick_result(values) for _ in range(size)])


def pydp(algorithm: Any, *, name: str = "", float_events: bool = True, **params: Any) -> WrappedMechanism:
    """An aggregation of python-dp (Google's differential-privacy library) as an auditable
    mechanism on datasets of numbers (one record per entry; NaN records go in as they are).

    ``algorithm`` is a class of ``pydp.algorithms.laplacian`` (:data:`PYDP_ALGORITHMS`) or its
    name, and ``params`` its constructor arguments (``epsilon=``, ``delta=``, ``lower_bound=``,
    ``upper_bound=``, ``percentile=``, ``linf_sensitivity=``, ``dtype=`` ...). The object is built
    once here and its claim read from it: ``epsilon``/``delta``-DP for datasets that differ in one
    user's contributions, i.e. up to ``linf_sensitivity`` records added or removed (Google's
    library bounds each user's records per aggregation by ``linf_sensitivity``; 1 gives the plain
    ``add_remove`` claim, more a claim over the symmetric distance up to that many records).
    ``lower_bound``/``upper_bound`` become the generators' ``lower``/``upper``. Counts, and every
    aggregation with ``dtype="int"`` (python-dp's default), release integers (``finite``); the
    others release doubles (``real``, float events on by default).

    python-dp draws from the operating system and cannot be seeded: audits are valid at their
    level but not bit-reproducible (``seeded`` is False). A python-dp object does not expose its
    bounds, so an instance is refused: pass the class and its arguments.
    """
    mod = require("pydp.algorithms.laplacian", "python-dp")
    if isinstance(algorithm, str):
        algo_name = algorithm
    elif isinstance(algorithm, type):
        algo_name = algorithm.__name__
    else:
        raise TypeError(f"pydp takes a class of pydp.algorithms.laplacian (or its name) and its constructor "
                        f"arguments, e.g. adapters.pydp(BoundedMean, epsilon=1.0, lower_bound=0.0, upper_bound=1.0, "
                        f"dtype='float'); got an instance of {type(algorithm).__name__} (its bounds cannot be read "
                        f"back from it)")
    cls = getattr(mod, algo_name, None) if algo_name in PYDP_ALGORITHMS else None
    if cls is None or (isinstance(algorithm, type) and algorithm is not cls):
        raise ValueError(f"algorithm must be one of pydp.algorithms.laplacian.{{{', '.join(PYDP_ALGORITHMS)}}} "
                         f"or its name, got {algorithm!r}")
    try:
        obj = _quiet(lambda: cls(**params))
    except TypeError as e:
        hint = ("; python-dp's dtype defaults to 'int': pass dtype='float' for real data"
                if "dtype" not in params and "incompatible" in str(e) else "")
        why = str(e).splitlines()[0].split(". The following")[0]  # pybind11 lists every overload after it
        raise ValueError(f"python-dp {algo_name}({', '.join(f'{k}={v!r}' for k, v in params.items())}): "
                         f"{why}{hint}") from None
    epsilon = float(obj.epsilon)
    delta = float(getattr(obj, "delta", 0.0) or 0.0)
    linf = getattr(obj, "linf_sensitivity", 1)
    linf = int(linf) if isinstance(linf, numbers.Integral) and linf > 1 else 1  # Percentile says "Not set"
    integral = PYDP_ALGORITHMS[algo_name] or getattr(obj, "dtype", "int") == "int"
    attrs: dict = {"seeded": False}
    lo, hi = params.get("lower_bound"), params.get("upper_bound")
    if isinstance(lo, numbers.Real) and isinstance(hi, numbers.Real):
        attrs.update(lower=float(lo), upper=float(hi))
    label = name or f"python-dp {algo_name}"
    release = _PydpRelease(algo_name, dict(params))
    if linf == 1:
        return wrap(release, epsilon=epsilon, delta=delta, neighbours="add_remove", kind="finite" if integral else "real",
                    name=label, attributes=attrs, float_events=float_events)
    return wrap(release, privacy_map=ConstantMap(epsilon, delta, up_to=float(linf)), input_metric="symmetric_distance",
                kind="finite" if integral else "real", name=label, attributes=attrs, float_events=float_events)


# --------------------------------------------------------------------------------------------
# any of the three

def adapt(obj: Any, **kwargs: Any) -> WrappedMechanism:
    """The adapter for ``obj``, chosen from where it comes from: an OpenDP ``Measurement``
    (:func:`opendp`), a diffprivlib mechanism, tool (pass ``epsilon=``) or estimator
    (:func:`diffprivlib`), or a class of ``pydp.algorithms.laplacian`` with its constructor
    arguments (:func:`pydp`). ``kwargs`` go to that adapter. A factory function of an OpenDP
    measurement cannot be told from any other function: pass it to :func:`opendp`."""
    module = getattr(obj, "__module__", "") if isinstance(obj, type) or callable(obj) else ""
    module = module or type(obj).__module__ or ""
    root = module.split(".")[0]
    if root == "opendp" or _is_measurement(obj):
        return opendp(obj, **kwargs)
    if root == "diffprivlib":
        return diffprivlib(obj, **kwargs)
    if root in ("pydp", "_algorithms") or (isinstance(obj, str) and obj in PYDP_ALGORITHMS):
        return pydp(obj, **kwargs)
    if isinstance(obj, str):
        return diffprivlib(obj, **kwargs)  # a name of diffprivlib.tools
    raise TypeError(f"adapt takes an OpenDP Measurement, a diffprivlib mechanism, tool or estimator, or a python-dp "
                    f"algorithm class; got {type(obj).__name__} from module {module or '?'!r} (wrap other code with "
                    f"dpharness.verifiers.wrap)")


# the one intake of user code (assert_dp, a config's callable:) hands these libraries' objects to adapt
register_recogniser(adapt, packages=("opendp", "diffprivlib", "pydp", "_algorithms"))
