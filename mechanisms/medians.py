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

Output domains (the base measure never depends on the data):

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
by exact rejection sampling (see :func:`_sample_window`). ``sample_reference`` is the plain
full-sort twin; both have exactly the law ``distribution(data)``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import special

from .base import (
    Mechanism,
    PrivacyClaim,
    as_rng,
    check_bounds,
    check_choice,
    check_data,
    check_epsilon,
    check_size,
)
from .duff_utility import (
    DEFINITIONS,
    check_quantile,
    cost_lower_bound_left,
    cost_lower_bound_right,
    duff_cost,
    quantile_ratio,
    target_rank,
)
from .laws import GridRunsLaw, PiecewiseDensity, sample_index
from .registry import register

__all__ = [
    "DOMAINS",
    "DuffMedian",
    "DuffQuantile",
    "Grid",
    "expected_abs_error",
    "grid_expected_abs_error",
    "gap_costs",
    "window_proposal",
    "WindowProposal",
]

DOMAINS: tuple[str, ...] = ("continuous", "integers", "grid")

#: Largest number of grid points a discrete domain may have. Grid indices and points pass through
#: float64, which is exact for integers only up to 2^53: a larger grid would silently return wrong
#: points (a 2^62-point integer grid mapped data at 3 to output 0), so the cap is 2^53, which is
#: stricter than the 2^62 the issue asks to reject.
MAX_GRID_POINTS = 2**53

# The windowed sampler is used above this n; below it the full sort is as fast.
_WINDOW_MIN_N = 4096
# Accept a window only if the expected number of O(n) outside proposals over all draws is below this.
_MAX_OUTSIDE = 1e-3


# --------------------------------------------------------------------------------------------
# the discrete output domain
# --------------------------------------------------------------------------------------------


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
            raise ValueError(f"{name} must be grid points of [lower, upper] with step {self.step!r}; got {bad!r}")
        return k.astype(np.int64)


def _data(data: Any) -> np.ndarray:
    """:func:`check_data` with a fast path: a finite sum proves every entry finite (one cheap
    reduction instead of an isfinite pass and its temporary); anything else gets the full check
    and its error message."""
    if isinstance(data, np.ndarray) and data.dtype == np.float64 and data.ndim == 1 and data.size:
        with np.errstate(over="ignore", invalid="ignore"):
            if math.isfinite(float(np.add.reduce(data))):
                return data
    return check_data(data)


def _on_grid(v: float, h: float) -> bool:
    # v / h is off by a few ulps at most (relative ~1e-16): tolerate 1e-9 steps plus that rounding,
    # not a relative 1e-9 (which accepted lower = 1e10 + 0.5 as an integer).
    r = v / h
    return math.isfinite(r) and abs(r - round(r)) <= 1e-9 + 1e-14 * abs(r)


def _resolve_grid(domain: str, lower: float, upper: float, step: Any) -> Grid | None:
    if domain == "continuous":
        if step is not None:
            raise ValueError(f"step must be None for domain='continuous', got {step!r}")
        return None
    if domain == "integers":
        if step is not None and not (isinstance(step, numbers.Real) and not isinstance(step, bool) and step == 1):
            raise ValueError(f"step must be None (or 1) for domain='integers', got {step!r}")
        h = 1.0
    else:
        if step is None:
            raise ValueError("step must be given (a number > 0) for domain='grid', got None")
        if not isinstance(step, numbers.Real) or isinstance(step, bool) or not math.isfinite(float(step)):
            raise ValueError(f"step must be a finite number > 0, got {step!r}")
        h = float(step)
        if h <= 0:
            raise ValueError(f"step must be > 0, got {step!r}")
    m_float = (upper - lower) / h
    # the exact integer count: m_float + 1 rounds 2^53 + 1 down to 2^53 in float64
    if not (math.isfinite(m_float) and int(round(m_float)) + 1 <= MAX_GRID_POINTS):
        raise ValueError(
            f"the grid has {m_float + 1:.4g} points (lower={lower!r}, upper={upper!r}, step={h!r}); "
            f"at most 2^53 are supported (grid indices must be exact in float64; so never more than 2^62)"
        )
    for v, nm in ((lower, "lower"), (upper, "upper")):
        if not _on_grid(v, h):
            what = "an integer" if domain == "integers" else f"a multiple of step={h!r}"
            raise ValueError(f"{nm} must be on the grid ({what}) for domain={domain!r}, got {nm}={v!r}")
    return Grid(lower=float(lower), step=h, size=int(round(m_float)))


