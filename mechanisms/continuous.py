"""Exponential mechanisms over a continuous output range, sampled exactly (no output grid).

Three mechanisms share one law, :class:`mechanisms.laws.PiecewiseDensity` (a density that is
log-linear on each piece): the utility is piecewise constant or piecewise linear in the output r,
so exp(epsilon * u / (2 * Delta_u)) is log-linear on each piece. Pieces are chosen by their
log-mass (log-sum-exp, log1p/expm1 forms in :mod:`mechanisms.laws`) and the output is drawn by the
inverse CDF inside the piece. Nothing is ever exponentiated from raw utilities, so
epsilon * utility ranges of 1e6 and more are safe.

* ``continuous_exponential`` (this module) -- the exponential mechanism on [lower, upper] for a
  utility given piece by piece (docs/mechanisms.md, "continuous_exponential");
* ``revenue_price`` (:mod:`mechanisms.revenue`) -- the pumpkin auction, Dwork & Roth, Example 3.5
  (docs/mechanisms.md, "revenue_price");
* ``laplace_via_exponential`` (:mod:`mechanisms.laplace_exponential`) -- u = -|f(D) - r|, which
  yields a Laplace density (docs/mechanisms.md, "laplace_via_exponential").

:func:`mechanisms.expectations.expected_linear` gives E[u(X)] exactly for a utility that is linear
on the pieces of a :class:`~mechanisms.laws.PiecewiseDensity` (used for the exact mean revenue loss).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpharness.mechanisms.base import (
    Mechanism,
    ParamError,
    PrivacyClaim,
    check_choice,
    check_epsilon,
    check_positive,
    check_present,
)
from dpharness.mechanisms.domains import DOMAINS, Grid, resolve_grid
from dpharness.mechanisms.expectations import expected_linear, mean_in_piece
from dpharness.mechanisms.laws import GridRunsLaw, PiecewiseDensity
from dpharness.mechanisms.registry import register

__all__ = [
    "ContinuousExponential",
    "RevenuePrice",
    "LaplaceViaExponential",
    "expected_linear",
    "mean_in_piece",
]


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _check_breakpoints(breakpoints: Any) -> tuple[float, ...]:
    try:
        b = np.asarray(breakpoints, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParamError("breakpoints", f"breakpoints must be a 1-D sequence of real numbers, got {breakpoints!r}") from None
    if b.ndim != 1 or b.size < 2:
        raise ParamError("breakpoints", f"breakpoints must be a 1-D sequence of at least 2 numbers, got {breakpoints!r}")
    if not np.all(np.isfinite(b)):
        raise ParamError("breakpoints", f"breakpoints must be finite, got {breakpoints!r}")
    d = np.diff(b)
    if np.any(d <= 0):
        i = int(np.flatnonzero(d <= 0)[0])
        what = "duplicate" if d[i] == 0 else "unsorted"
        raise ParamError(
            'breakpoints', f"breakpoints must be strictly increasing; {what} entries at index {i}, {i + 1}: "
            f"{b[i]!r}, {b[i + 1]!r}"
        )
    return tuple(float(v) for v in b)


def _grid_linear_weights(
    edges: np.ndarray, g: Grid, first: np.ndarray, count: np.ndarray, left: np.ndarray, right: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(log weight of the first point, log ratio) of each run for a log weight that is linear on
    each piece, from ``left`` at edges[j] to ``right`` at edges[j+1].

    The end points' positions lambda in the piece are clamped to [0, 1], so every weight is a
    convex combination of left[j] and right[j] (see :class:`ContinuousExponential`).
    """
    lo, w = edges[:-1], np.diff(edges)
    last = first + np.maximum(count - 1, 0)
    lam0 = np.clip((g.values(first) - lo) / w, 0.0, 1.0)
    lam1 = np.clip((g.values(last) - lo) / w, 0.0, 1.0)
    d = right - left
    a = left + lam0 * d
    steps = np.maximum(count - 1, 1).astype(np.float64)
    rho = np.where(count > 1, d * ((lam1 - lam0) / steps), 0.0)
    return a, rho


