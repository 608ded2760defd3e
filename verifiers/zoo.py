"""The zoo: deliberately broken mechanisms (positive controls) and their correct twins.

A verifier that flags none of these is indistinguishable from a broken one; one that flags a
correct twin is wrong (docs/verifier.md, "The zoo"). Each entry is a self-contained frozen dataclass
following the mechanism contract (``claim``, ``sample(data, size, rng)``, ``example()``, and an
exact law where it is easy: ``support``/``log_prob`` or ``distribution``), plus

* ``true_epsilon`` -- the mechanism's real worst-case epsilon (``inf`` for support bugs; for correct
  twins the claim, an upper bound that is attained where the docstring says "tight");
* ``witness()`` -- a documented :class:`ZooWitness`: a legal pair, an event, its direction and
  the event's exact probabilities under both datasets (used for power computations).

The zoo has its own small registry (:func:`make`, :func:`available`, :func:`get`) so that
``dpharness list`` stays about real mechanisms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Callable, ClassVar

import numpy as np
from scipy import integrate, special

from ..mechanisms.base import (PrivacyClaim, as_rng, check_bounds, check_choice, check_data, check_delta,
                             check_epsilon, check_positive, check_scores, check_size)
from ..mechanisms.laws import GridRunsLaw, LocationScaleLaw, PiecewiseDensity, sample_index
from ..mechanisms.smooth_sensitivity import clipped_lower_median, median_local_sensitivity, median_smooth_sensitivity

from .events import Event

__all__ = ["ZooEntry", "ZooWitness", "zoo_register", "make", "available", "get", "entries"]


# --------------------------------------------------------------------------------------------
# registry

@dataclass(frozen=True)
class ZooEntry:
    name: str
    cls: type
    broken: bool
    twin: str | None
    summary: str


_ZOO: dict[str, ZooEntry] = {}


def zoo_register(name: str, *, broken: bool, twin: str | None = None) -> Callable[[type], type]:
    """Class decorator: add a zoo mechanism (``broken`` = positive control) with its correct twin."""

    def deco(cls: type) -> type:
        if name in _ZOO:
            raise ValueError(f"zoo name {name!r} already registered")
        cls.name = name  # type: ignore[attr-defined]
        doc = (cls.__doc__ or "").strip().splitlines()
        _ZOO[name] = ZooEntry(name, cls, broken, twin, doc[0] if doc else "")
        return cls

    return deco


def available(broken: bool | None = None) -> list[str]:
    """Zoo names (all, or only broken / only correct ones)."""
    return sorted(n for n, e in _ZOO.items() if broken is None or e.broken == broken)


def get(name: str) -> ZooEntry:
    try:
        return _ZOO[name]
    except KeyError:
        raise ValueError(f"unknown zoo mechanism {name!r}; accepted: {', '.join(available())}") from None


def make(name: str, **params: Any) -> Any:
    """Build zoo mechanism ``name`` (defaults are the documented instance)."""
    cls = get(name).cls
    accepted = [f.name for f in fields(cls)]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"{name}: unknown parameter(s) {', '.join(unknown)}; accepted: {', '.join(accepted)}")
    return cls(**params)


def entries() -> list[ZooEntry]:
    return [_ZOO[n] for n in available()]


@dataclass(frozen=True, eq=False)
class ZooWitness:
    """A documented witness: ``P[M(d1) in event] = p_d1``, ``P[M(d2) in event] = p_d2``; the bound
    is on the ratio in ``direction`` ("d1>d2": p_d1/p_d2)."""

    d1: Any
    d2: Any
    event: Event
    direction: str
    p_d1: float
    p_d2: float

    @property
    def p_num(self) -> float:
        return self.p_d1 if self.direction == "d1>d2" else self.p_d2

    @property
    def p_den(self) -> float:
        return self.p_d2 if self.direction == "d1>d2" else self.p_d1

    @property
    def loss(self) -> float:
        """ln(p_num/p_den): the pair's privacy loss on this event (inf for support events)."""
        return math.inf if self.p_den == 0 else math.log(self.p_num / self.p_den)


class _Base:
    name: ClassVar[str] = ""
    kind: ClassVar[str] = "real"

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]


def _n(size: Any) -> tuple[tuple[int, ...], int]:
    shape = check_size(size)
    return shape, (int(np.prod(shape)) if shape else 1)


