"""The test martingale of the anytime-valid audit: the mixture e-process M_t(eps) on cells of eps,
and the weights on its alternatives (:mod:`verifiers.statistical.sequential` has the derivation)."""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np
from scipy.special import expit

__all__ = ["EProcess", "local_weights"]


def _tuning() -> Any:
    """:mod:`verifiers.statistical.sequential`, whose constants are read when a function runs (so
    setting e.g. ``sequential.BROAD`` changes later audits); imported here, not at the top, because
    that module imports this one."""
    return importlib.import_module("dpharness.verifiers.statistical.sequential")


def _lse(t: np.ndarray, axis: int | None = None) -> Any:
    """ln sum exp(t) (along ``axis``); -inf for an empty or all -inf sum.

    Not ``scipy.special.logsumexp``: that costs ~70 us per call against ~4 us here, and it runs at
    every look, where it was a visible share of a small audit's wall time."""
    if axis is None:
        if t.size == 0:
            return -math.inf
        mx = float(t.max())
        if not math.isfinite(mx):
            return mx
        return mx + math.log(float(np.exp(t - mx).sum()))
    mx = t.max(axis=axis, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(t - mx).sum(axis=axis)) + np.squeeze(mx, axis=axis)


class EProcess:
    """The mixture e-process M_t(eps) of the module docstring, kept on cells of eps.

    ``update(k_num, k_den, n, weights)`` adds one batch (counts of the batch's event in its
    direction, draws per dataset, weights on :data:`verifiers.statistical.sequential.LOGIT_GRID` chosen before the batch);
    ``epsilon_lower`` is the left end of the first cell never rejected; ``delta_lower`` (for
    delta > 0) the running sup of {delta' : M_s(eps_claim, delta') >= 1/alpha}; ``log_e_claim``
    is ln M_t at (eps_claim, delta_claim) exactly.
    """

    def __init__(self, alpha: float, epsilon: float, delta: float = 0.0, grid: np.ndarray | None = None,
                 cell: float | None = None):
        grid = _tuning().LOGIT_GRID if grid is None else grid
        cell = _tuning().CELL if cell is None else cell
        self.alpha = float(alpha)
        self.eps_c = float(epsilon)
        self.delta = float(delta)
        self.theta = np.asarray(grid, dtype=np.float64)
        if self.theta.ndim != 1 or np.any(np.diff(self.theta) <= 0):
            raise ValueError("grid must be a strictly increasing 1-D array of logits")
        self.pi = expit(self.theta)
        self.log_pi = np.log(self.pi)
        self.log_1m = np.log(expit(-self.theta))  # ln(1 - pi) without cancellation
        top = self.eps_c + 4.0
        fine = np.arange(0.0, top + cell / 2, cell)
        # the claim is a cell edge, so the cells next to it are exact
        fine = np.unique(np.concatenate([fine, [self.eps_c]]))
        coarse = np.geomspace(top, max(top + 1.0, float(self.theta[-1])), 120)[1:]
        edges = np.concatenate([fine, coarse])
        self.lo, self.hi = edges[:-1], edges[1:]
        self.a, self.b = expit(self.lo), expit(self.hi)
        self.log_b = np.log(self.b)
        self.log_1ma = np.log(expit(-self.lo))
        self.cum = np.zeros(self.lo.size)
        self.rejected = np.zeros(self.lo.size, dtype=bool)
        self.batches: list[tuple[int, int, int, np.ndarray]] = []
        self._delta_lb = 0.0
        self.threshold = math.log(1.0 / self.alpha)
        # Which alternatives are above (pi_j >= b), below (pi_j <= a) or inside each cell; the
        # same comparisons as a direct evaluation, by bisection on the sorted pi.
        self._ge = np.searchsorted(self.pi, self.b, side="left")
        # (pi_j >= b wins when a cell is so narrow that a == b in floating point)
        self._le = np.minimum(np.searchsorted(self.pi, self.a, side="right"), self._ge)
        width = np.maximum(self._ge - self._le, 0)
        self._inside = []
        for k in range(int(width.max()) if width.size else 0):
            cells = np.flatnonzero(width > k)
            self._inside.append((cells, self._le[cells] + k))
        # ln M at the claim, kept exactly
        pi_c = expit(self.eps_c)
        self._up_c = self.pi > pi_c
        self._lx_c = self.log_pi - math.log(pi_c)
        self._ly_c = self.log_1m - math.log(expit(-self.eps_c))
        self._dx_c = self.pi / pi_c - 1.0
        self.log_e_claim = 0.0

    def update(self, k_num: int, k_den: int, n: int, weights: np.ndarray) -> None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != self.pi.shape:
            raise ValueError(f"weights must have one entry per alternative ({self.pi.size}), got shape {w.shape}")
        if np.any(w < 0) or w.sum() > 1.0 + 1e-9:
            raise ValueError("weights must be >= 0 and sum to <= 1")
        k1, k2 = int(k_num), int(k_den)
        with np.errstate(divide="ignore"):
            lw = np.log(w)
        # the point value at the claim
        t = np.where(self._up_c, lw + k1 * self._lx_c + k2 * self._ly_c - n * self.delta * self._dx_c, lw)
        self.log_e_claim += _lse(t)
        # cells left of the first cell never rejected no longer matter (they stay rejected)
        bad = np.flatnonzero(~self.rejected)
        s0 = int(bad[0]) if bad.size else self.lo.size
        f = self._cells_delta0(k1, k2, lw) if self.delta == 0 else self._cells_matrix(k1, k2, n, w, s0)
        self.cum[s0:] = self.cum[s0:] + f[s0:]
        self.rejected[s0:] |= self.cum[s0:] >= self.threshold
        self.batches.append((k1, k2, int(n), w))
        if self.delta > 0:
            self._delta_lb = max(self._delta_lb, self._delta_at_claim())

    def _cells_delta0(self, k1: int, k2: int, lw: np.ndarray) -> np.ndarray:
        """Lower bound of each cell's log factor, delta = 0: separable, O(cells + alternatives).
        An alternative below the cell bets nothing there: max(pi_j, pi0) = pi0, factor exactly 1
        (at most 1 where pi_j falls inside the cell)."""
        u = lw + (k1 * self.log_pi + k2 * self.log_1m)  # finite terms: -inf only where w_j = 0
        acc = np.empty(u.size + 1)
        acc[-1] = -np.inf
        np.logaddexp.accumulate(u[::-1], out=acc[-2::-1])  # acc[j] = ln sum_{i >= j} e^{u_i}
        pre = np.empty(u.size + 1)
        pre[0] = -np.inf
        np.logaddexp.accumulate(lw, out=pre[1:])  # pre[j] = ln sum_{i < j} w_i
        v = k1 * self.log_b + k2 * self.log_1ma
        f = np.logaddexp(acc[self._ge] - v, pre[self._le])
        for cells, j in self._inside:
            f[cells] = np.logaddexp(f[cells], np.minimum(u[j] - v[cells], lw[j]))
        return f

    def _cells_matrix(self, k1: int, k2: int, n: int, w: np.ndarray, s0: int) -> np.ndarray:
        """Lower bound of each cell's log factor for delta > 0 (cells from s0 on; the others -inf)."""
        out = np.full(self.lo.size, -np.inf)
        if w.max() <= 0:
            return out
        keep = np.flatnonzero(w > 1e-12 * w.max())
        lw = np.log(w[keep])[None, :]
        pj = self.pi[keep][None, :]
        a, b = self.a[s0:, None], self.b[s0:, None]
        t = (lw + k1 * (self.log_pi[keep][None, :] - self.log_b[s0:, None])
             + k2 * (self.log_1m[keep][None, :] - self.log_1ma[s0:, None]))
        t = t - n * self.delta * (pj / a - 1.0)
        t = np.where(pj >= b, t, np.where(pj <= a, lw, np.minimum(t, lw)))
        mx = t.max(axis=1, keepdims=True)
        out[s0:] = np.log(np.exp(t - mx).sum(axis=1)) + mx[:, 0]
        return out

    def _stacked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        k1 = np.array([b[0] for b in self.batches], dtype=np.float64)
        k2 = np.array([b[1] for b in self.batches], dtype=np.float64)
        n = np.array([b[2] for b in self.batches], dtype=np.float64)
        w = np.array([np.asarray(b[3], dtype=np.float64) for b in self.batches]).reshape(len(self.batches), -1)
        return k1, k2, n, w

    def log_e(self, epsilon: float, delta: float | None = None) -> float:
        """ln M_t at the point (epsilon, delta) exactly (not on cells): the test statistic."""
        if not self.batches:
            return 0.0
        return self._log_e(self._stacked(), epsilon, self.delta if delta is None else float(delta))

    def _log_e(self, st: tuple, epsilon: float, dl: float) -> float:
        k1, k2, n, w = st
        pi0 = expit(epsilon)
        ok = self.pi > pi0
        with np.errstate(divide="ignore"):
            lw = np.log(w)
        t = (lw[:, ok] + k1[:, None] * (self.log_pi[ok] - math.log(pi0))
             + k2[:, None] * (self.log_1m[ok] - math.log(expit(-epsilon)))
             - n[:, None] * dl * (self.pi[ok] / pi0 - 1.0))
        # alternatives at or below pi0 bet nothing: factor 1
        cash = w[:, ~ok].sum(axis=1)
        with np.errstate(divide="ignore"):
            t = np.concatenate([t, np.log(cash)[:, None]], axis=1)
        return float(np.sum(_lse(t, axis=1)))

    def _delta_at_claim(self) -> float:
        """sup{delta' in [0, 1] : ln M_t(eps_c, delta') >= ln(1/alpha)}; M decreases in delta'."""
        st = self._stacked()
        if self._log_e(st, self.eps_c, 0.0) < self.threshold:
            return 0.0
        lo, hi = 0.0, 1.0
        if self._log_e(st, self.eps_c, hi) >= self.threshold:
            return 1.0
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if self._log_e(st, self.eps_c, mid) >= self.threshold:
                lo = mid
            else:
                hi = mid
        return lo

    @property
    def epsilon_lower(self) -> float:
        bad = np.flatnonzero(~self.rejected)
        if bad.size == 0:
            return float(self.hi[-1])
        return float(self.lo[bad[0]])

    @property
    def delta_lower(self) -> float:
        return float(self._delta_lb)


def local_weights(centre: float, m: float, eps_c: float, grid: np.ndarray | None = None,
                  broad: float | None = None) -> np.ndarray:
    """Weights on the alternatives for the next batch: a discretised normal in logit space at the
    event's estimated log ratio ``centre`` with the sd of a logit estimated from ``m`` hits, mixed
    with a fixed broad part centred just above the claim (sum 1)."""
    grid = _tuning().LOGIT_GRID if grid is None else grid
    broad = _tuning().BROAD if broad is None else broad
    p = float(expit(centre))
    sd = max(0.08, 1.0 / math.sqrt((m + 1.0) * max(p * (1 - p), 1e-6)))
    loc = np.exp(-0.5 * ((grid - centre) / sd) ** 2)
    br = 1.0 / (1.0 + ((grid - eps_c - 0.5) / 1.0) ** 2)
    loc = loc / loc.sum() if loc.sum() > 0 else br / br.sum()
    return (1 - broad) * loc + broad * br / br.sum()
