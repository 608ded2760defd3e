"""Zoo entries for private medians: the Duff median and the smooth-sensitivity median, with the
smooth-sensitivity median's broken variants (local sensitivity, a beta without ln(2/delta)).
See :mod:`verifiers.zoo`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpharness.mechanisms.base import PrivacyClaim, as_rng, check_bounds, check_choice, check_data, check_delta, check_epsilon
from dpharness.mechanisms.laws import GridRunsLaw, LocationScaleLaw, PiecewiseDensity
from dpharness.mechanisms.median_sensitivity import clipped_lower_median, median_local_sensitivity, median_smooth_sensitivity
from dpharness.verifiers.events import Event
from dpharness.verifiers.controls.zoo.base import ZooWitness, _Base, zoo_register

__all__ = ["ZooDuffMedian", "ZooSSMedian", "ZooSSMedianLocal", "ZooSSMedianBigBeta"]


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
    if isinstance(law, GridRunsLaw):
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