def _shape(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return x.reshape(shape) if shape else x[0]


def _scalar(data: Any, name: str = "data") -> float:
    a = np.asarray(data, dtype=np.float64)
    if a.size != 1 or not np.isfinite(a).all():
        raise ValueError(f"{name} must be one finite number (the query answer f(D)), got {data!r}")
    return float(a.reshape(()))


# --------------------------------------------------------------------------------------------
# exact laws of report-noisy-max (index)

def _lap_cdf(x: np.ndarray) -> np.ndarray:
    return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0)), 1 - 0.5 * np.exp(-np.maximum(x, 0)))


def _exp_cdf(x: np.ndarray) -> np.ndarray:
    return np.where(x < 0, 0.0, -np.expm1(-np.maximum(x, 0)))


def rnm_index_log_prob(q: np.ndarray, noise: str, b: float) -> np.ndarray:
    """Exact log P[argmax_i (q_i + b Z_i) = i], Z_i iid standard Laplace or Exp(1).

    k = 2 in closed form (the difference of two iid Laplace(1) has P[D > t] = (2 + t) e^{-t}/4 for
    t >= 0; of two Exp(1) it is Laplace(1): P[D > t] = e^{-t}/2). k > 2 by adaptive quadrature of
    P(i) = integral f(y - q_i) prod_{j != i} F(y - q_j) dy, split at every q_j, relative tolerance
    1e-12 (the integrand is smooth between the q_j), then normalised in log space.
    """
    q = np.asarray(q, dtype=np.float64)
    k = q.size
    if k == 1:
        return np.zeros(1)
    if k == 2:
        t = (q[1] - q[0]) / b  # candidate 1 ahead by t
        at = abs(t)
        if noise == "laplace":
            behind = math.log(2 + at) - at - math.log(4)
        else:
            behind = -at - math.log(2)
        ahead = math.log1p(-math.exp(behind))
        return np.array([behind, ahead]) if t >= 0 else np.array([ahead, behind])
    z = np.sort(q)
    lp = np.empty(k)
    for i in range(k):
        others = np.delete(q, i)

        def integrand(y: float, i: int = i, others: np.ndarray = others) -> float:
            x = (y - q[i]) / b
            dens = 0.5 * math.exp(-abs(x)) / b if noise == "laplace" else (math.exp(-x) / b if x >= 0 else 0.0)
            if dens == 0.0:
                return 0.0
            cdf = _lap_cdf((y - others) / b) if noise == "laplace" else _exp_cdf((y - others) / b)
            return dens * float(np.prod(cdf))

        lo = -np.inf if noise == "laplace" else float(np.max(q))
        cuts = [lo] + [float(v) for v in z if v > lo] + [np.inf]
        total = 0.0
        for a, c in zip(cuts[:-1], cuts[1:]):
            if c > a:
                total += integrate.quad(integrand, a, c, epsabs=0.0, epsrel=1e-12, limit=400)[0]
        lp[i] = math.log(total) if total > 0 else -np.inf
    return lp - special.logsumexp(lp)


# --------------------------------------------------------------------------------------------
# Laplace mechanism and its inverted-scale bug

@zoo_register("laplace", broken=False)
@dataclass(frozen=True)
class ZooLaplace(_Base):
    """Laplace mechanism f(D) + Lap(sensitivity/epsilon): epsilon-DP, tight.

    Data: the query answer f(D); ``value`` neighbours (|f - f'| <= sensitivity). Dwork, McSherry,
    Nissim, Smith 2006; Dwork–Roth Thm 3.6. Tight: the pair (0, sensitivity) loses exactly epsilon
    on every event {y <= t}, t <= 0.
    """

    epsilon: float = 1.0
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_positive(self.sensitivity, "sensitivity")

    @property
    def scale(self) -> float:
        return self.sensitivity / self.epsilon

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="value", sensitivity=self.sensitivity)

    @property
    def true_epsilon(self) -> float:
        return self.sensitivity / self.scale

    def distribution(self, data: Any) -> LocationScaleLaw:
        return LocationScaleLaw(_scalar(data), self.scale, "laplace")

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        shape, n = _n(size)
        return _shape(_scalar(data) + self.scale * as_rng(rng).laplace(size=n), shape)

    def witness(self) -> ZooWitness:
        p1 = 0.5
        p2 = 0.5 * math.exp(-self.sensitivity / self.scale)
        return ZooWitness(0.0, self.sensitivity, Event("le", hi=0.0), "d1>d2", p1, p2)

    @classmethod
    def example(cls) -> tuple[Any, Any]:
        return cls(), 0.0


