"""OpenDP: a ``Measurement`` (or a factory building one) as an auditable mechanism whose claim is
its own privacy map (docs/adapters.md, "OpenDP").

Its input metric and output measure are read from the object and become a privacy-map claim
(:mod:`dpharness.verifiers.claims`), so every audited pair is held to ``measurement.map`` at its
own distance. The same calls work from OpenDP 0.3 on (docs/adapters.md, "Versions tested"): what
an old release does not describe (its metric and measure before 0.7, its map before 0.5) is
inferred from the object. OpenDP draws from the operating system and cannot be seeded: audits are
valid but not bit-reproducible (``seeded`` is False).
"""

from __future__ import annotations

import math
import numbers
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from dpharness.adapters.common import DEFAULT_DELTA, kind_of, quiet, require, scalar, as_array
from dpharness.adapters.library import Library, Target, TargetError
from dpharness.adapters.opendp_api import api
from dpharness.adapters.opendp_legacy import legacy_measure, legacy_metric, smallest_accepted
from dpharness.adapters.opendp_releases import (dict_keys, drive, is_queryable, map_types, partition_key, script_of, shape_releases,
                                               to_bitvector, to_map)
from dpharness.adapters.opendp_specs import resolve_params

if TYPE_CHECKING:  # the verifier is imported when an adapter is built: reading the table of libraries stays cheap
    from dpharness.verifiers.wrap import WrappedMechanism

__all__ = ["opendp", "OPENDP_METRICS", "OPENDP_MEASURES", "PARTITION_METRICS", "LIBRARY"]

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
    # per-partition contributions (threshold and ALP measurements): one partition moves, by the
    # distance; the map is read at d_in = (1, d, d) (docs/adapters.md, "OpenDP: partitions")
    "L01InfDistance": "l1_distance",
    "L02InfDistance": "l2_distance",
}
#: OpenDP's metrics of partitioned data, whose distances are (l0, lp, linf) triples.
PARTITION_METRICS = ("L01InfDistance", "L02InfDistance")
#: OpenDP output measure -> how its map's value becomes (epsilon, delta).
OPENDP_MEASURES: dict[str, str] = {
    "MaxDivergence": "pure: epsilon",
    "Approximate(MaxDivergence)": "approximate: (epsilon, delta)",
    "FixedSmoothedMaxDivergence": "approximate: (epsilon, delta)",
    "SmoothedMaxDivergence": "privacy profile: epsilon(delta) at the chosen delta",
    "ZeroConcentratedDivergence": "zCDP: rho, converted to epsilon at the chosen delta",
    "Approximate(ZeroConcentratedDivergence)": "(rho, delta0): rho converted at the chosen delta, delta0 + delta",
}
_INT_TYPES = ("i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize")
_MEASURE_KINDS = {"MaxDivergence": "pure", "FixedSmoothedMaxDivergence": "approximate",
                  "SmoothedMaxDivergence": "profile", "ZeroConcentratedDivergence": "zcdp"}
_OUR_MEASURES = {"pure": "max_divergence", "approximate": "approximate(max_divergence)",
                 "profile": "smoothed_max_divergence", "zcdp": "zero_concentrated_divergence",
                 "approx_zcdp": "approximate(zero_concentrated_divergence)"}


def _is_measurement(obj: Any) -> bool:
    """An OpenDP ``Measurement`` of any release: since 0.7 it describes its domain, metric and
    measure; before, only its carrier and distance types (and before 0.5 it has a privacy
    relation ``check`` instead of a map)."""
    if not callable(obj) or not (hasattr(obj, "map") or hasattr(obj, "check")):
        return False
    return all(hasattr(obj, a) for a in ("input_metric", "output_measure", "input_domain")) or all(
        hasattr(obj, a) for a in ("input_carrier_type", "input_distance_type", "output_distance_type"))


def _is_transformation(obj: Any) -> bool:
    """An OpenDP ``Transformation``: a stability map between metrics, no noise and no privacy claim
    (its map is a distance, not an epsilon)."""
    return hasattr(obj, "output_metric") and hasattr(obj, "input_metric") and not hasattr(obj, "output_measure") \
        or (hasattr(obj, "output_distance_type") and hasattr(obj, "input_carrier_type")
            and type(obj).__name__ == "Transformation")


