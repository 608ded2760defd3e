"""Which doubles a common noise sampler can output around a known centre (the data of
:mod:`verifiers.events.reachable`).

numpy's ``Generator.random()`` (and ``RandomState.random_sample``) returns ``U = k 2^-53`` for an
integer ``k``; every inverse-CDF sampler built on it outputs a function of ``k`` evaluated in
double arithmetic, so the doubles it can release near a centre ``c`` form a sparse, computable set.
Each model below says, for every output ``y``, whether some ``k`` gives exactly ``y``: it inverts the
sampler in real arithmetic to a first guess of ``k`` and evaluates the sampler's own double
operations, in its own order, on the integers around that guess.

Models (``MODELS``):

* ``"laplace"`` -- ``Generator.laplace(c, b)`` / ``RandomState.laplace`` / ``c + laplace(0, b)``:
  ``c - b*log((2 - U) - U)`` for ``U >= 1/2``, ``c + b*log(U + U)`` otherwise (numpy's
  ``random_laplace``);
* ``"laplace_scaled"`` -- ``scipy.stats.laplace.rvs(loc=c, scale=b)``: numpy's standard Laplace,
  then ``* b + c``;
* ``"exponential"`` -- ``c + b * (-log(1 - U))`` (``RandomState.exponential``, the textbook
  inverse CDF);
* ``"uniform"`` -- ``lo + (hi - lo) * U`` on the interval of consecutive sorted data points holding
  ``y`` (``Generator.uniform(lo, hi)``; the continuous exponential mechanism's draw inside its
  chosen interval). Outputs outside the data's range are not reachable.

numpy's vectorised ``log`` differs from the C library's (which the samplers call) in the last bit on
about 0.5 % of inputs, so a miss of the fast pass is checked again with :func:`math.log`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

__all__ = ["MODELS", "reachable", "WINDOW"]

#: Integers tried on each side of the inverted guess of ``k``.
WINDOW = 3
_TWO53 = 2.0 ** 53
_mlog = np.frompyfunc(math.log, 1, 1)


def _libm_log(x: np.ndarray) -> np.ndarray:
    out = np.full(x.shape, np.nan)
    ok = x > 0
    if ok.any():
        out[ok] = _mlog(x[ok]).astype(np.float64)
    return out


def _laplace_core(U: np.ndarray, log: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(sign, log term) of numpy's ``random_laplace`` for uniforms ``U``."""
    upper = U >= 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(upper, (2.0 - U) - U, U + U)
        return upper, log(a)


def _fwd_laplace(k: np.ndarray, c: float, b: float, log: Callable) -> np.ndarray:
    upper, lg = _laplace_core(k / _TWO53, log)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(upper, c - b * lg, c + b * lg)


def _fwd_laplace_scaled(k: np.ndarray, c: float, b: float, log: Callable) -> np.ndarray:
    upper, lg = _laplace_core(k / _TWO53, log)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(upper, -lg, lg) * b + c


def _fwd_exponential(k: np.ndarray, c: float, b: float, log: Callable) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return c + b * -log(1.0 - k / _TWO53)


def _guess_laplace(y: np.ndarray, c: float, b: float) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        t = (y - c) / b
        return np.where(t < 0, 0.5 * np.exp(t), 1.0 - 0.5 * np.exp(-t))


def _guess_exponential(y: np.ndarray, c: float, b: float) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return -np.expm1(-(y - c) / b)


_LOCATION: dict[str, tuple[Callable, Callable]] = {
    "laplace": (_fwd_laplace, _guess_laplace),
    "laplace_scaled": (_fwd_laplace_scaled, _guess_laplace),
    "exponential": (_fwd_exponential, _guess_exponential),
}


def _search(y: np.ndarray, guess: np.ndarray, fwd: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Whether some integer k within :data:`WINDOW` of ``guess * 2^53`` (in [1, 2^53)) maps to y."""
    k0 = np.floor(np.nan_to_num(guess, nan=-1.0) * _TWO53)
    hit = np.zeros(y.shape, dtype=bool)
    valid = np.isfinite(y) & (k0 >= -WINDOW) & (k0 < _TWO53 + WINDOW)
    for dk in range(-WINDOW, WINDOW + 1):
        k = k0 + dk
        ok = valid & (k >= 1) & (k < _TWO53) & ~hit
        if ok.any():
            hit[ok] = fwd(k[ok], ok) == y[ok]
    return hit


def _location_model(name: str, y: np.ndarray, c: float, b: float) -> np.ndarray:
    fwd, guess_of = _LOCATION[name]
    g = guess_of(y, c, b)
    hit = _search(y, g, lambda k, ok: fwd(k, c, b, np.log))
    miss = ~hit & np.isfinite(y)
    if miss.any():  # the C library's log, on what the fast pass missed
        ym = y[miss]
        hit[miss] = _search(ym, g[miss], lambda k, ok: fwd(k, c, b, _libm_log))
    return hit


def _uniform_model(y: np.ndarray, points: tuple) -> np.ndarray:
    x = np.unique(np.asarray(points, dtype=np.float64))
    hit = np.zeros(y.shape, dtype=bool)
    if x.size < 2:
        return hit
    i = np.searchsorted(x, y, side="right") - 1
    inside = np.isfinite(y) & (i >= 0) & (i < x.size - 1)
    # an output equal to a data point is reached from the interval it starts (U = 0) and, when it
    # ends the one below (U -> 1 rounds up), from that one too: both are tried
    for shift in (0, -1):
        j = np.clip(i + shift, 0, x.size - 2)
        ok = inside & ~hit & (i + shift >= 0)
        if not ok.any():
            continue
        lo, hi = x[j[ok]], x[j[ok] + 1]
        w = hi - lo
        with np.errstate(divide="ignore", invalid="ignore"):
            g = (y[ok] - lo) / w
        hit[ok] = _search(y[ok], g, lambda k, sel, lo=lo, w=w: lo[sel] + w[sel] * (k / _TWO53))
    return hit


def reachable(model: tuple, y: Any) -> np.ndarray:
    """Boolean mask: which outputs ``y`` the sampler ``model`` can release exactly.

    ``model`` is ``(name, c, b)`` for the location-scale models of :data:`MODELS` and
    ``("uniform", x0, x1, ...)`` (the sorted data points) for the interval model."""
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    name = model[0]
    if name == "uniform":
        return _uniform_model(y, tuple(model[1:]))
    if name not in _LOCATION:
        raise ValueError(f"sampler model must be one of {', '.join(MODELS)}, got {name!r}")
    return _location_model(name, y, float(model[1]), float(model[2]))


#: The sampler models (name -> one line saying what it releases).
MODELS: dict[str, str] = {
    "laplace": "c + b log(2U) / c - b log(2 - 2U) (numpy Generator/RandomState.laplace(c, b))",
    "laplace_scaled": "standard Laplace * b + c (scipy.stats.laplace.rvs(loc=c, scale=b))",
    "exponential": "c + b (-log(1 - U)) (RandomState.exponential, inverse CDF)",
    "uniform": "lo + (hi - lo) U inside the interval of consecutive data points (Generator.uniform)",
}
