"""The other baselines of GJK21's many-quantiles experiments: Smooth, CSmooth, LapTree and GaussTree
(registered as ``smooth_quantiles``, ``csmooth_quantiles`` and ``tree_quantiles``).

Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles", ICML 2021, Section 5 compare
JointExp with IndExp/AppIndExp and with four further baselines. Their definitions here follow the
paper's description and the experiment code the authors published (google-research ``dp_multiq``:
``smooth.py``, ``csmooth.py``, ``smooth_utils.py``, ``tree.py``, ``experiment.py``); the code here is
our own. Every release is one sorted row of m values in [lower, upper] (``sample`` returns shape
``(size, m)``), records clipped to [lower, upper] first.

* **Smooth** (``smooth_quantiles``): for each level q_j, the order statistic x_(k_j) plus Laplace
  noise scaled to its beta-smooth sensitivity (Nissim, Raskhodnikova & Smith, STOC 2007), with
  (epsilon/m, delta/m) per quantile; (epsilon, delta)-DP by basic composition.
* **CSmooth** (``csmooth_quantiles``): the same statistic with Laplace-log-normal noise scaled to
  the t-smooth sensitivity (Bun & Steinke, "Average-Case Averages", NeurIPS 2019, Section 3.1),
  epsilon/sqrt(m) per quantile in the CDP sense; rho = epsilon^2/2 zCDP in total.
* **LapTree / GaussTree** (``tree_quantiles``): a noisy hierarchical histogram (branching factor
  16, height 4: 65,536 equal leaves over [lower, upper]) descended once per quantile.

Order statistic: k_j = ceil(q_j n) (the harness's lower empirical quantile, as in
:meth:`mechanisms.quantiles.JointQuantiles.statistic`); ``dp_multiq`` uses floor((n - 1) q) + 1,
which differs by at most one rank and does not change any privacy argument (the smooth sensitivity
is computed for whichever fixed rank is released).

Smooth sensitivity of the k-th order statistic (replace-one; NRS07 Section 3.1 with the rank k in
place of the median): with padded sorted clipped data x_0 = lower, x_1 <= ... <= x_n,
x_{n+1} = upper,

    S*_beta(x) = max over 0 <= i <= k <= j <= n + 1, i < j, of (x_j - x_i) e^{-beta (j - i - 1)},

computed exactly by the NRS07 divide and conquer of :mod:`mechanisms.median_sensitivity` (reused)
with its certified early stop.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import lru_cache
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
    check_size,
)
from dpharness.mechanisms.laws import LocationScaleLaw
from dpharness.mechanisms.median_sensitivity import _certified_k, _replace_one_dc
from dpharness.mechanisms.quantiles import check_quantiles
from dpharness.mechanisms.registry import register

__all__ = [
    "SmoothQuantiles",
    "CSmoothQuantiles",
    "TreeQuantiles",
    "order_statistic_smooth_sensitivity",
    "lln_sigma",
    "csmooth_tuned_ts",
    "gaussian_delta",
]

#: Draws per vectorised block of the tree sampler (bounds memory at ~m * 16 * 16384 doubles).
_TREE_BLOCK = 16384
#: dp_multiq's tolerance when comparing a running noisy rank fraction with the level.
_TREE_TOL = 1e-6


def _ranks(quantiles: tuple[float, ...], n: int) -> np.ndarray:
    """1-based ranks k_j = ceil(q_j n), clipped to 1..n."""
    return np.clip(np.ceil(np.asarray(quantiles) * n - 1e-12).astype(np.int64), 1, n)


def _padded(data: Any, lower: float, upper: float) -> np.ndarray:
    x = check_data(data)
    return np.concatenate(([lower], np.clip(np.sort(x), lower, upper), [upper]))


def _smooth_on_padded(z: np.ndarray, k: int, beta: float) -> float:
    """Exact beta-smooth sensitivity of x_(k) (replace-one) on the padded sorted data ``z``."""
    n = z.size - 2
    width = float(z[-1] - z[0])
    seed = float(max(z[k] - z[k - 1], z[k + 1] - z[k]))  # cost-0 pairs: the local sensitivity
    kc = _certified_k(seed, width, beta, cap=n + 1)
    # Pairs with j - i - 1 >= kc are worth at most width e^{-beta kc} <= seed.
    return _replace_one_dc(z, max(0, k - kc), k, k, min(n + 1, k + kc), beta, seed)


def order_statistic_smooth_sensitivity(data: Any, k: int, beta: float, lower: float, upper: float) -> float:
    """Exact beta-smooth sensitivity (replace-one, NRS07 Section 3.1) of the k-th (1-based) order
    statistic of ``data`` clipped to [lower, upper], padded with lower / upper."""
    a, b = check_bounds(lower, upper)
    z = _padded(data, a, b)
    n = z.size - 2
    if isinstance(k, bool) or not isinstance(k, (numbers.Integral, np.integer)) or not 1 <= int(k) <= n:
        raise ParamError("k", f"k must be a rank in 1..{n}, got {k!r}")
    if not (isinstance(beta, numbers.Real) and math.isfinite(float(beta)) and float(beta) > 0):
        raise ParamError("beta", f"beta must be a finite number > 0, got {beta!r}")
    return _smooth_on_padded(z, int(k), float(beta))


def _check_neighbours_swap(neighbours: Any) -> None:
    check_choice(neighbours, "neighbours", ("replace_one", "add_remove"))
    if neighbours != "replace_one":
        raise ParamError("neighbours", "neighbours must be 'replace_one' for the smooth-sensitivity quantiles (the NRS07 smooth "
                         f"bound is proved for replace-one neighbours; GJK21 run them with swap only), got {neighbours!r}")


class _Base(Mechanism):
    kind: ClassVar[str] = "real"
    epsilon: float
    lower: float
    upper: float
    quantiles: tuple[float, ...]

    def _validate(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        lo, hi = check_bounds(self.lower, self.upper)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "quantiles", check_quantiles(self.quantiles))

    @property
    def m(self) -> int:
        return len(self.quantiles)

    def statistic(self, data: Any) -> np.ndarray:
        """The released order statistics x_(ceil(q_j n)) of the clipped data (shape (m,))."""
        z = _padded(data, self.lower, self.upper)
        return z[_ranks(self.quantiles, z.size - 2)]

    def _finish(self, rows: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        rows = np.sort(rows, axis=1)
        return rows.reshape(shape + (self.m,)) if shape else rows[0]


def _nd(size: Any) -> tuple[tuple[int, ...], int]:
    shape = check_size(size)
    return shape, (int(np.prod(shape)) if shape else 1)


# ---------------------------------------------------------------------------------------------
# Smooth


@register("smooth_quantiles")
@dataclass(frozen=True)
class SmoothQuantiles(_Base):
    """Smooth: each quantile by NRS07 smooth sensitivity with Laplace noise, budget split evenly.

    With eps' = epsilon / m and delta' = delta / m, each coordinate independently is

        o_j = clip(x_(k_j) + (2 S*_beta(x; k_j) / eps') Z_j, lower, upper),   Z_j ~ Laplace(0, 1),
        beta = eps' / (2 ln(2 / delta')),

    S*_beta the exact replace-one beta-smooth sensitivity of the k_j-th order statistic (module
    docstring), floored at tiny * max(1, eps') (a constant floor keeps it beta-smooth); the row is
    sorted (post-processing).

    Claim: (epsilon, delta)-DP under replace-one neighbours. Each coordinate is (eps', delta')-DP by
    NRS07 Lemma 2.9 (Laplace noise is (alpha, beta)-admissible with alpha = eps'/2,
    beta = eps'/(2 ln(2/delta'))) and Corollary 2.4; basic composition over m coordinates (Dwork &
    Roth Thm 3.16). This is GJK21's "Smooth" baseline exactly as their code runs it
    (``divided_eps = eps/m``, ``divided_delta = delta/m``, Laplace, swap only; dp_multiq
    ``smooth.py``, ``experiment.py``). ``claim.sensitivity`` is not a global sensitivity and is left
    empty. ``marginal(data, j)`` is the exact law of coordinate j before sorting.
    """

    epsilon: float
    lower: float
    upper: float
    quantiles: tuple[float, ...]
    delta: float = 1e-6
    neighbours: str = "replace_one"

    def __post_init__(self) -> None:
        self._validate()
        if self.delta is None:
            raise ParamError("delta", "delta must be in (0, 1) for smooth_quantiles (Laplace noise is (epsilon, delta)-DP), "
                             "got None")
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        _check_neighbours_swap(self.neighbours)

    @property
    def per_quantile(self) -> tuple[float, float]:
        """(eps', delta') = (epsilon / m, delta / m)."""
        return self.epsilon / self.m, float(self.delta) / self.m

    @property
    def beta(self) -> float:
        e, d = self.per_quantile
        return e / (2.0 * math.log(2.0 / d))

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, float(self.delta), neighbours="replace_one")

    def centres_and_scales(self, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """(x_(k_j), Laplace scale 2 S_j / eps') for j = 1..m."""
        z = _padded(data, self.lower, self.upper)
        ks = _ranks(self.quantiles, z.size - 2)
        eps_j = self.per_quantile[0]
        floor = np.finfo(np.float64).tiny * max(1.0, eps_j)
        s = np.array([max(_smooth_on_padded(z, int(k), self.beta), floor) for k in ks])
        return z[ks], 2.0 * s / eps_j

    def marginal(self, data: Any, j: int) -> LocationScaleLaw:
        """Exact law of coordinate j (before sorting): clipped Laplace location-scale law."""
        if isinstance(j, bool) or not isinstance(j, (numbers.Integral, np.integer)) or not 0 <= int(j) < self.m:
            raise ParamError("j", f"j must be in 0..{self.m - 1}, got {j!r}")
        c, s = self.centres_and_scales(data)
        return LocationScaleLaw(float(c[j]), float(s[j]), "laplace", self.lower, self.upper)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        """Draws: shape (size, m), each row sorted; shape (m,) for ``size=None``."""
        shape, nd = _nd(size)
        rng = as_rng(rng)
        c, s = self.centres_and_scales(data)
        rows = np.clip(c + s * rng.laplace(size=(nd, self.m)), self.lower, self.upper)
        return self._finish(rows, shape)

    @classmethod
    def example(cls) -> tuple["SmoothQuantiles", np.ndarray]:
        data = np.array([-1.2, -0.4, 0.0, 0.3, 0.3, 0.9, 1.7, 2.5, 3.1, 12.0])
        return cls(epsilon=1.0, lower=-10.0, upper=10.0, quantiles=(0.25, 0.5, 0.75), delta=1e-3), data


# ---------------------------------------------------------------------------------------------
# CSmooth


def lln_sigma(eps: float, t: float) -> float:
    """Bun & Steinke's sigma for Laplace-log-normal noise (Section 3.1.1): the unique positive root of
    (5 eps / t) sigma^3 - 5 sigma^2 - 1 = 0 (bisection; the root exceeds t / eps)."""
    a = 5.0 * eps / t
    lo, hi = t / eps, max(2.0 * t / eps, 1.0)
    while a * hi ** 3 - 5.0 * hi ** 2 - 1.0 < 0:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if a * mid ** 3 - 5.0 * mid ** 2 - 1.0 < 0:
            lo = mid
        else:
            hi = mid
    return hi


def _lln_log_s(eps: float, t: float, sigma: float) -> float:
    """log s with s = e^{-3 sigma^2 / 2} (eps - t / sigma) (Bun & Steinke, LLN theorem solved for s)."""
    return -1.5 * sigma ** 2 + math.log(eps - t / sigma)


#: dp_multiq's tuning grid for t: 50 points log-spaced over [10^-2, 10^0].
_T_GRID = tuple(float(v) for v in np.logspace(-2.0, 0.0, 50))


@lru_cache(maxsize=256)
def csmooth_tuned_ts(eps_q: float, quantiles: tuple[float, ...], lower: float, upper: float,
                     n: int = 1000, trials: int = 2, seed: int = 0) -> tuple[float, ...]:
    """Data-independent t per quantile, tuned as in GJK21's code (dp_multiq ``csmooth.py``): on
    ``trials`` public N(0, 1) samples of size ``n`` (fixed ``seed``), pick for each level the t of the
    grid minimising the noise variance 2 S_t^2 / (e^{-5 sigma^2} (eps - t / sigma)^2), and average
    over the trials. Uses no private data."""
    rng = np.random.default_rng(seed)
    sig = np.array([lln_sigma(eps_q, t) for t in _T_GRID])
    tg = np.array(_T_GRID)
    log_den = -5.0 * sig ** 2 + 2.0 * np.log(eps_q - tg / sig)
    out = np.zeros(len(quantiles))
    for _ in range(trials):
        z = _padded(rng.normal(0.0, 1.0, n), lower, upper)
        for jq, k in enumerate(_ranks(quantiles, n)):
            s = np.array([_smooth_on_padded(z, int(k), float(t)) for t in tg])
            with np.errstate(divide="ignore"):
                v = 2.0 * np.log(s) - log_den
            out[jq] += tg[int(np.argmin(v))] / trials
    return tuple(float(v) for v in out)


@register("csmooth_quantiles")
@dataclass(frozen=True)
class CSmoothQuantiles(_Base):
    """CSmooth: each quantile by t-smooth sensitivity with Laplace-log-normal noise (zCDP).

    With eps' = epsilon / sqrt(m) and for each level a data-independent t_j (``t``: one number, a
    list of m, or None for GJK21's tuning on public N(0, 1) data, :func:`csmooth_tuned_ts`),
    sigma_j = :func:`lln_sigma` (eps', t_j), s_j = e^{-3 sigma_j^2 / 2} (eps' - t_j / sigma_j):

        o_j = clip(x_(k_j) + (S_{t_j}(x; k_j) / s_j) Z_j, lower, upper),   Z_j = L_j e^{sigma_j N_j},

    L_j standard Laplace, N_j standard normal, S_t the exact replace-one t-smooth sensitivity of the
    k_j-th order statistic (module docstring; floored at tiny, a constant floor keeps it smooth); the
    row is sorted. Sampled in log space: |noise| = exp(log S - log s + log|L| + sigma N).

    Claim: rho-zCDP with rho = epsilon^2 / 2 under replace-one neighbours: each coordinate is
    (eps'^2 / 2)-CDP (Bun & Steinke, "Average-Case Averages: Private Algorithms for Smooth
    Sensitivity and Mean Estimation", NeurIPS 2019, Section 3.1, Laplace-log-normal theorem:
    noise S/s * LLN(sigma) with a t-smooth S is (1/2) eps^2-CDP for eps = t/sigma + e^{3 sigma^2/2} s),
    and zCDP composes additively: m eps'^2 / 2 = epsilon^2 / 2 (Bun & Steinke, TCC 2016, Lemma 2.3).
    ``claim`` is its (epsilon_dp, delta) conversion, epsilon_dp = rho + 2 sqrt(rho ln(1/delta))
    (Bun & Steinke 2016, Prop. 1.3), with ``delta`` only a conversion parameter: the mechanism
    does not depend on it. GJK21 run CSmooth at the same "epsilon" as the pure-DP methods, i.e. at
    epsilon^2/2-zCDP (dp_multiq ``experiment.py``: ``divided_eps = eps / sqrt(m)``), which is a
    weaker guarantee than epsilon-DP; the claim states what it is. ``marginal``'s law is not exposed
    (LLN has no closed-form cdf); the tests integrate it numerically.
    """

    epsilon: float
    lower: float
    upper: float
    quantiles: tuple[float, ...]
    t: Any = None
    delta: float = 1e-6
    neighbours: str = "replace_one"

    def __post_init__(self) -> None:
        self._validate()
        _check_neighbours_swap(self.neighbours)
        if self.delta is None:
            raise ParamError("delta", "delta must be in (0, 1) for csmooth_quantiles (the (epsilon, delta) conversion of its "
                             "zCDP guarantee), got None")
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        if self.t is not None:
            raw = [self.t] * self.m if isinstance(self.t, numbers.Real) and not isinstance(self.t, bool) else self.t
            try:
                ts = [float(v) if not isinstance(v, bool) else math.nan for v in raw]
            except (TypeError, ValueError):
                raise ParamError("t", f"t must be None, a number > 0 or a list of m = {self.m} numbers > 0, got {self.t!r}") \
                    from None
            if len(ts) != self.m or not all(math.isfinite(v) and v > 0 for v in ts):
                raise ParamError("t", f"t must be None, a number > 0 or a list of m = {self.m} numbers > 0, got {self.t!r}")
            object.__setattr__(self, "t", ts[0] if isinstance(self.t, numbers.Real) else tuple(ts))

    @property
    def per_quantile_epsilon(self) -> float:
        return self.epsilon / math.sqrt(self.m)

    @property
    def rho(self) -> float:
        """The zCDP parameter epsilon^2 / 2."""
        return self.epsilon ** 2 / 2.0

    @property
    def claim(self) -> PrivacyClaim:
        d = float(self.delta)
        return PrivacyClaim(self.rho + 2.0 * math.sqrt(self.rho * math.log(1.0 / d)), d, neighbours="replace_one")

    @property
    def ts(self) -> tuple[float, ...]:
        if self.t is None:
            return csmooth_tuned_ts(self.per_quantile_epsilon, self.quantiles, self.lower, self.upper)
        return (float(self.t),) * self.m if isinstance(self.t, float) else tuple(self.t)

    def noise_parameters(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(t_j, sigma_j, log s_j) for j = 1..m."""
        e = self.per_quantile_epsilon
        ts = np.array(self.ts)
        sig = np.array([lln_sigma(e, t) for t in ts])
        log_s = np.array([_lln_log_s(e, t, s) for t, s in zip(ts, sig)])
        return ts, sig, log_s

    def centres_and_log_scales(self, data: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x_(k_j), log(S_{t_j} / s_j), sigma_j)."""
        z = _padded(data, self.lower, self.upper)
        ks = _ranks(self.quantiles, z.size - 2)
        ts, sig, log_s = self.noise_parameters()
        floor = np.finfo(np.float64).tiny
        log_S = np.log([max(_smooth_on_padded(z, int(k), float(t)), floor) for k, t in zip(ks, ts)])
        return z[ks], log_S - log_s, sig

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        """Draws: shape (size, m), each row sorted; shape (m,) for ``size=None``."""
        shape, nd = _nd(size)
        rng = as_rng(rng)
        c, log_scale, sig = self.centres_and_log_scales(data)
        sign = np.where(rng.random((nd, self.m)) < 0.5, -1.0, 1.0)
        log_abs = log_scale + np.log(rng.standard_exponential((nd, self.m))) + sig * rng.standard_normal((nd, self.m))
        rows = np.clip(c + sign * np.exp(log_abs), self.lower, self.upper)
        return self._finish(rows, shape)

    @classmethod
    def example(cls) -> tuple["CSmoothQuantiles", np.ndarray]:
        data = np.array([-1.2, -0.4, 0.0, 0.3, 0.3, 0.9, 1.7, 2.5, 3.1, 12.0])
        return cls(epsilon=1.0, lower=-10.0, upper=10.0, quantiles=(0.25, 0.5, 0.75), t=0.1), data


# ---------------------------------------------------------------------------------------------
# Trees

TREE_NOISES: tuple[str, ...] = ("laplace", "gaussian")


def gaussian_delta(epsilon: float, sigma: float, l2: float) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism N(0, sigma^2) with L2 sensitivity ``l2``
    (Balle & Wang, ICML 2018, Thm 8): Phi(l2/(2 sigma) - epsilon sigma/l2) - e^epsilon Phi(-l2/(2 sigma) - epsilon sigma/l2),
    the second term in log space."""
    a = l2 / (2.0 * sigma)
    b = epsilon * sigma / l2
    from scipy import stats  # here, not at import: scipy.stats costs ~0.4 s

    return float(max(0.0, stats.norm.cdf(a - b) - math.exp(epsilon + stats.norm.logcdf(-a - b))))


@register("tree_quantiles")
@dataclass(frozen=True)
class TreeQuantiles(_Base):
    """LapTree / GaussTree: quantiles read off one noisy hierarchical histogram (a range tree).

    [lower, upper] is cut into B^h equal leaves (B = ``branching`` = 16, h = ``height`` = 4, as in
    GJK21's code); a record (clipped) falls in leaf floor((x - lower) / width * B^h) (the top edge in
    the last leaf). Every node below the root holds the count of its subtree plus independent noise:
    Laplace(Delta_1 / epsilon), or Gaussian with sigma = sqrt(2 ln(1.32 / delta)) Delta_1 / epsilon,
    Delta_1 = h (``add_remove``: one record adds 1 to one node per level) or 2 h (``replace_one``).
    Each quantile q is found by descending from the root (dp_multiq ``tree.py``, after the Java
    BoundedQuantiles of Google's differential-privacy library; range trees for rank queries:
    Chan, Shi & Song, TISSEC 2011, Section 7.2): among the children's noisy counts c_1..c_B with total
    T, stop if T <= 0; else go to the first child i with (c_1 + ... + c_i) / T >= q - 1e-6 and set
    q <- min(1, (T q - (c_1 + ... + c_{i-1})) / c_i); at a leaf (or a stop) return
    (1 - q) left + q right of the node's interval. All quantiles of one draw read the same noisy
    counts (each node is noised once; only nodes read are generated, which has the same law). The
    row is sorted (it already is, up to noise-free ties).

    Claim (under ``neighbours``): ``noise="laplace"``: epsilon-DP (pure), the Laplace mechanism on
    the vector of all non-root counts with L1 sensitivity Delta_1 (Dwork & Roth Thm 3.6), then
    post-processing. ``noise="gaussian"``: (epsilon, delta)-DP: the Gaussian mechanism on the same
    vector, whose L2 sensitivity is sqrt(h) (add/remove) or sqrt(2 h) (replace-one) <= Delta_1; the
    constructor checks the exact Gaussian-mechanism delta (:func:`gaussian_delta`, Balle & Wang 2018
    Thm 8) at the L2 sensitivity and raises ValueError if sigma were too small for (epsilon, delta)
    (it never is at h >= 2 and epsilon <= 10 for delta <= 0.1). ``claim.sensitivity`` records Delta_1.
    Source: GJK21 Section 5 (LapTree, GaussTree baselines) and dp_multiq ``tree.py`` / ``experiment.py``
    (height 4, branching 16, LapTree at delta = 0).
    """

    epsilon: float
    lower: float
    upper: float
    quantiles: tuple[float, ...]
    neighbours: str = "replace_one"
    noise: str = "laplace"
    delta: float | None = None
    height: int = 4
    branching: int = 16

    def __post_init__(self) -> None:
        self._validate()
        check_choice(self.neighbours, "neighbours", ("replace_one", "add_remove"))
        check_choice(self.noise, "noise", TREE_NOISES)
        for name, lo in (("height", 1), ("branching", 2)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)) or int(v) < lo:
                raise ParamError(name, f"{name} must be an integer >= {lo}, got {v!r}")
            object.__setattr__(self, name, int(v))
        if int(self.branching) ** int(self.height) > 1 << 24:
            raise ParamError("branching", f"branching ** height must be at most 2**24 leaves, got {self.branching}**{self.height}")
        if self.noise == "gaussian":
            if self.delta is None:
                raise ParamError("delta", "delta must be in (0, 1) for noise='gaussian', got None")
            object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
            d = gaussian_delta(self.epsilon, self.scale, self.l2_sensitivity)
            if d > float(self.delta):
                raise ValueError(f"the Gaussian tree's sigma={self.scale:g} is too small for (epsilon={self.epsilon}, "
                                 f"delta={self.delta}) at L2 sensitivity {self.l2_sensitivity:g} (exact delta {d:.3g})")
        elif self.delta not in (None, 0, 0.0):
            raise ParamError("delta", f"delta must be None (or 0) for noise='laplace' (pure DP), got {self.delta!r}")
        elif self.delta is not None:
            object.__setattr__(self, "delta", None)

    @property
    def l1_sensitivity(self) -> float:
        return float(self.height * (2 if self.neighbours == "replace_one" else 1))

    @property
    def l2_sensitivity(self) -> float:
        return math.sqrt(self.height * (2 if self.neighbours == "replace_one" else 1))

    @property
    def scale(self) -> float:
        """Laplace scale Delta_1 / epsilon, or the Gaussian sigma sqrt(2 ln(1.32/delta)) Delta_1 / epsilon."""
        if self.noise == "laplace":
            return self.l1_sensitivity / self.epsilon
        return math.sqrt(2.0 * math.log(1.32 / float(self.delta))) * self.l1_sensitivity / self.epsilon

    @property
    def claim(self) -> PrivacyClaim:
        d = 0.0 if self.noise == "laplace" else float(self.delta)
        return PrivacyClaim(self.epsilon, d, neighbours=self.neighbours, sensitivity=self.l1_sensitivity)

    def level_counts(self, data: Any) -> list[np.ndarray]:
        """Exact counts per level: entry d (1..height) has B^d counts (entry 0 is the root's)."""
        x = np.clip(check_data(data), self.lower, self.upper)
        B, h = self.branching, self.height
        leaves = B ** h
        idx = np.floor((x - self.lower) / (self.upper - self.lower) * leaves).astype(np.int64)
        idx = np.clip(idx, 0, leaves - 1)
        counts = [np.bincount(idx, minlength=leaves).astype(np.float64)]
        for _ in range(h):
            counts.append(counts[-1].reshape(-1, B).sum(axis=1))
        return counts[::-1]

    def _noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        if self.noise == "laplace":
            return rng.laplace(0.0, self.scale, size=shape)
        return rng.normal(0.0, self.scale, size=shape)

    def _block(self, counts: list[np.ndarray], nd: int, rng: np.random.Generator) -> np.ndarray:
        B, h, m = self.branching, self.height, self.m
        q = np.broadcast_to(np.asarray(self.quantiles), (nd, m)).copy()
        pos = np.zeros((nd, m), dtype=np.int64)      # position of the current node within its level
        level = np.zeros((nd, m), dtype=np.int64)    # level of the current node
        active = np.ones((nd, m), dtype=bool)
        draw = np.broadcast_to(np.arange(nd, dtype=np.int64)[:, None], (nd, m))
        ar = np.arange(B)
        for d in range(1, h + 1):
            if not active.any():
                break
            a_draw, a_pos, a_q = draw[active], pos[active], q[active]
            # one noisy block of B children per (draw, parent): shared by the quantiles that read it
            keys, inv = np.unique(a_draw * (B ** (d - 1)) + a_pos, return_inverse=True)
            noise = self._noise(rng, (keys.size, B))
            c = counts[d][a_pos[:, None] * B + ar[None, :]] + noise[inv.reshape(-1)]
            total = c.sum(axis=1)
            go = total > 0.0
            partial = np.cumsum(c, axis=1)
            hit = partial >= (a_q - _TREE_TOL)[:, None] * total[:, None]
            hit[:, -1] = True
            i = np.argmax(hit, axis=1)
            ci = c[np.arange(i.size), i]
            before = partial[np.arange(i.size), i] - ci
            with np.errstate(divide="ignore", invalid="ignore"):
                new_q = np.minimum((total * a_q - before) / ci, 1.0)
            new_q = np.where(go, new_q, a_q)
            new_pos = np.where(go, a_pos * B + i, a_pos)
            new_level = np.where(go, d, d - 1)
            rows_active = np.flatnonzero(active.reshape(-1))
            q.reshape(-1)[rows_active] = new_q
            pos.reshape(-1)[rows_active] = new_pos
            level.reshape(-1)[rows_active] = new_level
            act = active.reshape(-1).copy()
            act[rows_active] = go
            active = act.reshape(nd, m)
        width = (self.upper - self.lower) / np.power(float(B), level)
        left = self.lower + width * pos
        return (1.0 - q) * left + q * (left + width)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        """Draws: shape (size, m), each row sorted; shape (m,) for ``size=None``. Vectorised over draws
        in blocks of 16,384."""
        shape, nd = _nd(size)
        rng = as_rng(rng)
        counts = self.level_counts(data)
        parts = [self._block(counts, min(_TREE_BLOCK, nd - s), rng) for s in range(0, nd, _TREE_BLOCK)]
        rows = np.concatenate(parts, axis=0) if parts else np.empty((0, self.m))
        return self._finish(np.clip(rows, self.lower, self.upper), shape)

    @classmethod
    def example(cls) -> tuple["TreeQuantiles", np.ndarray]:
        data = np.array([-1.2, -0.4, 0.0, 0.3, 0.3, 0.9, 1.7, 2.5, 3.1, 12.0])
        return cls(epsilon=1.0, lower=-10.0, upper=10.0, quantiles=(0.25, 0.5, 0.75), height=2, branching=4), data
