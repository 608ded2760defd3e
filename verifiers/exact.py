"""Exact privacy loss of one dataset pair, from the mechanism's exact output law.

docs/verifier.md, "Exact mode". Works on

* finite mechanisms (``support(data)`` / ``log_prob(data)``);
* ``distribution(data)`` laws of :mod:`mechanisms.laws`: ``"piecewise"`` (log-linear pieces),
  ``"grid_runs"`` (uniform or geometric runs on a grid; on one grid, compared run by run without
  enumerating it: the log ratio is linear on each segment) and ``"location_scale"`` (Laplace or Cauchy, with the
  clipping atoms).

Every law is put in one canonical form: *atoms* (output values with positive mass) plus a
*continuous part* made of pieces on which the log density is either linear,
``c + s (x - x0)``, or Cauchy, ``c - log(b^2 + (x - mu)^2)``. For a pair of laws, on every
segment between the merged breakpoints both log densities have one of these forms, so the log
ratio g = log f1 - log f2 has a derivative whose numerator is a polynomial of degree <= 4:

    g'(x) = (s1 - s2) - 2(x - mu1)/D1 + 2(x - mu2)/D2   (Cauchy terms only where present),

and the supremum of g over a segment is attained at a segment end (one-sided limit; analytic limit
at +-inf) or at a real root of that polynomial. No grid search: the maximum is exact up to floating
point, for Laplace (piecewise linear g), piecewise densities (linear g) and Cauchy (rational g').

Pure DP: epsilon(D, D') = max over outputs of |log p(o|D) - log p(o|D')| (+inf when an output has
positive mass or density under one dataset only: a support violation).

Approximate DP: the hockey-stick divergence delta(eps) = max over directions of
sum_atoms max(0, p1 - e^eps p2) + integral max(0, f1 - e^eps f2). On each monotone stretch of g the
set {g >= eps} is an interval found by Brent's method, and the piece masses are integrated in
closed form (exponential pieces, arctan for Cauchy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
from scipy import optimize

from ..mechanisms.base import PrivacyClaim
from ..mechanisms.laws import log_expm1_ratio, log_geometric_sum

__all__ = ["exact", "ExactLoss", "loss_between", "canonical"]

_TOL = 1e-9
_GRID_ATOMS_CAP = 2_000_000


# --------------------------------------------------------------------------------------------
# canonical laws

@dataclass(frozen=True)
class _Piece:
    lo: float
    hi: float
    cauchy: bool
    c: float
    s: float = 0.0  # log-slope (linear pieces)
    x0: float = 0.0  # anchor of the linear form
    mu: float = 0.0  # Cauchy location
    b: float = 1.0  # Cauchy scale

    def logf(self, x: float) -> float:
        if self.cauchy:
            return self.c - math.log(self.b * self.b + (x - self.mu) ** 2)
        return self.c + self.s * (x - self.x0)

    def log_mass(self, a: float, z: float) -> float:
        """log of the integral of the density over [a, z] (a <= z, inside [lo, hi])."""
        if not z > a:
            return -math.inf
        if self.cauchy:
            t = math.atan((z - self.mu) / self.b) if math.isfinite(z) else math.pi / 2
            u = math.atan((a - self.mu) / self.b) if math.isfinite(a) else -math.pi / 2
            d = t - u
            return self.c - math.log(self.b) + math.log(d) if d > 0 else -math.inf
        s = self.s
        if not math.isfinite(a):
            if s <= 0:
                raise ValueError("a linear log-density piece extending to -inf must have a positive slope")
            return self.c + s * (z - self.x0) - math.log(s)
        if not math.isfinite(z):
            if s >= 0:
                raise ValueError("a linear log-density piece extending to +inf must have a negative slope")
            return self.c + s * (a - self.x0) - math.log(-s)
        return self.c + s * (a - self.x0) + math.log(z - a) + float(log_expm1_ratio(np.array(s * (z - a))))


@dataclass(frozen=True, eq=False)
class Canonical:
    """Atoms (values, log masses) + continuous pieces; ``grid`` keeps a GridRunsLaw un-expanded."""

    atom_values: np.ndarray
    atom_logp: np.ndarray
    pieces: tuple[_Piece, ...] = ()
    grid: Any = None
    source: str = ""


def _atoms_only(values: Any, logp: Any, source: str) -> Canonical:
    v = np.asarray(values)
    lp = np.asarray(logp, dtype=np.float64)
    if v.shape != lp.shape or v.ndim != 1:
        raise ValueError(f"support and log_prob must be 1-D and aligned, got shapes {v.shape} and {lp.shape}")
    keep = np.isfinite(lp)
    return Canonical(atom_values=v[keep], atom_logp=lp[keep], source=source)


def _grid_atoms(g: Any) -> Canonical:
    total = int(np.sum(g.count))
    if total > _GRID_ATOMS_CAP:
        raise ValueError(f"a grid law with {total} points can only be compared exactly with a grid law on the same grid")
    idx = np.concatenate([np.arange(f, f + c) for f, c in zip(g.first, g.count) if c > 0])
    if getattr(g, "log_ratio", None) is not None:  # geometric runs: the law's own per-point pmf
        return _atoms_only(g.values(idx), g.log_pmf_index(idx), "grid_runs")
    with np.errstate(divide="ignore"):
        lp = np.concatenate([np.full(c, lm - math.log(c)) for c, lm in zip(g.count, g.log_mass) if c > 0])
    return _atoms_only(g.values(idx), lp, "grid_runs")


def canonical(law: Any) -> Canonical:
    """Canonical form of a :mod:`mechanisms.laws` law (duck-typed by its ``law`` attribute)."""
    kind = getattr(law, "law", None)
    empty = np.array([], dtype=np.float64)
    if kind == "piecewise":
        e = np.asarray(law.edges, dtype=np.float64)
        lm = np.asarray(law.log_mass, dtype=np.float64)
        sl = np.asarray(law.log_slope, dtype=np.float64)
        w = np.diff(e)
        pieces = []
        for j in range(lm.size):
            if w[j] <= 0 or not np.isfinite(lm[j]):
                continue
            c = float(lm[j] - math.log(w[j]) - float(log_expm1_ratio(np.array(sl[j] * w[j]))))
            pieces.append(_Piece(float(e[j]), float(e[j + 1]), False, c, float(sl[j]), float(e[j])))
        return Canonical(empty, empty, tuple(pieces), source="piecewise")
    if kind == "location_scale":
        mu, b = float(law.loc), float(law.scale)
        clipped = bool(getattr(law, "clipped", law.lower is not None and law.upper is not None))
        lo = float(law.lower) if clipped else -math.inf
        hi = float(law.upper) if clipped else math.inf
        pieces = []
        if law.noise == "laplace":
            c = -math.log(2.0 * b)
            if lo < min(mu, hi):
                pieces.append(_Piece(lo, min(mu, hi), False, c, 1.0 / b, mu))
            if max(mu, lo) < hi:
                pieces.append(_Piece(max(mu, lo), hi, False, c, -1.0 / b, mu))
        elif law.noise == "cauchy":
            pieces.append(_Piece(lo, hi, True, math.log(b / math.pi), mu=mu, b=b))
        else:
            raise ValueError(f"exact mode knows laplace and cauchy noise, got {law.noise!r}")
        if clipped:
            la, lb = law.atom_log_mass()
            vals = np.array([lo, hi]) if hi > lo else np.array([lo])
            lps = np.array([la, lb]) if hi > lo else np.array([0.0])
            keep = np.isfinite(lps)
            return Canonical(vals[keep], lps[keep], tuple(pieces), source="location_scale")
        return Canonical(empty, empty, tuple(pieces), source="location_scale")
    if kind == "grid_runs":
        return Canonical(empty, empty, (), grid=law, source="grid_runs")
    raise ValueError(f"exact mode needs a law with law in ('piecewise', 'grid_runs', 'location_scale'), got {law!r}")


def _canonical_of(mechanism: Any, data: Any) -> Canonical:
    if getattr(mechanism, "kind", "real") == "finite" and hasattr(mechanism, "log_prob"):
        return _atoms_only(mechanism.support(data), mechanism.log_prob(data), "finite")
    if hasattr(mechanism, "distribution"):
        return canonical(mechanism.distribution(data))
    if hasattr(mechanism, "log_prob") and hasattr(mechanism, "support"):
        return _atoms_only(mechanism.support(data), mechanism.log_prob(data), "finite")
    raise ValueError(f"{type(mechanism).__name__} exposes no exact law: exact mode needs support()/log_prob() "
                     "(finite outputs) or distribution(data) (piecewise, grid_runs or location_scale)")


# --------------------------------------------------------------------------------------------
# comparison

@dataclass
class _Acc:
    eps: list = field(default_factory=lambda: [-math.inf, -math.inf])  # forward, backward
    wit: list = field(default_factory=lambda: [None, None])
    support: list = field(default_factory=lambda: [False, False])
    delta: list = field(default_factory=lambda: [0.0, 0.0])

    def see(self, d: int, value: float, where: Any) -> None:
        if value > self.eps[d]:
            self.eps[d] = value
            self.wit[d] = where


def _poly_D(p: _Piece) -> np.poly1d:
    return np.poly1d([1.0, -2.0 * p.mu, p.mu * p.mu + p.b * p.b]) if p.cauchy else np.poly1d([1.0])


def _critical_points(p: _Piece, q: _Piece, a: float, z: float) -> list[float]:
    """Real roots in (a, z) of the numerator of g' for g = log f_p - log f_q."""
    dp, dq = _poly_D(p), _poly_D(q)
    num = (p.s - q.s) * dp * dq
    if p.cauchy:
        num = num - 2.0 * np.poly1d([1.0, -p.mu]) * dq
    if q.cauchy:
        num = num + 2.0 * np.poly1d([1.0, -q.mu]) * dp
    coeffs = np.trim_zeros(np.atleast_1d(num.coeffs), "f")
    if coeffs.size <= 1:
        return []
    roots = np.roots(coeffs)
    scale = max(1.0, float(np.max(np.abs(roots)))) if roots.size else 1.0
    out = sorted(float(r.real) for r in roots if abs(r.imag) <= 1e-9 * scale and a < r.real < z)
    return out