def _not_a_transformation(obj: Any, what: str) -> None:
    if _is_transformation(obj):
        raise TypeError(f"{what} is an OpenDP Transformation (a stability map: it adds no noise and claims no "
                        "privacy); chain a measurement to release it privately, e.g. "
                        "`make_sum(...) >> dp.m.then_laplace(scale)`")


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
    if text.startswith("Approximate(") and text[len("Approximate("):].startswith("ZeroConcentratedDivergence"):
        return "approx_zcdp"  # the Gaussian threshold measurements: (rho, delta)
    head = text.split("(")[0].split("<")[0].strip()
    if head not in _MEASURE_KINDS:
        raise ValueError(f"OpenDP output measure {text} is not supported; supported: {', '.join(OPENDP_MEASURES)}")
    return _MEASURE_KINDS[head]


def _attr(obj: Any, name: str) -> Any:
    """``obj.name``, or None when it is missing or the library raises reading it (OpenDP domain
    descriptors raise for types they do not describe, e.g. the bounds of a boolean domain)."""
    if obj is None:
        return None
    try:
        return getattr(obj, name, None)
    except Exception:  # the library's descriptors raise their own exceptions (OpenDPException, ...)
        return None


def _partitioned(meas: Any) -> bool:
    """Whether the input metric is OpenDP's L01InfDistance or L02InfDistance (partitions)."""
    return str(_attr(meas, "input_metric")).split("(")[0].strip() in PARTITION_METRICS


def _integral_distance(meas: Any, metric: str) -> bool:
    t = _attr(meas, "input_distance_type") or _attr(_attr(meas, "input_metric"), "distance_type")
    t = None if t is None else str(t)  # a RuntimeType since 0.7
    if isinstance(t, str) and t.startswith("("):  # (l0, lp, linf) of partitions: the per-partition type
        t = t.strip("()").split(",")[-1].strip()
    if isinstance(t, str) and t:
        return t in _INT_TYPES
    return metric in ("symmetric_distance", "insert_delete_distance", "change_distance", "hamming_distance",
                      "discrete_distance")


class _Measurement:
    """The measurement, or the factory that builds it: a measurement is a pointer into the
    library and does not pickle, a module-level factory does (configs run audits in workers)."""

    def __init__(self, source: Any) -> None:
        _not_a_transformation(source, "opendp() was given an object that")
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
            _not_a_transformation(meas, f"what {self.factory!r} builds")
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
        a = as_array(data)
        if a.ndim != 1:
            raise ValueError(f"the measurement takes a 1-D dataset ({carrier}), got shape {a.shape}")
        inner = carrier[4:-1]
        return [_convert_atom(v, inner) for v in a.tolist()]
    if carrier in ("f64", "f32", "bool", "String") or carrier in _INT_TYPES:
        return _convert_atom(scalar(data, f"the measurement ({carrier})"), carrier)
    if map_types(carrier) is not None:  # partitioned data: one value per partition (opendp_releases)
        return to_map(data, carrier)
    if carrier == "BitVector":
        return to_bitvector(data)
    return data


class _OpenDPRelease:
    """``size`` releases: ``measurement(data)`` called ``size`` times (OpenDP samples from the
    operating system, so ``rng`` is not used). Data outside the input domain raise ValueError
    (OpenDP 0.7+; earlier releases do not describe their domain). A release that is a
    ``Queryable`` is asked ``queries`` in order; dicts are read on the fixed ``keys``, ``None`` is
    NaN (:func:`dpharness.adapters.opendp_releases.shape_releases`)."""

    def __init__(self, source: _Measurement, queries: list | None = None, keys: list | None = None) -> None:
        self.source, self.queries, self.keys = source, queries, list(keys or [])

    def raw(self, meas: Any, x: Any) -> Any:
        out = meas(x)
        if is_queryable(out):
            if self.queries is None:
                raise ValueError("the measurement releases a Queryable: give the adapter queries= (the interaction "
                                 "script: sub-measurements or query values, asked in order)")
            return drive(out, self.queries)
        return out

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        meas = self.source.get()
        dom = _attr(meas, "input_domain")
        x = _to_carrier(data, _carrier(meas))
        member = _attr(dom, "member")
        if member is not None:
            try:
                inside = bool(member(x))
            except Exception as exc:  # the library's domain may raise anything on data it cannot read
                raise ValueError(f"data {x!r:.80} cannot be read by the input domain {dom}: {exc}") from None
            if not inside:
                raise ValueError(f"data {x!r:.80} are not in the measurement's input domain {dom}")
        return shape_releases(quiet(lambda: [self.raw(meas, x) for _ in range(size)]), self.keys)