# --------------------------------------------------------------------------------------------
# continuous_exponential
# --------------------------------------------------------------------------------------------


@register("continuous_exponential")
@dataclass(frozen=True)
class ContinuousExponential(Mechanism):
    """Exponential mechanism on [breakpoints[0], breakpoints[-1]] for a piecewise utility.

    Output density proportional to exp(epsilon * u(r) / (2 * sensitivity)) with respect to
    Lebesgue measure (McSherry & Talwar 2007; Dwork & Roth, Def. 3.4 / Thm 3.10, continuous range
    as in docs/mechanisms.md, "Exponential mechanisms on a continuous range").
    The pieces are [breakpoints[j], breakpoints[j+1]].

    The *data* is the utility itself:

    * ``utility="constant"``: data has shape (m,), u(r) = data[j] on piece j;
    * ``utility="linear"``: data has shape (m, 2), u is linear on piece j from data[j, 0] at its
      left end to data[j, 1] at its right end (slope (data[j,1] - data[j,0]) / width; jumps
      between pieces are allowed, a zero slope is a constant piece).

    Guarantee: epsilon-DP under ``score_linf`` neighbours: neighbouring datasets give utilities
    that differ by at most ``sensitivity`` at every r. For linear pieces, |u(r) - u'(r)| <= Delta
    for all r holds exactly when every entry of the data array moves by at most Delta (a linear
    function is extremal at the ends of its piece), so the relation is elementwise on the data.

    Sampling is exact: piece by inverse CDF over log-masses, then inverse CDF inside the piece;
    stable for epsilon * utility ranges up to 1e6 and beyond.

    Output domain (``domain``, ``step``; as for ``duff_median``): ``"continuous"`` (Lebesgue
    measure, default) or a declared, data-independent grid -- ``"integers"`` or ``"grid"`` with
    step h -- with counting measure on {lower + k h} ∩ [lower, upper] (lower = breakpoints[0] and
    upper = breakpoints[-1] must be grid points; at most 2^53 points). Piece j then holds the grid
    points v with breakpoints[j] <= v < breakpoints[j+1] (the last piece also holds upper; a
    breakpoint within 1e-9 steps of a grid point counts as that point), so its mass is
    count_j x exp(epsilon u_j / (2 Delta)): exact, O(m), the grid is never enumerated. The base
    measure depends only on (breakpoints, step), never on the data.

    With ``utility="linear"`` on a grid, the points v_0 < ... < v_{n-1} of piece j get the linear
    utility at lambda_i = (v_i - breakpoints[j]) / width_j, clamped to [0, 1] at the two end points
    (a breakpoint snapped to a grid point within 1e-9 steps may leave an end point a hair outside
    its piece); the points in between are interpolated linearly, so the log weights
    epsilon u(v_i) / (2 Delta) = a_j + rho_j i form a geometric run (exact law:
    :class:`~mechanisms.laws.GridRunsLaw` with ``log_ratio``; O(m) again). Every utility value used
    is a convex combination of data[j, 0] and data[j, 1], so it moves by at most Delta when the
    data does: the epsilon-DP guarantee holds on the grid exactly as on the continuum.
    """

    epsilon: float
    breakpoints: tuple[float, ...]
    sensitivity: float = 1.0
    utility: str = "constant"
    domain: str = "continuous"
    step: float | None = None

    kind: ClassVar[str] = "real"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "breakpoints", _check_breakpoints(self.breakpoints))
        object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        check_choice(self.utility, "utility", ("constant", "linear"))
        check_choice(self.domain, "domain", DOMAINS)
        resolve_grid(self.domain, self.breakpoints[0], self.breakpoints[-1], self.step)
        if self.step is not None:
            object.__setattr__(self, "step", float(self.step))

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="score_linf", sensitivity=self.sensitivity)

    @property
    def grid(self) -> Grid | None:
        """The discrete output domain, or None for the continuous one."""
        return resolve_grid(self.domain, self.breakpoints[0], self.breakpoints[-1], self.step)

    def grid_pieces(self) -> tuple[np.ndarray, np.ndarray]:
        """(first, count): grid indices of the points of each piece (discrete domains only)."""
        g = self.grid
        if g is None:
            raise ValueError("grid_pieces needs a discrete domain ('integers' or 'grid')")
        t = (np.asarray(self.breakpoints[1:-1], dtype=np.float64) - g.lower) / g.step
        r = np.rint(t)
        on = np.abs(t - r) <= 1e-9 + 1e-14 * np.abs(t)
        inner = np.where(on, r, np.ceil(t)).astype(np.int64)
        k = np.concatenate(([0], inner, [g.size + 1]))
        return k[:-1], np.diff(k)

    @property
    def lower(self) -> float:
        return self.breakpoints[0]

    @property
    def upper(self) -> float:
        return self.breakpoints[-1]

    @classmethod
    def example(cls) -> tuple["ContinuousExponential", Any]:
        mech = cls(epsilon=1.0, breakpoints=(0.0, 1.0, 2.5, 4.0), sensitivity=1.0, utility="linear")
        data = np.array([[0.0, 2.0], [1.0, 1.0], [3.0, -1.0]])
        return mech, data

    def _utility(self, data: Any) -> np.ndarray:
        """Validated data as an (m, 2) array of (left, right) utility values."""
        m = len(self.breakpoints) - 1
        check_present(data, "data", "the utility values of the pieces (an array)")
        try:
            u = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ParamError("data", f"data must be an array of utility values: {exc}") from None
        want = (m,) if self.utility == "constant" else (m, 2)
        if u.shape != want:
            raise ParamError(
                'data', f"data must have shape {want} for utility={self.utility!r} with {m} piece(s), got shape {u.shape}"
            )
        if not np.all(np.isfinite(u)):
            bad = u[~np.isfinite(u)].flat[0]
            raise ParamError("data", f"data (utility values) must be finite, found {bad!r}")
        return np.stack([u, u], axis=1) if self.utility == "constant" else u

    def distribution(self, data: Any) -> PiecewiseDensity | GridRunsLaw:
        """The exact output law (log-linear on each piece; GridRunsLaw on a discrete domain)."""
        u = self._utility(data)
        e = np.asarray(self.breakpoints)
        c = self.epsilon / (2.0 * self.sensitivity)
        if self.domain != "continuous":
            g = self.grid
            first, count = self.grid_pieces()
            if self.utility == "constant":
                return GridRunsLaw.from_log_weights(g.lower, g.step, first, count, c * u[:, 0])
            a, rho = _grid_linear_weights(e, g, first, count, c * u[:, 0], c * u[:, 1])
            return GridRunsLaw.from_log_weights(g.lower, g.step, first, count, a, rho)
        w = np.diff(e)
        log_left = c * u[:, 0]
        # slope of the log density: c * (u_right - u_left) / w; (c*u_right - c*u_left) first so
        # large utilities do not lose the difference to rounding more than necessary.
        log_slope = (c * u[:, 1] - c * u[:, 0]) / w
        return PiecewiseDensity.from_log_density(e, log_left, log_slope)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        return self.distribution(data).sample(size, rng)

    def log_pdf(self, data: Any, x: Any) -> np.ndarray:
        """Log density; on a discrete domain the log probability of each point."""
        law = self.distribution(data)
        return law.log_pmf(x) if isinstance(law, GridRunsLaw) else law.log_pdf(x)

    def cdf(self, data: Any, x: Any) -> np.ndarray:
        return self.distribution(data).cdf(x)


# The other two mechanisms of this family live in their own modules; importable from here as before.
from dpharness.mechanisms.laplace_exponential import LaplaceViaExponential  # noqa: E402
from dpharness.mechanisms.revenue import RevenuePrice  # noqa: E402
