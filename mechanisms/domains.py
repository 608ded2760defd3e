"""Output domains of the real-valued mechanisms: the continuum or a declared grid.

A mechanism with ``domain="continuous"`` releases a real number in [lower, upper] (base measure:
Lebesgue measure). ``domain="integers"`` or ``domain="grid"`` with ``step=h`` releases a point of
the grid {lower + k h : k = 0..size} (base measure: counting measure). The grid depends only on
(lower, upper, step), never on the data: a base measure with atoms at the data values would not
be differentially private (docs/mechanisms.md).

Public API: :data:`DOMAINS`, :data:`MAX_GRID_POINTS`, :class:`Grid` (snapping, thresholds,
indices), :func:`resolve_grid` (validate a domain and build its grid), :func:`on_grid` and
:func:`last_index_at_most`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpharness.mechanisms.base import ParamError

__all__ = ["DOMAINS", "MAX_GRID_POINTS", "Grid", "resolve_grid", "on_grid", "last_index_at_most"]

DOMAINS: tuple[str, ...] = ("continuous", "integers", "grid")

#: Largest number of grid points a discrete domain may have. Grid indices and points pass through
#: float64, which is exact for integers only up to 2^53: a larger grid would silently return wrong
#: points (a 2^62-point integer grid mapped data at 3 to output 0), so the cap is 2^53, well below
#: what int64 indices could hold.
MAX_GRID_POINTS = 2**53


@dataclass(frozen=True)
class Grid:
    """The grid {lower + k step : k = 0..size} (``size`` steps, ``size + 1`` points).

    Snapping: record x goes to index k(x) = max{k : k = 0 or threshold(k) <= x}, with
    threshold(k) = lower + (k - 1/2) step computed in float64 (the nearest grid point, ties up;
    records below/above the range go to 0/size). threshold is non-decreasing in k, so k(x) is
    non-decreasing in x and k(x) < k  <=>  x < threshold(k): counts of snapped records can be taken
    on the raw records, and order statistics of snapped data are the snapped order statistics.
    """

    lower: float
    step: float
    size: int

    def threshold(self, k: Any) -> np.ndarray:
        return self.lower + (np.asarray(k).astype(np.float64) - 0.5) * self.step

    def values(self, k: Any) -> np.ndarray:
        return self.lower + self.step * np.asarray(k).astype(np.float64)

    def snap(self, x: np.ndarray) -> np.ndarray:
        """Grid index of each record (int64), exactly as defined above."""
        x = np.asarray(x, dtype=np.float64)
        z = np.clip((x - self.lower) / self.step + 0.5, 0.0, float(self.size))
        k = np.minimum(np.floor(z).astype(np.int64), self.size)
        # check the estimate against the thresholds; fix the rare misses by bisection
        bad = ((k > 0) & (x < self.threshold(k))) | ((k < self.size) & (x >= self.threshold(np.minimum(k + 1, self.size))))
        if bad.any():
            xb = x[bad]
            lo = np.zeros(xb.shape, dtype=np.int64)
            hi = np.full(xb.shape, self.size, dtype=np.int64)
            while np.any(lo < hi):
                mid = hi - (hi - lo) // 2  # upper middle, > lo while lo < hi
                ok = self.threshold(mid) <= xb
                lo = np.where(ok, mid, lo)
                hi = np.where(ok, hi, mid - 1)
            k[bad] = lo
        return k

    def count_below(self, x: np.ndarray, k: int) -> int:
        """#records whose snapped index is < k (one comparison pass)."""
        if k <= 0:
            return 0
        if k > self.size:
            return int(x.size)
        return int(np.count_nonzero(x < self.threshold(k)))

    def index_of(self, points: Any, name: str = "points") -> np.ndarray:
        """Grid indices of output points that lie on the grid (ValueError otherwise)."""
        p = np.asarray(points, dtype=np.float64)
        k = np.rint((p - self.lower) / self.step)
        on = np.isfinite(p) & (k >= 0) & (k <= self.size)
        on &= np.abs(self.lower + self.step * k - p) <= 1e-9 * np.maximum(1.0, np.abs(p))
        if not np.all(on):
            bad = p[~on].reshape(-1)[0]
            raise ParamError(name, f"{name} must be grid points of [lower, upper] with step {self.step!r}; got {bad!r}")
        return k.astype(np.int64)


def on_grid(v: float, h: float) -> bool:
    """True when ``v`` is a multiple of the step ``h`` (within 1e-9 steps plus float rounding)."""
    # v / h is off by a few ulps at most (relative ~1e-16): tolerate 1e-9 steps plus that rounding,
    # not a relative 1e-9 (which accepted lower = 1e10 + 0.5 as an integer).
    r = v / h
    return math.isfinite(r) and abs(r - round(r)) <= 1e-9 + 1e-14 * abs(r)


def resolve_grid(domain: str, lower: float, upper: float, step: Any) -> Grid | None:
    """The output grid of ``domain`` on [lower, upper] (None for ``"continuous"``), validated.

    ``"integers"`` is step 1; ``"grid"`` needs ``step`` > 0; lower and upper must be grid points and
    the grid may have at most :data:`MAX_GRID_POINTS` points. ``ValueError`` naming the argument
    (``step``, ``lower``, ``upper``) otherwise. ``domain`` itself is checked by the caller
    (``check_choice(domain, "domain", DOMAINS)``).
    """
    if domain == "continuous":
        if step is not None:
            raise ParamError("step", f"step must be None for domain='continuous', got {step!r}")
        return None
    if domain == "integers":
        if step is not None and not (isinstance(step, numbers.Real) and not isinstance(step, bool) and step == 1):
            raise ParamError("step", f"step must be None (or 1) for domain='integers', got {step!r}")
        h = 1.0
    else:
        if step is None:
            raise ParamError("step", "step must be given (a number > 0) for domain='grid', got None")
        if not isinstance(step, numbers.Real) or isinstance(step, bool) or not math.isfinite(float(step)):
            raise ParamError("step", f"step must be a finite number > 0, got {step!r}")
        h = float(step)
        if h <= 0:
            raise ParamError("step", f"step must be > 0, got {step!r}")
    m_float = (upper - lower) / h
    # the exact integer count: m_float + 1 rounds 2^53 + 1 down to 2^53 in float64
    if not (math.isfinite(m_float) and int(round(m_float)) + 1 <= MAX_GRID_POINTS):
        raise ValueError(
            f"the grid has {m_float + 1:.4g} points (lower={lower!r}, upper={upper!r}, step={h!r}); "
            f"at most 2^53 are supported (grid indices must be exact in float64; so never more than 2^62)"
        )
    for v, nm in ((lower, "lower"), (upper, "upper")):
        if not on_grid(v, h):
            what = "an integer" if domain == "integers" else f"a multiple of step={h!r}"
            raise ParamError(nm, f"{nm} must be on the grid ({what}) for domain={domain!r}, got {nm}={v!r}")
    return Grid(lower=float(lower), step=h, size=int(round(m_float)))


def last_index_at_most(g: Grid, y: np.ndarray) -> np.ndarray:
    """Largest k in [-1, g.size] with g.values(k) <= y (-1: none), exactly on the float grid
    values: a floor estimate, corrected against the values themselves."""
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        k = np.floor(np.clip((y - g.lower) / g.step, -1.0, float(g.size))).astype(np.int64)
    for _ in range(64):
        up = (k < g.size) & (g.values(np.minimum(k + 1, g.size)) <= y)
        down = (k >= 0) & ~up & (g.values(np.maximum(k, 0)) > y)
        if not (up.any() or down.any()):
            break
        k = k + up - down
    return k
