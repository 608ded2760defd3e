"""``discrete_laplace``: f(D) rounded to a power-of-two grid plus discrete Laplace noise, sampled
exactly in integer arithmetic.

Releases ``g * (k0 + Z)`` with ``g`` the grid step (a power of two), ``k0`` the grid index nearest
to f(D) (ties up, computed exactly) and ``Z`` discrete Laplace, P[Z = z] proportional to
exp(-a |z|), drawn by Canonne, Kamath & Steinke's exact sampler ("The Discrete Gaussian for
Differential Privacy", NeurIPS 2020, Algorithms 1 and 2): only uniform integers from the
Generator, no floating point. Every output is an exact multiple of ``g`` (for |k0 + Z| <= 2^53;
beyond, the conversion to a double is a post-processing of the integer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpharness.mechanisms.base import Mechanism, ParamError, PrivacyClaim, as_rng, check_epsilon, check_positive, check_present, check_size
from dpharness.mechanisms.laws import GridRunsLaw
from dpharness.mechanisms.registry import register

__all__ = ["DiscreteLaplace", "bernoulli_exp", "noise_parameters", "sample_discrete_laplace"]

#: Noise scales (in grid steps) up to 2^44 are sampled; larger ones mean a grid far too fine for
#: the noise (and would push the sampler's integers towards int64's range).
MAX_STEPS_SCALE = 2.0**44
#: The scale t/s is represented with t near 2^40: its relative rounding (always towards more noise)
#: is below 2^-40.
_SCALE_BITS = 40
#: Index range of the unbounded release: the input index is clamped to +-2^62 (a contraction: the
#: sensitivity is unchanged), so k0 + Z stays inside int64 for any |Z| < 2^62.
_MAX_INDEX = 2**62


def bernoulli_exp(num: np.ndarray, den: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bernoulli(exp(-num/den)) per element, exactly, for integers 0 <= num <= den (CKS20, Alg. 1).

    K = 1; while Bernoulli(gamma / K): K += 1; return K odd. P[K odd] = exp(-gamma): the event
    "K >= k" has probability gamma^(k-1)/(k-1)!. Each Bernoulli(num / (den K)) is one uniform
    integer below den K compared with num. Vectorised over the elements still running.
    """
    num = np.asarray(num, dtype=np.int64)
    den = np.asarray(den, dtype=np.int64)
    k = np.ones(num.shape, dtype=np.int64)
    active = np.arange(num.size)
    while active.size:
        hit = rng.integers(0, den[active] * k[active]) < num[active]
        active = active[hit]
        k[active] += 1
    return (k % 2) == 1


