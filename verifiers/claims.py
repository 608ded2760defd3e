"""Privacy maps as claims: a claim that is a function of the distance between the two inputs.

A fixed :class:`mechanisms.PrivacyClaim` says "(epsilon, delta)-DP for neighbours under one
relation". Libraries such as OpenDP state more: a *privacy map* ``d_in -> epsilon`` (or
``-> (epsilon, delta)``) that bounds the privacy loss between any two inputs at distance
``d_in`` under an *input metric*. :class:`PrivacyMapClaim` carries such a map; an audit of a pair
holds the mechanism to the map evaluated at that pair's distance (:func:`at_pair`), so a pair
at symmetric distance 2 (one record replaced) is held to ``privacy_map(2)``.

The input metrics (:data:`INPUT_METRICS`: symmetric, insert/delete, change and Hamming distances
of record datasets, absolute, L1, L2, L-inf and monotone L-inf distances of scalars and vectors,
the discrete distance of local DP) are defined in :mod:`verifiers.relations.metrics`.

The relation the pair generators use (``claim.neighbours``) defaults to :data:`DEFAULT_RELATION`
of the metric; any generated or given pair is legal when its distance is finite and the map
returns a valid claim at it. The claim's ``relation`` (:class:`MapRelation`) wraps that relation:
it generates and checks the pairs, and the map admits them, so the one
:func:`verifiers.pairs_for` (also :func:`pairs_for` here) serves fixed claims and maps alike.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from dpharness.mechanisms.base import PrivacyClaim
from dpharness.verifiers.relations import PairList, Relation, check_neighbours, get, pairs_for
from dpharness.verifiers.relations.registry import names as relation_names
from dpharness.verifiers.relations.metrics import INPUT_METRICS, RECORD_METRICS, distance
from dpharness.verifiers.verdict import Verdict, format_data, summarize

__all__ = ["INPUT_METRICS", "DEFAULT_RELATION", "PrivacyMapClaim", "MapRelation", "map_claim", "distance", "evaluate",
           "claim_at", "check_pair", "at_pair", "AtPair", "annotate", "pairs_for", "is_map_claim", "LinearMap",
           "ConstantMap", "zcdp_to_approx_dp"]

class _MetricTable(Mapping[str, Any]):
    """A table read off the registered relations on first use (each relation module declares its
    ``default_for`` and ``finite_under`` metrics), so a relation added later takes part in privacy
    maps with no edit here."""

    def __init__(self, build: Callable[[], dict[str, Any]]) -> None:
        self._build, self._key, self._table = build, None, {}

    def _get(self) -> dict[str, Any]:
        key = relation_names()  # rebuilt when a relation is registered after first use
        if key != self._key:
            self._key, self._table = key, self._build()
        return self._table

    def __getitem__(self, metric: str) -> Any:
        return self._get()[metric]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return repr(self._get())


def _relations() -> list[Relation]:
    return [get(name) for name in relation_names()]


def _defaults() -> dict[str, str]:
    table: dict[str, str] = {}
    for rel in _relations():
        for metric in rel.default_for:
            table.setdefault(metric, rel.name)
    return table


def _finite() -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {m: [] for m in INPUT_METRICS}
    for rel in _relations():
        for metric in rel.finite_under:
            table.setdefault(metric, []).append(rel.name)
    default = _defaults()
    # the default relation first: error messages list it first
    return {m: tuple(sorted(rels, key=lambda r: r != default.get(m))) for m, rels in table.items()}


#: The neighbour relation whose pair generators a metric uses by default (each relation's ``default_for``).
DEFAULT_RELATION: Mapping[str, str] = _MetricTable(_defaults)

#: Relations whose generated pairs are at a finite distance under each metric (each relation's ``finite_under``).
_COMPATIBLE: Mapping[str, tuple[str, ...]] = _MetricTable(_finite)


def _compatible(metric: str) -> tuple[str, ...]:
    """The relations whose generated pairs are at a finite distance under ``metric``."""
    return _COMPATIBLE[metric]


# --------------------------------------------------------------------------------------------
# the claim

def evaluate(privacy_map: Callable[[Any], Any], d_in: float) -> tuple[float, float]:
    """``privacy_map(d_in)`` as ``(epsilon, delta)``: the map may return epsilon (a number) or a
    pair ``(epsilon, delta)``; epsilon must be finite and > 0, delta in [0, 1). ``ValueError``
    naming the distance when the map raises or returns anything else."""
    try:
        out = privacy_map(d_in)
    except Exception as exc:  # the map is user or library code and may raise anything: named as a ValueError
        raise ValueError(f"privacy_map({d_in:g}) raised {type(exc).__name__}: {exc}") from exc
    if isinstance(out, PrivacyClaim):
        eps, dl = out.epsilon, out.delta
    elif isinstance(out, (tuple, list)) and len(out) == 2:
        eps, dl = out
    else:
        eps, dl = out, 0.0
    ok = all(isinstance(x, (numbers.Real, np.floating, np.integer)) and not isinstance(x, (bool, np.bool_))
             for x in (eps, dl))
    if not ok:
        raise ValueError(f"privacy_map({d_in:g}) must return epsilon or (epsilon, delta) as numbers, got {out!r}")
    eps, dl = float(eps), float(dl)
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"privacy_map({d_in:g}) returned epsilon={eps!r}; a claim needs a finite epsilon > 0")
    if not (0.0 <= dl < 1.0):
        raise ValueError(f"privacy_map({d_in:g}) returned delta={dl!r}; a claim needs delta in [0, 1)")
    return eps, dl


@dataclass(frozen=True)
class PrivacyMapClaim(PrivacyClaim):
    """A claim given by a privacy map over an input metric (see the module docstring).

    ``epsilon``/``delta`` are the map at the reference distance ``d_in`` (1 unless stated: one
    record, one unit of a scalar); ``neighbours`` is the relation whose pairs the generators
    build and ``sensitivity`` the step they use for scalars and vectors (= ``d_in``). Audits
    evaluate ``privacy_map`` at each pair's own distance (:func:`at_pair`). Build it with
    :func:`map_claim`.
    """

    privacy_map: Any = None
    input_metric: str = "symmetric_distance"
    d_in: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not callable(self.privacy_map):
            raise TypeError(f"privacy_map must be callable as privacy_map(d_in), got {self.privacy_map!r}")
        if self.input_metric not in INPUT_METRICS:
            raise ValueError(f"input_metric must be one of {', '.join(INPUT_METRICS)}; got {self.input_metric!r}")

    @property
    def relation(self) -> MapRelation:
        """The relation pairs are searched and admitted under: the map wrapping the relation
        ``neighbours`` names (:class:`MapRelation`)."""
        return MapRelation(self)

    def at(self, d_in: float) -> PrivacyClaim:
        """The fixed claim at distance ``d_in`` (every other field of the claim kept)."""
        eps, dl = evaluate(self.privacy_map, d_in)
        kept = {f.name: getattr(self, f.name) for f in fields(PrivacyClaim)}
        kept.update(epsilon=eps, delta=dl)
        return PrivacyClaim(**kept)

    def __str__(self) -> str:
        head = (f"epsilon={self.epsilon:g} (pure DP)" if self.delta == 0
                else f"(epsilon={self.epsilon:g}, delta={self.delta:g})-DP")
        return (f"privacy map over {self.input_metric}: {head} at distance {self.d_in:g} "
                f"(each pair held to the map at its own distance; {self.neighbours} pairs generated)")


def map_claim(privacy_map: Callable[[Any], Any], input_metric: str, *, neighbours: str | None = None,
              d_in: float | None = None, **extra: Any) -> PrivacyMapClaim:
    """A :class:`PrivacyMapClaim`: ``privacy_map(d) -> epsilon`` or ``-> (epsilon, delta)`` over
    ``input_metric``; ``neighbours`` (default :data:`DEFAULT_RELATION`) picks the pair generators,
    ``d_in`` (default 1) the reference distance and generator step; ``extra`` are further fields
    of the claim (e.g. ``input_domain``)."""
    if not isinstance(input_metric, str) or input_metric not in INPUT_METRICS:
        raise ValueError(f"input_metric must be one of {', '.join(INPUT_METRICS)}; got {input_metric!r}")
    if not callable(privacy_map):
        raise TypeError(f"privacy_map must be callable as privacy_map(d_in) -> epsilon or (epsilon, delta), "
                        f"got {type(privacy_map).__name__} {privacy_map!r}")
    rel = DEFAULT_RELATION[input_metric] if neighbours is None else neighbours
    if rel not in _compatible(input_metric):
        raise ValueError(f"neighbours={rel!r} does not generate pairs at a finite {input_metric}; accepted: "
                         f"{', '.join(_compatible(input_metric))} (default {DEFAULT_RELATION[input_metric]!r})")
    d = 1.0 if d_in is None else d_in
    if isinstance(d, bool) or not isinstance(d, numbers.Real) or not (math.isfinite(float(d)) and float(d) > 0):
        raise ValueError(f"d_in must be a finite distance > 0, got {d_in!r}")
    d = float(d)
    eps, dl = evaluate(privacy_map, _as_distance(input_metric, d))
    sens = None if input_metric in RECORD_METRICS or input_metric == "discrete_distance" else d
    return PrivacyMapClaim(eps, dl, neighbours=rel, sensitivity=sens, privacy_map=privacy_map,
                           input_metric=input_metric, d_in=d, **{k: v for k, v in extra.items() if v is not None})


def is_map_claim(claim: Any) -> bool:
    return isinstance(claim, PrivacyMapClaim)


def _as_distance(metric: str, d: float) -> float | int:
    """Integer metrics (records, discrete) hand the map an int, as OpenDP's u32 distances are."""
    integral = metric in RECORD_METRICS or metric == "discrete_distance"
    return math.ceil(d) if integral else float(d)


