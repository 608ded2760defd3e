"""Smooth-sensitivity median (Nissim-Raskhodnikova-Smith 2007) and the global-sensitivity baseline.

``smooth_sensitivity_median`` releases the lower median of the clipped data plus noise scaled to its
beta-smooth sensitivity; ``laplace_median_global`` adds Laplace noise scaled to the global
sensitivity (upper - lower). The conventions (clipping, padding, the replace-one and add/remove
smooth sensitivities) and the exact O(n) algorithms are in :mod:`mechanisms.median_sensitivity`,
whose public functions are importable from here as well.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpharness.mechanisms.base import (
    Mechanism,
    ParamError,
    PrivacyClaim,
    as_rng,
    check_bounds,
    check_choice,
    check_data,
    check_delta,
    check_epsilon,
)
from dpharness.mechanisms.laws import LocationScaleLaw
from dpharness.mechanisms.median_sensitivity import (
    RELATIONS,
    _median_and_sensitivity,
    clipped_lower_median,
    median_local_sensitivity,
    median_smooth_sensitivity,
)
from dpharness.mechanisms.registry import register

__all__ = [
    "SmoothSensitivityMedian",
    "LaplaceMedianGlobal",
    "median_smooth_sensitivity",
    "median_local_sensitivity",
    "clipped_lower_median",
]

_RELATIONS = RELATIONS
_NOISES = ("cauchy", "laplace")


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ParamError(name, f"{name} must be True or False, got {value!r}")
    return bool(value)


@register("smooth_sensitivity_median")
@dataclass(frozen=True)
class SmoothSensitivityMedian(Mechanism):
    """Lower median plus noise scaled to its smooth sensitivity (NRS07).

    Output: med(x) + (c S*_beta(x) / epsilon) Z, with med the lower median x_(ceil(n/2)) of the data
    clipped to [lower, upper] (data outside are clipped, never dropped) and, when ``clip_output``
    (default, as in the Duff paper's Table 1), the output clipped to [lower, upper] (post-processing).

    * ``noise="cauchy"`` (``delta`` None or 0): Z standard Cauchy, beta = epsilon/6, c = 6:
      (epsilon, 0)-DP [NRS07 Lemma 2.6 with gamma = 2: density prop. to 1/(1+z^2) is
      (epsilon/(2(gamma+1)), epsilon/(2(gamma+1)))-admissible; Cor. 2.4]. These constants are
      conservative: the Cauchy log-density is 1-Lipschitz and its log dilation loss is at most
      |log ratio of scales|, so the worst-case privacy loss is at most
      epsilon/6 (shift) + epsilon/6 (scale change) = epsilon/3.
    * ``noise="laplace"`` (``delta`` in (0, 1)): Z standard Laplace, beta = epsilon/(2 ln(2/delta)),
      c = 2: (epsilon, delta)-DP [NRS07 Lemma 2.6/2.9, Cor. 2.4; google-research dp_multiq].

    Neighbour relation (the claim):

    * ``sensitivity="replace_one"`` (default, the paper's choice): S* is NRS07's replace-one formula
      with padding (:mod:`mechanisms.median_sensitivity`); the claim is replace-one, the relation
      NRS07 proves it for.
      The same mechanism is also (epsilon, delta)-DP under add/remove (non-empty datasets): the
      add/remove local sensitivity is one of the two gaps next to x_m, hence <= S*; and if
      y = x + {v} the interlacing x_{p-1} <= y_p <= x_p maps each replace-one window (i, j) of x to
      the window (i, j+1) of y and each window (i, j) of y to (i-1, j) of x, both containing the
      other median rank, so A^(k) of either is <= A^(k+1) of the other and S*(x) <= e^beta S*(y)
      both ways. The tests check this numerically; the claim records only replace-one.
    * ``sensitivity="add_remove"``: S is the exact add/remove smooth sensitivity (smaller;
      :mod:`mechanisms.median_sensitivity`); claim add/remove. It is NOT smooth with the same beta
      under replace-one.

    ``distribution(data)`` gives the exact output law (centre, scale, noise, clipping atoms), so the
    privacy loss of any pair of datasets can be computed exactly. The smooth bound is floored at
    ``tiny * max(1, epsilon)`` (tiny = smallest normal double) so the noise scale stays positive;
    a constant floor keeps a bound beta-smooth.
    """

    epsilon: float
    lower: float
    upper: float
    noise: str = "cauchy"
    delta: float | None = None
    sensitivity: str = "replace_one"
    clip_output: bool = True

    kind: ClassVar[str] = "real"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        a, b = check_bounds(self.lower, self.upper)
        object.__setattr__(self, "lower", a)
        object.__setattr__(self, "upper", b)
        check_choice(self.noise, "noise", _NOISES)
        check_choice(self.sensitivity, "sensitivity", _RELATIONS)
        _check_bool(self.clip_output, "clip_output")
        if self.noise == "laplace":
            if self.delta is None:
                raise ParamError("delta", "delta must be in (0, 1) for noise='laplace', got None")
            object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        elif self.delta is not None and not (isinstance(self.delta, (int, float)) and self.delta == 0):
            raise ParamError("delta", f"delta must be None or 0 for noise='cauchy' (pure DP), got {self.delta!r}")

    @property
    def beta(self) -> float:
        """Smoothing parameter of the calibration."""
        if self.noise == "cauchy":
            return self.epsilon / 6.0
        return self.epsilon / (2.0 * math.log(2.0 / float(self.delta)))  # type: ignore[arg-type]

    @property
    def noise_factor(self) -> float:
        """c in scale = c S / epsilon."""
        return 6.0 if self.noise == "cauchy" else 2.0

    @property
    def claim(self) -> PrivacyClaim:
        delta = float(self.delta) if self.noise == "laplace" else 0.0
        return PrivacyClaim(self.epsilon, delta, neighbours=self.sensitivity)

    def _centre_and_bound(self, data: Any) -> tuple[float, float]:
        x = check_data(data)
        med, s = _median_and_sensitivity(x, self.beta, self.lower, self.upper, self.sensitivity)
        floor = np.finfo(np.float64).tiny * max(1.0, self.epsilon)
        return med, max(s, floor)

    def smooth_sensitivity(self, data: Any) -> float:
        """The (floored) beta-smooth bound used for ``data``."""
        return self._centre_and_bound(data)[1]

    def distribution(self, data: Any) -> LocationScaleLaw:
        """Exact output law: LocationScaleLaw(median, c S / epsilon, noise, [lower, upper] if clipped)."""
        med, s = self._centre_and_bound(data)
        bounds = (self.lower, self.upper) if self.clip_output else (None, None)
        return LocationScaleLaw(med, self.noise_factor * s / self.epsilon, self.noise, *bounds)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        """``size`` draws for one dataset: one O(n) expected pass, then O(1) per draw."""
        return self.distribution(data).sample(size, as_rng(rng))

    @classmethod
    def example(cls) -> tuple["SmoothSensitivityMedian", np.ndarray]:
        mech = cls(epsilon=1.0, lower=0.0, upper=10.0, noise="laplace", delta=1e-3)
        return mech, np.array([1.0, 2.5, 3.0, 4.0, 4.5, 5.0, 6.0, 7.5, 9.0])


@register("laplace_median_global")
@dataclass(frozen=True)
class LaplaceMedianGlobal(Mechanism):
    """Lower median plus Laplace noise scaled to the global sensitivity (upper - lower).

    Output: med(x) + Lap((upper - lower)/epsilon), med the lower median x_(ceil(n/2)) of the data
    clipped to [lower, upper] (data outside are clipped, never dropped), then clipped to
    [lower, upper] when ``clip_output`` (default).

    Claim: (epsilon, 0)-DP under add/remove neighbours (non-empty datasets) with sensitivity
    upper - lower [Laplace mechanism, Dwork-McSherry-Nissim-Smith 2006; Dwork-Roth Thm 3.6]. The
    median of data in [a, b] moves by at most b - a under any change, and b - a is attained under
    both relations ((a, b) -> (a, b, b) adds a record, (a, b) -> (b, b) replaces one), so the same
    mechanism is also (epsilon, 0)-DP under replace-one; the claim records add/remove.
    """

    epsilon: float
    lower: float
    upper: float
    clip_output: bool = True

    kind: ClassVar[str] = "real"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        a, b = check_bounds(self.lower, self.upper)
        object.__setattr__(self, "lower", a)
        object.__setattr__(self, "upper", b)
        _check_bool(self.clip_output, "clip_output")

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, 0.0, neighbours="add_remove", sensitivity=self.upper - self.lower)

    def distribution(self, data: Any) -> LocationScaleLaw:
        """Exact output law: LocationScaleLaw(median, (upper - lower)/epsilon, "laplace", bounds)."""
        med = clipped_lower_median(data, self.lower, self.upper)
        bounds = (self.lower, self.upper) if self.clip_output else (None, None)
        return LocationScaleLaw(med, (self.upper - self.lower) / self.epsilon, "laplace", *bounds)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        return self.distribution(data).sample(size, as_rng(rng))

    @classmethod
    def example(cls) -> tuple["LaplaceMedianGlobal", np.ndarray]:
        return cls(epsilon=1.0, lower=0.0, upper=10.0), np.array([1.0, 2.5, 3.0, 4.0, 4.5, 5.0, 6.0, 7.5, 9.0])
