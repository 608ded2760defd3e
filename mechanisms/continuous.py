"""Exponential mechanisms over a continuous output range, sampled exactly (no output grid).

Three mechanisms share one law, :class:`mechanisms.laws.PiecewiseDensity` (a density that is
log-linear on each piece): the utility is piecewise constant or piecewise linear in the output r,
so exp(epsilon * u / (2 * Delta_u)) is log-linear on each piece. Pieces are chosen by their
log-mass (log-sum-exp, log1p/expm1 forms in :mod:`mechanisms.laws`) and the output is drawn by the
inverse CDF inside the piece. Nothing is ever exponentiated from raw utilities, so
epsilon * utility ranges of 1e6 and more are safe.

* ``continuous_exponential`` -- the exponential mechanism on [lower, upper] for a utility given
  piece by piece (docs/mechanisms.md, "continuous_exponential");
* ``revenue_price`` -- the pumpkin auction, Dwork & Roth, Example 3.5 (docs/mechanisms.md, "revenue_price");
* ``laplace_via_exponential`` -- u = -|f(D) - r|, which yields a Laplace density
  (docs/mechanisms.md, "laplace_via_exponential").

:func:`expected_linear` gives E[u(X)] exactly for a utility that is linear on the pieces of a
:class:`~mechanisms.laws.PiecewiseDensity` (used for the exact mean revenue loss).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .base import (
    Mechanism,
    PrivacyClaim,
    check_bounds,
    check_choice,
    check_data,
    check_epsilon,
    check_positive,
    check_present,
)
from .laws import GridRunsLaw, LocationScaleLaw, PiecewiseDensity
from .medians import DOMAINS, Grid, _resolve_grid
from .registry import register

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


def mean_in_piece(z: Any) -> np.ndarray:
    """E[T] for T with density proportional to exp(z * t) on [0, 1], stable for every real z.

    g(z) = 1/(1 - e^{-z}) - 1/z for z > 0, g(-z) = 1 - g(z), g(0) = 1/2. Near 0 the two terms
    cancel, so a Taylor series 1/2 + z/12 - z^3/720 is used for |z| < 1e-2 (next term z^5/30240,
    below 4e-15 there).
    """
    z = np.asarray(z, dtype=np.float64)
    a = np.abs(z)
    small = a < 1e-2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        big = 1.0 / (-np.expm1(-a)) - 1.0 / a  # g(|z|), no overflow: e^{-|z|} <= 1
    g_abs = np.where(small, 0.5 + a / 12 - a**3 / 720, big)
    return np.where(z >= 0, g_abs, 1.0 - g_abs)


def expected_linear(law: PiecewiseDensity, left: Any, slope: Any) -> float:
    """E[v(X)] exactly for X ~ ``law`` and v linear on each piece: v = left[j] + slope[j](x - edges[j]).

    E[X - edges[j] | piece j] = w_j * g(log_slope_j * w_j) with g from :func:`mean_in_piece`.
    Zero-mass pieces contribute nothing (their values may be anything finite).
    """
    left = np.asarray(left, dtype=np.float64)
    slope = np.asarray(slope, dtype=np.float64)
    w = law.widths
    p = np.exp(law.log_mass)
    et = w * mean_in_piece(law.log_slope * w)
    vals = left + slope * et
    return float(np.sum(np.where(p > 0, p * vals, 0.0)))


def _check_breakpoints(breakpoints: Any) -> tuple[float, ...]:
    try:
        b = np.asarray(breakpoints, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"breakpoints must be a 1-D sequence of real numbers, got {breakpoints!r}") from None
    if b.ndim != 1 or b.size < 2:
        raise ValueError(f"breakpoints must be a 1-D sequence of at least 2 numbers, got {breakpoints!r}")
    if not np.all(np.isfinite(b)):
        raise ValueError(f"breakpoints must be finite, got {breakpoints!r}")
    d = np.diff(b)
    if np.any(d <= 0):
        i = int(np.flatnonzero(d <= 0)[0])
        what = "duplicate" if d[i] == 0 else "unsorted"
        raise ValueError(
            f"breakpoints must be strictly increasing; {what} entries at index {i}, {i + 1}: "
            f"{b[i]!r}, {b[i + 1]!r}"
        )
    return tuple(float(v) for v in b)


def _last_index_at_most(g: Grid, y: np.ndarray) -> np.ndarray:
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


def _check_scalar(x: Any, name: str) -> float:
    check_present(x, name, "one real number")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be one real number, got {x!r}") from None
    if arr.size != 1:
        raise ValueError(f"{name} must be one real number, got {x!r}")
    v = float(arr.reshape(()))
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return v


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
        _resolve_grid(self.domain, self.breakpoints[0], self.breakpoints[-1], self.step)
        if self.step is not None:
            object.__setattr__(self, "step", float(self.step))

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="score_linf", sensitivity=self.sensitivity)

    @property
    def grid(self) -> Grid | None:
        """The discrete output domain, or None for the continuous one."""
        return _resolve_grid(self.domain, self.breakpoints[0], self.breakpoints[-1], self.step)

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
            raise ValueError(f"data must be an array of utility values: {exc}") from None
        want = (m,) if self.utility == "constant" else (m, 2)
        if u.shape != want:
            raise ValueError(
                f"data must have shape {want} for utility={self.utility!r} with {m} piece(s), got shape {u.shape}"
            )
        if not np.all(np.isfinite(u)):
            bad = u[~np.isfinite(u)].flat[0]
            raise ValueError(f"data (utility values) must be finite, found {bad!r}")
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


# --------------------------------------------------------------------------------------------
# revenue_price (pumpkin auction)
# --------------------------------------------------------------------------------------------


@register("revenue_price")
@dataclass(frozen=True)
class RevenuePrice(Mechanism):
    """Private price for a digital good: the pumpkin auction (Dwork & Roth, Example 3.5).

    Data: bids x_1..x_n >= 0 (1-D, may be empty). For a price r in [r_min, r_max] the revenue is
    u(x, r) = r * |{i : x_i >= r}|. The price is drawn with density proportional to
    exp(epsilon * u(x, r) / (2 * r_max)) on [r_min, r_max] (exponential mechanism; McSherry &
    Talwar 2007, Dwork & Roth Thm 3.10).

    Guarantee: epsilon-DP under ``add_remove`` neighbours (one bidder added or removed). Adding a
    bidder changes u(x, r) by r or 0, so Delta_u = r_max (needs r_min >= 0, enforced). Revenue is
    monotone in the data, so exp(epsilon u / Delta_u) would also be epsilon-DP; this mechanism keeps
    the textbook factor 1/2.

    Exact, no grid: between consecutive sorted bids the number of buyers is constant, so u is
    linear in r there (slope = number of buyers) and the density is log-linear on those pieces.

    Prices on a grid (``domain="integers"`` or ``"grid"`` with ``step`` h, e.g. h = 0.01 for
    cents): counting measure on the declared, data-independent grid {r_min + k h} ∩ [r_min, r_max]
    (r_min and r_max must be grid points; at most 2^53 of them). A bid x buys at grid price v when
    v <= x + 1e-9 h (so a bid of 3.01 buys at the cent price 3.01 despite float rounding of
    0.01 * 301); :meth:`revenue` uses the same rule. The grid points with a constant number of
    buyers m form runs on which the log weight epsilon m v / (2 r_max) grows by epsilon m h /
    (2 r_max) per step: a geometric run, sampled and evaluated exactly without enumerating the
    grid (:class:`~mechanisms.laws.GridRunsLaw` with ``log_ratio``). The base measure depends
    only on (r_min, r_max, step), never on the bids, and Delta_u = r_max as before.
    """

    epsilon: float
    r_min: float
    r_max: float
    domain: str = "continuous"
    step: float | None = None

    kind: ClassVar[str] = "real"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        lo, hi = check_bounds(self.r_min, self.r_max, names=("r_min", "r_max"))
        if lo < 0:
            raise ValueError(f"r_min must be >= 0 (prices are non-negative), got {self.r_min!r}")
        object.__setattr__(self, "r_min", lo)
        object.__setattr__(self, "r_max", hi)
        check_choice(self.domain, "domain", DOMAINS)
        _resolve_grid(self.domain, lo, hi, self.step)
        if self.step is not None:
            object.__setattr__(self, "step", float(self.step))

    @property
    def grid(self) -> Grid | None:
        """The discrete price domain, or None for the continuous one."""
        return _resolve_grid(self.domain, self.r_min, self.r_max, self.step)

    @property
    def _tol(self) -> float:
        g = self.grid
        return 0.0 if g is None else 1e-9 * g.step

    @property
    def sensitivity(self) -> float:
        return self.r_max

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="add_remove", sensitivity=self.sensitivity)

    @classmethod
    def example(cls) -> tuple["RevenuePrice", Any]:
        return cls(epsilon=1.0, r_min=0.0, r_max=3.5), np.array([1.0, 1.0, 1.0, 3.01])

    def _bids(self, data: Any) -> np.ndarray:
        x = check_data(data, "data (bids)", allow_empty=True)
        if np.any(x < 0):
            i = int(np.flatnonzero(x < 0)[0])
            raise ValueError(f"data (bids) must be >= 0; found {x[i]!r} at index {i}")
        return np.sort(x)

    def pieces(self, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """(edges, buyers): pieces of [r_min, r_max] on which the number of buyers is constant.

        For r in (edges[j], edges[j+1]] the buyers are the bids > edges[j]; buyers[j] counts them.
        """
        x = self._bids(data)
        inner = np.unique(x[(x > self.r_min) & (x < self.r_max)])
        edges = np.concatenate(([self.r_min], inner, [self.r_max]))
        buyers = x.size - np.searchsorted(x, edges[:-1], side="right")
        return edges, buyers.astype(np.float64)

    def grid_runs(self, data: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(first, count, buyers): runs of grid indices with a constant number of buyers
        (discrete domains only). O(n log n) in the bids, independent of the grid size."""
        g = self.grid
        if g is None:
            raise ValueError("grid_runs needs a discrete domain ('integers' or 'grid')")
        x = self._bids(data)
        top = _last_index_at_most(g, x + self._tol)  # bid i buys at grid index k iff k <= top[i]
        cuts = np.unique(top[(top >= 0) & (top < g.size)] + 1)
        first = np.concatenate(([0], cuts)).astype(np.int64)
        count = np.diff(np.concatenate((first, [g.size + 1]))).astype(np.int64)
        buyers = x.size - np.searchsorted(np.sort(top), first, side="left")
        return first, count, buyers.astype(np.float64)

    def distribution(self, data: Any) -> PiecewiseDensity | GridRunsLaw:
        """The exact law of the price: log-linear between consecutive bids (geometric runs on a grid)."""
        c = self.epsilon / (2.0 * self.sensitivity)
        g = self.grid
        if g is not None:
            first, count, n = self.grid_runs(data)
            return GridRunsLaw.from_log_weights(g.lower, g.step, first, count, c * n * g.values(first), c * n * g.step)
        edges, n = self.pieces(data)
        return PiecewiseDensity.from_log_density(edges, c * edges[:-1] * n, c * n)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        return self.distribution(data).sample(size, rng)

    def log_pdf(self, data: Any, x: Any) -> np.ndarray:
        """Log density; on a discrete domain the log probability of each price."""
        law = self.distribution(data)
        return law.log_pmf(x) if isinstance(law, GridRunsLaw) else law.log_pdf(x)

    def cdf(self, data: Any, x: Any) -> np.ndarray:
        return self.distribution(data).cdf(x)

    def revenue(self, data: Any, price: Any) -> np.ndarray:
        """u(x, r) = r * |{i : x_i >= r}| (vectorised over ``price``; on a discrete domain
        x_i >= r - 1e-9 step, the grid's buying rule)."""
        x = self._bids(data)
        r = np.asarray(price, dtype=np.float64)
        if self.grid is not None:
            buyers = x.size - np.searchsorted(x + self._tol, r, side="left")
        else:
            buyers = x.size - np.searchsorted(x, r, side="left")
        return r * buyers

    def optimum(self, data: Any) -> tuple[float, float]:
        """(OPT, price): the best revenue over the price domain and the smallest price attaining it.

        u is left-continuous and increasing between bids, so the maximum is attained at a bid
        inside the range, at r_max or at r_min; on a grid, at the first or last point of a run.
        """
        x = self._bids(data)
        g = self.grid
        if g is not None:
            first, count, n = self.grid_runs(x)
            cand = g.values(np.unique(np.concatenate((first, first + count - 1))))
            rev = self.revenue(x, cand)
            i = int(np.argmax(rev))
            return float(rev[i]), float(cand[i])
        cand = np.unique(np.concatenate(([self.r_min, self.r_max], x[(x >= self.r_min) & (x <= self.r_max)])))
        rev = self.revenue(x, cand)
        i = int(np.argmax(rev))
        return float(rev[i]), float(cand[i])

    def expected_revenue(self, data: Any) -> float:
        """E[u(x, R)] exactly (closed form per piece, :func:`expected_linear`; per geometric run
        on a grid, :meth:`~mechanisms.laws.GridRunsLaw.mean_index`)."""
        if self.grid is not None:
            first, count, n = self.grid_runs(data)
            law = self.distribution(data)
            p = np.exp(law.log_mass)
            v = law.values(first.astype(np.float64) + law.mean_index())
            return float(np.sum(np.where(p > 0, p * n * v, 0.0)))
        edges, n = self.pieces(data)
        law = self.distribution(data)
        return expected_linear(law, edges[:-1] * n, n)

    def expected_loss(self, data: Any) -> float:
        """E[OPT - u(x, R)] = E|OPT - u(x, R)| exactly (u never exceeds OPT)."""
        opt, _ = self.optimum(data)
        return max(opt - self.expected_revenue(data), 0.0)