@zoo_register("laplace_inverted_scale", broken=True, twin="laplace")
@dataclass(frozen=True)
class ZooLaplaceInvertedScale(ZooLaplace):
    """BROKEN: f(D) + Lap(epsilon * sensitivity) instead of Lap(sensitivity/epsilon).

    True epsilon = 1/epsilon (claim 0.5 -> true 2.0); silently correct at epsilon = 1, so it is
    audited at epsilon != 1. Witness f = 0 vs f = sensitivity, event {y <= 0}.
    """

    epsilon: float = 0.5

    @property
    def scale(self) -> float:
        return self.epsilon * self.sensitivity


# --------------------------------------------------------------------------------------------
# report noisy max

def _check_rnm(self: Any) -> None:
    check_epsilon(self.epsilon)
    check_positive(self.sensitivity, "sensitivity")


@zoo_register("rnm_laplace", broken=False)
@dataclass(frozen=True)
class ZooRNMLaplace(_Base):
    """Report noisy max, index only: argmax_i (q_i + Lap(2 sensitivity/epsilon)). epsilon-DP.

    ``score_linf`` neighbours (each score moves by <= sensitivity, any direction). Dwork–Roth
    Claim 3.9 (with the 2 Delta/epsilon scale for non-monotone scores). Exact law by
    :func:`rnm_index_log_prob`.
    """

    epsilon: float = 1.0
    sensitivity: float = 1.0

    kind: ClassVar[str] = "finite"
    _noise: ClassVar[str] = "laplace"
    _factor: ClassVar[float] = 2.0

    def __post_init__(self) -> None:
        _check_rnm(self)

    @property
    def scale(self) -> float:
        return self._factor * self.sensitivity / self.epsilon

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="score_linf", sensitivity=self.sensitivity)

    @property
    def true_epsilon(self) -> float:
        return self.epsilon

    def _noise_draw(self, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        return rng.laplace(size=shape) if self._noise == "laplace" else rng.exponential(size=shape)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        q = check_scores(data)
        shape, n = _n(size)
        y = q[None, :] + self.scale * self._noise_draw(as_rng(rng), (n, q.size))
        return _shape(np.argmax(y, axis=1), shape)

    def support(self, data: Any) -> np.ndarray:
        return np.arange(check_scores(data).size)

    def log_prob(self, data: Any) -> np.ndarray:
        return rnm_index_log_prob(check_scores(data), self._noise, self.scale)

    def witness(self) -> ZooWitness:
        s = self.sensitivity
        d1, d2 = np.array([0.0, 4.0 * s]), np.array([s, 3.0 * s])
        p1, p2 = np.exp(self.log_prob(d1)[0]), np.exp(self.log_prob(d2)[0])
        return ZooWitness(d1, d2, Event("set", values=(0,)), "d2>d1", float(p1), float(p2))

    @classmethod
    def example(cls) -> tuple[Any, Any]:
        return cls(), np.array([0.0, 4.0])


@zoo_register("rnm_monotone_scale", broken=True, twin="rnm_laplace")
@dataclass(frozen=True)
class ZooRNMMonotoneScale(ZooRNMLaplace):
    """BROKEN: argmax_i (q_i + Lap(sensitivity/epsilon)) -- the monotone (counting-query) scale --
    on scores that can move in opposite directions.

    True epsilon = 2 epsilon. Witness k = 2, q = (0, 4) vs (1, 3) (sensitivity 1, epsilon 1),
    event {argmax = 0}: 0.0275 vs 0.1353 (pair epsilon 1.59).
    """

    _factor: ClassVar[float] = 1.0

    @property
    def true_epsilon(self) -> float:
        return 2.0 * self.epsilon


@zoo_register("rnm_exponential", broken=False)
@dataclass(frozen=True)
class ZooRNMExponential(ZooRNMLaplace):
    """Report noisy max with one-sided exponential noise, index only: argmax_i (q_i + Exp(2 Delta/eps)).

    epsilon-DP under ``score_linf``; its law equals permute-and-flip's (Ding, Kifer et al. 2021).
    """

    _noise: ClassVar[str] = "exponential"


@zoo_register("rnm_shared_noise", broken=True, twin="rnm_laplace")
@dataclass(frozen=True)
class ZooRNMSharedNoise(ZooRNMLaplace):
    """BROKEN: one noise draw Z ~ Lap(2 Delta/eps) added to every candidate: argmax_i (q_i + Z).

    The noise cancels: the output is argmax q (first maximum on ties), a point mass. True epsilon
    = inf. Witness q = [1, 0] vs [0, 1], event {argmax = 0}: probability 1 vs 0.
    """

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        q = check_scores(data)
        shape, n = _n(size)
        z = self.scale * as_rng(rng).laplace(size=(n, 1))
        return _shape(np.argmax(q[None, :] + z, axis=1), shape)

    def log_prob(self, data: Any) -> np.ndarray:
        q = check_scores(data)
        lp = np.full(q.size, -np.inf)
        lp[int(np.argmax(q))] = 0.0
        return lp

    @property
    def true_epsilon(self) -> float:
        return math.inf

    def witness(self) -> ZooWitness:
        s = self.sensitivity
        return ZooWitness(np.array([s, 0.0]), np.array([0.0, s]), Event("set", values=(0,)), "d1>d2", 1.0, 0.0)


@zoo_register("permute_and_flip", broken=False)
@dataclass(frozen=True)
class ZooPermuteAndFlip(ZooRNMLaplace):
    """Permute-and-flip (McKenna & Sheldon, NeurIPS 2020): visit candidates in random order and
    accept r with probability exp(eps (u_r - u*) / (2 Delta)). epsilon-DP under ``score_linf``.

    Sampled by its own algorithm (vectorised: a random permutation and acceptance coins per draw);
    the exact law is that of exponential-noise report noisy max (Ding, Kifer et al. 2021).
    """

    _noise: ClassVar[str] = "exponential"

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        q = check_scores(data)
        shape, n = _n(size)
        g = as_rng(rng)
        k = q.size
        perm = np.argsort(g.random((n, k)), axis=1)
        accept_logp = self.epsilon * (q - np.max(q)) / (2.0 * self.sensitivity)
        coins = np.log(g.random((n, k))) < accept_logp[perm]
        first = np.argmax(coins, axis=1)  # the maximiser always accepts, so a True exists
        return _shape(perm[np.arange(n), first], shape)


@zoo_register("rnm_laplace_value", broken=True, twin="rnm_laplace")
@dataclass(frozen=True)
class ZooRNMLaplaceValue(_Base):
    """BROKEN: report noisy max that releases the noisy maximum value max_i (q_i + Lap(2 Delta/eps)).

    True epsilon = k epsilon / 2 (k = 5: 2.5 at claim 1): in the left tail the maximum's CDF is
    prod_i F(y - q_i) ~ e^{k y / b}, and moving every score up by Delta shifts it by Delta.
    Witness q = [1]*5 vs [2]*5, event {y <= 2}: 0.164 vs 0.031.
    """

    epsilon: float = 1.0
    sensitivity: float = 1.0
    k: int = 5

    kind: ClassVar[str] = "real"
    _noise: ClassVar[str] = "laplace"

    def __post_init__(self) -> None:
        _check_rnm(self)
        if not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise ValueError(f"k must be an integer >= 1, got {self.k!r}")

    @property
    def scale(self) -> float:
        return 2.0 * self.sensitivity / self.epsilon

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="score_linf", sensitivity=self.sensitivity)

    @property
    def true_epsilon(self) -> float:
        return self.k * self.sensitivity / self.scale if self._noise == "laplace" else math.inf

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        q = check_scores(data)
        shape, n = _n(size)
        g = as_rng(rng)
        z = g.laplace(size=(n, q.size)) if self._noise == "laplace" else g.exponential(size=(n, q.size))
        return _shape(np.max(q[None, :] + self.scale * z, axis=1), shape)

    def cdf(self, data: Any, y: Any) -> np.ndarray:
        """Exact P[output <= y] = prod_i F((y - q_i)/b)."""
        q = check_scores(data)
        y = np.asarray(y, dtype=np.float64)
        x = (y[..., None] - q) / self.scale
        F = _lap_cdf(x) if self._noise == "laplace" else _exp_cdf(x)
        return np.prod(F, axis=-1)

    def witness(self) -> ZooWitness:
        s = self.sensitivity
        d1, d2 = np.full(self.k, s), np.full(self.k, 2.0 * s)
        t = 2.0 * s
        return ZooWitness(d1, d2, Event("le", hi=t), "d1>d2", float(self.cdf(d1, t)), float(self.cdf(d2, t)))

    @classmethod
    def example(cls) -> tuple[Any, Any]:
        return cls(), np.ones(5)


