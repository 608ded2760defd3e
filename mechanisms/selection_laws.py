"""Exact output laws of the finite selection mechanisms in :mod:`mechanisms.finite`.

Each function takes *scaled score gaps* -- one entry per candidate, ``-inf`` for a candidate that
can never be chosen -- and returns log-probabilities aligned with its input:

* :func:`em_log_prob` -- exponential mechanism / report noisy max with Gumbel noise, closed form;
* :func:`pf_log_prob` -- permute-and-flip / report noisy max with exponential noise;
* :func:`laplace_rnm_log_prob` -- report noisy max with Laplace noise.

The last two are integrals of products of one-dimensional factors. They are computed with
Gauss--Legendre quadrature in log space with an *a priori* error bound: on a piece [a, c] the rule
with n nodes errs by at most (c - a)/2 * 64 M / (15 (1 - rho^-2) rho^(2n)) when the integrand is
analytic inside the Bernstein ellipse E_rho of [a, c] and bounded there by M (Trefethen,
*Approximation Theory and Approximation Practice*, Thm 19.3, stated for n nodes as in
fungrim.org/topic/Gaussian_quadrature). All our integrands are entire on each piece and M is
bounded factor by factor, so the number of nodes is chosen to make the bound at most ``rtol``
times a proven lower bound of each probability. Candidates with equal scores are grouped, so the
cost depends on the number of *distinct* scores.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np
from scipy import special

__all__ = ["RTOL", "em_log_prob", "pf_log_prob", "laplace_rnm_log_prob", "gauss_legendre"]

#: Certified relative error bound of :func:`pf_log_prob` (large k) and :func:`laplace_rnm_log_prob`
#: (quadrature + truncation), on each probability, before floating-point rounding.
RTOL = 1e-13

LOG_HALF = math.log(0.5)
#: Most nodes used on one piece; pieces needing more are bisected.
_CAP = 64
#: Ellipse parameters tried on every piece (the one needing fewest nodes wins).
_RHO = np.array([1.2, 1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 40.0, 100.0, 400.0, 2000.0])
_ALPHA = (_RHO + 1.0 / _RHO) / 2.0  # semi-axis along the interval (units of the half-width)
_BETA = (_RHO - 1.0 / _RHO) / 2.0  # semi-axis across
_LOG_RHO2 = 2.0 * np.log(_RHO)
_LOG_KONST = math.log(64.0 / 15.0) - np.log1p(-(_RHO**-2.0))
#: Elements per temporary (groups x nodes) matrix.
_CHUNK = 1 << 21


@lru_cache(maxsize=None)
def gauss_legendre(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss--Legendre nodes and weights on [-1, 1], accurate to a few ulp.

    scipy's ``roots_legendre`` weights have relative errors near 1e-12 for m >= 32 (measured), so
    the nodes are polished by Newton's method on the three-term recurrence in extended precision
    (``np.longdouble``; on platforms where that is plain double the polish is still harmless).
    """
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m!r}")
    x = special.roots_legendre(m)[0].astype(np.longdouble)

    def legendre(xx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p0, p1 = np.ones_like(xx), xx.copy()
        for k in range(2, m + 1):
            p0, p1 = p1, ((2 * k - 1) * xx * p1 - (k - 1) * p0) / k
        if m == 1:
            p0, p1 = np.ones_like(xx), xx
        return p1, m * (xx * p1 - p0) / (xx * xx - 1)

    for _ in range(3):
        p, dp = legendre(x)
        x = x - p / dp
    _, dp = legendre(x)
    w = 2 / ((1 - x * x) * dp * dp)
    xf, wf = x.astype(np.float64), w.astype(np.float64)
    xf.setflags(write=False)
    wf.setflags(write=False)
    return xf, wf


def em_log_prob(z: Any) -> np.ndarray:
    """log P[r] for P[r] ∝ exp(z_r) (exponential mechanism; Gumbel-noise report noisy max).

    ``z`` is the scaled score, e.g. eps (u - max u) / (2 Delta u); ``-inf`` gives probability 0.
    """
    z = np.asarray(z, dtype=np.float64)
    return z - special.logsumexp(z)


def _groups(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    finite = np.isfinite(z)
    w, inv, cnt = np.unique(z[finite], return_inverse=True, return_counts=True)
    return finite, w, inv.reshape(-1), cnt.astype(np.float64)


def _certified_gl(
    pieces: Sequence[tuple[float, float]],
    log_integrand: Callable[[np.ndarray], np.ndarray],
    log_bound: Callable[[float, float, np.ndarray, np.ndarray], np.ndarray],
    log_budget: np.ndarray,
    total_width: float,
    max_pieces: int = 200_000,
) -> np.ndarray:
    """log of the integrals of D positive integrands over the union of ``pieces``.

    ``log_integrand(y)`` -> (D, len(y)) log integrand values; ``log_bound(a, c, delta, eta)`` ->
    (R, D) upper bounds of log|integrand| on the rectangle Re in [a - delta, c + delta],
    |Im| <= eta (one row per entry of ``delta``/``eta``), which contains the Bernstein ellipse.
    Each piece gets the fewest nodes for which the Gauss error bound is at most
    ``exp(log_budget) * width / total_width``, so the total error is at most exp(log_budget).
    """
    final: list[tuple[float, float, int]] = []
    work = [(float(a), float(c)) for a, c in pieces]
    log_half_total = math.log(total_width / 2.0)
    while work:
        a, c = work.pop()
        h = (c - a) / 2.0
        if not h > 0:
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            lb = log_bound(a, c, h * (_ALPHA - 1.0), h * _BETA)  # (R, D)
            need = (log_half_total + _LOG_KONST[:, None] + lb - log_budget[None, :]) / _LOG_RHO2[:, None]
        need = np.where(np.isneginf(lb), -np.inf, need)
        need = np.where(np.isnan(need), np.inf, need)  # an overflowed bound proves nothing: refine
        best = float(np.min(np.max(need, axis=1)))
        if best <= _CAP:
            final.append((a, c, max(1, math.ceil(best))))
        else:
            if len(final) + len(work) >= max_pieces:
                raise RuntimeError("quadrature needs too many pieces; the integrand is too irregular")
            mid = a + h
            work.extend([(a, mid), (mid, c)])
    nodes = []
    logw = []
    for a, c, m in final:
        x, w = gauss_legendre(m)
        h = (c - a) / 2.0
        nodes.append(a + h * (1.0 + x))
        logw.append(np.log(h * w))
    y = np.concatenate(nodes)
    lw = np.concatenate(logw)
    d = log_budget.size
    out = np.full(d, -np.inf)
    step = max(1, _CHUNK // max(d, 1))
    for s in range(0, y.size, step):
        vals = log_integrand(y[s : s + step]) + lw[None, s : s + step]
        out = np.logaddexp(out, special.logsumexp(vals, axis=1))
    return out


def _wsum(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    """sum_i weights[i] * x[i, ...] (``weights @ x``) by numpy's pairwise summation, not BLAS."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64).reshape((-1,) + (1,) * (x.ndim - 1))
    return np.sum(w * x, axis=0)


def _log_prod_others(g: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """log prod_{s != r} F_s for every group r: sum_s cnt_s g_s - g_r, with g_s = log F_s <= 0.

    The plain difference is NaN where g_r = -inf (-inf minus -inf), e.g. the top candidate's factor
    1 - q t at t = 1. Factors equal to 0 are therefore counted, not summed: leaving one copy of
    group r out, the product is 0 iff another zero factor remains, and otherwise it is the sum of
    the finite logs minus g_r when g_r is finite (no -inf is ever subtracted).
    """
    zero = np.isneginf(g)
    fin = np.where(zero, 0.0, g)
    # weighted sums without BLAS: numpy's pairwise sums give the same bits whatever the thread
    # count, so runs are bit-identical for any --jobs (a BLAS product is not)
    s_fin = _wsum(cnt, fin)  # (T,)
    n_zero = _wsum(cnt, zero)  # (T,) number of zero factors, ties counted
    others_zero = n_zero[None, :] - zero > 0.5
    out = s_fin[None, :] - fin
    return np.where(others_zero, -np.inf, out)


# --------------------------------------------------------------------------------------------------
# Permute-and-flip = report noisy max with exponential noise
# --------------------------------------------------------------------------------------------------


def pf_log_prob(z: Any, rtol: float = RTOL) -> np.ndarray:
    """Exact log-probabilities of permute-and-flip with log acceptance probabilities ``z``.

    With q_s = exp(z_s - max z) (the flip probability of candidate s),

        P[r] = q_r * integral_0^1 prod_{s != r} (1 - q_s t) dt,

    the probability that r's exponential race time beats all others (McKenna & Sheldon 2020;
    Ding, Kifer et al. 2021 show permute-and-flip *is* report noisy max with exponential noise;
    substitute t = exp(-y) in P[r wins] = int f_r(y) prod F_s(y) dy). The integrand is a positive
    polynomial of degree K - 1 (K = candidates with z > -inf), so Gauss--Legendre with ceil(K/2)
    nodes is exact; every term is positive (no cancellation) and the product is summed in log space
    with log1p. For K > 128 the polynomial is integrated piecewise on a mesh graded towards t = 0
    with the certified bound of the module docstring (relative error <= ``rtol``), which costs
    O(K x nodes) instead of O(K^2).
    """
    z = np.asarray(z, dtype=np.float64)
    out = np.full(z.shape, -np.inf)
    finite, w, inv, cnt = _groups(z)
    w = w - w[-1]
    total = float(cnt.sum())
    if total == 1:
        out[finite] = 0.0
        return out
    q = np.exp(w)

    def log_integrand(t: np.ndarray) -> np.ndarray:
        # 1 - q_s t is 0 exactly when q_s = 1 and a node rounds to t = 1: log1p gives -inf there,
        # and the product over s != r must leave r's own zero factor out (_log_prod_others).
        with np.errstate(divide="ignore"):
            g = np.log1p(-q[:, None] * t[None, :])
        return _log_prod_others(g, cnt)

    exact_m = math.ceil(total / 2)
    if exact_m <= _CAP:
        x, wts = gauss_legendre(exact_m)
        t = (1.0 + x) / 2.0
        log_int = special.logsumexp(log_integrand(t) + np.log(wts / 2.0)[None, :], axis=1)
    else:

        def log_bound(a: float, c: float, delta: np.ndarray, eta: np.ndarray) -> np.ndarray:
            lo = (a - delta)[:, None]
            hi = (c + delta)[:, None]
            m2 = np.maximum((1 - q * lo) ** 2, (1 - q * hi) ** 2) + (q * eta[:, None]) ** 2
            lm = 0.5 * np.log(m2)  # log max |1 - q t| on the rectangle
            return _wsum(cnt, lm.T)[:, None] - lm

        # Lower bound: the integrand decreases in t, so the integral is >= t0 * integrand(t0).
        mass = float(_wsum(cnt, q))
        t0 = np.minimum(0.5, np.array([0.25, 0.5, 1.0, 2.0]) / mass)
        lower = np.max(np.log(t0)[None, :] + log_integrand(t0), axis=1)
        breaks = [0.0]
        while breaks[-1] * 2 < 1 and len(breaks) < 80:
            breaks.append(1.0 / mass if len(breaks) == 1 else breaks[-1] * 2)
        breaks.append(1.0)
        pieces = list(zip(breaks[:-1], breaks[1:]))
        log_int = _certified_gl(pieces, log_integrand, log_bound, math.log(rtol) + lower, 1.0)
    out[finite] = (w + log_int)[inv]
    return out


# --------------------------------------------------------------------------------------------------
# Report noisy max with Laplace noise
# --------------------------------------------------------------------------------------------------


def _log_laplace_cdf(z: np.ndarray) -> np.ndarray:
    out = np.empty_like(z)
    neg = z < 0
    out[neg] = LOG_HALF + z[neg]
    out[~neg] = np.log1p(-0.5 * np.exp(-z[~neg]))
    return out


def _log_laplace_sf(z: np.ndarray) -> np.ndarray:
    return _log_laplace_cdf(-z)


def _log_laplace_pdf(z: np.ndarray) -> np.ndarray:
    return LOG_HALF - np.abs(z)


def _log_mod_one_minus(log_r: np.ndarray, sin2: np.ndarray) -> np.ndarray:
    """Upper bound of log|1 - r e^{-is}| for |s| <= eta, given log r and sin^2(min(eta, pi)/2).

    |1 - r e^{-is}|^2 = (1 - r)^2 + 4 r sin^2(s/2); for huge r use the cruder 1 + r (no overflow).
    """
    big = log_r > 30.0
    r = np.exp(np.minimum(log_r, 30.0))
    exact = 0.5 * np.log((1.0 - r) ** 2 + 4.0 * r * sin2)
    return np.where(big, np.logaddexp(0.0, log_r), exact)


def laplace_rnm_log_prob(v: Any, rtol: float = RTOL) -> np.ndarray:
    """log P[argmax_i (v_i + L_i) = r] for iid standard Laplace L_i (scores in units of the scale).

    P[r] = int f(y - v_r) prod_{j != r} F(y - v_j) dy with f, F the standard Laplace density and
    CDF. Between consecutive distinct scores every factor is a single exponential branch, so the
    integrand is entire there and the certified Gauss rule of the module docstring applies. The
    real line is cut at y_hi above the top score (the rest is <= int f(y - v_r) dy beyond y_hi)
    and below at a score x_lo where log-concavity of the integrand (f and F are log-concave) bounds
    the lower tail by integrand(x_lo) / slope(x_lo); when no such cut exists the tail below the
    lowest score is added in closed form, (1/2)^K exp(sum_j (v_min - v_j)) / K.

    Error: each returned probability has relative error at most ``rtol`` (quadrature <= rtol/2,
    each tail <= rtol/4, all relative to a proven lower bound P[r] >= P[L_r > z - v_r] *
    prod_{j != r} P[L_j < z - v_j]) plus floating-point rounding of order K * 1e-16. Cost is
    O(D * pieces * nodes) for D distinct scores, pieces ~ the distinct scores within a few noise
    scales of the top (measured: ~6 s for k = 10^5 distinct scores, 0.01 s for 10^5 ties).
    """
    v = np.asarray(v, dtype=np.float64)
    out = np.full(v.shape, -np.inf)
    finite, w, inv, cnt = _groups(v)
    w = w - w[-1]
    total = float(cnt.sum())
    if total == 1:
        out[finite] = 0.0
        return out
    d = w.size

    def log_integrand(y: np.ndarray) -> np.ndarray:
        diff = y[None, :] - w[:, None]
        g = _log_laplace_cdf(diff)
        return _log_laplace_pdf(diff) + _wsum(cnt, g)[None, :] - g

    # Proven lower bound of each probability.
    z0 = np.array([0.0, math.log(total), math.log(total) + 1.0, math.log(total) + 3.0])
    diff0 = z0[None, :] - w[:, None]
    g0 = _log_laplace_cdf(diff0)
    lower = np.max(_log_laplace_sf(diff0) + _wsum(cnt, g0)[None, :] - g0, axis=1)

    # Upper cut: int_{y_hi}^inf f(y - v_r) dy = exp(v_r - y_hi)/2 <= rtol/4 * lower.
    y_hi = max(1.0, float(np.max(w + LOG_HALF - math.log(rtol / 4) - lower)))

    def lower_cut_ok(qi: int) -> bool:
        x = w[qi]
        diff = x - w
        g = _log_laplace_cdf(diff)
        logg = _log_laplace_pdf(diff) + float(_wsum(cnt, g)) - g
        above = w >= x
        with np.errstate(over="ignore"):
            s_cdf = np.where(above, 1.0, 1.0 / (2.0 * np.exp(np.maximum(diff, 0.0)) - 1.0))
        slope = float(_wsum(cnt, s_cdf)) - s_cdf + np.where(above, 1.0, -1.0)  # left derivatives
        if not np.all(slope > 0):
            return False
        return bool(np.all(logg - np.log(slope) <= math.log(rtol / 4) + lower))

    qi = 0
    if d > 1 and lower_cut_ok(0):
        lo_i, hi_i = 0, d  # lower_cut_ok(lo_i) holds; search the largest such index
        while hi_i - lo_i > 1:
            mid = (lo_i + hi_i) // 2
            if lower_cut_ok(mid):
                lo_i = mid
            else:
                hi_i = mid
        qi = lo_i
    x_lo = float(w[qi])

    def log_bound(a: float, c: float, delta: np.ndarray, eta: np.ndarray) -> np.ndarray:
        above = w >= c  # by construction every other score is <= a
        n_up = float(cnt[above].sum())
        s_up = float(_wsum(cnt[above], LOG_HALF - w[above]))
        lo = a - delta[:, None]
        hi = c + delta[:, None]
        # Exponential branches -- F(y - w_h) = e^{y - w_h}/2 for scores above the piece, and the own
        # density -- multiply to exp(linear function of Re y); its maximum over the rectangle is at
        # the left or right edge. For an own score above the piece the density replaces the CDF
        # (same branch); below it, the density e^{-(y - w_g)}/2 adds slope -1.
        lin_up_lo, lin_up_hi = n_up * lo + s_up, n_up * hi + s_up
        lin_own_below = np.maximum(lin_up_lo + LOG_HALF - lo + w, lin_up_hi + LOG_HALF - hi + w)
        lin = np.where(above, np.maximum(lin_up_lo, lin_up_hi), lin_own_below)
        # CDF branches 1 - e^{-(y - w_h)}/2 of the scores below: |1 - r e^{-is}|^2 =
        # (1 - r)^2 + 4 r sin^2(s/2), r = e^{-(Re y - w_h)}/2, |s| <= eta, convex in r -> max at an edge.
        sin2 = np.sin(np.minimum(eta, np.pi)[:, None] / 2.0) ** 2
        lm_down = np.maximum(
            _log_mod_one_minus(LOG_HALF - (hi - w), sin2), _log_mod_one_minus(LOG_HALF - (lo - w), sin2)
        )
        lm_down = np.where(above, 0.0, lm_down)
        return lin + _wsum(cnt, lm_down.T)[:, None] - lm_down

    edges = list(w[qi:]) + [y_hi]
    pieces = list(zip(edges[:-1], edges[1:]))
    log_int = _certified_gl(pieces, log_integrand, log_bound, math.log(rtol / 2) + lower, y_hi - x_lo)
    if qi == 0:
        tail = total * LOG_HALF + float(_wsum(cnt, w[0] - w)) - math.log(total)
        log_int = np.logaddexp(log_int, tail)
    out[finite] = log_int[inv]
    return out
