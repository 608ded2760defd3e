"""Many quantiles at once: JointExp, IndExp and AppIndExp (registered as ``joint_quantiles`` and
``independent_quantiles``).

Both release m estimates o_1 <= ... <= o_m of the quantile levels q_1 < ... < q_m of a dataset,
as one sorted row (``sample`` returns shape ``(size, m)``). Records are clipped to [lower, upper]
(and snapped to the grid on a discrete domain: data-independent, record by record) before
anything else, as for the Duff mechanisms (:mod:`mechanisms.medians`).

Count-below function L(o) = #{records < o}; with q_0 = 0, q_{m+1} = 1, o_0 = -inf, o_{m+1} = +inf,
the records are split by the outputs into m + 1 bins [o_{j-1}, o_j), and g_j = q_j - q_{j-1}.

* **JointExp** (``joint_quantiles``; Gillenwater, Joseph & Kulesza, "Differentially Private
  Quantiles", ICML 2021, Section 3): the exponential mechanism over sorted vectors with

      u(X, o) = -sum_{j=1}^{m+1} | L(o_j) - L(o_{j-1}) - g_j n |,

  the distance between the bin counts and their targets (on the continuous domain this is the
  paper's utility; with the half-open bins it is defined, and has the same sensitivity, on a grid
  with ties). Sensitivity (GJK21's sensitivity lemma, re-derived here): adding one record raises one
  bin count by 1 and every target by g_j n -> g_j (n + 1); the term of the record's bin moves by at
  most 1 - g_j*, the others by g_j each, total 2 (1 - g_j*) <= Delta = 2 (1 - min_j g_j), j = 1..m+1
  (``add_remove``). Replacing one record moves one record between two bins (n fixed): Delta = 2
  (``replace_one``, GJK21's swap neighbours). Density proportional to exp(epsilon u / (2 Delta))
  with respect to Lebesgue measure on the sorted vectors of [lower, upper]^m (or counting measure
  on sorted grid vectors): epsilon-DP under the chosen relation (exponential mechanism, McSherry &
  Talwar 2007, Thm 6; Dwork & Roth 2014, Thm 3.10; GJK21 state it for both relations). Exact
  sampler and log-density: :mod:`mechanisms.joint_exp`.
* **IndExp** (``independent_quantiles``, ``composition="basic"``; GJK21's IndExp baseline, the
  single-quantile mechanism of Smith, STOC 2011, Alg. 2): each o_j independently from the
  exponential mechanism with u_j(X, o) = -|L(o) - q_j n| at epsilon_j = epsilon / m, density
  proportional to exp(epsilon_j u_j / (2 Delta_j)); Delta_j = 1 under ``replace_one`` (one record
  moves L by at most 1) and max(q_j, 1 - q_j) under ``add_remove`` (L moves by 0 or 1 while q_j n
  moves by q_j). The row is then sorted (post-processing). epsilon-DP by basic composition
  (Dwork & Roth Thm 3.16).
* **AppIndExp** (``composition="optimal"``, with ``delta``): the same with the largest per-quantile
  epsilon' for which the optimal composition of m non-adaptive epsilon'-bounded-range mechanisms is
  (epsilon, delta)-DP (Dong, Durfee & Rogers, "Optimal Differential Privacy Composition for
  Exponential Mechanisms", ICML 2020, Thm 3; the exponential mechanism at epsilon' is
  epsilon'-bounded range, their Lemma 3.1 / Def. 3.1). epsilon' is found by bisection on the exact
  delta of their theorem (:func:`optimal_composition_delta`), not on a grid.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import special

from dpharness.mechanisms import joint_exp as _je
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
    check_size,
)
from dpharness.mechanisms.domains import DOMAINS, Grid, resolve_grid
from dpharness.mechanisms.laws import GridRunsLaw, PiecewiseDensity
from dpharness.mechanisms.registry import register

__all__ = [
    "JointQuantiles",
    "IndependentQuantiles",
    "COMPOSITIONS",
    "QUANTILE_NEIGHBOURS",
    "check_quantiles",
    "joint_sensitivity",
    "single_sensitivity",
    "optimal_composition_delta",
    "optimal_per_quantile_epsilon",
]

QUANTILE_NEIGHBOURS: tuple[str, ...] = ("replace_one", "add_remove")
COMPOSITIONS: tuple[str, ...] = ("basic", "optimal")


def check_quantiles(quantiles: Any) -> tuple[float, ...]:
    """Levels as a tuple of floats, strictly increasing, each in (0, 1); ValueError otherwise."""
    if quantiles is None or isinstance(quantiles, (str, bytes)) or isinstance(quantiles, numbers.Number):
        raise ParamError("quantiles", f"quantiles must be a non-empty list of levels in (0, 1), got {quantiles!r}")
    try:
        qs = list(quantiles)
    except TypeError:
        raise ParamError("quantiles", f"quantiles must be a non-empty list of levels in (0, 1), got {quantiles!r}") from None
    if not qs:
        raise ParamError("quantiles", "quantiles must be a non-empty list of levels in (0, 1), got an empty list")
    out = []
    for i, q in enumerate(qs):
        if not isinstance(q, (numbers.Real, np.floating, np.integer)) or isinstance(q, bool) \
                or not math.isfinite(float(q)) or not 0.0 < float(q) < 1.0:
            raise ValueError(f"quantiles[{i}] must be a level in (0, 1) (exclusive), got {q!r}")
        out.append(float(q))
    for i in range(1, len(out)):
        if out[i] == out[i - 1]:
            raise ParamError("quantiles", f"quantiles must not repeat a level: {out[i]!r} appears twice (index {i - 1} and {i})")
        if out[i] < out[i - 1]:
            raise ParamError("quantiles", f"quantiles must be sorted in increasing order: quantiles[{i - 1}]={out[i - 1]!r} > "
                             f"quantiles[{i}]={out[i]!r}")
    return tuple(out)


def joint_sensitivity(quantiles: tuple[float, ...], neighbours: str) -> float:
    """Delta of JointExp's utility: 2 (replace_one) or 2 (1 - min_j (q_j - q_{j-1})) over j = 1..m+1."""
    if neighbours == "replace_one":
        return 2.0
    q = np.concatenate(([0.0], np.asarray(quantiles, dtype=np.float64), [1.0]))
    return float(2.0 * (1.0 - np.min(np.diff(q))))