def claim_at(claim: PrivacyMapClaim, d1: Any, d2: Any, label: str = "the pair") -> tuple[PrivacyClaim, float]:
    """(the fixed claim the map gives at the distance of ``d1``, ``d2``, that distance);
    ``ValueError`` naming the pair when the distance is infinite or 0 or the map fails there."""
    d = distance(claim.input_metric, d1, d2)
    where = f"{label} (d1={format_data(d1)}, d2={format_data(d2)})"
    if not math.isfinite(d):
        raise ValueError(f"{where} is at infinite {claim.input_metric}: not comparable under the privacy map's "
                         "input metric (e.g. different sizes, shapes or directions)")
    if d == 0:
        raise ValueError(f"{where} is at {claim.input_metric} 0 (the same dataset): nothing to audit")
    dom = getattr(claim, "input_domain", None)
    if dom is not None:  # a declared input domain holds the records (or the whole input)
        why = get(claim.neighbours).why_not_domain(d1, d2, dom)
        if why is not None:
            raise ValueError(f"{where}: {why}")
    try:
        return claim.at(_as_distance(claim.input_metric, d)), d
    except ValueError as exc:
        raise ValueError(f"{where} at {claim.input_metric} {d:g}: {exc}") from None


class MapRelation(Relation):
    """The relation of a privacy-map claim: the relation the claim names (``base``) generates the
    pairs, at step ``d_in`` (the claim's sensitivity), and checks them; a pair is then admitted
    when it is at a finite distance where the map gives a valid claim (:func:`claim_at`)."""

    def __init__(self, claim: PrivacyMapClaim) -> None:
        self.claim = claim
        self._base = get(claim.neighbours)

    @property
    def base(self) -> Relation:
        return self._base

    @property
    def name(self) -> str:
        return self._base.name

    @property
    def family(self) -> str:
        return self._base.family

    @property
    def records(self) -> bool:
        return self._base.records

    @property
    def metric(self) -> str:
        return self.claim.input_metric

    def family_for(self, mechanism: Any) -> str:
        return self._base.family_for(mechanism)

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:
        try:
            claim_at(claim, d1, d2)
        except ValueError as exc:
            return str(exc)
        return None

    def why_not(self, d1: Any, d2: Any, claim: Any) -> str | None:
        return self.why_not_relation(d1, d2, claim)  # claim_at checks the input domain too

    def check(self, d1: Any, d2: Any, claim: Any) -> None:
        claim_at(claim, d1, d2)

    def admit(self, d1: Any, d2: Any, claim: Any, label: str) -> None:
        claim_at(claim, d1, d2, label)

    def admitted(self, pairs: list, claim: Any) -> PairList:
        """The generated pairs at a finite distance where the map is valid; the others are
        dropped and reported in ``skipped``."""
        keep = PairList()
        keep.skipped = list(getattr(pairs, "skipped", []))
        for p in pairs:
            try:
                claim_at(claim, p.d1, p.d2, p.label or "a generated pair")
            except ValueError as exc:
                keep.skipped.append({"pair": p.label, "error": str(exc)[:300]})
                continue
            keep.append(p)
        if not keep:
            raise ValueError(f"no generated pair is at a finite {claim.input_metric} where the privacy map is "
                             f"valid; first: {keep.skipped[0]['error'] if keep.skipped else 'none generated'}")
        return keep

    def __repr__(self) -> str:
        return f"<privacy map over {self.claim.input_metric}, pairs of {self._base!r}>"


