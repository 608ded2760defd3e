"""Private medians and quantiles: the exponential mechanism with the Duff utility, sampled exactly.

``duff_median`` and ``duff_quantile`` release o with density (or probability) proportional to
exp(epsilon u(S, o) / 2), u(S, o) = -min{|S Δ S'| : T(S') = o} (Munoz Medina & Gillenwater 2020,
"Duff: A Dataset-Distance-Based Utility Function Family for the Exponential Mechanism",
arXiv 2010.04235; the same object as Asi & Duchi's inverse-sensitivity mechanism). u has
sensitivity 1 under add/remove neighbours, so the mechanism is epsilon-DP under add/remove
(McSherry & Talwar 2007, Thm 6; Dwork & Roth Thm 3.10); a replace-one change is one removal plus
one addition, so it is 2 epsilon-DP under replace-one. Closed forms of u: :mod:`.duff_utility`.

Preprocessing (data-independent, record by record, so it preserves DP): records are clipped to
[lower, upper] (never dropped); on a discrete domain each record is then snapped to the nearest grid
point (ties round up). The truth these mechanisms estimate is the statistic of the *clipped* data.

Output domains (the base measure never depends on the data; :mod:`mechanisms.domains`):

* ``domain="continuous"``: Lebesgue measure on [lower, upper]. Sort the clipped data, pad with
  x_(0) = lower and x_(n+1) = upper; gap i = (x_(i), x_(i+1)) has L = i, E = 0, G = n - i, so u is
  constant there; gap i is chosen with log weight log(length) + epsilon u_i / 2 (zero-length gaps
  have probability 0) and the output is uniform inside it. With heavy ties this base measure is a
  handicap: 1,000 copies of 0 on [-10, 10] give output uniform on [-10, 0) with probability
  1/(1 + e^{-1/2}) = 0.62 and uniform on (0, 10] otherwise, E|M - 0| = 5 at every epsilon, because
  every gap touching 0 except the two outer ones has length 0.
* ``domain="integers"`` or ``domain="grid"`` with ``step=h``: counting measure on the grid
  {k h} ∩ [lower, upper] (lower and upper must be on it; ``integers`` is h = 1). u is constant on the
  grid points strictly between consecutive distinct (snapped) data values (one *run*, weight
  count x exp(epsilon u / 2)), and each grid point holding data has its own E >= 1 and weight. The
  grid is never enumerated: a 10^9-point grid costs the same as a 10-point one. Ties now help: the
  1,000 copies of 0 give P[M = 0] = 1 - O(20 e^{-500}). A base measure with atoms at the *data*
  values (e.g. "the data values plus the gaps") would not be differentially private: a neighbour
  could create an atom where the other dataset has probability zero.

Sampling: ``size`` draws cost one preprocessing pass plus O(log n) per draw. For large n the
sampler never sorts the whole array: it partitions a rank window of +-K around the target rank
(``np.partition``), computes the exact weights inside the window, and handles the two outer regions
by exact rejection sampling (:mod:`mechanisms.median_window`). ``sample_reference`` is the plain
full-sort twin; both have exactly the law ``distribution(data)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpharness.mechanisms.base import (
    Mechanism,
    PrivacyClaim,
    as_rng,
    check_bounds,
    check_choice,
    check_data,
    check_epsilon,
    check_size,
)
from dpharness.mechanisms.domains import DOMAINS, MAX_GRID_POINTS, Grid, resolve_grid
from dpharness.mechanisms.duff_utility import (
    DEFINITIONS,
    check_quantile,
    distinct_sorted,
    duff_cost,
    gap_costs,
    quantile_ratio,
    runs_and_points,
    target_rank,
)
from dpharness.mechanisms.expectations import grid_expected_abs_error
from dpharness.mechanisms.laws import GridRunsLaw, PiecewiseDensity
from dpharness.mechanisms.median_window import MAX_OUTSIDE, WindowProposal, _sample_window, _window_half_width, window_proposal
from dpharness.mechanisms.registry import register

__all__ = [
    "DOMAINS",
    "MAX_GRID_POINTS",
    "DuffMedian",
    "DuffQuantile",
    "Grid",
    "expected_abs_error",
    "grid_expected_abs_error",
    "gap_costs",
    "window_proposal",
    "WindowProposal",
]


def _data(data: Any) -> np.ndarray:
    """:func:`check_data` with a fast path: a finite sum proves every entry finite (one cheap
    reduction instead of an isfinite pass and its temporary); anything else gets the full check
    and its error message."""
    if isinstance(data, np.ndarray) and data.dtype == np.float64 and data.ndim == 1 and data.size:
        with np.errstate(over="ignore", invalid="ignore"):
            if math.isfinite(float(np.add.reduce(data))):
                return data
    return check_data(data)


# --------------------------------------------------------------------------------------------
# the mechanisms
# --------------------------------------------------------------------------------------------


class _Duff(Mechanism):
    """Shared implementation; subclasses declare the dataclass fields."""

    kind: ClassVar[str] = "real"
    q: float

    def _validate(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        lo, hi = check_bounds(self.lower, self.upper)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        check_choice(self.definition, "definition", DEFINITIONS)
        check_choice(self.domain, "domain", DOMAINS)
        resolve_grid(self.domain, lo, hi, self.step)
        if self.step is not None:
            object.__setattr__(self, "step", float(self.step))

    # -- parameters -------------------------------------------------------------------------
    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, 0.0, neighbours="add_remove", sensitivity=1.0)

    @property
    def grid(self) -> Grid | None:
        """The discrete output domain, or None for the continuous one."""
        return resolve_grid(self.domain, self.lower, self.upper, self.step)

    @property
    def ratio(self) -> tuple[int, int]:
        """q = a/b in lowest terms (q read as the decimal it prints as)."""
        return quantile_ratio(self.q)

    # -- statistic and utility ----------------------------------------------------------------
    def statistic(self, data: Any) -> float:
        """T of the clipped data: x_(ceil(qn)) ("lower" and "set") or x_(floor(qn)+1) ("upper")."""
        x = check_data(data)
        r = target_rank(x.size, self.q, self.definition)
        return float(np.clip(np.partition(x, r - 1)[r - 1], self.lower, self.upper))

    def utility(self, data: Any, points: Any) -> np.ndarray:
        """Exact Duff utility u(S, o) at output points o (grid points on a discrete domain)."""
        x = check_data(data)
        a, b = self.ratio
        g = self.grid
        if g is None:
            o = np.asarray(points, dtype=np.float64)
            if not np.all(np.isfinite(o)):
                raise ValueError("points must be finite")
            xs = np.sort(np.clip(x, self.lower, self.upper))
        else:
            o = g.index_of(points)
            xs = g.snap(np.sort(x))
        lt = np.searchsorted(xs, o, side="left")
        le = np.searchsorted(xs, o, side="right")
        return -duff_cost(lt, le - lt, x.size - le, a, b, self.definition).astype(np.float64)

    # -- exact law ------------------------------------------------------------------------------
    def distribution(self, data: Any) -> PiecewiseDensity | GridRunsLaw:
        """Exact output law: ``PiecewiseDensity`` (continuous) or ``GridRunsLaw`` (discrete)."""
        x = check_data(data)
        g = self.grid
        if g is None:
            edges, cost = self._gap_structure(x)
            return PiecewiseDensity.from_log_density(edges, -0.5 * self.epsilon * cost)
        first, count, cost = self._run_structure(x, g)
        return GridRunsLaw.from_log_weights(g.lower, g.step, first, count, -0.5 * self.epsilon * cost)

    def _gap_structure(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Edges [lower, sorted clipped data, upper] and the n+1 gap costs (full sort)."""
        a, b = self.ratio
        xs = np.clip(np.sort(x), self.lower, self.upper)
        edges = np.concatenate(([self.lower], xs, [self.upper]))
        return edges, gap_costs(x.size, a, b, self.definition).astype(np.float64)

    def _run_structure(self, x: np.ndarray, g: Grid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(first, count, cost) of the runs and data points covering the whole grid (full sort)."""
        a, b = self.ratio
        n = x.size
        vals, E = distinct_sorted(g.snap(np.sort(x)))
        L = np.concatenate(([0], np.cumsum(E)[:-1]))
        first, count, LL, EE = runs_and_points(vals, E, L, n)
        # the runs before the smallest and after the largest data value
        first = np.concatenate(([0], first, [vals[-1] + 1]))
        count = np.concatenate(([vals[0]], count, [g.size - vals[-1]]))
        LL = np.concatenate(([0], LL, [n]))
        EE = np.concatenate(([0], EE, [0]))
        keep = count > 0
        first, count, LL, EE = first[keep], count[keep], LL[keep], EE[keep]
        cost = duff_cost(LL, EE, n - LL - EE, a, b, self.definition).astype(np.float64)
        return first, count, cost

    # -- sampling -------------------------------------------------------------------------------
    def sample_reference(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        """Definitional twin of :meth:`sample`: full sort, exact law, inverse-CDF draws."""
        return self.distribution(data).sample(size, as_rng(rng))

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        """``size`` exact draws for one dataset (sample axis first; a float for ``size=None``).

        Cost: one O(n) expected preprocessing pass (``np.partition`` of a rank window), then
        O(log n) per draw; falls back to the full sort (:meth:`sample_reference`) when the window
        cannot be shown to make the outer regions negligible (e.g. heavy ties on the continuous
        domain) or n is small.
        """
        x = _data(data)
        shape = check_size(size)
        rng = as_rng(rng)
        nd = int(np.prod(shape)) if shape else 1
        K = _window_half_width(x.size, self.q, self.epsilon, nd)
        out = None
        if K is not None:
            out = _sample_window(self, x, nd, rng, K, max_outside=MAX_OUTSIDE)
        if out is None:
            out = np.asarray(self.distribution(x).sample(nd, rng), dtype=np.float64)
        return out.reshape(shape) if shape else out[0]


@register("duff_median")
@dataclass(frozen=True)
class DuffMedian(_Duff):
    """Private median: exponential mechanism with the Duff utility (dataset distance).

    Density (continuous domain, Lebesgue measure on [lower, upper]) or probability (discrete
    domain, counting measure on a declared data-independent grid) proportional to
    exp(epsilon u(S, o) / 2), u(S, o) = -min{|S Δ S'| : T(S') = o}.

    Claim: epsilon-DP under add/remove neighbours (u has sensitivity 1; exponential mechanism,
    McSherry & Talwar 2007; Dwork & Roth Thm 3.10). Source: Munoz Medina & Gillenwater 2020,
    arXiv 2010.04235 (docs/mechanisms.md, "Duff median and quantiles").

    Parameters
    ----------
    epsilon, lower, upper
        Privacy parameter and the output range; records are clipped to [lower, upper].
    definition : {"lower", "upper", "set"}
        T = lower median x_(ceil(n/2)) (default), upper median x_(floor(n/2)+1), or the set of
        medians (o with at most n/2 records on each side).
    domain : {"continuous", "integers", "grid"}
        Output base measure (module docstring; :mod:`mechanisms.domains`). A base measure with
        atoms at the data values would not be DP; the grid depends on (lower, upper, step) only. On a discrete domain records are
        snapped to the nearest grid point (ties up) after clipping: a data-independent transform.
    step : float, optional
        Grid step h for ``domain="grid"`` (lower and upper must be multiples of h; at most 2^53
        points). ``integers`` means h = 1.
    """

    epsilon: float
    lower: float
    upper: float
    definition: str = "lower"
    domain: str = "continuous"
    step: float | None = None

    q: ClassVar[float] = 0.5  # type: ignore[misc]

    def __post_init__(self) -> None:
        self._validate()

    @classmethod
    def example(cls) -> tuple["DuffMedian", np.ndarray]:
        data = np.array([-1.2, -0.4, 0.0, 0.3, 0.3, 0.9, 1.7, 2.5, 12.0])
        return cls(epsilon=1.0, lower=-10.0, upper=10.0), data


@register("duff_quantile")
@dataclass(frozen=True)
class DuffQuantile(_Duff):
    """Private q-quantile: exponential mechanism with the Duff utility (dataset distance).

    As :class:`DuffMedian` with T the q-quantile: x_(ceil(qn)) (``definition="lower"``, default),
    x_(floor(qn)+1) (``"upper"``), or any o with #< o <= qn and #> o <= (1-q)n (``"set"``); q is
    read as the decimal it prints as (0.3 = 3/10), as in the runner's truth.

    Claim: epsilon-DP under add/remove neighbours (sensitivity 1). Source: Munoz Medina &
    Gillenwater 2020, arXiv 2010.04235; closed forms in :mod:`mechanisms.duff_utility`.
    """

    epsilon: float
    lower: float
    upper: float
    q: float  # type: ignore[misc]
    definition: str = "lower"
    domain: str = "continuous"
    step: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "q", check_quantile(self.q))
        self._validate()

    @classmethod
    def example(cls) -> tuple["DuffQuantile", np.ndarray]:
        data = np.array([0, 1, 1, 2, 3, 3, 3, 5, 8, 13, 21], dtype=np.float64)
        return cls(epsilon=1.0, lower=0.0, upper=30.0, q=0.25, domain="integers"), data


# --------------------------------------------------------------------------------------------
# exact expected error
# --------------------------------------------------------------------------------------------


def expected_abs_error(mechanism: _Duff, data: Any, truth: float | None = None) -> float:
    """Exact E|M(S) - T| for a Duff mechanism (docs/mechanisms.md, "Exact expected error"), no Monte Carlo.

    ``truth`` defaults to :meth:`statistic` of the clipped (not snapped) data.
    Continuous: sum_i p_i e_i with e_i = |mid_i - T| if T is outside gap i, else
    ((T - lo)^2 + (hi - T)^2) / (2 (hi - lo)); discrete: arithmetic sums over each run.
    """
    x = check_data(data)
    t = mechanism.statistic(x) if truth is None else float(truth)
    law = mechanism.distribution(x)
    if isinstance(law, GridRunsLaw):
        return grid_expected_abs_error(law, t)
    return law.expected_abs_error(t)