class _OpenDPMap:
    """The measurement's privacy map as (epsilon, delta): pure and approximate measures as they
    are, a privacy profile at ``delta``, zCDP's rho converted at ``delta``. A measurement with a
    privacy relation instead of a map (OpenDP < 0.5) is read by bisection: the smallest epsilon
    its ``check(d_in, epsilon)`` (or ``check(d_in, (epsilon, delta))``) accepts."""

    def __init__(self, source: _Measurement, measure: str, delta: float, integral: bool,
                 partitioned: bool = False) -> None:
        self.source, self.measure, self.delta, self.integral = source, measure, delta, integral
        # partitions: a pair moves one partition by d, so OpenDP's (l0, lp, linf) distance is (1, d, d)
        self.partitioned = partitioned
        self._cache: dict = {}

    def _relation(self, meas: Any, d: Any) -> Any:
        def accepts(eps: float) -> bool:
            d_out = (eps, self.delta) if self.measure == "approximate" else eps
            try:
                return bool(quiet(lambda: meas.check(d, d_out)))
            except Exception:  # the library's relation may raise anything (OpenDPException, ...): not accepted
                return False

        if self.measure not in ("pure", "approximate"):
            raise ValueError(f"a privacy relation (OpenDP before 0.5) is read for pure or approximate DP, not "
                             f"{_OUR_MEASURES[self.measure]}")
        eps = smallest_accepted(accepts, f"d_in={d}")
        return (eps, self.delta) if self.measure == "approximate" else eps

    def __call__(self, d_in: Any) -> Any:
        # maps are monotone: an integer distance type is evaluated at the next integer up
        d = math.ceil(float(d_in)) if self.integral else float(d_in)
        if d not in self._cache:
            meas = self.source.get()
            at = (1, d, d) if self.partitioned else d
            self._cache[d] = quiet(lambda: meas.map(at)) if hasattr(meas, "map") else self._relation(meas, d)
        out = self._cache[d]
        if self.measure == "pure":
            return float(out)
        if self.measure == "approximate":
            eps, dl = out
            return float(eps), float(dl)
        if self.measure == "profile":
            return float(out.epsilon(self.delta)), self.delta
        from dpharness.verifiers.claims import zcdp_to_approx_dp

        if self.measure == "approx_zcdp":  # (rho, delta0): rho-zCDP except with probability delta0, so the
            rho, d0 = out                  # conversion's delta adds to delta0
            return zcdp_to_approx_dp(float(rho), self.delta), min(1.0, float(d0) + self.delta)
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
    if map_types(carrier) is not None:  # partitions: three partitions of 1
        return [1, 1, 1]
    if carrier == "BitVector":  # the all-zero report (weight 0 is within any max_weight)
        return [0] * 8
    return _example_atom(carrier, _bounds_of(dom) if dom is not None else None)


def _default_keys(first: Any, carrier: str) -> list:
    """The keys dict releases are read on: those of one release on the example, and for
    partitioned input the keys of the first 10 partitions (the longest vectors the histogram
    generator makes), so a partition released under one dataset only has its coordinate."""
    found = dict_keys(first)
    types = map_types(carrier)
    if types is not None and (found or isinstance(first, dict)):
        found = dict_keys([dict.fromkeys(found), dict.fromkeys(partition_key(i, types[0]) for i in range(10))])
    return found


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