@zoo_register("rnm_exponential_value", broken=True, twin="rnm_exponential")
@dataclass(frozen=True)
class ZooRNMExponentialValue(ZooRNMLaplaceValue):
    """BROKEN: releases the noisy maximum value max_i (q_i + Exp(scale 2 Delta/eps)).

    The output is never below max_i q_i: a support edge, true epsilon = inf. Witness
    q = [0]*5 vs [1]*5, event {y <= 1}: (1 - e^{-1/2})^5 = 0.0094 vs 0. (A stronger witness:
    one candidate far ahead, [0, -8, -8, -8, -8] vs [1, -7, -7, -7, -7], where the event has
    probability 1 - e^{-1/2} = 0.39 vs 0.)
    """

    _noise: ClassVar[str] = "exponential"

    def witness(self) -> ZooWitness:
        s = self.sensitivity
        d1, d2 = np.zeros(self.k), np.full(self.k, s)
        return ZooWitness(d1, d2, Event("le", hi=s), "d1>d2", float(self.cdf(d1, s)), 0.0)


# --------------------------------------------------------------------------------------------
# exponential mechanism

@zoo_register("em", broken=False)
@dataclass(frozen=True)
class ZooEM(_Base):
    """Exponential mechanism over k candidates: P[r] ∝ exp(eps u_r / (2 Delta)). epsilon-DP.

    Data: the utility vector; ``score_linf`` neighbours. McSherry–Talwar 2007; Dwork–Roth Thm 3.10.
    Sampled by inverse CDF over log-normalised probabilities.
    """

    epsilon: float = 1.0
    sensitivity: float = 1.0

    kind: ClassVar[str] = "finite"
    _half: ClassVar[float] = 0.5

    def __post_init__(self) -> None:
        _check_rnm(self)

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="score_linf", sensitivity=self.sensitivity)

    @property
    def true_epsilon(self) -> float:
        return 2.0 * self._half * self.epsilon

    def support(self, data: Any) -> np.ndarray:
        return np.arange(check_scores(data).size)

    def log_prob(self, data: Any) -> np.ndarray:
        u = check_scores(data)
        lw = self._half * self.epsilon * u / self.sensitivity
        return lw - special.logsumexp(lw)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        shape, n = _n(size)
        return _shape(sample_index(self.log_prob(data), n, as_rng(rng)), shape)

    def witness(self) -> ZooWitness:
        s = self.sensitivity
        d1, d2 = np.array([0.0, 4.0 * s]), np.array([s, 3.0 * s])
        return ZooWitness(d1, d2, Event("set", values=(0,)), "d2>d1",
                          float(np.exp(self.log_prob(d1)[0])), float(np.exp(self.log_prob(d2)[0])))

    @classmethod
    def example(cls) -> tuple[Any, Any]:
        return cls(), np.array([0.0, 4.0])