def check_pair(d1: Any, d2: Any, claim: Any, label: str = "the pair") -> float | None:
    """The neighbour check of a pair under ``claim``: for a privacy map, a finite distance at
    which the map gives a valid claim (returns the distance); else :func:`check_neighbours`
    (returns None). ``ValueError`` saying why otherwise."""
    if isinstance(claim, PrivacyMapClaim):
        return claim_at(claim, d1, d2, label)[1]
    check_neighbours(d1, d2, claim)
    return None


# --------------------------------------------------------------------------------------------
# a mechanism held to its claim at one pair

class AtPair:
    """A mechanism held to the fixed claim its privacy map gives at one pair's distance: ``claim``
    is that :class:`PrivacyClaim`, ``d_in`` the distance; ``sample``, ``kind``, ``float_events``
    and every other attribute are the mechanism's own."""

    def __init__(self, inner: Any, claim: PrivacyClaim, d_in: float, input_metric: str) -> None:
        self.__dict__.update(_inner=inner, claim=claim, d_in=d_in, input_metric=input_metric)

    @property
    def kind(self) -> str:
        return getattr(self._inner, "kind", "real")

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> Any:
        return self._inner.sample(data, size, rng)

    def __getattr__(self, item: str) -> Any:
        if item.startswith("__") or "_inner" not in self.__dict__:
            raise AttributeError(item)
        return getattr(self.__dict__["_inner"], item)

    def __repr__(self) -> str:
        return f"{self._inner!r} at {self.input_metric} {self.d_in:g}: {self.claim}"