def _limit(p: _Piece, q: _Piece, sign: int) -> float:
    """lim of g(x) as x -> sign * inf."""
    ds = p.s - q.s
    if ds != 0:
        return math.inf if ds * sign > 0 else -math.inf
    n = int(p.cauchy) - int(q.cauchy)
    if n != 0:
        return -math.inf if n > 0 else math.inf
    if p.cauchy:
        return p.c - q.c
    return (p.c - p.s * p.x0) - (q.c - q.s * q.x0)


def _g_at(p: _Piece, q: _Piece, x: float) -> float:
    if math.isinf(x):
        return _limit(p, q, 1 if x > 0 else -1)
    return p.logf(x) - q.logf(x)


def _root(gm: Any, a: float, z: float, target: float) -> float:
    """Root of gm(x) = target on a monotone stretch [a, z] whose ends (limits when infinite) lie on
    either side of ``target``. Infinite ends are replaced by a finite bracket found by doubling."""
    sa = gm(a) - target >= 0

    def expand(start: float, direction: int, want: bool) -> float:
        step = max(1.0, abs(start))
        x = start
        for _ in range(2100):
            if (gm(x) - target >= 0) == want:
                return x
            x = start + direction * step
            step *= 2.0
        raise ArithmeticError("could not bracket the root of the log-ratio")

    lo_, hi_ = a, z
    if math.isinf(a) and math.isinf(z):
        if (gm(0.0) - target >= 0) == sa:
            lo_, hi_ = 0.0, expand(0.0, 1, not sa)
        else:
            lo_, hi_ = expand(0.0, -1, sa), 0.0
    elif math.isinf(a):
        lo_ = expand(z, -1, sa)
    elif math.isinf(z):
        hi_ = expand(a, 1, not sa)
    return float(optimize.brentq(lambda x: gm(x) - target, lo_, hi_, xtol=1e-15, rtol=4 * np.finfo(float).eps,
                                 maxiter=500))