@zoo_register("em_missing_half", broken=True, twin="em")
@dataclass(frozen=True)
class ZooEMMissingHalf(ZooEM):
    """BROKEN: exponential mechanism without the 1/2: P[r] ∝ exp(eps u_r / Delta).

    True epsilon = 2 epsilon for non-monotone utilities. Witness u = (0, 4) vs (1, 3), event
    {r = 0}: 0.0180 vs 0.1192 (pair epsilon 1.89).
    """

    _half: ClassVar[float] = 1.0


# --------------------------------------------------------------------------------------------
# medians

def _duff_lower_log_weights(x: np.ndarray) -> np.ndarray:
    n = x.size
    i = np.arange(n + 1)
    return -(1.0 + np.maximum(0, np.maximum(2 * i - n, n - 2 * i - 1)))


@zoo_register("duff_median", broken=False)
@dataclass(frozen=True)
class ZooDuffMedian(_Base):
    """Duff median: exponential mechanism on [lower, upper] with the lower-median Duff utility.

    Density ∝ exp(eps u(o) / 2), u = minus the add/remove distance to a dataset whose lower
    median is o; in gap i (between sorted clipped x_(i), x_(i+1), padded with lower, upper)
    u_i = -(1 + max(0, 2i - n, n - 2i - 1)) (docs/mechanisms.md, "Duff utility: closed forms";
    Munoz Medina & Gillenwater 2020).
    epsilon-DP under ``add_remove`` (sensitivity 1). Exact law: piecewise-constant density.
    """

    epsilon: float = 1.0
    lower: float = 0.0
    upper: float = 10.0

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_bounds(self.lower, self.upper)

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="add_remove", sensitivity=1.0)

    @property
    def true_epsilon(self) -> float:
        return self.epsilon

    def distribution(self, data: Any) -> PiecewiseDensity:
        x = np.sort(np.clip(check_data(data), self.lower, self.upper))
        edges = np.concatenate([[self.lower], x, [self.upper]])
        return PiecewiseDensity.from_log_density(edges, 0.5 * self.epsilon * _duff_lower_log_weights(x))

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        return self.distribution(data).sample(size, as_rng(rng))

    def witness(self) -> ZooWitness:
        d1 = np.array([self.lower] * 2 + [self.upper] * 2)
        d2 = np.array([self.lower] * 2 + [self.upper] * 3)
        mid = 0.5 * (self.lower + self.upper)
        e = Event("le", hi=mid)
        c1 = float(self.distribution(d1).cdf(mid))
        c2 = float(self.distribution(d2).cdf(mid))
        return ZooWitness(d1, d2, e, "d1>d2", c1, c2)

    @classmethod
    def example(cls) -> tuple[Any, Any]:
        return cls(), np.array([1.0, 3.0, 5.0, 5.0, 8.0])


