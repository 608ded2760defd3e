"""Exact output laws that mechanisms expose through ``distribution(data)``.

Three shapes cover every continuous mechanism in dpharness, and the verifier's exact mode works on
these shapes only (duck-typed by the ``law`` attribute):

* :class:`PiecewiseDensity` (``law = "piecewise"``): a density on [edges[0], edges[-1]] that is
  log-linear on each piece (exponential mechanism with piecewise-constant or piecewise-linear
  utility). Piecewise-constant is the special case ``log_slope == 0``.
* :class:`GridRunsLaw` (``law = "grid_runs"``): a distribution on a finite, equally spaced grid that
  is uniform on runs of consecutive grid points (exponential mechanism on a discrete domain), or,
  with an optional per-run ``log_ratio``, geometric on each run (piecewise-linear utility on a grid).
* :class:`LocationScaleLaw` (``law = "location_scale"``): ``loc + scale * Z`` with Z standard
  Laplace or Cauchy, optionally clipped to [lower, upper] (atoms at the bounds).

All computations are in log space: piece masses are log-sum-exp normalised, never exponentiated
from raw utilities.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from dpharness.mechanisms.base import as_rng, check_size

__all__ = [
    "PiecewiseDensity",
    "GridRunsLaw",
    "LocationScaleLaw",
    "log_expm1_ratio",
    "log_geometric_sum",
    "geometric_cdf",
    "geometric_mean_offset",
    "sample_index",
]


def log_expm1_ratio(z: np.ndarray) -> np.ndarray:
    """log((e^z - 1) / z), stable for all real z (0 at z = 0).

    The mass of exp(s t) on [0, w] is w * (e^{sw} - 1)/(sw); this is its log without overflow.
    """
    z = np.asarray(z, dtype=np.float64)
    out = np.zeros_like(z)
    pos = z > 0
    neg = z < 0
    zp = z[pos]
    out[pos] = zp + np.log(-np.expm1(-zp)) - np.log(zp)
    zn = z[neg]
    out[neg] = np.log(-np.expm1(zn)) - np.log(-zn)
    return out


def log_geometric_sum(r: Any, c: Any) -> np.ndarray:
    """log(sum_{i<c} e^{r i}) - max(0, r (c - 1)): the log of a geometric sum relative to its
    largest term, in [0, log c]; -inf for c = 0.

    Stable for every real r (exactly log c at r = 0; log(expm1(-a c) / expm1(-a)) with a = |r|
    otherwise, a ratio of two relatively accurate numbers, so tiny |r| loses nothing and huge
    |r| c gives 0 without overflow). The full log sum is this plus max(0, r (c - 1)).
    """
    r = np.asarray(r, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    r, c = np.broadcast_arrays(r, c)
    a = np.abs(r)
    out = np.empty(r.shape, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        flat = a == 0
        out[flat] = np.log(c[flat])
        nz = ~flat
        out[nz] = np.log(np.expm1(-a[nz] * c[nz]) / np.expm1(-a[nz]))
    out[c <= 0] = -np.inf
    return out


def geometric_cdf(t: Any, c: Any, r: Any) -> np.ndarray:
    """P[I < t] for I on {0..c-1} with P[I = i] proportional to e^{r i} (t in [0, c]).

    S(r, t) / S(r, c) with S(r, t) = sum_{i<t} e^{r i}: expm1(r t)/expm1(r c) for r < 0 and
    e^{r (t - c)} expm1(-r t)/expm1(-r c) for r > 0 (no overflow, relatively accurate at both
    ends); t / c at r = 0.
    """
    t = np.asarray(t, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    t, c, r = np.broadcast_arrays(t, c, r)
    out = np.empty(t.shape, dtype=np.float64)
    flat = r == 0
    pos = r > 0
    neg = r < 0
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        out[flat] = np.where(c[flat] > 0, t[flat] / np.maximum(c[flat], 1.0), 1.0)
        rp, tp, cp = r[pos], t[pos], c[pos]
        out[pos] = np.exp(rp * (tp - cp)) * (np.expm1(-rp * tp) / np.expm1(-rp * cp))
        rn, tn, cn = r[neg], t[neg], c[neg]
        out[neg] = np.expm1(rn * tn) / np.expm1(rn * cn)
    return np.clip(out, 0.0, 1.0)


def _geometric_ppf(u: np.ndarray, c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Exact inverse CDF of the truncated geometric of :func:`geometric_cdf`: the offset j in
    0..c-1 with P[I < j] <= u < P[I < j + 1], for u in [0, 1).

    A continuous first guess (I is the floor of a density proportional to e^{r t} on [0, c)),
    then a correction against :func:`geometric_cdf` so that the answer is the inverse CDF of the
    discrete law itself, not of its continuous relaxation (float rounding moves the guess by at
    most a step or two).
    """
    u = np.asarray(u, dtype=np.float64)
    cf = np.asarray(c, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    t = np.empty(u.shape, dtype=np.float64)
    flat = r == 0
    pos = r > 0
    neg = r < 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t[flat] = u[flat] * cf[flat]
        # r > 0: t = c + log1p((1 - u) expm1(-r c)) / r  (mirror image of the r < 0 case)
        t[pos] = cf[pos] + np.log1p((1.0 - u[pos]) * np.expm1(-r[pos] * cf[pos])) / r[pos]
        # r < 0: t = log1p(u expm1(r c)) / r, with expm1(r c) in (-1, 0)
        t[neg] = np.log1p(u[neg] * np.expm1(r[neg] * cf[neg])) / r[neg]
    t = np.where(np.isnan(t), 0.0, t)
    c_int = np.asarray(c, dtype=np.int64)
    j = np.clip(np.floor(np.clip(t, 0.0, cf)), 0, np.maximum(c_int - 1, 0)).astype(np.int64)
    for _ in range(64):
        down = (j > 0) & (geometric_cdf(j, cf, r) > u)
        up = (j < c_int - 1) & ~down & (geometric_cdf(j + 1, cf, r) <= u)
        if not (down.any() or up.any()):
            break
        j = j - down + up
    return j


def geometric_mean_offset(r: Any, c: Any) -> np.ndarray:
    """E[I] for I on {0..c-1} with P[I = i] proportional to e^{r i}, stable for every real r.

    With a = |r|, m(a) = 1/expm1(a) - c/expm1(a c) = e^{-a}/(-expm1(-a)) - c e^{-ac}/(-expm1(-ac))
    is E[I] for r = -a, and E[I](r) = c - 1 - m(|r|) for r > 0 (mirror image). The two terms of
    m cancel when a c is small; there the series (c-1)/2 - a (c^2-1)/12 + a^3 (c^4-1)/720 is used
    (a c < 1e-2: next term a^5 (c^6 - 1)/30240, relatively below 1e-13).
    """
    r = np.asarray(r, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    r, c = np.broadcast_arrays(r, c)
    a = np.abs(r)
    small = a * c < 1e-2
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        big = np.exp(-a) / -np.expm1(-a) - c * np.exp(-a * c) / -np.expm1(-a * c)
    ser = (c - 1) / 2 - a * (c * c - 1) / 12 + a**3 * (c**4 - 1) / 720
    m = np.clip(np.where(small, ser, big), 0.0, np.maximum(c - 1, 0.0))
    return np.where(r > 0, np.maximum(c - 1, 0.0) - m, m)


def sample_index(log_p: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` indices with probabilities exp(log_p) (log_p need not be normalised).

    Inverse CDF over log-normalised probabilities: O(k) set-up, O(log k) per draw. Entries with
    log_p = -inf have probability exactly 0 and are never returned (searchsorted side='right' on a
    non-decreasing cumulative sum skips zero-width steps).
    """
    log_p = np.asarray(log_p, dtype=np.float64)
    if log_p.ndim != 1 or log_p.size == 0 or np.isnan(log_p).any() or np.isposinf(log_p).any():
        raise ValueError("log_p must be a non-empty 1-d array of finite values or -inf")
    if not np.isfinite(log_p).any():
        raise ValueError("every index has probability 0 (log_p is -inf everywhere)")
    p = np.exp(log_p - special.logsumexp(log_p))
    c = np.cumsum(p)
    c /= c[-1]
    u = rng.random(n)
    idx = np.searchsorted(c, u, side="right")
    # u < 1 = c[-1] so idx <= k-1; guard against rounding in the cumulative sum anyway, mapping to
    # the last index with positive probability.
    last = int(np.flatnonzero(p > 0)[-1])
    return np.minimum(idx, last)


@dataclass(frozen=True, eq=False)
class PiecewiseDensity:
    """Density on [edges[0], edges[-1]], log-linear on each piece.

    Piece j = [edges[j], edges[j+1]] has probability exp(log_mass[j]) and, inside, density
    proportional to exp(log_slope[j] * (x - edges[j])). Zero-width pieces have log_mass -inf.
    """

    edges: np.ndarray
    log_mass: np.ndarray
    log_slope: np.ndarray

    law = "piecewise"

    @classmethod
    def from_log_density(cls, edges: Any, log_left: Any, log_slope: Any | None = None) -> "PiecewiseDensity":
        """Build from an unnormalised log density: ``log_left[j] + log_slope[j] * (x - edges[j])``.

        Masses are computed as log_left + log(width) + log((e^{s w} - 1)/(s w)) and normalised
        with log-sum-exp, so utilities times epsilon of any magnitude are safe.
        """
        e = np.asarray(edges, dtype=np.float64)
        ll = np.asarray(log_left, dtype=np.float64)
        s = np.zeros_like(ll) if log_slope is None else np.asarray(log_slope, dtype=np.float64)
        if e.ndim != 1 or e.size < 2 or ll.shape != (e.size - 1,) or s.shape != ll.shape:
            raise ValueError("edges must have one more entry than log_left/log_slope")
        if np.any(np.diff(e) < 0) or not np.all(np.isfinite(e)):
            raise ValueError("edges must be finite and non-decreasing")
        if np.isnan(ll).any() or np.isnan(s).any() or np.isposinf(ll).any() or not np.isfinite(s).all():
            raise ValueError("log_left must be finite or -inf and log_slope finite (got NaN or inf)")
        w = np.diff(e)
        live = (w > 0) & np.isfinite(ll)
        # Subtract the top level before adding log(width): the normalised masses then do not lose
        # ~ulp(level) to a large common offset (epsilon * utility can be ~1e6).
        top = float(np.max(ll[live])) if live.any() else 0.0
        with np.errstate(divide="ignore"):
            lm = (ll - top) + np.log(w) + log_expm1_ratio(s * w)
        lm[w == 0] = -np.inf
        if not np.isfinite(lm).any():
            raise ValueError("the density has no mass (every piece has zero width or -inf weight)")
        lm = lm - special.logsumexp(lm)
        return cls(edges=e, log_mass=lm, log_slope=s)

    @property
    def widths(self) -> np.ndarray:
        return np.diff(self.edges)

    def _piece(self, x: np.ndarray) -> np.ndarray:
        j = np.searchsorted(self.edges, x, side="right") - 1
        return np.clip(j, 0, self.log_mass.size - 1)

    def log_pdf(self, x: Any) -> np.ndarray:
        """Log density at x (right-continuous at interior edges; -inf outside the range)."""
        x = np.asarray(x, dtype=np.float64)
        j = self._piece(x)
        w = self.widths[j]
        s = self.log_slope[j]
        t = x - self.edges[j]
        with np.errstate(divide="ignore", invalid="ignore"):
            out = self.log_mass[j] + s * t - np.log(w) - log_expm1_ratio(s * w)
        out = np.where((x < self.edges[0]) | (x > self.edges[-1]) | ~np.isfinite(self.log_mass[j]), -np.inf, out)
        return out

    def cdf(self, x: Any) -> np.ndarray:
        """P[X <= x], exact."""
        x = np.asarray(x, dtype=np.float64)
        p = np.exp(self.log_mass)
        before = np.concatenate(([0.0], np.cumsum(p)))
        j = self._piece(x)
        w = self.widths[j]
        s = self.log_slope[j]
        t = np.clip(x - self.edges[j], 0.0, w)
        frac = _within_cdf(t, w, s)
        out = before[j] + p[j] * frac
        out = np.where(x < self.edges[0], 0.0, np.where(x >= self.edges[-1], 1.0, out))
        return np.clip(out, 0.0, 1.0)

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray:
        """Exact draws: piece by inverse CDF on log masses, then inverse CDF inside the piece."""
        shape = check_size(size)
        rng = as_rng(rng)
        n = int(np.prod(shape)) if shape else 1
        j = sample_index(self.log_mass, n, rng)
        u = rng.random(n)
        w = self.widths[j]
        s = self.log_slope[j]
        t = _within_ppf(u, w, s)
        x = self.edges[j] + t
        x = np.clip(x, self.edges[j], self.edges[j + 1])
        return x.reshape(shape) if shape else x[0]

    def expected_abs_error(self, truth: float) -> float:
        """E|X - truth| exactly, for piecewise-constant densities (docs/mechanisms.md, "Exact expected error")."""
        if np.any(self.log_slope != 0):
            raise NotImplementedError("expected_abs_error is implemented for piecewise-constant densities")
        lo, hi = self.edges[:-1], self.edges[1:]
        p = np.exp(self.log_mass)
        t = float(truth)
        inside = (lo <= t) & (t <= hi) & (hi > lo)
        with np.errstate(divide="ignore", invalid="ignore"):
            e_in = ((t - lo) ** 2 + (hi - t) ** 2) / (2 * (hi - lo))
        e_out = np.abs((lo + hi) / 2 - t)
        e = np.where(inside, e_in, e_out)
        return float(np.sum(np.where(p > 0, p * e, 0.0)))


def _within_cdf(t: np.ndarray, w: np.ndarray, s: np.ndarray) -> np.ndarray:
    """CDF at t of density ∝ exp(s t) on [0, w]: expm1(s t)/expm1(s w), stably."""
    z = s * w
    zt = s * t
    out = np.empty_like(t, dtype=np.float64)
    flat = np.abs(z) < 1e-12
    pos = (z > 0) & ~flat
    neg = (z < 0) & ~flat
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out[flat] = np.where(w[flat] > 0, t[flat] / w[flat], 1.0)
        # s > 0: e^{s(t-w)} (1 - e^{-st}) / (1 - e^{-sw}) never overflows.
        out[pos] = np.exp(zt[pos] - z[pos]) * np.expm1(-zt[pos]) / np.expm1(-z[pos])
        out[neg] = np.expm1(zt[neg]) / np.expm1(z[neg])
    return np.clip(out, 0.0, 1.0)


def _within_ppf(u: np.ndarray, w: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_within_cdf` for u in [0, 1)."""
    z = s * w
    out = np.empty_like(u, dtype=np.float64)
    flat = np.abs(z) < 1e-12
    pos = (z > 0) & ~flat
    neg = (z < 0) & ~flat
    out[flat] = u[flat] * w[flat]
    with np.errstate(divide="ignore", over="ignore"):
        # s > 0: t = w + log(u + (1 - u) e^{-z}) / s  (no overflow for huge z).
        out[pos] = w[pos] + np.log(u[pos] + (1 - u[pos]) * np.exp(-z[pos])) / s[pos]
        # s < 0: t = log1p(u * expm1(z)) / s with expm1(z) in (-1, 0).
        out[neg] = np.log1p(u[neg] * np.expm1(z[neg])) / s[neg]
    return np.clip(out, 0.0, w)


@dataclass(frozen=True, eq=False)
class GridRunsLaw:
    """Distribution on grid points ``origin + step * i``, uniform (or geometric) on runs.

    Run r covers grid indices ``first[r] .. first[r] + count[r] - 1`` and has total probability
    exp(log_mass[r]). Inside a run the points are equally likely, or, when ``log_ratio`` is given,
    point ``first[r] + i`` has probability proportional to exp(log_ratio[r] * i) (a truncated
    geometric: the exponential mechanism with a utility that is linear on the run). The grid is
    never enumerated: masses, pmf, cdf, sampling and means are closed forms per run.

    ``log_ratio`` is None for uniform runs (every existing caller); an all-zero ratio is stored as
    None, so such a law behaves -- and draws -- exactly like a uniform one.
    """

    origin: float
    step: float
    first: np.ndarray
    count: np.ndarray
    log_mass: np.ndarray
    log_ratio: np.ndarray | None = None

    law = "grid_runs"

    @classmethod
    def from_log_weights(
        cls, origin: float, step: float, first: Any, count: Any, log_point_weight: Any, log_ratio: Any = None
    ) -> "GridRunsLaw":
        """Runs with an unnormalised log weight per grid point.

        Uniform runs (``log_ratio=None``): every point of run r has log weight
        ``log_point_weight[r]``, run mass log(count) + weight. Geometric runs: point
        ``first[r] + i`` has log weight ``log_point_weight[r] + log_ratio[r] * i``, run mass
        weight + max(0, ratio (count - 1)) + :func:`log_geometric_sum` (stable for any ratio;
        |ratio| * count of 1e6 and more is fine).
        """
        first = np.asarray(first, dtype=np.int64)
        count = np.asarray(count, dtype=np.int64)
        lw = np.asarray(log_point_weight, dtype=np.float64)
        if lw.shape != first.shape or count.shape != first.shape:
            raise ValueError("first, count and log_point_weight must have the same shape")
        if np.isnan(lw).any() or np.isposinf(lw).any():
            raise ValueError("log_point_weight must be finite or -inf (got NaN or +inf)")
        if np.any(count < 0):
            raise ValueError("count must be >= 0")
        ratio = None
        if log_ratio is not None:
            ratio = np.asarray(log_ratio, dtype=np.float64)
            if ratio.shape != first.shape:
                raise ValueError(f"log_ratio must have the shape of first {first.shape}, got {ratio.shape}")
            if not np.all(np.isfinite(ratio)):
                raise ValueError("log_ratio must be finite (got NaN or inf)")
            ratio = np.where(count > 1, ratio, 0.0)  # irrelevant for runs of 0 or 1 point
            if not np.any(ratio != 0):
                ratio = None
        live = (count > 0) & np.isfinite(lw)
        if not live.any():
            raise ValueError("the law has no mass (every run is empty or has -inf weight)")
        if ratio is None:
            top = float(np.max(lw[live]))  # shift first: weights ~1e6 must not cost ulp(1e6) in the masses
            with np.errstate(divide="ignore"):
                lm = np.log(count.astype(np.float64)) + (lw - top)
        else:
            # largest point weight of each run: the first point (ratio <= 0) or the last (> 0)
            peak = np.maximum(ratio * (count - 1).astype(np.float64), 0.0)
            top = float(np.max((lw + peak)[live]))
            with np.errstate(divide="ignore"):
                lm = ((lw - top) + peak) + log_geometric_sum(ratio, count)
        lm[count == 0] = -np.inf
        lm = lm - special.logsumexp(lm)
        return cls(origin=float(origin), step=float(step), first=first, count=count, log_mass=lm, log_ratio=ratio)

    @property
    def geometric(self) -> bool:
        """True when some run is geometric (non-uniform)."""
        return self.log_ratio is not None

    @property
    def ratios(self) -> np.ndarray:
        """Per-run log ratio (zeros for uniform runs)."""
        return np.zeros(self.first.shape) if self.log_ratio is None else self.log_ratio

    def values(self, index: Any) -> np.ndarray:
        return self.origin + self.step * np.asarray(index, dtype=np.float64)

    def _run_of(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(run index clipped to range, inside): the run holding grid index k, if any."""
        r = np.clip(np.searchsorted(self.first, k, side="right") - 1, 0, self.first.size - 1)
        inside = (k >= self.first[r]) & (k < self.first[r] + self.count[r])
        return r, inside

    def log_pmf_offset(self, run: Any, offset: Any) -> np.ndarray:
        """log P[X = point ``first[run] + offset``] (offset in 0..count-1; not range-checked).

        Geometric runs: log_mass - log_geometric_sum + (ratio * offset if ratio <= 0 else
        -ratio * (count - 1 - offset)), measured from the run's largest point, so no large
        intermediate cancels.
        """
        run = np.asarray(run, dtype=np.int64)
        off = np.asarray(offset, dtype=np.int64)
        c = self.count[run]
        if self.log_ratio is None:
            with np.errstate(divide="ignore"):
                return self.log_mass[run] - np.log(np.maximum(c, 1).astype(np.float64))
        rt = self.log_ratio[run]
        rel = np.where(rt > 0, -rt * (c - 1 - off).astype(np.float64), rt * off.astype(np.float64))
        with np.errstate(invalid="ignore"):
            out = self.log_mass[run] - log_geometric_sum(rt, np.maximum(c, 1)) + rel
        return np.where(np.isfinite(self.log_mass[run]), out, -np.inf)

    def log_pmf_index(self, k: Any) -> np.ndarray:
        """log P[X = origin + step * k] for integer grid indices k (-inf outside every run)."""
        k = np.asarray(k, dtype=np.int64)
        r, inside = self._run_of(k)
        lp = self.log_pmf_offset(r, np.where(inside, k - self.first[r], 0))
        return np.where(inside, lp, -np.inf)

    def _as_index(self, kf: np.ndarray) -> np.ndarray:
        """Float grid indices as int64, clipped to one step beyond the runs first: every index
        outside [first[0], end) behaves alike, and a far output (x = 1e300) must not overflow the
        cast."""
        lo = float(self.first[0]) - 1.0
        hi = float(np.max(self.first + self.count)) + 1.0
        return np.clip(kf, lo, hi).astype(np.int64)

    def log_pmf(self, x: Any) -> np.ndarray:
        """log P[X = x]; -inf for points off the grid or outside every run."""
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            k = np.rint((x - self.origin) / self.step)
            on_grid = np.isclose(self.origin + self.step * k, x, rtol=0, atol=1e-9 * max(1.0, abs(self.step)))
        k = self._as_index(k)
        if self.log_ratio is not None:
            return np.where(on_grid, self.log_pmf_index(k), -np.inf)
        r = np.clip(np.searchsorted(self.first, k, side="right") - 1, 0, self.first.size - 1)
        inside = on_grid & (k >= self.first[r]) & (k < self.first[r] + self.count[r])
        with np.errstate(divide="ignore"):
            lp = self.log_mass[r] - np.log(np.maximum(self.count[r], 1).astype(np.float64))
        return np.where(inside, lp, -np.inf)

    def cdf(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        p = np.exp(self.log_mass)
        before = np.concatenate(([0.0], np.cumsum(p)))
        with np.errstate(over="ignore"):
            k = self._as_index(np.floor((x - self.origin) / self.step + 1e-9))
        r = np.searchsorted(self.first, k, side="right") - 1
        rc = np.clip(r, 0, self.first.size - 1)
        within = np.clip(k - self.first[rc] + 1, 0, self.count[rc])
        if self.log_ratio is None:
            frac = within / np.maximum(self.count[rc], 1)
        else:
            frac = geometric_cdf(within, np.maximum(self.count[rc], 1), self.log_ratio[rc])
        out = np.where(r < 0, 0.0, before[rc] + p[rc] * frac)
        # at and beyond the last point of the support the CDF is exactly 1 (not a rounded sum of masses)
        out = np.where(k >= int(np.max(self.first + self.count)) - 1, 1.0, out)
        return np.clip(out, 0.0, 1.0)

    def mean_index(self) -> np.ndarray:
        """E[grid index - first | run] for each run ((count - 1)/2 when uniform; 0 for empty runs)."""
        c = self.count.astype(np.float64)
        return np.where(self.count > 0, geometric_mean_offset(self.ratios, np.maximum(c, 1.0)), 0.0)

    def mean(self) -> float:
        """E[X] exactly (closed form per run, :func:`geometric_mean_offset`)."""
        p = np.exp(self.log_mass)
        v = self.values(self.first.astype(np.float64) + self.mean_index())
        return float(np.sum(np.where(p > 0, p * v, 0.0)))

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray:
        shape = check_size(size)
        rng = as_rng(rng)
        n = int(np.prod(shape)) if shape else 1
        r = sample_index(self.log_mass, n, rng)
        if self.log_ratio is None:
            off = rng.integers(0, self.count[r])
        else:
            # exact inverse CDF of the truncated geometric inside the chosen run
            off = _geometric_ppf(rng.random(n), self.count[r], self.log_ratio[r])
        x = self.values(self.first[r] + off)
        return x.reshape(shape) if shape else x[0]


class _Dists(dict):
    """Noise name -> ``scipy.stats`` distribution, looked up when used: importing scipy.stats costs
    about 0.4 s, which a config check or a run that never evaluates these laws need not pay."""

    def __getitem__(self, name: str) -> Any:
        from scipy import stats

        return getattr(stats, dict.__getitem__(self, name))


_NOISE = _Dists(laplace="laplace", cauchy="cauchy")


@dataclass(frozen=True)
class LocationScaleLaw:
    """``loc + scale * Z``, Z standard Laplace or Cauchy, clipped to [lower, upper] if given.

    With clipping, the output has atoms at ``lower`` (mass F(lower)) and ``upper`` (mass
    1 - F(upper)) and the unclipped density strictly between them.
    """

    loc: float
    scale: float
    noise: str
    lower: float | None = None
    upper: float | None = None

    law = "location_scale"

    def __post_init__(self) -> None:
        if self.noise not in _NOISE:
            raise ValueError(f"noise must be one of {sorted(_NOISE)}, got {self.noise!r}")
        if not (self.scale > 0 and np.isfinite(self.scale)):
            raise ValueError(f"scale must be finite and > 0, got {self.scale!r}")
        if not np.isfinite(self.loc):
            raise ValueError(f"loc must be finite, got {self.loc!r}")
        if (self.lower is None) != (self.upper is None):
            raise ValueError("give both lower and upper (clipped law) or neither (unclipped law)")
        if self.lower is not None and not (np.isfinite(self.lower) and np.isfinite(self.upper) and self.lower < self.upper):
            raise ValueError(f"need finite lower < upper, got lower={self.lower!r}, upper={self.upper!r}")

    @property
    def dist(self) -> Any:
        return _NOISE[self.noise](loc=self.loc, scale=self.scale)

    @property
    def clipped(self) -> bool:
        return self.lower is not None and self.upper is not None

    def _z(self, x: Any) -> np.ndarray:
        """(x - loc) / scale. The scale may be as small as the smallest normal double (a floored
        smooth sensitivity), where the quotient overflows to +-inf: that is the right standardised
        value (all mass at loc), so the overflow is expected and not warned about. scipy's
        ``dist(loc, scale)`` computes the same quotient, so results are unchanged otherwise."""
        with np.errstate(over="ignore"):
            return (np.asarray(x, dtype=np.float64) - self.loc) / self.scale

    def log_pdf(self, x: Any) -> np.ndarray:
        """Log density of the continuous part (-inf outside (lower, upper) when clipped)."""
        x = np.asarray(x, dtype=np.float64)
        lp = _NOISE[self.noise].logpdf(self._z(x)) - np.log(self.scale)
        if self.clipped:
            lp = np.where((x > self.lower) & (x < self.upper), lp, -np.inf)
        return lp

    def atom_log_mass(self) -> tuple[float, float]:
        """(log P[X = lower], log P[X = upper]); (-inf, -inf) when not clipped."""
        if not self.clipped:
            return (-np.inf, -np.inf)
        std = _NOISE[self.noise]
        return float(std.logcdf(self._z(self.lower))), float(std.logsf(self._z(self.upper)))

    def cdf(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        c = _NOISE[self.noise].cdf(self._z(x))
        if self.clipped:
            c = np.where(x < self.lower, 0.0, np.where(x >= self.upper, 1.0, c))
        return c

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray:
        shape = check_size(size)
        rng = as_rng(rng)
        z = rng.laplace(size=shape) if self.noise == "laplace" else rng.standard_cauchy(size=shape)
        x = self.loc + self.scale * z
        if self.clipped:
            x = np.clip(x, self.lower, self.upper)
        return x