def _piece_delta(p: _Piece, q: _Piece, stretches: list[tuple[float, float]], gm: Any, eps: float) -> float:
    """integral over the segment of max(0, f_p - e^eps f_q)."""
    total = 0.0
    for a, z in stretches:
        ga, gz = gm(a), gm(z)
        if ga < eps and gz < eps:
            continue
        if ga >= eps and gz >= eps:
            lo_, hi_ = a, z
        else:
            r = _root(gm, a, z, eps)
            lo_, hi_ = (r, z) if gz >= eps else (a, r)
        mp = math.exp(p.log_mass(lo_, hi_)) if hi_ > lo_ else 0.0
        mq = math.exp(q.log_mass(lo_, hi_) + eps) if hi_ > lo_ else 0.0
        total += max(mp - mq, 0.0)
    return total


def _find(pieces: tuple[_Piece, ...], a: float, z: float) -> _Piece | None:
    if math.isinf(a) and math.isinf(z):
        x = 0.0
    elif math.isinf(a):
        x = z - 1.0
    elif math.isinf(z):
        x = a + 1.0
    else:
        x = 0.5 * (a + z)
    for p in pieces:
        if p.lo <= x <= p.hi and p.hi > p.lo:
            return p
    return None


def _compare_continuous(P: tuple[_Piece, ...], Q: tuple[_Piece, ...], acc: _Acc, eps: float | None) -> None:
    pts = sorted({v for p in P + Q for v in (p.lo, p.hi)})
    for a, z in zip(pts[:-1], pts[1:]):
        if not z > a:
            continue
        p, q = _find(P, a, z), _find(Q, a, z)
        if p is None and q is None:
            continue
        if q is None or p is None:
            d, only = (0, p) if q is None else (1, q)
            acc.support[d] = True
            acc.see(d, math.inf, ("interval", a, z))
            if eps is not None:
                acc.delta[d] += math.exp(only.log_mass(a, z))  # type: ignore[union-attr]
            continue

        def gm(x: float, p: _Piece = p, q: _Piece = q) -> float:
            return _g_at(p, q, x)

        crit = _critical_points(p, q, a, z)
        knots = [a] + crit + [z]
        vals = [gm(x) for x in knots]
        for x, v in zip(knots, vals):
            acc.see(0, v, ("x", x))
            acc.see(1, -v, ("x", x))
        if eps is not None:
            stretches = list(zip(knots[:-1], knots[1:]))
            acc.delta[0] += _piece_delta(p, q, stretches, gm, eps)
            acc.delta[1] += _piece_delta(q, p, stretches, lambda x, p=p, q=q: _g_at(q, p, x), eps)


