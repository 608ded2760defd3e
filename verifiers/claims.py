"""Privacy maps as claims: a claim that is a function of the distance between the two inputs.

A fixed :class:`mechanisms.PrivacyClaim` says "(epsilon, delta)-DP for neighbours under one
relation". Libraries such as OpenDP state more: a *privacy map* ``d_in -> epsilon`` (or
``-> (epsilon, delta)``) that bounds the privacy loss between any two inputs at distance
``d_in`` under an *input metric*. :class:`PrivacyMapClaim` carries such a map; an audit of a pair
holds the mechanism to the map evaluated at that pair's distance (:func:`at_pair`), so a pair
at symmetric distance 2 (one record replaced) is held to ``privacy_map(2)``.

Input metrics (:data:`INPUT_METRICS`; records are the elements of a 1-D array, the rows of a 2-D
array or of a DataFrame, and a NaN record equals a NaN record):

``symmetric_distance``      size of the multiset symmetric difference of the records (adding or
                            removing one record: 1, replacing one: 2) -- OpenDP's SymmetricDistance;
``insert_delete_distance``  the same for ordered datasets: fewest insertions and deletions
                            (n1 + n2 - 2 LCS) -- OpenDP's InsertDeleteDistance;
``change_distance``         records replaced between two datasets of equal size, as multisets
                            (symmetric distance / 2; infinite when the sizes differ) -- OpenDP's
                            ChangeOneDistance;
``hamming_distance``        positions that differ between two ordered datasets of equal size --
                            OpenDP's HammingDistance;
``absolute_distance``       |a - b| for scalars;
``l1_distance``, ``l2_distance``, ``linf_distance``
                            norms of the difference of two vectors of one shape;
``linf_monotone_distance``  the L-inf distance when every coordinate moves in the same direction
                            (infinite otherwise) -- OpenDP's ``linf_distance(monotonic=True)``;
``discrete_distance``       0 if the inputs are equal, else 1 (local DP, randomized response).

The relation the pair generators use (``claim.neighbours``) defaults to :data:`DEFAULT_RELATION`
of the metric; any generated or given pair is legal when its distance is finite and the map
returns a valid claim at it.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from dpharness.mechanisms.base import NEIGHBOURS, PrivacyClaim
from dpharness.verifiers.verdict import Verdict, format_data, summarize

__all__ = ["INPUT_METRICS", "DEFAULT_RELATION", "PrivacyMapClaim", "map_claim", "distance", "evaluate", "claim_at",
           "check_pair", "at_pair", "AtPair", "annotate", "pairs_for", "is_map_claim", "LinearMap", "ConstantMap",
           "zcdp_to_approx_dp"]

INPUT_METRICS: tuple[str, ...] = (
    "symmetric_distance", "insert_delete_distance", "change_distance", "hamming_distance",
    "absolute_distance", "l1_distance", "l2_distance", "linf_distance", "linf_monotone_distance",
    "discrete_distance",
)
#: Metrics on datasets of records (the rest are on scalars, vectors or whole inputs).
RECORD_METRICS = ("symmetric_distance", "insert_delete_distance", "change_distance", "hamming_distance")


def _local() -> str:
    # the local-DP relation, where the tree has it (any two inputs are neighbours)
    return "local" if "local" in NEIGHBOURS else "bit"


#: The neighbour relation whose pair generators a metric uses by default.
DEFAULT_RELATION: dict[str, str] = {
    "symmetric_distance": "add_remove",
    "insert_delete_distance": "add_remove",
    "change_distance": "replace_one",
    "hamming_distance": "replace_one",
    "absolute_distance": "value",
    "l1_distance": "one_differ",
    "l2_distance": "one_differ",
    "linf_distance": "score_linf",
    "linf_monotone_distance": "score_monotone",
    "discrete_distance": _local(),
}

#: Relations whose generated pairs are at a finite distance under each metric.
_COMPATIBLE: dict[str, tuple[str, ...]] = {
    "symmetric_distance": ("add_remove", "replace_one"),
    "insert_delete_distance": ("add_remove", "replace_one"),
    "change_distance": ("replace_one",),
    "hamming_distance": ("replace_one",),
    "absolute_distance": ("value", "bit"),
    "l1_distance": ("one_differ", "score_linf", "score_monotone"),
    "l2_distance": ("one_differ", "score_linf", "score_monotone"),
    "linf_distance": ("score_linf", "score_monotone", "one_differ"),
    "linf_monotone_distance": ("score_monotone", "one_differ"),
    "discrete_distance": tuple(r for r in NEIGHBOURS if r not in ("privacy_unit",)),
}


# --------------------------------------------------------------------------------------------
# distances

class _NaN:
    """The one key of every NaN value, so that a NaN record equals a NaN record."""

    def __repr__(self) -> str:
        return "nan"


_NAN_KEY = _NaN()


def _key(v: Any) -> Any:
    if isinstance(v, (float, np.floating)) and math.isnan(v):
        return _NAN_KEY
    if isinstance(v, (list, tuple)):
        return tuple(_key(x) for x in v)
    return v


def _records(d: Any, name: str) -> list:
    """The records of a dataset as hashable keys: elements of a 1-D array, rows of a 2-D array
    or of a DataFrame (NaN canonicalised)."""
    try:
        a = d.to_numpy(dtype=object) if _is_frame(d) else np.asarray(d)
    except ValueError as exc:  # ragged rows
        raise ValueError(f"{name} must be records (a 1-D array, a 2-D array or a DataFrame): {exc}") from None
    if a.ndim == 0:
        raise ValueError(f"{name} must be a dataset of records (a 1-D array, a 2-D array with one record per row, "
                         f"or a DataFrame), got the scalar {d!r}")
    if a.ndim > 2:
        raise ValueError(f"{name} must be records as a 1-D array, a 2-D array (one record per row) or a DataFrame, "
                         f"got shape {a.shape}")
    rows = a.tolist()
    return [_key(tuple(r) if isinstance(r, list) else r) for r in rows]


def _is_frame(d: Any) -> bool:
    return hasattr(d, "columns") and hasattr(d, "to_numpy")


def _aligned(d1: Any, d2: Any) -> Any:
    """``d2`` with its columns in the order of ``d1`` when both are DataFrames (records are
    compared column by column name); ``ValueError`` when their columns differ."""
    if not (_is_frame(d1) and _is_frame(d2)) or list(d1.columns) == list(d2.columns):
        return d2
    if sorted(map(str, d1.columns)) != sorted(map(str, d2.columns)):
        raise ValueError(f"the DataFrames have different columns: {list(d1.columns)} and {list(d2.columns)}")
    return d2[list(d1.columns)]


def _lcs(r1: list, r2: list) -> int:
    """Length of the longest common subsequence, one numpy pass per record of ``r1``:
    row i of the DP is the running maximum of max(prev[j], prev[j-1] + match[j])."""
    if not r1 or not r2:
        return 0
    codes: dict = {}
    c1 = np.array([codes.setdefault(k, len(codes)) for k in r1])
    c2 = np.array([codes.setdefault(k, len(codes)) for k in r2])
    prev = np.zeros(c2.size + 1, dtype=np.int64)
    for x in c1:
        cand = np.maximum(prev[1:], prev[:-1] + (c2 == x))
        prev = np.concatenate([[0], np.maximum.accumulate(cand)])
    return int(prev[-1])


def _symmetric(r1: list, r2: list) -> int:
    c1, c2 = Counter(r1), Counter(r2)
    return sum((c1 - c2).values()) + sum((c2 - c1).values())


def _vectors(d1: Any, d2: Any, metric: str) -> tuple[np.ndarray, np.ndarray] | None:
    try:
        a, b = np.asarray(d1, dtype=np.float64), np.asarray(d2, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{metric} needs numeric data: {exc}") from None
    if a.shape != b.shape:
        return None
    return a, b


def _coordinate_gaps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| per coordinate, 0 where both are equal (NaN equals NaN, inf equals inf)."""
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore"):
        gap = np.abs(b - a)
    return np.where(same, 0.0, np.where(np.isnan(gap), np.inf, gap))


