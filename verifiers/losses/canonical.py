"""Canonical form of an exact output law, for :mod:`verifiers.exact`.

Every law (a finite mechanism's support/log_prob, or a :mod:`mechanisms.laws` law tagged by its
``law`` attribute, :data:`mechanisms.contracts.LAW_KINDS`) becomes *atoms* (output values with
positive mass) plus a *continuous part* made of pieces on which the log density is either linear,
``c + s (x - x0)``, or Cauchy, ``c - log(b^2 + (x - mu)^2)``. A grid law is kept un-expanded
(``Canonical.grid``) so that two laws on one grid can be compared run by run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpharness.mechanisms.contracts import LAW_KINDS, FiniteLaw, HasDistribution, is_finite
from dpharness.mechanisms.laws import log_expm1_ratio

__all__ = ["Canonical", "canonical"]

#: A grid law compared with anything but a law on the same grid is expanded point by point: at most this many.
_GRID_ATOMS_CAP = 2_000_000


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
    #: the law this form was read from (its own ``cdf``, where it has one, is used as is)
    law: Any = None

    @property
    def atoms(self) -> np.ndarray:
        """The output values with positive mass (a grid law's points, enumerated)."""
        if self.grid is not None:
            return _grid_atoms(self.grid).atom_values
        return self.atom_values

    @property
    def point_mass(self) -> float | None:
        """The one output of a law concentrated on one value, else None."""
        if self.grid is not None:
            g = self.grid
            return float(g.values(g.first[0])) if int(np.sum(g.count)) == 1 else None
        if not self.pieces and self.atom_values.size == 1:
            return float(self.atom_values[0])
        return None

    def cdf(self, y: Any) -> np.ndarray:
        """P[Y <= y], vectorised over ``y``: the law's own CDF where it has one (the one the
        mechanism's sampler inverts), else summed from the atoms and the pieces in closed form."""
        y = np.asarray(y, dtype=np.float64)
        v = self.point_mass
        if v is not None:
            return (y >= v).astype(np.float64)
        if self.law is not None and callable(getattr(self.law, "cdf", None)):
            return np.asarray(self.law.cdf(y), dtype=np.float64)
        if self.grid is not None:
            return _grid_atoms(self.grid).cdf(y)
        out = np.zeros(y.shape, dtype=np.float64)
        vals = np.asarray(self.atom_values, dtype=np.float64)
        for value, lp in zip(vals, self.atom_logp):
            out += np.where(y >= value, math.exp(lp), 0.0)
        for piece in self.pieces:
            out += _piece_mass_below(piece, y)
        return np.clip(out, 0.0, 1.0)


def _piece_mass_below(piece: _Piece, y: np.ndarray) -> np.ndarray:
    """The mass of ``piece`` on (-inf, y], vectorised (closed forms of :meth:`_Piece.log_mass`)."""
    t = np.clip(y, piece.lo, piece.hi)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if piece.cauchy:
            lo = math.atan((piece.lo - piece.mu) / piece.b) if math.isfinite(piece.lo) else -math.pi / 2
            hi = np.arctan((t - piece.mu) / piece.b)
            return np.maximum(math.exp(piece.c) / piece.b * (hi - lo), 0.0)
        s = piece.s
        if not math.isfinite(piece.lo):  # s > 0 (the piece's log_mass refuses anything else)
            m = np.exp(piece.c + s * (t - piece.x0)) / s
        else:
            w = t - piece.lo
            m = np.where(w > 0, np.exp(piece.c + s * (piece.lo - piece.x0) + np.log(np.maximum(w, 1e-300))
                                       + log_expm1_ratio(s * w)), 0.0)
        return np.where(np.isnan(m), 0.0, m)


def _atoms_only(values: Any, logp: Any, source: str) -> Canonical:
    v = np.asarray(values)
    lp = np.asarray(logp, dtype=np.float64)
    if v.ndim >= 2 and lp.ndim == 1 and v.shape[0] == lp.shape[0]:
        # label rows (top-k sequences, bit vectors): each row is one output, compared as a tuple
        v = np.fromiter((tuple(r) for r in v.reshape(v.shape[0], -1).tolist()), dtype=object, count=v.shape[0])
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
        return Canonical(empty, empty, tuple(pieces), source="piecewise", law=law)
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
            return Canonical(vals[keep], lps[keep], tuple(pieces), source="location_scale", law=law)
        return Canonical(empty, empty, tuple(pieces), source="location_scale", law=law)
    if kind == "grid_runs":
        return Canonical(empty, empty, (), grid=law, source="grid_runs", law=law)
    raise ValueError(f"exact mode needs a law with law in {LAW_KINDS}, got {law!r}")


def _canonical_of(mechanism: Any, data: Any) -> Canonical:
    """Canonical form of ``mechanism``'s exact law on ``data`` (:mod:`mechanisms.contracts`): a
    declared finite mechanism with :class:`FiniteLaw`, else :class:`HasDistribution`, else a
    :class:`FiniteLaw` of any kind."""
    if is_finite(mechanism) and isinstance(mechanism, FiniteLaw):
        return _atoms_only(mechanism.support(data), mechanism.log_prob(data), "finite")
    if isinstance(mechanism, HasDistribution):
        return canonical(mechanism.distribution(data))
    if isinstance(mechanism, FiniteLaw):
        return _atoms_only(mechanism.support(data), mechanism.log_prob(data), "finite")
    raise ValueError(f"{type(mechanism).__name__} exposes no exact law: exact mode needs support()/log_prob() "
                     "(finite outputs) or distribution(data) (piecewise, grid_runs or location_scale)")