def _point_mass(v: float) -> GridRunsLaw:
    return GridRunsLaw.from_log_weights(v, 1.0, [0], [1], [0.0])


@zoo_register("ss_median", broken=False)
@dataclass(frozen=True)
class ZooSSMedian(_Base):
    """Smooth-sensitivity median (NRS07): med(x) + (c S*_beta(x)/eps) Z, output clipped if asked.

    ``noise="cauchy"``: beta = eps/6, c = 6, (eps, 0)-DP; ``noise="laplace"``: beta =
    eps/(2 ln(2/delta)), c = 2, (eps, delta)-DP (NRS07 Lemma 2.6, Cor. 2.4). ``replace_one``
    neighbours, data clipped to [lower, upper], S* by NRS07's replace-one formula
    (:func:`mechanisms.smooth_sensitivity.median_smooth_sensitivity`).
    """

    epsilon: float = 1.0
    lower: float = 0.0
    upper: float = 10.0
    noise: str = "laplace"
    delta: float = 1e-3
    clip_output: bool = False

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_bounds(self.lower, self.upper)
        check_choice(self.noise, "noise", ("laplace", "cauchy"))
        if self.noise == "laplace":
            check_delta(self.delta, allow_zero=False)

    @property
    def beta(self) -> float:
        if self.noise == "cauchy":
            return self.epsilon / 6.0
        return self.epsilon / (2.0 * math.log(2.0 / self.delta))

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, self.delta if self.noise == "laplace" else 0.0, neighbours="replace_one")

    @property
    def true_epsilon(self) -> float:
        return self.epsilon

    def scale_of(self, data: Any) -> float:
        s = median_smooth_sensitivity(data, self.beta, self.lower, self.upper)
        return (6.0 if self.noise == "cauchy" else 2.0) * s / self.epsilon

    def distribution(self, data: Any) -> Any:
        med = clipped_lower_median(data, self.lower, self.upper)
        scale = self.scale_of(data)
        if scale <= 0:
            return _point_mass(med)
        b = (self.lower, self.upper) if self.clip_output else (None, None)
        return LocationScaleLaw(med, scale, self.noise, *b)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        return self.distribution(data).sample(size, as_rng(rng))

    def witness(self) -> ZooWitness:
        """The pair of ``_witness_pair`` and the upper-tail event {y >= m + t} at the closed-form t
        where the wider Laplace law's density ratio reaches e^eps."""
        d1, d2 = self._witness_pair()
        m = float(clipped_lower_median(d1, self.lower, self.upper))
        b1, b2 = self.scale_of(d1), self.scale_of(d2)
        lo_b, hi_b = min(b1, b2), max(b1, b2)
        t = (self.epsilon + math.log(hi_b / lo_b)) / (1.0 / lo_b - 1.0 / hi_b) if hi_b > lo_b else lo_b
        e = Event("ge", lo=m + t)
        p1 = 1.0 - _interval_mass(self.distribution(d1), -math.inf, np.nextafter(m + t, -math.inf))
        p2 = 1.0 - _interval_mass(self.distribution(d2), -math.inf, np.nextafter(m + t, -math.inf))
        return ZooWitness(d1, d2, e, "d2>d1" if p2 >= p1 else "d1>d2", p1, p2)

    def _witness_pair(self) -> tuple[np.ndarray, np.ndarray]:
        # The lower median stays at the upper bound while S* changes by exactly e^beta (the pair
        # (0, 10) enters at one more rank from the median): two Laplace laws with one centre.
        a, b = self.lower, self.upper
        return np.array([b, b, b, b]), np.array([a, b, b, b])

    @classmethod
    def example(cls) -> tuple[Any, Any]:
        return cls(), np.array([0.0, 5.0, 5.0, 5.0, 10.0])


