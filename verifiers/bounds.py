"""Exact binomial confidence bounds and the privacy-loss lower bounds built from them.

The one Clopper–Pearson implementation of dpharness (the verifier and the benchmarks' Monte Carlo
intervals both use it). C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits
illustrated in the case of the binomial", Biometrika 26(4), 404-413 (1934): one-sided bounds at
level 1 - a are Beta quantiles,

* lower(k, n) = Beta(a; k, n - k + 1) quantile, 0 when k = 0;
* upper(k, n) = Beta(1 - a; k + 1, n - k) quantile, 1 when k = n,

computed with :func:`scipy.special.betaincinv` (the inverse regularised incomplete beta function,
i.e. ``scipy.stats.beta.ppf``); :func:`cp_interval` is the two-sided interval.

With k = 0 the upper bound is 1 - a^(1/n) (≈ ln(1/a)/n), and with k = n the lower bound is a^(1/n):
both are computed in closed form with ``expm1``/``exp`` so that nothing is lost to rounding. These
are what make the verifier's epsilon lower bound uncapped: a point mass seen n times under D and
never under D' certifies ln(a^(1/n) / (1 - a^(1/n))) ≈ ln(n / ln(1/a)).

Privacy bound (docs/auditing.md, "The bounds"; DP-Sniper's certification step): if event E has
probability p1 under D and p2 under D', (epsilon, delta)-DP requires p1 <= e^epsilon p2 + delta, so
with L1 <= p1 and U2 >= p2 holding jointly with probability >= 1 - (a1 + a2),

    epsilon >= ln((L1 - delta) / U2)      and      delta >= L1 - e^epsilon U2.

Poissonised certification (what :func:`verifiers.audit` does for pure claims). If the number of
draws per dataset is itself Poisson(lam), the event counts are independent K1 ~ Poisson(lam p1),
K2 ~ Poisson(lam p2) exactly, and given K1 + K2 = m, K1 ~ Binomial(m, p1/(p1 + p2)) exactly. One
Clopper–Pearson bound on that proportion is an exact (1 - alpha) lower bound on the ratio:

    p1/p2 >= pi_L/(1 - pi_L),  pi_L = CP_lower(K1, K1 + K2; alpha)      (conditional_epsilon_lower)

It spends alpha once instead of splitting it between two bounds and adds the two count variances
in quadrature rather than the two interval half-widths linearly, so it certifies more for the same
draws (e.g. 0.95 instead of 0.90 on a tight Laplace pair with 7,000 draws per dataset). For
(epsilon, delta) claims the probabilities themselves are needed: Garwood's exact Poisson bounds
(poisson_lower/poisson_upper) give delta_LB = L1/lam - e^eps U2/lam.

Counts ``k`` may be real-valued (expected counts when *predicting* a bound on the selection split);
the Beta quantiles are defined for them. Certification always uses integer counts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from dpharness.mechanisms.base import ParamError

__all__ = ["cp_lower", "cp_upper", "cp_unchecked", "cp_interval", "epsilon_lower_bound", "delta_lower_bound", "blind_delta", "check_alpha",
           "poisson_lower", "poisson_upper", "conditional_epsilon_lower", "poisson_epsilon_lower",
           "poisson_delta_lower"]


def check_alpha(alpha: Any, name: str = "alpha") -> float:
    """Return ``alpha`` as a float in (0, 1) or raise ``ValueError`` naming it."""
    ok = isinstance(alpha, (int, float, np.floating, np.integer)) and not isinstance(alpha, bool)
    if not ok or not (0.0 < float(alpha) < 1.0):
        raise ParamError(name, f"{name} must be in (0, 1), got {alpha!r}")
    return float(alpha)


def _prep(k: Any, n: Any, alpha: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    a = np.asarray(alpha, dtype=np.float64)
    if np.any(n <= 0) or np.any(~np.isfinite(n)):
        raise ParamError("n", f"n must be finite and > 0, got {n!r}")
    if np.any(k < 0) or np.any(k > n) or np.any(np.isnan(k)):
        raise ParamError("k", f"k must be in [0, n], got k={k!r}, n={n!r}")
    if np.any(a <= 0) or np.any(a >= 1):
        raise ParamError("alpha", f"alpha must be in (0, 1), got {alpha!r}")
    return np.broadcast_arrays(k, n, a)  # type: ignore[return-value]


def _cp(k_: np.ndarray, n_: np.ndarray, a_: np.ndarray, upper: bool) -> np.ndarray:
    """The Clopper–Pearson bounds on broadcast float arrays already known to be valid."""
    if upper:
        out = np.ones(k_.shape)
        zero = k_ <= 0
        mid = ~zero & (k_ < n_)
        out[zero] = -np.expm1(np.log(a_[zero]) / n_[zero])
        if mid.any():
            out[mid] = special.betaincinv(k_[mid] + 1.0, n_[mid] - k_[mid], 1.0 - a_[mid])
        return out
    out = np.zeros(k_.shape)
    full = k_ >= n_
    mid = (k_ > 0) & ~full
    out[full] = np.exp(np.log(a_[full]) / n_[full])
    if mid.any():
        out[mid] = special.betaincinv(k_[mid], n_[mid] - k_[mid] + 1.0, a_[mid])
    return out


def cp_unchecked(k: np.ndarray, n: Any, alpha: float, upper: bool) -> np.ndarray:
    """:func:`cp_upper` (``upper``) or :func:`cp_lower` without the input checks, for callers in a
    loop that already hold 0 <= k <= n, n > 0 and 0 < alpha < 1 (the checks cost more than the
    bounds on a few dozen counts)."""
    k_, n_, a_ = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64),
                                     np.asarray(alpha, dtype=np.float64))
    return _cp(k_, n_, a_, upper)


def cp_lower(k: Any, n: Any, alpha: Any) -> np.ndarray | float:
    """One-sided (1 - alpha) Clopper–Pearson lower bound on a binomial proportion.

    Equals the lower end of the two-sided exact interval at confidence 1 - 2 alpha
    (``scipy.stats.binomtest(k, n).proportion_ci(1 - 2 alpha, method="exact")``).
    """
    out = _cp(*_prep(k, n, alpha), upper=False)
    return float(out) if out.ndim == 0 else out


def cp_upper(k: Any, n: Any, alpha: Any) -> np.ndarray | float:
    """One-sided (1 - alpha) Clopper–Pearson upper bound; ``1 - alpha**(1/n)`` when k = 0."""
    out = _cp(*_prep(k, n, alpha), upper=True)
    return float(out) if out.ndim == 0 else out


def cp_interval(k: Any, n: Any, confidence: float = 0.95) -> tuple[Any, Any]:
    """Two-sided exact Clopper–Pearson interval at ``confidence``: (cp_lower(k, n, a/2),
    cp_upper(k, n, a/2)) with a = 1 - confidence; equals
    ``scipy.stats.binomtest(k, n).proportion_ci(confidence, method="exact")``."""
    conf = check_alpha(confidence, "confidence")
    half = (1.0 - conf) / 2.0
    return cp_lower(k, n, half), cp_upper(k, n, half)


def epsilon_lower_bound(
    k1: Any, n1: Any, k2: Any, n2: Any, *, alpha1: float, alpha2: float, delta: float = 0.0
) -> np.ndarray | float:
    """ln((CP_lower(k1, n1; alpha1) - delta) / CP_upper(k2, n2; alpha2)), floored at 0.

    A (1 - alpha1 - alpha2) lower confidence bound on the epsilon of any (epsilon, delta)-DP
    guarantee the mechanism could satisfy, when event counts k1/n1 under D and k2/n2 under D' come
    from samples drawn *after* the event was chosen. No cap: k2 = 0 gives the closed form above.
    """
    lo = np.asarray(cp_lower(k1, n1, alpha1), dtype=np.float64)
    up = np.asarray(cp_upper(k2, n2, alpha2), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.log(lo - delta) - np.log(up)
    val = np.where(lo - delta > 0, val, 0.0)
    out = np.maximum(val, 0.0)
    return float(out) if out.ndim == 0 else out


def delta_lower_bound(
    k1: Any, n1: Any, k2: Any, n2: Any, *, epsilon: float, alpha1: float, alpha2: float
) -> np.ndarray | float:
    """max(0, CP_lower(k1) - e^epsilon CP_upper(k2)): lower confidence bound on delta at epsilon."""
    lo = np.asarray(cp_lower(k1, n1, alpha1), dtype=np.float64)
    up = np.asarray(cp_upper(k2, n2, alpha2), dtype=np.float64)
    out = np.maximum(lo - math.exp(epsilon) * up, 0.0)
    return float(out) if out.ndim == 0 else out


def blind_delta(n: int, alpha: float) -> float:
    """Probability below which an event can go unseen in n draws with probability >= alpha.

    This is CP_upper(0, n; alpha) = 1 - alpha**(1/n) ≈ ln(1/alpha)/n: the residual blind spot of any
    black-box test with n samples per dataset (docs/auditing.md, "Power and blind spots").
    """
    return float(cp_upper(0, n, alpha))


def poisson_lower(k: Any, alpha: Any) -> np.ndarray | float:
    """Garwood's exact one-sided (1 - alpha) lower bound on a Poisson mean: Gamma(alpha; k) quantile
    (= chi2(alpha; 2k)/2), 0 when k = 0."""
    k = np.asarray(k, dtype=np.float64)
    a = np.broadcast_to(np.asarray(alpha, dtype=np.float64), k.shape)
    out = np.zeros(k.shape)
    pos = k > 0
    if pos.any():
        out[pos] = special.gammaincinv(k[pos], a[pos])
    return float(out) if out.ndim == 0 else out


def poisson_upper(k: Any, alpha: Any) -> np.ndarray | float:
    """Garwood's exact one-sided (1 - alpha) upper bound on a Poisson mean: Gamma(1 - alpha; k + 1)
    quantile (= chi2(1 - alpha; 2k + 2)/2); ln(1/alpha) when k = 0."""
    k = np.asarray(k, dtype=np.float64)
    a = np.broadcast_to(np.asarray(alpha, dtype=np.float64), k.shape)
    out = special.gammainccinv(k + 1.0, a)
    return float(out) if np.ndim(out) == 0 else np.asarray(out)


def conditional_epsilon_lower(k_num: Any, k_den: Any, alpha: float) -> np.ndarray | float:
    """ln(pi_L/(1 - pi_L)) with pi_L = CP_lower(k_num, k_num + k_den; alpha), floored at 0.

    An exact (1 - alpha) lower bound on ln(p_num/p_den) when the counts are independent Poisson
    with equal exposure (Poissonised sampling). Uncapped: k_den = 0 gives ln(alpha^(1/m) /
    (1 - alpha^(1/m))) ≈ ln(m / ln(1/alpha)).
    """
    kn = np.asarray(k_num, dtype=np.float64)
    kd = np.asarray(k_den, dtype=np.float64)
    kn, kd = np.broadcast_arrays(kn, kd)
    m = kn + kd
    out = np.zeros(kn.shape)
    ok = kn > 0
    if ok.any():
        pl = np.asarray(cp_lower(kn[ok], m[ok], alpha), dtype=np.float64).reshape(-1)
        with np.errstate(divide="ignore"):
            val = np.log(pl) - np.log1p(-pl)
        out[ok] = np.maximum(val, 0.0)
    return float(out) if out.ndim == 0 else out


def poisson_epsilon_lower(k_num: Any, k_den: Any, lam: float, *, alpha1: float, alpha2: float,
                          delta: float = 0.0) -> np.ndarray | float:
    """ln((L1/lam - delta)/(U2/lam)) with Garwood bounds at alpha1, alpha2; floored at 0."""
    lo = np.asarray(poisson_lower(k_num, alpha1)) / lam
    up = np.asarray(poisson_upper(k_den, alpha2)) / lam
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.where(lo - delta > 0, np.log(np.maximum(lo - delta, 1e-300)) - np.log(up), 0.0)
    out = np.maximum(val, 0.0)
    return float(out) if out.ndim == 0 else out


def poisson_delta_lower(k_num: Any, k_den: Any, lam: float, *, epsilon: float, alpha1: float,
                        alpha2: float) -> np.ndarray | float:
    """max(0, L1/lam - e^epsilon U2/lam) with Garwood bounds: lower bound on delta at epsilon."""
    lo = np.asarray(poisson_lower(k_num, alpha1)) / lam
    up = np.asarray(poisson_upper(k_den, alpha2)) / lam
    out = np.maximum(lo - math.exp(epsilon) * up, 0.0)
    return float(out) if out.ndim == 0 else out