def sample_discrete_laplace(n: int, s: int, t: int, rng: Any) -> np.ndarray:
    """``n`` draws of Z with P[Z = z] proportional to exp(-|z| s / t), exactly (CKS20, Alg. 2).

    Repeat until accepted: U uniform on {0..t-1} kept with probability exp(-U/t); V the number of
    successes of Bernoulli(exp(-1)) before the first failure; X = U + t V is geometric,
    P[X = x] proportional to exp(-x/t); Y = floor(X/s) has P[Y = y] proportional to exp(-y s/t); a
    fair sign B, rejecting (B = 1, Y = 0) so that 0 is not counted twice; return (1 - 2B) Y.
    """
    rng = as_rng(rng)
    out = np.zeros(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        m = todo.size
        u = rng.integers(0, t, size=m)
        keep = bernoulli_exp(u, np.full(m, t), rng)
        u = u[keep]
        idx = todo[keep]
        v = np.zeros(u.size, dtype=np.int64)
        going = np.arange(u.size)
        while going.size:
            ok = bernoulli_exp(np.ones(going.size, np.int64), np.ones(going.size, np.int64), rng)
            going = going[ok]
            v[going] += 1
        y = (u + t * v) // s
        neg = rng.integers(0, 2, size=u.size) == 1
        accept = ~(neg & (y == 0))
        out[idx[accept]] = np.where(neg, -y, y)[accept]
        done = np.zeros(n, dtype=bool)
        done[idx[accept]] = True
        todo = todo[~done[todo]]
    return out


def noise_parameters(epsilon: float, sensitivity: float, step: float) -> tuple[int, int, int]:
    """(m, s, t): the sensitivity in grid steps m = ceil(sensitivity / step) and the noise
    parameters, with t/s >= m/epsilon (so the loss m s/t is <= epsilon), s a power of two and t
    the smallest integer meeting the bound, all in exact rational arithmetic."""
    m = math.ceil(Fraction(sensitivity) / Fraction(step))
    scale = Fraction(m) / Fraction(epsilon)  # noise scale in steps
    if scale > MAX_STEPS_SCALE:
        raise ValueError(f"the noise would span {float(scale):.3g} grid steps (sensitivity/step/epsilon); at most "
                         f"2^44 are supported: use a coarser step")
    j = min(max(_SCALE_BITS - math.ceil(math.log2(scale)), 0), 60)
    s = 2**j
    t = math.ceil(scale * s)
    return m, s, t


def _is_power_of_two(x: float) -> bool:
    return math.frexp(x)[0] == 0.5


@register("discrete_laplace")
@dataclass(frozen=True)
class DiscreteLaplace(Mechanism):
    """f(D) rounded to a grid of step g (a power of two) plus g times discrete Laplace noise.

    Data: the scalar query answer f(D). Output: g (k0 + Z), with k0 = floor(f/g + 1/2) computed in
    exact rational arithmetic and Z discrete Laplace with P[Z = z] proportional to exp(-a |z|),
    sampled exactly (module docstring). With ``bound`` B (a multiple of g), f is first clamped to
    [-B, B] and the output index to [-B/g, B/g] (atoms at +-B).

    Claim (``claim``): ``epsilon``-DP under ``value`` neighbours (|f(D) - f(D')| <= sensitivity),
    for any f (not only grid points). Rounding to the grid can increase the sensitivity: the
    nearest-index map is monotone and commutes with shifts by whole steps, so |k0 - k0'| <=
    m = ceil(sensitivity / g) (= sensitivity / g when the sensitivity is a multiple of g, and
    1 step more than sensitivity / g rounded down otherwise). The noise is calibrated for m steps:
    a = s/t <= epsilon / m with integers s, t (``noise_parameters``), so each output's probability
    ratio is at most exp(a m) <= exp(epsilon) (Ghosh, Roughgarden & Sundararajan's geometric
    mechanism; the two-sided geometric is the discrete Laplace). ``epsilon_used`` = m s / t is the
    exact loss, below epsilon by less than 2^-40 relative. Clamping the input to [-B, B] (or the
    input index to +-2^62 when unbounded) is 1-Lipschitz and clamping the output is
    post-processing. Float safety: all of this is integer arithmetic; only the final g * index
    is a double (exact for |index| <= 2^53, a function of the integer beyond).

    ``distribution(data)`` (bounded releases only) is the exact law: a
    :class:`~mechanisms.laws.GridRunsLaw` on the grid g Z, geometric on each side of k0 with
    the clamped tails as atoms at +-B.
    """

    epsilon: float
    sensitivity: float = 1.0
    step: float = 1.0
    bound: float | None = None

    kind: ClassVar[str] = "real"

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        sens = check_positive(self.sensitivity, "sensitivity")
        g = check_positive(self.step, "step")
        if not _is_power_of_two(g):
            raise ParamError("step", f"step must be a power of two (e.g. 1, 0.5, 2**-10), got {self.step!r}")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "sensitivity", sens)
        object.__setattr__(self, "step", g)
        if self.bound is not None:
            b = check_positive(self.bound, "bound")
            kb = Fraction(b) / Fraction(g)
            if kb.denominator != 1:
                raise ParamError("bound", f"bound must be a multiple of step={g!r} (or None for no bound), got {self.bound!r}")
            if kb > 2**52:
                raise ParamError("bound", f"bound must be at most 2^52 steps (2^52 * step = {g * 2.0**52!r}), got {self.bound!r}")
            object.__setattr__(self, "bound", b)
        m, s, t = noise_parameters(eps, sens, g)
        object.__setattr__(self, "_noise", (m, s, t))

    @property
    def steps(self) -> int:
        """m: the sensitivity of the rounded answer, in grid steps (ceil(sensitivity / step))."""
        return self._noise[0]  # type: ignore[attr-defined]

    @property
    def decay(self) -> float:
        """a = s/t: log P[Z = z] decreases by a per step away from 0."""
        _, s, t = self._noise  # type: ignore[attr-defined]
        return s / t

    @property
    def epsilon_used(self) -> float:
        """m s / t: the exact worst-case loss of this calibration (<= epsilon)."""
        m, s, t = self._noise  # type: ignore[attr-defined]
        return min(float(Fraction(m * s, t)), self.epsilon)

    @property
    def lower(self) -> float | None:
        return None if self.bound is None else -self.bound

    @property
    def upper(self) -> float | None:
        return self.bound

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="value", sensitivity=self.sensitivity)

    @classmethod
    def example(cls) -> tuple["DiscreteLaplace", Any]:
        return cls(epsilon=1.0, sensitivity=1.0, step=0.25, bound=1024.0), 0.0

    def _index(self, data: Any) -> int:
        """k0 = floor(f/g + 1/2) after clamping (exact rationals), as a Python int."""
        check_present(data, "data (f(D))", "one real number, the query answer f(D)")
        try:
            arr = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError):
            raise ParamError("data", f"data (f(D)) must be one real number, got {data!r}") from None
        if arr.size != 1:
            raise ParamError("data", f"data (f(D)) must be one real number, got an array of shape {arr.shape}")
        f = float(arr.reshape(()))
        if not math.isfinite(f):
            raise ParamError("data", f"data (f(D)) must be finite, got {f!r}")
        k = math.floor(Fraction(f) / Fraction(self.step) + Fraction(1, 2))
        lim = _MAX_INDEX if self.bound is None else int(Fraction(self.bound) / Fraction(self.step))
        return min(max(k, -lim), lim)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        shape = check_size(size)
        rng = as_rng(rng)
        k0 = self._index(data)
        n = math.prod(shape) if shape else 1
        _, s, t = self._noise  # type: ignore[attr-defined]
        k = np.int64(k0) + sample_discrete_laplace(n, s, t, rng)
        if self.bound is not None:
            lim = int(Fraction(self.bound) / Fraction(self.step))
            k = np.clip(k, -lim, lim)
        out = k.astype(np.float64) * self.step
        return out.reshape(shape) if shape else out[0]

    def distribution(self, data: Any) -> GridRunsLaw:
        """Exact law of a bounded release (``ValueError`` without a bound: the unbounded law has
        infinitely many points, and a law truncated at data-dependent points would not compare
        exactly between datasets)."""
        if self.bound is None:
            raise ValueError("discrete_laplace exposes its exact law only with a bound (bound=B, a multiple of step)")
        k0 = self._index(data)
        K = int(Fraction(self.bound) / Fraction(self.step))
        a = self.decay
        tail = -math.log(-math.expm1(-a))  # log of sum_{d>=0} e^{-a d}
        first, count, lw, ratio = [], [], [], []

        def run(f: int, n: int, w: float, r: float) -> None:
            if n > 0:
                first.append(f)
                count.append(n)
                lw.append(w)
                ratio.append(r)

        # unnormalised log weights: -a |k - k0| per point, the clamped tails summed into +-K
        if k0 > -K:
            run(-K, 1, -a * (k0 + K) + tail, 0.0)
            run(-K + 1, k0 + K - 1, -a * (k0 + K - 1), a)
        run(k0, 1, tail if abs(k0) == K else 0.0, 0.0)
        if k0 < K:
            run(k0 + 1, K - k0 - 1, -a, -a)
            run(K, 1, -a * (K - k0) + tail, 0.0)
        return GridRunsLaw.from_log_weights(0.0, self.step, first, count, lw, ratio)

    def cdf(self, data: Any, x: Any) -> np.ndarray:
        return self.distribution(data).cdf(x)