def at_pair(mechanism: Any, d1: Any, d2: Any, *, check: bool = True, label: str = "the pair") -> Any:
    """``mechanism`` as an audit of the pair (d1, d2) sees it: for a privacy-map claim an
    :class:`AtPair` proxy whose ``claim`` is the map at the pair's distance (the pair is always
    checked: the distance must be finite and the map valid there); otherwise the mechanism itself,
    after :func:`verifiers.check_neighbours` when ``check``."""
    claim = mechanism.claim
    if isinstance(claim, PrivacyMapClaim):
        fixed, d = claim_at(claim, d1, d2, label)
        return AtPair(mechanism, fixed, d, claim.input_metric)
    if check:
        check_neighbours(d1, d2, claim)
    return mechanism


def annotate(v: Verdict, mechanism: Any) -> Verdict:
    """The verdict of an :class:`AtPair` audit with the distance said: ``neighbours`` reads
    ``"<metric>=<d>"`` and ``extra`` holds ``d_in`` and ``input_metric``."""
    if not isinstance(mechanism, AtPair):
        return v
    nb = f"{mechanism.input_metric}={mechanism.d_in:g}"
    fields = {f: getattr(v, f) for f in ("epsilon_claimed", "delta_claimed", "epsilon_lower", "epsilon_estimate",
                                         "delta_lower", "violated", "witness", "support_violation",
                                         "detectable_epsilon", "blind_delta", "alpha", "calls", "pairs_tried")}
    fields["neighbours"] = nb
    extra = {**v.extra, "d_in": mechanism.d_in, "input_metric": mechanism.input_metric}
    return replace(v, neighbours=nb, summary=summarize(fields), extra=extra)