def _compare_atoms(A: Canonical, B: Canonical, acc: _Acc, eps: float | None) -> None:
    va, vb = A.atom_values, B.atom_values
    if va.size == 0 and vb.size == 0:
        return
    allv = np.concatenate([va, vb])
    try:
        u, inv = np.unique(allv, return_inverse=True)
    except TypeError:  # unorderable outputs: compare by repr
        keys = [repr(x) for x in allv.tolist()]
        uk = sorted(set(keys))
        pos = {k: i for i, k in enumerate(uk)}
        inv = np.array([pos[k] for k in keys])
        u = np.array([allv[keys.index(k)] for k in uk], dtype=object)
    inv = inv.reshape(-1)
    la = np.full(u.size, -np.inf)
    lb = np.full(u.size, -np.inf)
    la[inv[: va.size]] = A.atom_logp
    lb[inv[va.size:]] = B.atom_logp
    with np.errstate(invalid="ignore"):
        fwd = np.where(np.isneginf(la), -np.inf, la - lb)
        bwd = np.where(np.isneginf(lb), -np.inf, lb - la)
    for d, arr in ((0, fwd), (1, bwd)):
        if arr.size:
            j = int(np.argmax(arr))
            acc.see(d, float(arr[j]), ("atom", u[j].item() if hasattr(u[j], "item") else u[j]))
    acc.support[0] |= bool(np.any(np.isfinite(la) & np.isneginf(lb)))
    acc.support[1] |= bool(np.any(np.isfinite(lb) & np.isneginf(la)))
    if eps is not None:
        pa, pb = np.exp(la), np.exp(lb)
        acc.delta[0] += float(np.sum(np.maximum(pa - math.exp(eps) * pb, 0.0)))
        acc.delta[1] += float(np.sum(np.maximum(pb - math.exp(eps) * pa, 0.0)))


def _same_grid(g1: Any, g2: Any) -> int | None:
    if not math.isclose(g1.step, g2.step, rel_tol=1e-12):
        return None
    off = (g2.origin - g1.origin) / g1.step
    k = round(off)
    return int(k) if abs(off - k) <= 1e-9 * max(1.0, abs(off)) else None


