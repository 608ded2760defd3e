"""The comparison engine of :mod:`verifiers.exact`: the exact supremum of the log ratio and the
hockey-stick divergence between two canonical laws (:mod:`verifiers.losses.canonical`).

On every segment between the merged breakpoints both log densities are linear or Cauchy, so the
log ratio g has a derivative whose numerator is a polynomial of degree <= 4; its supremum is at a
segment end or at a real root of that polynomial, and {g >= eps} is an interval per monotone
stretch (Brent's method), integrated in closed form. Atoms are compared value by value and laws
on one grid run by run (:mod:`verifiers.losses.grids`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize

from dpharness.verifiers.losses.canonical import Canonical, _grid_atoms, _Piece
from dpharness.verifiers.losses.grids import compare_grids, same_grid, see_atoms

__all__ = ["compare"]


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
    see_atoms(acc, la, lb, lambda j: u[j].item() if hasattr(u[j], "item") else u[j])
    if eps is not None:
        pa, pb = np.exp(la), np.exp(lb)
        acc.delta[0] += float(np.sum(np.maximum(pa - math.exp(eps) * pb, 0.0)))
        acc.delta[1] += float(np.sum(np.maximum(pb - math.exp(eps) * pa, 0.0)))


def _compare(A: Canonical, B: Canonical, eps: float | None) -> _Acc:
    acc = _Acc()
    if A.grid is not None and B.grid is not None and same_grid(A.grid, B.grid) is not None:
        compare_grids(A.grid, B.grid, acc, eps)
        return acc
    if A.grid is not None:
        A = _grid_atoms(A.grid)
    if B.grid is not None:
        B = _grid_atoms(B.grid)
    _compare_atoms(A, B, acc, eps)
    if A.pieces or B.pieces:
        _compare_continuous(A.pieces, B.pieces, acc, eps)
    return acc


compare = _compare