def single_sensitivity(q: float, neighbours: str) -> float:
    """Delta of -|L(o) - q n|: 1 (replace_one) or max(q, 1 - q) (add_remove)."""
    return 1.0 if neighbours == "replace_one" else float(max(q, 1.0 - q))


def _data(data: Any) -> np.ndarray:
    return check_data(data)


def _out_shape(size: Any) -> tuple[tuple[int, ...], int]:
    shape = check_size(size)
    return shape, (int(np.prod(shape)) if shape else 1)


class _Quantiles(Mechanism):
    """Shared validation and helpers (fields declared by the subclasses)."""

    kind: ClassVar[str] = "real"
    epsilon: float
    lower: float
    upper: float
    quantiles: tuple[float, ...]
    neighbours: str
    domain: str
    step: float | None

    def _validate_common(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        lo, hi = check_bounds(self.lower, self.upper)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "quantiles", check_quantiles(self.quantiles))
        check_choice(self.neighbours, "neighbours", QUANTILE_NEIGHBOURS)
        check_choice(self.domain, "domain", DOMAINS)
        resolve_grid(self.domain, lo, hi, self.step)
        if self.step is not None:
            object.__setattr__(self, "step", float(self.step))

    @property
    def m(self) -> int:
        return len(self.quantiles)

    @property
    def grid(self) -> Grid | None:
        """The discrete output domain, or None for the continuous one."""
        return resolve_grid(self.domain, self.lower, self.upper, self.step)

    def statistic(self, data: Any) -> np.ndarray:
        """The true lower empirical quantiles x_(ceil(q n)) of the clipped data (shape (m,))."""
        x = np.sort(np.clip(check_data(data), self.lower, self.upper))
        r = np.clip(np.ceil(np.asarray(self.quantiles) * x.size - 1e-12).astype(np.int64), 1, x.size)
        return x[r - 1]

    def _finish(self, rows: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        return rows.reshape(shape + (self.m,)) if shape else rows[0]


@register("joint_quantiles")
@dataclass(frozen=True)
class JointQuantiles(_Quantiles):
    """JointExp: m private quantiles at once, the exponential mechanism over sorted output vectors.

    Density of the sorted row o_1 <= ... <= o_m (Lebesgue measure on sorted vectors of
    [lower, upper]^m, or counting measure on sorted vectors of the grid) proportional to
    exp(epsilon u(X, o) / (2 Delta)), u = -sum_{j=1}^{m+1} |#{records in [o_{j-1}, o_j)} - (q_j - q_{j-1}) n|
    (o_0 = -inf, o_{m+1} = +inf, q_0 = 0, q_{m+1} = 1).

    Claim: epsilon-DP (pure) under ``neighbours``: ``replace_one`` (the paper's swap) with
    Delta = 2, or ``add_remove`` with Delta = 2 (1 - min_j (q_j - q_{j-1})), j = 1..m+1.
    Source: Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles", ICML 2021, Section 3
    (utility, sensitivity lemma, privacy of JointExp; sampling Section 3.2), with the exponential
    mechanism theorem (McSherry & Talwar 2007, Thm 6; Dwork & Roth Thm 3.10). Module docstring of
    :mod:`mechanisms.quantiles` for the sensitivity argument; docs/mechanisms.md.

    Sampling is exact (:mod:`mechanisms.joint_exp`): forward recursion over (quantile, cell) in log
    space, backward sampling of the cells and run lengths, positions uniform in cells; cost
    O(m^2 n + m n) (``recursion="geometric"``, exact kernel sums) or O(m^2 n + m n log n)
    (``recursion="fft"``, the paper's FFT Toeplitz product, approximate in far tails), then O(m log n)
    per draw. ``log_density(data, x)`` is the exact log density (or log pmf) of sorted rows.

    Parameters
    ----------
    epsilon, lower, upper
        Privacy parameter and the output range; records are clipped to [lower, upper].
    quantiles
        Levels q_1 < ... < q_m in (0, 1) (a list; stored as a tuple).
    neighbours : {"replace_one", "add_remove"}
        The neighbour relation of the claim (selects Delta).
    domain, step
        Output base measure as for the Duff mechanisms (``"continuous"``, ``"integers"``, ``"grid"``
        with ``step``); on a grid, records are snapped to the nearest grid point (ties up).
    recursion : {"geometric", "fft"}
        How the forward recursion's Toeplitz products are computed (same law up to rounding).
    """

    epsilon: float
    lower: float
    upper: float
    quantiles: tuple[float, ...]
    neighbours: str = "replace_one"
    domain: str = "continuous"
    step: float | None = None
    recursion: str = "geometric"
    #: exact mode (verifiers.losses.vector) reads the law through forward() / log_density()
    exact_vector_law: ClassVar[str] = "joint_exp"

    def __post_init__(self) -> None:
        self._validate_common()
        check_choice(self.recursion, "recursion", _je.RECURSIONS)

    @property
    def sensitivity(self) -> float:
        return joint_sensitivity(self.quantiles, self.neighbours)

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, 0.0, neighbours=self.neighbours, sensitivity=self.sensitivity)

    @property
    def beta(self) -> float:
        """epsilon / (2 Delta): the factor of the utility in the log density."""
        return self.epsilon / (2.0 * self.sensitivity)

    def forward(self, data: Any) -> _je.Forward:
        """The forward recursion on ``data`` (cells, A, H, log Z): reusable across calls."""
        x = _data(data)
        cells = _je.cells_of(x, self.lower, self.upper, self.grid)
        return _je.forward(cells, np.asarray(self.quantiles), self.beta, self.recursion)

    def utility(self, data: Any, x: Any) -> np.ndarray:
        """u(X, o) for sorted rows ``x`` (..., m) (grid rows must be grid points)."""
        fw_cells = _je.cells_of(_data(data), self.lower, self.upper, self.grid)
        xx = np.asarray(x, dtype=np.float64)
        if fw_cells.grid is None:
            L = np.searchsorted(fw_cells.keys, xx, side="left")
        else:
            L = np.searchsorted(fw_cells.keys, fw_cells.grid.index_of(xx, "x"), side="left")
        return _je.utility_of_cells(L, _je.targets_of(np.asarray(self.quantiles), fw_cells.n), fw_cells.n)

    def log_density(self, data: Any, x: Any) -> np.ndarray:
        """Exact log density (continuous: w.r.t. Lebesgue measure on sorted vectors; grid: log pmf)
        of sorted rows ``x`` of shape (..., m); -inf off the support. Vectorised over rows."""
        return _je.log_density(self.forward(data), self.lower, self.upper, x)

    def sample_cells(self, data: Any, size: int, rng: Any = None) -> np.ndarray:
        """``size`` exact draws of the cells l_1 <= ... <= l_m (counts of records below each output)."""
        return _je.sample_cells(self.forward(data), int(size), as_rng(rng))

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        """Exact draws: shape (size, m) (``size`` may be a tuple: shape size + (m,)), each row sorted;
        shape (m,) for ``size=None``."""
        x = _data(data)
        shape, nd = _out_shape(size)
        rng = as_rng(rng)
        fw = _je.forward(_je.cells_of(x, self.lower, self.upper, self.grid), np.asarray(self.quantiles),
                         self.beta, self.recursion)
        cells = _je.sample_cells(fw, nd, rng)
        return self._finish(_je.place(fw, cells, rng), shape)

    @classmethod
    def example(cls) -> tuple["JointQuantiles", np.ndarray]:
        data = np.array([-1.2, -0.4, 0.0, 0.3, 0.3, 0.9, 1.7, 2.5, 3.1, 12.0])
        return cls(epsilon=1.0, lower=-10.0, upper=10.0, quantiles=(0.25, 0.5, 0.75)), data