# --------------------------------------------------------------------------------------------
# picklable maps (configs run audits in worker processes: a lambda does not pickle)

@dataclass(frozen=True)
class LinearMap:
    """``d -> (epsilon * d / per, 0)``: a pure-DP claim that grows linearly with the distance
    (Laplace noise of scale per/epsilon on a query of sensitivity ``per``; group privacy of an
    epsilon-DP mechanism with ``per = 1``: Dwork & Roth 2014, Theorem 2.2)."""

    epsilon: float
    per: float = 1.0

    def __call__(self, d_in: Any) -> float:
        return float(self.epsilon) * float(d_in) / float(self.per)


@dataclass(frozen=True)
class ConstantMap:
    """``d -> (epsilon, delta)`` for every distance up to ``up_to`` (a claim that holds for any
    two inputs at most ``up_to`` apart, e.g. local DP under the discrete distance); beyond it the
    map raises, so such pairs are not legal."""

    epsilon: float
    delta: float = 0.0
    up_to: float = 1.0

    def __call__(self, d_in: Any) -> tuple[float, float]:
        if float(d_in) > self.up_to:
            raise ValueError(f"the claim holds for inputs at most {self.up_to:g} apart, not {float(d_in):g}")
        return float(self.epsilon), float(self.delta)


# --------------------------------------------------------------------------------------------
# conversions

def zcdp_to_approx_dp(rho: float, delta: float) -> float:
    """The epsilon at which rho-zCDP implies (epsilon, delta)-DP.

    A rho-zCDP mechanism is (alpha, alpha rho)-RDP for every alpha > 1, hence (epsilon, delta)-DP
    with ``delta = exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) * (1 - 1/alpha)^alpha``
    (Canonne, Kamath & Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020,
    Proposition 12 / Corollary 13; the conversion OpenDP's ``make_zCDP_to_approxDP`` uses). Solved
    for epsilon at each alpha and minimised over alpha; every alpha gives a valid epsilon, so the
    result is sound whatever the optimiser returns. Never above Bun & Steinke's
    ``rho + 2 sqrt(rho ln(1/delta))`` (TCC 2016, Proposition 1.3), which is also tried.
    """
    from scipy.optimize import minimize_scalar

    if isinstance(rho, bool) or not isinstance(rho, numbers.Real) or not (math.isfinite(rho) and rho > 0):
        raise ValueError(f"rho must be a finite number > 0, got {rho!r}")
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1) to convert zCDP to (epsilon, delta)-DP, got {delta!r}")
    rho, log_inv_delta = float(rho), -math.log(float(delta))

    def eps_at(t: float) -> float:  # alpha = 1 + e^t
        a = 1.0 + math.exp(t)
        return a * rho + (a * math.log1p(-1.0 / a) - math.log(a - 1.0) + log_inv_delta) / (a - 1.0)

    res = minimize_scalar(eps_at, bounds=(-20.0, 20.0), method="bounded", options={"xatol": 1e-10})
    best = min(eps_at(float(res.x)), rho + 2.0 * math.sqrt(rho * log_inv_delta))
    return max(best, 0.0)