# --------------------------------------------------------------------------------------------
# laplace_via_exponential
# --------------------------------------------------------------------------------------------


@register("laplace_via_exponential")
@dataclass(frozen=True)
class LaplaceViaExponential(Mechanism):
    """The exponential mechanism with utility u(D, r) = -|f(D) - r|: a (truncated) Laplace.

    Data: the scalar query answer f(D). Output r in [lower, upper], or the real line when both
    bounds are None, with density proportional to exp(-epsilon |r - f(D)| / (2 * sensitivity)):
    Laplace with location f(D) and scale 2 * sensitivity / epsilon, truncated to [lower, upper]
    (Near & Abuah, *Programming Differential Privacy*, ch. "The Exponential Mechanism";
    docs/mechanisms.md, "laplace_via_exponential").

    Claim (``claim``): epsilon-DP under ``value`` neighbours (|f(D) - f(D')| <= sensitivity), which
    is what the general exponential-mechanism analysis (Dwork & Roth Thm 3.10, Delta_u =
    sensitivity) gives.

    What it really satisfies (``tight_epsilon``): on the real line, epsilon / 2 -- it is the
    Laplace mechanism with scale 2 Delta_f / epsilon, and Laplace needs only Delta_f / epsilon for
    epsilon-DP: the analysis is loose by a factor 2 because the normalising constant does not
    depend on f(D). On a bounded interval the normaliser does depend on f(D) near the ends, and
    the exact worst case (a pair at distance Delta_f with one answer at an end) is
    epsilon/2 + log(Z(lower + Delta_f) / Z(lower)) with Z(f) the normaliser: strictly between
    epsilon/2 and epsilon when the interval is wider than Delta_f (epsilon/2 + log(2 - e^{-epsilon/2})
    for a very wide one: 0.83 at epsilon = 1), and (upper - lower)/scale when it is narrower.
    ``tight_epsilon`` computes it; ``privacy_loss`` gives the exact loss of any pair; pairs far
    from the ends lose exactly epsilon/2.
    """

    epsilon: float
    sensitivity: float = 1.0
    lower: float | None = None
    upper: float | None = None

    kind: ClassVar[str] = "real"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        if (self.lower is None) != (self.upper is None):
            raise ValueError(
                f"lower and upper must both be given or both be None (real line), got lower={self.lower!r}, upper={self.upper!r}"
            )
        if self.lower is not None:
            lo, hi = check_bounds(self.lower, self.upper)
            object.__setattr__(self, "lower", lo)
            object.__setattr__(self, "upper", hi)

    @property
    def bounded(self) -> bool:
        return self.lower is not None

    @property
    def scale(self) -> float:
        """Laplace scale of the (untruncated) density: 2 * sensitivity / epsilon."""
        return 2.0 * self.sensitivity / self.epsilon

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="value", sensitivity=self.sensitivity)

    @property
    def tight_epsilon(self) -> float:
        """The exact worst-case privacy loss over all pairs |f - f'| <= sensitivity.

        Real line: epsilon / 2. Bounded: log Z is concave in f (Z(f) = integral over [lower,
        upper] of exp(-|r - f|/scale)) with slope 1/scale below ``lower``, so the loss of the pair
        (f, f + Delta) is largest at f = lower, where it is Delta/scale + log Z(lower+Delta) -
        log Z(lower) (and symmetrically at the upper end).
        """
        if not self.bounded:
            return self.epsilon / 2.0
        return self.privacy_loss(self.lower, self.lower + self.sensitivity)

    @classmethod
    def example(cls) -> tuple["LaplaceViaExponential", Any]:
        return cls(epsilon=1.0, sensitivity=1.0, lower=-50.0, upper=50.0), 0.0

    def _f(self, data: Any) -> float:
        return _check_scalar(data, "data (f(D))")

    def _log_z(self, f: float) -> float:
        """log of the integral over [lower, upper] of exp(-|r - f| / scale) (bounded case)."""
        b = self.scale
        lo, hi = float(self.lower), float(self.upper)  # type: ignore[arg-type]
        if f <= lo:
            # b * e^{-(lo-f)/b} * (1 - e^{-(hi-lo)/b})
            return math.log(b) - (lo - f) / b + math.log(-math.expm1(-(hi - lo) / b))
        if f >= hi:
            return math.log(b) - (f - hi) / b + math.log(-math.expm1(-(hi - lo) / b))
        # b * ((1 - e^{-(f-lo)/b}) + (1 - e^{-(hi-f)/b}))
        return math.log(b) + math.log(-math.expm1(-(f - lo) / b) - math.expm1(-(hi - f) / b))

    def distribution(self, data: Any) -> PiecewiseDensity | LocationScaleLaw:
        """Exact law: a PiecewiseDensity on [lower, upper], or LocationScaleLaw on the real line."""
        f = self._f(data)
        if not self.bounded:
            return LocationScaleLaw(loc=f, scale=self.scale, noise="laplace")
        lo, hi = float(self.lower), float(self.upper)  # type: ignore[arg-type]
        k = 1.0 / self.scale  # epsilon / (2 sensitivity)
        if lo < f < hi:
            edges = [lo, f, hi]
            log_left = [-k * (f - lo), 0.0]
            slope = [k, -k]
        elif f <= lo:
            edges, log_left, slope = [lo, hi], [-k * (lo - f)], [-k]
        else:
            edges, log_left, slope = [lo, hi], [-k * (f - lo)], [k]
        return PiecewiseDensity.from_log_density(edges, log_left, slope)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        return np.asarray(self.distribution(data).sample(size, rng))

    def log_pdf(self, data: Any, x: Any) -> np.ndarray:
        return self.distribution(data).log_pdf(x)

    def cdf(self, data: Any, x: Any) -> np.ndarray:
        return self.distribution(data).cdf(x)

    def privacy_loss(self, f: Any, f_prime: Any) -> float:
        """sup over outputs r of |log p(r | f) - log p(r | f')|, exactly.

        The log-density difference is piecewise linear in r with kinks at f and f', so its
        supremum over [lower, upper] (or the real line) is attained at one of lower, upper, f, f'
        (clipped to the range); on the real line it equals |f - f'| / scale.
        """
        a, b = _check_scalar(f, "f"), _check_scalar(f_prime, "f_prime")
        if not self.bounded:
            return abs(a - b) / self.scale
        lo, hi = float(self.lower), float(self.upper)  # type: ignore[arg-type]
        r = np.clip(np.array([lo, hi, a, b]), lo, hi)
        k = 1.0 / self.scale
        diff = (-k * np.abs(r - a) - self._log_z(a)) - (-k * np.abs(r - b) - self._log_z(b))
        return float(np.max(np.abs(diff)))

