"""``revenue_price``: the pumpkin auction of Dwork & Roth, Example 3.5, sampled exactly.

An exponential mechanism over prices whose utility (revenue) is linear between consecutive bids,
so the law is a :class:`~mechanisms.laws.PiecewiseDensity` (continuous prices) or a
:class:`~mechanisms.laws.GridRunsLaw` with geometric runs (prices on a declared grid).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpharness.mechanisms.base import Mechanism, ParamError, PrivacyClaim, check_bounds, check_choice, check_data, check_epsilon
from dpharness.mechanisms.domains import DOMAINS, Grid, last_index_at_most, resolve_grid
from dpharness.mechanisms.expectations import expected_linear
from dpharness.mechanisms.laws import GridRunsLaw, PiecewiseDensity
from dpharness.mechanisms.registry import register

__all__ = ["RevenuePrice"]


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
            raise ParamError("r_min", f"r_min must be >= 0 (prices are non-negative), got {self.r_min!r}")
        object.__setattr__(self, "r_min", lo)
        object.__setattr__(self, "r_max", hi)
        check_choice(self.domain, "domain", DOMAINS)
        resolve_grid(self.domain, lo, hi, self.step)
        if self.step is not None:
            object.__setattr__(self, "step", float(self.step))

    @property
    def grid(self) -> Grid | None:
        """The discrete price domain, or None for the continuous one."""
        return resolve_grid(self.domain, self.r_min, self.r_max, self.step)

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
            raise ParamError("data", f"data (bids) must be >= 0; found {x[i]!r} at index {i}")
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
        top = last_index_at_most(g, x + self._tol)  # bid i buys at grid index k iff k <= top[i]
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