# --------------------------------------------------------------------------------------------
# utilities on gaps / runs
# --------------------------------------------------------------------------------------------


def gap_costs(n: int, a: int, b: int, definition: str, first: int = 0, stop: int | None = None) -> np.ndarray:
    """Duff costs -u_i of the gaps i = first..stop-1 (default all n+1) for n records: L = i, E = 0."""
    stop = n + 1 if stop is None else stop
    i = np.arange(first, stop, dtype=np.int64)
    return duff_cost(i, 0, n - i, a, b, definition)


def _runs_and_points(vals: np.ndarray, E: np.ndarray, L: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """Interleave the points ``vals`` (counts E, L below) with the runs strictly between them.

    Returns (first, count, L, E) of the pieces in increasing grid order, empty runs dropped.
    """
    J = vals.size
    first = np.empty(2 * J - 1, dtype=np.int64)
    count = np.empty(2 * J - 1, dtype=np.int64)
    LL = np.empty(2 * J - 1, dtype=np.int64)
    EE = np.zeros(2 * J - 1, dtype=np.int64)
    first[0::2] = vals
    count[0::2] = 1
    LL[0::2] = L
    EE[0::2] = E
    first[1::2] = vals[:-1] + 1
    count[1::2] = np.diff(vals) - 1
    LL[1::2] = L[:-1] + E[:-1]
    keep = count > 0
    return first[keep], count[keep], LL[keep], EE[keep]


def _distinct(sorted_k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values and multiplicities of a sorted int array (O(n), no second sort)."""
    starts = np.concatenate(([0], np.flatnonzero(np.diff(sorted_k)) + 1))
    counts = np.diff(np.concatenate((starts, [sorted_k.size])))
    return sorted_k[starts], counts


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
        _resolve_grid(self.domain, lo, hi, self.step)
        if self.step is not None:
            object.__setattr__(self, "step", float(self.step))

    # -- parameters -------------------------------------------------------------------------
    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, 0.0, neighbours="add_remove", sensitivity=1.0)

    @property
    def grid(self) -> Grid | None:
        """The discrete output domain, or None for the continuous one."""
        return _resolve_grid(self.domain, self.lower, self.upper, self.step)

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
        vals, E = _distinct(g.snap(np.sort(x)))
        L = np.concatenate(([0], np.cumsum(E)[:-1]))
        first, count, LL, EE = _runs_and_points(vals, E, L, n)
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
            out = _sample_window(self, x, nd, rng, K, max_outside=_MAX_OUTSIDE)
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
        Output base measure (module docstring). A base measure with atoms at the data values would
        not be DP; the grid depends on (lower, upper, step) only. On a discrete domain records are
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
# windowed exact sampler
# --------------------------------------------------------------------------------------------


def _window_half_width(n: int, q: float, epsilon: float, nd: int) -> int | None:
    """Rank half-width K of the window, or None when the full sort is the better plan.

    Outside the window the cost is >= K / max(q, 1-q) (:mod:`.duff_utility` bounds), so the outer
    regions' envelope mass is about range/spacing * exp(-epsilon K / (2 max(q, 1-q))). K is chosen
    to make that ~e^-30 / (n * draws); the exact check in :func:`_sample_window` decides.
    """
    if nd == 0 or n < _WINDOW_MIN_N:
        return None
    qq = max(q, 1.0 - q)
    K = int(math.ceil(2.0 * qq * (math.log(n) + math.log1p(nd) + 30.0) / epsilon)) + 2
    if 2 * K + 1 > n // 4:
        return None
    return K


def _rank_window(x: np.ndarray, s: int, t: int) -> np.ndarray:
    """The order statistics x_(s) <= ... <= x_(t) (1-based ranks), sorted, in O(n) expected time.

    Large arrays: estimate the values of ranks s and t from a strided subsample (2^16 records),
    take a margin of 5 standard deviations of the subsample rank, and collect the candidates in
    [lo, hi] with one comparison pass; the candidates hold ranks s..t exactly when
    #{x < lo} <= s - 1 and #{x < lo} + #candidates >= t (checked; the order of the data can only
    make the check fail, never the result wrong). Otherwise, or for smaller arrays: partition at
    s - 1, then partition the upper part at t - s (two single-kth partitions; numpy's multi-kth
    partition is several times slower on this pattern).
    """
    n = x.size
    if n >= 2**17:
        stride = n // 2**16
        sub = x[::stride]
        ms = sub.size
        delta = int(math.ceil(2.5 * math.sqrt(ms))) + 4
        i_lo = int(math.floor((s - 1) / n * ms)) - delta
        i_hi = int(math.ceil(t / n * ms)) + delta
        ks = [k for k in (i_lo, i_hi) if 0 <= k < ms]
        ps = np.partition(sub, ks) if ks else sub
        lo = ps[i_lo] if i_lo >= 0 else -np.inf
        hi = ps[i_hi] if i_hi < ms else np.inf
        below = x < lo
        nb = int(np.count_nonzero(below))
        if nb <= s - 1:
            keep = np.logical_not(below, out=below)
            keep &= x <= hi
            cand = x[keep]
            if nb + cand.size >= t:
                return _window_of(cand, s - 1 - nb, t - 1 - nb)
    return _window_of(x, s - 1, t - 1)


def _window_of(v: np.ndarray, i: int, j: int) -> np.ndarray:
    """Sorted v[i..j] of the sorted order (0-based, inclusive) by two single-kth partitions."""
    p = np.partition(v, i)
    r = p[i:]
    r.partition(j - i)
    return np.sort(r[: j - i + 1])


@dataclass(frozen=True, eq=False)
class WindowProposal:
    """The proposal of the windowed sampler: exact window pieces plus two envelope regions.

    Pieces 0..nwin-1 are the exact window pieces (gaps of the continuous domain: start ``lo``,
    length ``width``; or grid runs/points: first index ``lo``, ``width`` points), with unnormalised
    log weights ``log_weight`` (the same weights as in ``distribution(data)``). Pieces nwin and
    nwin+1 are the regions left of x_(s) and right of x_(t) with envelope log weights, whose cost
    lower bounds are ``cost_bound``. ``s``, ``t``: the 1-based ranks bounding the window.
    """

    grid: Grid | None
    s: int
    t: int
    lo: np.ndarray
    width: np.ndarray
    log_weight: np.ndarray
    nwin: int
    cost_bound: np.ndarray

    def outside_fraction(self) -> float:
        """Probability that a proposal falls in an envelope region (an upper bound on the true
        outer mass)."""
        lw = self.log_weight
        if not np.isfinite(lw[self.nwin:]).any():
            return 0.0
        return float(np.exp(special.logsumexp(lw[self.nwin:]) - special.logsumexp(lw)))


def window_proposal(mech: "_Duff", x: np.ndarray, K: int) -> WindowProposal:
    """Build the :class:`WindowProposal` for ranks c-K..c+K around the target rank c (O(n))."""
    n = x.size
    a, b = mech.ratio
    eps = mech.epsilon
    c = target_rank(n, mech.q, mech.definition)
    s, t = max(1, c - K), min(n, c + K)
    win = _rank_window(x, s, t)
    g = mech.grid
    if g is None:
        w = np.clip(win, mech.lower, mech.upper)
        i = np.arange(s, t, dtype=np.int64)
        cost = duff_cost(i, 0, n - i, a, b, mech.definition).astype(np.float64)
        with np.errstate(divide="ignore"):
            lw_win = np.log(w[1:] - w[:-1]) - 0.5 * eps * cost
        lo = np.concatenate((w[:-1], [mech.lower, w[-1]]))
        width = np.concatenate((w[1:] - w[:-1], [w[0] - mech.lower, mech.upper - w[-1]]))
        a_left, b_right = s - 1, t
    else:
        vals, cnt = _distinct(g.snap(win))
        k_s, k_t = int(vals[0]), int(vals[-1])
        # multiplicities of the boundary values outside the window (one comparison pass each)
        nl_eq = (s - 1) - g.count_below(x, k_s)
        nr_eq = g.count_below(x, k_t + 1) - t
        E = cnt.astype(np.int64)
        E[0] += nl_eq
        E[-1] += nr_eq
        L0 = s - 1 - nl_eq
        L = L0 + np.concatenate(([0], np.cumsum(E)[:-1]))
        first, count, LL, EE = _runs_and_points(vals, E, L, n)
        cost = duff_cost(LL, EE, n - LL - EE, a, b, mech.definition).astype(np.float64)
        with np.errstate(divide="ignore"):
            lw_win = np.log(count.astype(np.float64)) - 0.5 * eps * cost
        lo = np.concatenate((first, [0, k_t + 1]))
        width = np.concatenate((count, [k_s, g.size - k_t]))
        # left of k_s at most L0 records are <= o; right of k_t at least L0 + sum(E) are < o
        a_left, b_right = L0, int(L[-1] + E[-1])
    cb = np.array([cost_lower_bound_left(n, a_left, a, b), cost_lower_bound_right(n, b_right, a, b)])
    with np.errstate(divide="ignore"):
        lw_env = np.log(np.asarray(width[-2:], dtype=np.float64)) - 0.5 * eps * cb
    return WindowProposal(g, s, t, lo, width, np.concatenate((lw_win, lw_env)), lw_win.size, cb)


def _sample_window(mech: "_Duff", x: np.ndarray, nd: int, rng: np.random.Generator, K: int,
                   max_outside: float | None = _MAX_OUTSIDE) -> np.ndarray | None:
    """Exact draws from ``mech.distribution(x)`` using only a rank window of +-K around the target.

    Ranks s = c-K .. t = c+K are found in O(n) (:func:`_rank_window`) and only those 2K+1 records
    are sorted. Inside [x_(s), x_(t)] the weights are exact (the counts L, E, G of every gap/run/
    point follow from the ranks; on a discrete domain the two boundary values' multiplicities are
    counted with one comparison pass each). The two outer regions, o < x_(s) and o > x_(t), are
    proposed from an envelope: region size x exp(-epsilon c_bound / 2), with c_bound a lower bound
    on the cost anywhere in the region (at most s-1 records are <= o on the left, at least t are
    < o on the right: :func:`.duff_utility.cost_lower_bound_left`/``right``). An outer proposal o
    is accepted with probability exp(-epsilon (cost(o) - c_bound) / 2) <= 1, cost(o) computed
    exactly by counting (O(n)).

    Why this is exact: the proposal density is g = f on the window and g >= f on the outer regions
    (f the unnormalised target exp(epsilon u / 2) times the base measure), and accepting with
    probability f/g (= 1 on the window) is rejection sampling; repeating until acceptance returns
    exactly f normalised, whatever K is. K only controls speed: the call returns None (caller falls
    back to the full sort) when the expected number of O(n) outer proposals over all ``nd`` draws
    exceeds ``max_outside``.
    """
    prop = window_proposal(mech, x, K)
    if max_outside is not None and prop.outside_fraction() * nd > max_outside:
        return None
    n = x.size
    a, b = mech.ratio
    eps = mech.epsilon
    g, lo, width, lw, nwin = prop.grid, prop.lo, prop.width, prop.log_weight, prop.nwin
    out = np.empty(nd, dtype=np.float64)
    pending = np.arange(nd)
    while pending.size:
        j = sample_index(lw, pending.size, rng)
        if g is None:
            val = lo[j] + rng.random(pending.size) * width[j]
        else:
            kk = lo[j] + rng.integers(0, width[j])
        ok = j < nwin
        for r in np.flatnonzero(~ok):  # outer proposals: astronomically rare at the chosen K
            if g is None:
                o = float(val[r])
                lt = int(np.count_nonzero(x < o)) if o > mech.lower else 0
                le = int(np.count_nonzero(x <= o)) if o < mech.upper else n
            else:
                k = int(kk[r])
                lt = g.count_below(x, k)
                le = g.count_below(x, k + 1)
            c_true = float(duff_cost(lt, le - lt, n - le, a, b, mech.definition))
            if rng.random() < math.exp(-0.5 * eps * (c_true - prop.cost_bound[j[r] - nwin])):
                ok[r] = True
        out[pending[ok]] = val[ok] if g is None else g.values(kk[ok])
        pending = pending[~ok]
    return out


# --------------------------------------------------------------------------------------------
# exact expected error
# --------------------------------------------------------------------------------------------


def grid_expected_abs_error(law: GridRunsLaw, truth: float) -> float:
    """E|X - truth| exactly for a :class:`~mechanisms.laws.GridRunsLaw` (arithmetic sums per run)."""
    if getattr(law, "log_ratio", None) is not None:
        # Duff laws are uniform on runs; the arithmetic sums below would be wrong on geometric runs.
        raise ValueError("grid_expected_abs_error needs runs that are uniform (log_ratio None)")
    p = np.exp(law.log_mass)
    c = law.count.astype(np.float64)
    h = law.step
    base = law.origin + h * law.first.astype(np.float64) - float(truth)  # first point minus truth
    # j* = number of points of the run that are <= truth
    jstar = np.clip(np.floor(-base / h + 1e-9) + 1, 0, c)
    total = c * base + h * c * (c - 1) / 2
    below = jstar * base + h * jstar * (jstar - 1) / 2
    mean_abs = (total - 2 * below) / c
    return float(np.sum(np.where(p > 0, p * mean_abs, 0.0)))


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