def _compare_grids(g1: Any, g2: Any, acc: _Acc, eps: float | None) -> None:
    off = _same_grid(g1, g2)
    f1, c1 = np.asarray(g1.first, np.int64), np.asarray(g1.count, np.int64)
    f2, c2 = np.asarray(g2.first, np.int64) + off, np.asarray(g2.count, np.int64)  # type: ignore[operator]
    cuts = np.unique(np.concatenate([f1, f1 + c1, f2, f2 + c2]))
    s, e = cuts[:-1], cuts[1:]

    def per_point(first: np.ndarray, count: np.ndarray, log_mass: np.ndarray) -> np.ndarray:
        r = np.searchsorted(first, s, side="right") - 1
        rc = np.clip(r, 0, first.size - 1)
        inside = (r >= 0) & (s < first[rc] + count[rc]) & (count[rc] > 0)
        with np.errstate(divide="ignore"):
            lp = log_mass[rc] - np.log(np.maximum(count[rc], 1).astype(np.float64))
        return np.where(inside, lp, -np.inf)

    if getattr(g1, "log_ratio", None) is not None or getattr(g2, "log_ratio", None) is not None:
        _compare_geometric_grids(g1, g2, off, s, e, acc, eps)  # type: ignore[arg-type]
        return
    la = per_point(f1, c1, np.asarray(g1.log_mass, np.float64))
    lb = per_point(f2, c2, np.asarray(g2.log_mass, np.float64))
    n = (e - s).astype(np.float64)
    with np.errstate(invalid="ignore"):
        fwd = np.where(np.isneginf(la), -np.inf, la - lb)
        bwd = np.where(np.isneginf(lb), -np.inf, lb - la)
    for d, arr in ((0, fwd), (1, bwd)):
        if arr.size:
            j = int(np.argmax(arr))
            acc.see(d, float(arr[j]), ("atom", float(g1.values(s[j]))))
    acc.support[0] |= bool(np.any(np.isfinite(la) & np.isneginf(lb)))
    acc.support[1] |= bool(np.any(np.isfinite(lb) & np.isneginf(la)))
    if eps is not None:
        pa, pb = np.exp(la), np.exp(lb)
        acc.delta[0] += float(np.sum(n * np.maximum(pa - math.exp(eps) * pb, 0.0)))
        acc.delta[1] += float(np.sum(n * np.maximum(pb - math.exp(eps) * pa, 0.0)))