def _equal(d1: Any, d2: Any) -> bool:
    if isinstance(d1, str) or isinstance(d2, str):
        return isinstance(d1, str) and isinstance(d2, str) and d1 == d2
    if hasattr(d1, "columns") and hasattr(d1, "to_numpy"):
        d1 = d1.to_numpy(dtype=object)
    if hasattr(d2, "columns") and hasattr(d2, "to_numpy"):
        d2 = d2.to_numpy(dtype=object)
    a, b = np.asarray(d1), np.asarray(d2)
    if a.shape != b.shape:
        return False
    return _key(a.tolist()) == _key(b.tolist())


def distance(metric: str, d1: Any, d2: Any) -> float:
    """The distance between ``d1`` and ``d2`` under ``metric`` (one of :data:`INPUT_METRICS`);
    ``math.inf`` when the two inputs are not comparable under it (e.g. sizes differ under
    ``change_distance``)."""
    if metric not in INPUT_METRICS:
        raise ValueError(f"input_metric must be one of {', '.join(INPUT_METRICS)}; got {metric!r}")
    if metric in RECORD_METRICS:
        d2 = _aligned(d1, d2)
        r1, r2 = _records(d1, "d1"), _records(d2, "d2")
        if metric == "symmetric_distance":
            return float(_symmetric(r1, r2))
        if metric == "insert_delete_distance":
            return float(len(r1) + len(r2) - 2 * _lcs(r1, r2))
        if len(r1) != len(r2):
            return math.inf
        if metric == "change_distance":
            return _symmetric(r1, r2) / 2.0
        return float(sum(k1 != k2 for k1, k2 in zip(r1, r2)))
    if metric == "discrete_distance":
        return 0.0 if _equal(d1, d2) else 1.0
    ab = _vectors(d1, d2, metric)
    if ab is None:
        return math.inf
    a, b = ab
    if metric == "absolute_distance":
        if a.size != 1:
            raise ValueError(f"absolute_distance is for scalars, got data of shape {a.shape}")
        return float(_coordinate_gaps(a.reshape(-1), b.reshape(-1))[0])
    gap = _coordinate_gaps(a.reshape(-1), b.reshape(-1))
    if gap.size == 0:
        return 0.0
    if metric == "l1_distance":
        return float(np.sum(gap))
    if metric == "l2_distance":
        return float(np.sqrt(np.sum(gap * gap)))
    if metric == "linf_monotone_distance":
        with np.errstate(invalid="ignore"):
            step = (b - a).reshape(-1)[gap > 0]
        if np.any(step > 0) and np.any(step < 0):
            return math.inf
    return float(np.max(gap))


