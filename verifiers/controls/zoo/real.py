"""Zoo entries with real-valued outputs: the Laplace mechanism, report noisy max releasing the
noisy maximum *value*, and their broken variants. See :mod:`verifiers.zoo`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpharness.mechanisms.base import ParamError, PrivacyClaim, as_rng, check_epsilon, check_positive, check_scores
from dpharness.mechanisms.laws import LocationScaleLaw
from dpharness.verifiers.events import Event
from dpharness.verifiers.controls.zoo.base import ZooWitness, _Base, _check_rnm, _exp_cdf, _lap_cdf, _n, _scalar, _shape, zoo_register

__all__ = ["ZooLaplace", "ZooLaplaceInvertedScale", "ZooRNMLaplaceValue", "ZooRNMExponentialValue"]


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
# report noisy max releasing the value

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
            raise ParamError("k", f"k must be an integer >= 1, got {self.k!r}")

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
        q = check_scores(data, "data")
        shape, n = _n(size)
        g = as_rng(rng)
        z = g.laplace(size=(n, q.size)) if self._noise == "laplace" else g.exponential(size=(n, q.size))
        return _shape(np.max(q[None, :] + self.scale * z, axis=1), shape)

    def cdf(self, data: Any, y: Any) -> np.ndarray:
        """Exact P[output <= y] = prod_i F((y - q_i)/b)."""
        q = check_scores(data, "data")
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
