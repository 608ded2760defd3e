"""Zoo entries with finite outputs (an index): report noisy max, permute-and-flip, the
exponential mechanism, and their broken variants. See :mod:`verifiers.zoo`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import integrate, special

from dpharness.mechanisms.base import PrivacyClaim, as_rng, check_scores
from dpharness.mechanisms.laws import sample_index
from dpharness.verifiers.events import Event
from dpharness.verifiers.controls.zoo.base import ZooWitness, _Base, _check_rnm, _exp_cdf, _lap_cdf, _n, _shape, zoo_register

__all__ = ["rnm_index_log_prob", "ZooRNMLaplace", "ZooRNMMonotoneScale", "ZooRNMExponential", "ZooRNMSharedNoise",
           "ZooPermuteAndFlip", "ZooEM", "ZooEMMissingHalf"]


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
# report noisy max (index)

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
        q = check_scores(data, "data")
        shape, n = _n(size)
        y = q[None, :] + self.scale * self._noise_draw(as_rng(rng), (n, q.size))
        return _shape(np.argmax(y, axis=1), shape)

    def support(self, data: Any) -> np.ndarray:
        return np.arange(check_scores(data, "data").size)

    def log_prob(self, data: Any) -> np.ndarray:
        return rnm_index_log_prob(check_scores(data, "data"), self._noise, self.scale)

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
        q = check_scores(data, "data")
        shape, n = _n(size)
        z = self.scale * as_rng(rng).laplace(size=(n, 1))
        return _shape(np.argmax(q[None, :] + z, axis=1), shape)

    def log_prob(self, data: Any) -> np.ndarray:
        q = check_scores(data, "data")
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
        q = check_scores(data, "data")
        shape, n = _n(size)
        g = as_rng(rng)
        k = q.size
        perm = np.argsort(g.random((n, k)), axis=1)
        accept_logp = self.epsilon * (q - np.max(q)) / (2.0 * self.sensitivity)
        coins = np.log(g.random((n, k))) < accept_logp[perm]
        first = np.argmax(coins, axis=1)  # the maximiser always accepts, so a True exists
        return _shape(perm[np.arange(n), first], shape)


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
        return np.arange(check_scores(data, "data").size)

    def log_prob(self, data: Any) -> np.ndarray:
        u = check_scores(data, "data")
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