def _segment_log_pmf(g: Any, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log pmf at grid index k of g, log ratio of the run holding k); -inf / 0 outside every run."""
    first = np.asarray(g.first, np.int64)
    count = np.asarray(g.count, np.int64)
    r = np.searchsorted(first, k, side="right") - 1
    rc = np.clip(r, 0, first.size - 1)
    inside = (r >= 0) & (k < first[rc] + count[rc]) & (count[rc] > 0)
    lp = g.log_pmf_offset(rc, np.where(inside, k - first[rc], 0))
    ratio = np.asarray(g.ratios, np.float64)[rc]
    return np.where(inside, lp, -np.inf), np.where(inside, ratio, 0.0)


def _log_geom_range(lp0: np.ndarray, ratio: np.ndarray, n: np.ndarray) -> np.ndarray:
    """log sum_{i<n} exp(lp0 + ratio i) (n >= 1; -inf where lp0 = -inf or n = 0)."""
    with np.errstate(invalid="ignore"):
        peak = np.maximum(ratio * np.maximum(n - 1, 0), 0.0)
        out = lp0 + peak + log_geometric_sum(ratio, np.maximum(n, 1))
    return np.where(np.isneginf(lp0) | (n <= 0), -np.inf, out)


def _geometric_delta(la: np.ndarray, ra: np.ndarray, lb: np.ndarray, rb: np.ndarray, n: np.ndarray,
                     eps: float) -> float:
    """sum over segments of sum_{i<n} max(0, p_a(i) - e^eps p_b(i)), with log p_a(i) = la + ra i and
    log p_b(i) = lb + rb i on each segment: exactly, without enumerating.

    D(i) = log p_a(i) - log p_b(i) - eps = d0 + (ra - rb) i is linear, so {D >= 0} is one run of
    consecutive offsets (a prefix or a suffix, one crossing point): both masses over that run are
    geometric sums, and there every term is >= 0, so the difference of the sums is the sum of the
    positive parts.
    """
    live = np.isfinite(la) & (n > 0)
    if not live.any():
        return 0.0
    la, ra, lb, rb, n = la[live], ra[live], lb[live], rb[live], n[live]
    with np.errstate(invalid="ignore"):
        d0 = np.where(np.isneginf(lb), np.inf, la - lb - eps)
    dr = ra - rb
    nf = n.astype(np.float64)
    # offsets i in [lo, hi) with D(i) >= 0
    lo = np.zeros_like(nf)
    hi = nf.copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        root = -d0 / dr  # D(root) = 0
        inc = (dr > 0) & np.isfinite(d0)
        dec = (dr < 0) & np.isfinite(d0)
        lo = np.where(inc, np.clip(np.ceil(root), 0, nf), lo)
        hi = np.where(dec, np.clip(np.floor(root) + 1, 0, nf), hi)
    flat = (dr == 0) & (d0 < 0)
    hi = np.where(flat, lo, hi)
    # rounding of root: drop an end offset whose D is (numerically) < 0
    for _ in range(2):
        bad_lo = (hi > lo) & (d0 + dr * lo < 0) & np.isfinite(d0)
        lo = np.where(bad_lo, lo + 1, lo)
        bad_hi = (hi > lo) & (d0 + dr * (hi - 1) < 0) & np.isfinite(d0)
        hi = np.where(bad_hi, hi - 1, hi)
    m = hi - lo
    keep = m > 0
    if not keep.any():
        return 0.0
    la, ra, lb, rb, lo, m = la[keep], ra[keep], lb[keep], rb[keep], lo[keep], m[keep]
    mp = np.exp(_log_geom_range(la + ra * lo, ra, m))
    with np.errstate(invalid="ignore"):
        mq = np.exp(_log_geom_range(np.where(np.isneginf(lb), -np.inf, lb + rb * lo + eps), rb, m))
    return float(np.sum(np.maximum(mp - mq, 0.0)))


def _compare_geometric_grids(g1: Any, g2: Any, off: int, s: np.ndarray, e: np.ndarray, acc: _Acc,
                             eps: float | None) -> None:
    """Same-grid comparison when some run is geometric (``log_ratio``).

    On each segment [s, e) between merged run ends, both log pmfs are linear in the grid index, so
    the log ratio is linear too: its maximum over the segment is at s or e - 1, and the hockey-stick
    sum is a difference of geometric sums over the offsets past one crossing point
    (:func:`_geometric_delta`).
    """
    shifted = SimpleNamespace(first=np.asarray(g2.first, np.int64) + off, count=g2.count, ratios=g2.ratios,
                              log_pmf_offset=g2.log_pmf_offset)  # g2 in g1's grid indices
    last = e - 1
    la, ra = _segment_log_pmf(g1, s)
    lb, rb = _segment_log_pmf(shifted, s)
    la_e, _ = _segment_log_pmf(g1, last)
    lb_e, _ = _segment_log_pmf(shifted, last)
    for d, (x, y, xe, ye) in enumerate(((la, lb, la_e, lb_e), (lb, la, lb_e, la_e))):
        with np.errstate(invalid="ignore"):
            at_s = np.where(np.isneginf(x), -np.inf, x - y)
            at_e = np.where(np.isneginf(xe), -np.inf, xe - ye)
        for arr, idx in ((at_s, s), (at_e, last)):
            if arr.size:
                j = int(np.argmax(arr))
                acc.see(d, float(arr[j]), ("atom", float(g1.values(idx[j]))))
    acc.support[0] |= bool(np.any(np.isfinite(la) & np.isneginf(lb)))
    acc.support[1] |= bool(np.any(np.isfinite(lb) & np.isneginf(la)))
    if eps is not None:
        n = (e - s).astype(np.int64)
        acc.delta[0] += _geometric_delta(la, ra, lb, rb, n, eps)
        acc.delta[1] += _geometric_delta(lb, rb, la, ra, n, eps)


def _compare(A: Canonical, B: Canonical, eps: float | None) -> _Acc:
    acc = _Acc()
    if A.grid is not None and B.grid is not None and _same_grid(A.grid, B.grid) is not None:
        _compare_grids(A.grid, B.grid, acc, eps)
        return acc
    if A.grid is not None:
        A = _grid_atoms(A.grid)
    if B.grid is not None:
        B = _grid_atoms(B.grid)
    _compare_atoms(A, B, acc, eps)
    if A.pieces or B.pieces:
        _compare_continuous(A.pieces, B.pieces, acc, eps)
    return acc


# --------------------------------------------------------------------------------------------
# public API

def _where(w: Any) -> str:
    if w is None:
        return "-"
    kind = w[0]
    if kind == "atom":
        return f"output {w[1]!r}"
    if kind == "interval":
        return f"outputs in ({w[1]:.6g}, {w[2]:.6g})"
    x = w[1]
    return f"y -> {x}" if math.isinf(x) else f"y = {x:.6g}"


@dataclass(frozen=True, eq=False)
class ExactLoss:
    """Exact privacy loss of a pair.

    ``epsilon`` = max(``epsilon_forward``, ``epsilon_backward``) with
    ``epsilon_forward`` = sup_o log p(o|d1)/p(o|d2); ``delta`` is the hockey-stick divergence at the
    claimed epsilon (both directions, max); ``violated`` compares with the claim (pure claims:
    epsilon; approximate claims: delta at the claimed epsilon), with a floating-point tolerance of
    1e-9 relative. :meth:`delta_at` gives the delta(eps) curve.
    """

    epsilon: float
    epsilon_forward: float
    epsilon_backward: float
    delta: float
    support_violation: bool
    witness: str
    epsilon_claimed: float
    delta_claimed: float
    violated: bool
    method: str
    _laws: tuple = field(repr=False, default=())

    def delta_at(self, epsilon: float) -> float:
        """Hockey-stick delta(epsilon) = max over directions of E[max(0, 1 - e^eps / L)]-type mass."""
        acc = _compare(self._laws[0], self._laws[1], float(epsilon))
        return float(max(acc.delta))

    def row(self) -> dict:
        return {"exact_epsilon": self.epsilon, "exact_delta": self.delta, "exact_support_violation": self.support_violation,
                "exact_violated": self.violated, "exact_witness": self.witness, "exact_method": self.method}


def loss_between(A: Canonical, B: Canonical, *, epsilon_claimed: float = math.inf, delta_claimed: float = 0.0) -> ExactLoss:
    """Exact loss between two canonical laws (see :func:`canonical`)."""
    eps_for_delta = epsilon_claimed if math.isfinite(epsilon_claimed) else None
    acc = _compare(A, B, eps_for_delta)
    ef = max(acc.eps[0], 0.0)
    eb = max(acc.eps[1], 0.0)
    eps = max(ef, eb)
    wit = _where(acc.wit[0] if ef >= eb else acc.wit[1])
    delta = float(max(acc.delta)) if eps_for_delta is not None else math.nan
    if delta_claimed > 0:
        violated = bool(delta > delta_claimed * (1 + _TOL) + 1e-15)
    else:
        violated = bool(eps > epsilon_claimed * (1 + _TOL) + 1e-12)
    return ExactLoss(epsilon=eps, epsilon_forward=ef, epsilon_backward=eb, delta=delta,
                     support_violation=bool(acc.support[0] or acc.support[1]), witness=wit,
                     epsilon_claimed=epsilon_claimed, delta_claimed=delta_claimed, violated=violated,
                     method=f"{A.source}/{B.source}" if A.source != B.source else A.source, _laws=(A, B))


def _claim_of(mechanism: Any) -> PrivacyClaim:
    claim = getattr(mechanism, "claim", None) if not isinstance(mechanism, type) else None
    if not isinstance(claim, PrivacyClaim):
        raise TypeError(f"mechanism must be a mechanism instance with a `claim` (PrivacyClaim) and an exact law "
                        f"(support/log_prob or distribution); got {type(mechanism).__name__} {mechanism!r:.60}")
    return claim


def exact(mechanism: Any, d1: Any, d2: Any) -> ExactLoss:
    """Exact privacy loss of ``mechanism`` between ``d1`` and ``d2``.

    Needs finite ``support``/``log_prob`` or ``distribution(data)`` returning a piecewise,
    grid_runs or location_scale law (``ValueError`` otherwise). For a pure claim, ``violated`` is
    ``epsilon > claimed epsilon``; for an (epsilon, delta) claim it is
    ``delta(claimed epsilon) > claimed delta`` (hockey-stick divergence).
    """
    claim = _claim_of(mechanism)
    A = _canonical_of(mechanism, d1)
    B = _canonical_of(mechanism, d2)
    return loss_between(A, B, epsilon_claimed=float(claim.epsilon), delta_claimed=float(claim.delta))