# --------------------------------------------------------------------------------------------
# optimal composition of bounded-range mechanisms (Dong, Durfee & Rogers 2020, Thm 3)
# --------------------------------------------------------------------------------------------


def optimal_composition_delta(eps_global: float, eps0: float, k: int) -> float:
    """delta(eps_global) of the optimal non-adaptive composition of k eps0-bounded-range mechanisms.

    DDR20, Thm 3: with p_t = (e^{-t} - e^{-eps0}) / (1 - e^{-eps0}) and
    t_l = clip((eps_global + (l + 1) eps0) / (k + 1), 0, eps0),

        delta = max_{l = 0..k} sum_{i=0}^{k} C(k, i) p_{t_l}^{k-i} (1 - p_{t_l})^i
                [e^{k t_l - i eps0} - e^{eps_global}]_+ .

    Computed in log space (log-binomials, log-sum-exp over i; log(e^a - e^b) = a + log(-expm1(b - a))).
    """
    if k < 1:
        raise ParamError("k", f"k must be >= 1, got {k!r}")
    e0 = float(eps0)
    eg = float(eps_global)
    l = np.arange(k + 1, dtype=np.float64)
    t = np.clip((eg + (l + 1.0) * e0) / (k + 1.0), 0.0, e0)[:, None]          # (k+1, 1)
    i = np.arange(k + 1, dtype=np.float64)[None, :]                           # (1, k+1)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = np.log(-np.expm1(-e0))
        log_p = -t + np.log(-np.expm1(t - e0)) - den                            # log p_t (-inf at t = eps0)
        log_1mp = np.log(-np.expm1(-t)) - den                                   # log (1 - p_t) (-inf at t = 0)
        log_binom = special.gammaln(k + 1.0) - special.gammaln(i + 1.0) - special.gammaln(k - i + 1.0)
        a = k * t - i * e0
        pos = a > eg
        log_gap = np.where(pos, a + np.log(-np.expm1(np.where(pos, eg - a, -1.0))), -np.inf)
        lp = np.where(k - i == 0, 0.0, (k - i) * log_p)
        l1 = np.where(i == 0, 0.0, i * log_1mp)
        term = log_binom + lp + l1 + log_gap
        term = np.where(np.isnan(term), -np.inf, term)
        per_l = special.logsumexp(term, axis=1)
    return float(np.exp(np.max(per_l)))