# --------------------------------------------------------------------------------------------
# the claim

def evaluate(privacy_map: Callable[[Any], Any], d_in: float) -> tuple[float, float]:
    """``privacy_map(d_in)`` as ``(epsilon, delta)``: the map may return epsilon (a number) or a
    pair ``(epsilon, delta)``; epsilon must be finite and > 0, delta in [0, 1). ``ValueError``
    naming the distance when the map raises or returns anything else."""
    try:
        out = privacy_map(d_in)
    except Exception as exc:
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
    if rel not in _COMPATIBLE[input_metric]:
        raise ValueError(f"neighbours={rel!r} does not generate pairs at a finite {input_metric}; accepted: "
                         f"{', '.join(_COMPATIBLE[input_metric])} (default {DEFAULT_RELATION[input_metric]!r})")
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
        from dpharness.verifiers import neighbours

        outside = getattr(neighbours, "_why_not_domain", None)
        why = outside(d1, d2, dom, claim.neighbours) if outside is not None else None
        if why is not None:
            raise ValueError(f"{where}: {why}")
    try:
        return claim.at(_as_distance(claim.input_metric, d)), d
    except ValueError as exc:
        raise ValueError(f"{where} at {claim.input_metric} {d:g}: {exc}") from None


def check_pair(d1: Any, d2: Any, claim: Any, label: str = "the pair") -> float | None:
    """The neighbour check of a pair under ``claim``: for a privacy map, a finite distance at
    which the map gives a valid claim (returns the distance); else :func:`check_neighbours`
    (returns None). ``ValueError`` saying why otherwise."""
    if isinstance(claim, PrivacyMapClaim):
        return claim_at(claim, d1, d2, label)[1]
    from dpharness.verifiers.neighbours import check_neighbours

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
        from dpharness.verifiers.neighbours import check_neighbours

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


def pairs_for(mechanism: Any, generator: Any = "auto") -> list:
    """:func:`verifiers.pairs_for`, with pairs checked against the privacy map for map claims:
    a listed pair must be at a finite distance where the map is valid (``ValueError`` naming it);
    a generated pair that is not is dropped and reported in ``skipped``."""
    from dpharness.verifiers.neighbours import Pair, PairList
    from dpharness.verifiers.neighbours import pairs_for as _pairs_for

    claim = mechanism.claim
    if not isinstance(claim, PrivacyMapClaim):
        return _pairs_for(mechanism, generator)
    if isinstance(generator, str):
        gen = _pairs_for(mechanism, generator)
        keep = PairList()
        keep.skipped = list(getattr(gen, "skipped", []))
        for p in gen:
            try:
                claim_at(claim, p.d1, p.d2, p.label or "a generated pair")
            except ValueError as exc:
                keep.skipped.append({"pair": p.label, "error": str(exc)[:300]})
                continue
            keep.append(p)
        if not keep:
            raise ValueError(f"no generated pair is at a finite {claim.input_metric} where the privacy map is valid; "
                             f"first: {keep.skipped[0]['error'] if keep.skipped else 'none generated'}")
        return keep
    items = list(generator(mechanism)) if callable(generator) else list(generator)
    out = []
    for i, it in enumerate(items):
        p = it if isinstance(it, Pair) else Pair(it[0], it[1], f"pair {i}")
        claim_at(claim, p.d1, p.d2, f"pair {i}")
        out.append(p)
    if not out:
        raise ValueError("generator produced no pairs")
    return out


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