def _interval_mass(law: Any, lo: float, hi: float) -> float:
    """P[lo <= Y <= hi] for a location-scale or point-mass law."""
    if getattr(law, "law", "") == "grid_runs":
        v = float(law.values(law.first[0]))
        return 1.0 if lo <= v <= hi else 0.0
    below = 0.0 if lo == -math.inf else float(law.cdf(np.nextafter(lo, -np.inf)))
    return float(law.cdf(hi)) - below


@zoo_register("ss_median_local", broken=True, twin="ss_median")
@dataclass(frozen=True)
class ZooSSMedianLocal(ZooSSMedian):
    """BROKEN: median + Lap(LS(x)/eps), the *local* sensitivity with no smoothing, claimed eps-DP.

    True epsilon = inf: LS can be 0 (the output is then exactly the median). Witness on [0, 10]:
    [0, 5, 5, 5, 10] (LS = 0, output = 5 always) vs [0, 5, 5, 10, 10] (LS = 5), replace-one;
    event {y == 5}: probability 1 vs 0.
    """

    noise: str = "laplace"
    delta: float = 1e-3

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="replace_one")

    @property
    def true_epsilon(self) -> float:
        return math.inf

    def scale_of(self, data: Any) -> float:
        return median_local_sensitivity(data, self.lower, self.upper) / self.epsilon

    def _witness_pair(self) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.lower, self.upper
        m = 0.5 * (a + b)
        return np.array([a, m, m, m, b]), np.array([a, m, m, b, b])

    def witness(self) -> ZooWitness:
        d1, d2 = self._witness_pair()
        m = float(clipped_lower_median(d1, self.lower, self.upper))
        return ZooWitness(d1, d2, Event("atom", lo=m, hi=m), "d1>d2", 1.0, 0.0)


@zoo_register("ss_median_big_beta", broken=True, twin="ss_median")
@dataclass(frozen=True)
class ZooSSMedianBigBeta(ZooSSMedian):
    """BROKEN: smooth-sensitivity median with Laplace noise and beta = eps/2 (ln(2/delta) dropped).

    Claims (eps, delta)-DP. On a pair where the median stays and S* grows by e^beta the two output
    laws are Laplace(m, b1) and Laplace(m, b2), b2 = e^beta b1, and the hockey-stick divergence in
    closed form is delta(eps) = e^{-t/b2} - e^eps e^{-t/b1}, t = (eps + ln(b2/b1))/(1/b1 - 1/b2):
    far above the claimed delta. Witness (eps = 1, delta = 1e-3, [0, 10]): [10, 10, 10, 10] vs
    [0, 10, 10, 10] (median 10 for both, S* = 6.07 vs 10): delta(1) = 0.039 against 0.001.
    """

    @property
    def beta(self) -> float:
        return self.epsilon / 2.0

    @property
    def true_epsilon(self) -> float:
        return math.inf  # unbounded log-ratio in the tails: not eps-DP for any eps at delta=0


__all__ += ["rnm_index_log_prob"]