def optimal_per_quantile_epsilon(epsilon: float, delta: float, m: int) -> float:
    """The largest eps0 with optimal_composition_delta(epsilon, eps0, m) <= delta, by bisection
    (delta is non-decreasing in eps0; 0 at eps0 = epsilon / m, so the result is >= epsilon / m)."""
    lo = epsilon / m
    hi = max(epsilon, lo) * 2.0
    for _ in range(200):
        if optimal_composition_delta(epsilon, hi, m) > delta:
            break
        lo, hi = hi, hi * 2.0
    else:  # pragma: no cover - delta close to 1
        raise ValueError(f"delta={delta!r} is too large: every per-quantile epsilon satisfies it")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if optimal_composition_delta(epsilon, mid, m) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


@register("independent_quantiles")
@dataclass(frozen=True)
class IndependentQuantiles(_Quantiles):
    """IndExp / AppIndExp: each quantile by its own exponential mechanism, the row sorted afterwards.

    o_j has density (or pmf) proportional to exp(eps_j u_j(X, o) / (2 Delta_j)) with
    u_j = -|#{records < o} - q_j n|, Delta_j = 1 (``replace_one``) or max(q_j, 1 - q_j)
    (``add_remove``); the m draws are independent and the row is sorted (post-processing).

    Claim:
    * ``composition="basic"`` (IndExp): eps_j = epsilon / m; epsilon-DP (pure) under ``neighbours``
      (exponential mechanism, McSherry & Talwar 2007 Thm 6; basic composition, Dwork & Roth Thm 3.16).
    * ``composition="optimal"`` (AppIndExp): eps_j = eps' the largest value for which m
      eps'-bounded-range mechanisms compose to (epsilon, delta)-DP by the exact optimal
      non-adaptive composition (Dong, Durfee & Rogers, ICML 2020, Thm 3; the exponential mechanism
      at eps' is eps'-bounded range); (epsilon, delta)-DP under ``neighbours``. eps' > epsilon / m.
    Source of the method: Gillenwater, Joseph & Kulesza, ICML 2021 (IndExp / AppIndExp baselines);
    single quantile: Smith, STOC 2011, Alg. 2. ``claim.sensitivity`` records max_j Delta_j.
    """

    epsilon: float
    lower: float
    upper: float
    quantiles: tuple[float, ...]
    neighbours: str = "replace_one"
    composition: str = "basic"
    delta: float | None = None
    domain: str = "continuous"
    step: float | None = None
    #: exact mode (verifiers.losses.vector) reads the law through marginal()
    exact_vector_law: ClassVar[str] = "independent"

    def __post_init__(self) -> None:
        self._validate_common()
        check_choice(self.composition, "composition", COMPOSITIONS)
        if self.composition == "optimal":
            if self.delta is None:
                raise ParamError("delta", "delta must be given (in (0, 1)) with composition='optimal', got None")
            object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        elif self.delta not in (None, 0, 0.0):
            raise ParamError("delta", f"delta must be None (or 0) with composition='basic' (pure DP), got {self.delta!r}")
        elif self.delta is not None:
            object.__setattr__(self, "delta", None)

    @property
    def per_quantile_epsilon(self) -> float:
        """epsilon / m (basic) or the optimal-composition eps' (optimal)."""
        if self.composition == "basic":
            return self.epsilon / self.m
        return _cached_eps(self.epsilon, float(self.delta), self.m)  # type: ignore[arg-type]

    @property
    def sensitivities(self) -> np.ndarray:
        return np.array([single_sensitivity(q, self.neighbours) for q in self.quantiles])

    @property
    def claim(self) -> PrivacyClaim:
        d = 0.0 if self.composition == "basic" else float(self.delta)  # type: ignore[arg-type]
        return PrivacyClaim(self.epsilon, d, neighbours=self.neighbours, sensitivity=float(np.max(self.sensitivities)))

    def marginal(self, data: Any, j: int) -> PiecewiseDensity | GridRunsLaw:
        """Exact law of the j-th (unsorted) draw: one single-quantile exponential mechanism."""
        x = _data(data)
        if not 0 <= j < self.m:
            raise ParamError("j", f"j must be in 0..{self.m - 1}, got {j!r}")
        cells = _je.cells_of(x, self.lower, self.upper, self.grid)
        return self._law(cells, j)

    def _law(self, cells: _je.Cells, j: int) -> PiecewiseDensity | GridRunsLaw:
        q = self.quantiles[j]
        b = self.per_quantile_epsilon / (2.0 * single_sensitivity(q, self.neighbours))
        lw = -b * np.abs(np.arange(cells.n + 1, dtype=np.float64) - q * cells.n)
        if cells.grid is None:
            return PiecewiseDensity.from_log_density(cells.edges, lw)
        return GridRunsLaw.from_log_weights(cells.grid.lower, cells.grid.step, cells.first, cells.count, lw)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        """Exact draws: shape (size, m), each row sorted; shape (m,) for ``size=None``."""
        x = _data(data)
        shape, nd = _out_shape(size)
        rng = as_rng(rng)
        cells = _je.cells_of(x, self.lower, self.upper, self.grid)
        cols = [np.asarray(self._law(cells, j).sample(nd, rng), dtype=np.float64) for j in range(self.m)]
        rows = np.sort(np.stack(cols, axis=1), axis=1)
        return self._finish(rows, shape)

    @classmethod
    def example(cls) -> tuple["IndependentQuantiles", np.ndarray]:
        data = np.array([-1.2, -0.4, 0.0, 0.3, 0.3, 0.9, 1.7, 2.5, 3.1, 12.0])
        return cls(epsilon=1.0, lower=-10.0, upper=10.0, quantiles=(0.25, 0.5, 0.75)), data


_EPS_CACHE: dict[tuple[float, float, int], float] = {}


def _cached_eps(epsilon: float, delta: float, m: int) -> float:
    key = (epsilon, delta, m)
    if key not in _EPS_CACHE:
        _EPS_CACHE[key] = optimal_per_quantile_epsilon(epsilon, delta, m)
    return _EPS_CACHE[key]