def opendp(measurement: Any, *, d_in: float | None = None, delta: float | None = None, kind: str | None = None,
           example: Any = None, neighbours: str | None = None, input_domain: Any = None, name: str = "",
           attributes: dict | None = None, float_events: bool = True, input_metric: str | None = None,
           output_measure: str | None = None, queries: list | None = None, keys: list | None = None) -> WrappedMechanism:
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
        move by). Default 1; 2 for a dataset of known size (a ``VectorDomain`` with ``size=n``)
        under ``SymmetricDistance``, whose neighbours replace one record (``neighbours``
        defaults to ``replace_one`` there: adding or removing a record leaves the domain, and at
        distance 1 the map claims nothing). For ``L01InfDistance`` / ``L02InfDistance``
        (partitions) it is the amount one partition moves by: the map is read at ``(1, d, d)``.
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
        The relation whose pairs :func:`verifiers.search` generates (default: the metric's,
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
    queries
        For a measurement that releases a ``Queryable`` (compositions, privacy filters, ALP): the
        interaction script, asked in order on every release (sub-measurements or query values);
        the release is the vector of answers.
    keys
        For releases that are dicts (``HashMap``\\ s, e.g. ``make_count_by >> then_laplace``): the
        keys read, one coordinate each, NaN when a release lacks one; default: the keys of one
        release on ``example`` (:mod:`dpharness.adapters.opendp_releases`).
    """
    from dpharness.verifiers.wrap import wrap

    require("opendp", "opendp")
    source = _Measurement(measurement)
    meas = source.get()
    described = _describes_itself(meas)
    dom = _attr(meas, "input_domain")
    sized = described and _attr(dom, "size") is not None and str(meas.input_metric).startswith("SymmetricDistance")
    if sized and neighbours is None:  # a dataset of known size: neighbours replace a record (distance 2)
        neighbours = "replace_one"
    if d_in is None:
        d_in = 2 if sized and neighbours == "replace_one" else 1
    if isinstance(d_in, bool) or not isinstance(d_in, numbers.Real) or not 0 < float(d_in) < math.inf:
        raise ValueError(f"d_in must be a finite distance > 0, got {d_in!r}")
    metric = _metric_of(meas) if described else (
        _our_metric(input_metric) if input_metric is not None else legacy_metric(meas))
    if described and input_metric is not None and _our_metric(input_metric) != metric:
        raise ValueError(f"input_metric={input_metric!r} disagrees with the measurement's own {meas.input_metric}")
    integral = _integral_distance(meas, metric)
    d_ref = math.ceil(float(d_in)) if integral else float(d_in)
    measure = _measure_of(meas) if described else (
        _our_measure(output_measure) if output_measure is not None else legacy_measure(meas, d_ref))
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
    carrier = _carrier(meas)
    if queries is None:  # a factory may give the script with the measurement (opendp_releases.with_script)
        queries = script_of(meas)
    release = _OpenDPRelease(source, queries=None if queries is None else list(queries), keys=keys)
    if kind is None or keys is None:
        probe = _opendp_example(meas) if example is None else example
        try:
            first = quiet(lambda: release.raw(meas, _to_carrier(probe, carrier)))
            if keys is None:  # the key list of dict releases is fixed here, once (a fixed projection)
                release.keys = _default_keys(first, carrier)
            kind = kind or kind_of(release(probe, 1, np.random.default_rng(0)))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"could not infer the output kind from one release on {probe!r:.60} ({exc}); pass "
                             "kind='real' or 'finite', or example= a member of the input domain") from None
        except Exception as exc:  # the library raises its own (OpenDPException) on an example it refuses
            raise ValueError(f"one release on the example {probe!r:.60} failed ({type(exc).__name__}: "
                             f"{str(exc).strip()[:200]}); pass example= a member of the input domain") from None
    attrs = {"seeded": False, **_opendp_attributes(dom, metric), **(attributes or {})}  # OpenDP: OS randomness
    if input_domain is None and carrier == "bool":
        input_domain = [False, True]
    if input_domain is None and carrier == "BitVector":  # reports of max_weight bits: every one is in the domain
        found = re.search(r"weight=(\d+)", str(dom))
        input_domain = {"bits": int(found.group(1)) if found else 8}
    if described:
        label = name or f"OpenDP measurement ({meas.input_metric} -> {meas.output_measure})"
    else:
        label = name or f"OpenDP measurement ({carrier}, {metric} -> {_OUR_MEASURES[measure]})"
    privacy_map = _OpenDPMap(source, measure, float(dl), integral, partitioned=described and _partitioned(meas))
    return wrap(release, privacy_map=privacy_map, input_metric=metric, neighbours=neighbours, kind=kind,
                sensitivity=d_in, name=label, attributes=attrs, float_events=float_events,
                input_domain=input_domain)



def _from_target(t: Target) -> WrappedMechanism:
    """``library: "opendp.measurements:make_..."``: the constructor called with ``params`` (the
    ``contrib`` feature enabled), its measurement adapted with the ``adapter`` options."""
    if not callable(t.obj):
        raise TargetError(f"{t.path} is not an OpenDP constructor (a function returning a Measurement)", "library")
    try:
        from opendp.mod import enable_features

        enable_features("contrib")
    except ImportError:
        pass
    try:
        params = resolve_params(t.params)
    except ValueError as exc:
        field = str(exc).split(":")[0] if str(exc).startswith("params.") else "params"
        raise TargetError(str(exc), field) from None
    made = t.make(**params)
    return t.adapt(opendp, made, **t.adapter)


LIBRARY = Library(dist="opendp", root="opendp", takes="an OpenDP Measurement", adapt=opendp,
                  from_target=_from_target, modules=("opendp",), recognises=_is_measurement, api=api)
