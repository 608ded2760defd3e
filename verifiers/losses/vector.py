"""Exact mode for the sorted-vector laws of the many-quantile mechanisms (docs/auditing.md, "Exact mode").

Dispatched from :func:`verifiers.exact` for mechanisms whose class declares ``exact_vector_law``
(``"joint_exp"``: :class:`mechanisms.quantiles.JointQuantiles`; ``"independent"``:
:class:`mechanisms.quantiles.IndependentQuantiles`), or that wrap one as ``.mechanism`` (the zoo's
JointExp entries). The claim is the outer mechanism's.

Common refinement. Both laws depend on an output o only through the counts-below
L_D(o) = #{records of D < o} of its coordinates. Merging the clipped records of d1 and d2 with the
bounds cuts [lower, upper] into K *refined intervals* (on a grid: runs of grid points) on which
L_d1 and L_d2 are both constant. A sorted output falls in a non-decreasing tuple i_1 <= ... <= i_m
of refined intervals, every such tuple is reached, and both densities are constant on the set of
outputs of one tuple (a *region*). So sup_o log p1/p2 is a maximum over non-decreasing tuples, and
the hockey-stick divergence is a sum over regions of max(0, P1(R) - e^eps P2(R)).

* JointExp: log p_D(o) = beta u_D(L_D(o)) - log Z_D with u a chain sum over consecutive
  coordinates, so the maximum of beta (u_1 - u_2) is a max-plus dynamic programme over the m
  coordinates (K x K max-plus products over i' <= i), O(m K^2), plus log Z_2 - log Z_1.
* IndExp / AppIndExp: the sorted row of m independent coordinates has density
  sum over the m! orderings of prod_j f_j (a permanent) on each region, the same tie factor under
  both datasets. The maximum is taken exactly by enumerating the C(K + m - 1, m) regions
  (permanents by log-sum-exp over the orderings) when C(K + m - 1, m) m! <= ``_ENUM_CAP``;
  otherwise the sum over coordinates of the per-coordinate exact losses is returned -- an upper
  bound (the unsorted vector's loss; sorting is post-processing), labelled so in ``method``.
* delta (hockey-stick at the claimed epsilon): exact by region enumeration within the same cap
  (region masses: volume prod_l w_l^r_l / r_l! or prod_l C(N_l + r_l - 1, r_l) for JointExp,
  permanent / prod_l r_l! of the per-coordinate interval masses for IndExp); 0 when the exact
  epsilon is within the claim; otherwise NaN ("delta not computed" in ``method``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from scipy import special

from dpharness.mechanisms import joint_exp as _je
from dpharness.mechanisms.base import check_data
from dpharness.verifiers.losses.loss import _TOL, ExactLoss

__all__ = ["vector_law_of", "exact_vector", "joint_exp_max_log_ratio", "Refinement", "refine",
           "VectorExactLoss"]

#: Region enumeration (IndExp epsilon, every delta) only when #regions x #orderings is at most this.
_ENUM_CAP = 3_000_000
#: Rows of the K x K max-plus product handled at once (memory ~ block x K floats).
_BLOCK_ELEMS = 4_000_000


def vector_law_of(mechanism: Any) -> Any | None:
    """The object carrying the sorted-vector law (``exact_vector_law`` declared on its class):
    ``mechanism`` itself or the mechanism it wraps as ``.mechanism``; None if neither."""
    for obj in (mechanism, getattr(mechanism, "mechanism", None) if not isinstance(mechanism, type) else None):
        if obj is not None and getattr(type(obj), "exact_vector_law", None) in ("joint_exp", "independent"):
            return obj
    return None


# --------------------------------------------------------------------------------------------
# common refinement


@dataclass(frozen=True, eq=False)
class Refinement:
    """K refined intervals (open gaps, or runs of grid points) on which L_d1 and L_d2 are constant."""

    lo: np.ndarray          # left end (continuous) or first grid value of the run
    hi: np.ndarray          # right end (continuous) or last grid value of the run
    rep: np.ndarray         # a representative output inside (midpoint, or the run's first point)
    log_size: np.ndarray    # log width (continuous) or log number of grid points
    count: np.ndarray | None  # grid: number of points of each run
    L1: np.ndarray          # #{records of d1 < o} on the interval
    L2: np.ndarray

    @property
    def K(self) -> int:
        return int(self.rep.size)


def refine(keys1: np.ndarray, keys2: np.ndarray, lower: float, upper: float, grid: Any) -> Refinement:
    """Common refinement from the sorted clipped records (continuous) or sorted snapped grid
    indices (grid) of both datasets (:attr:`mechanisms.joint_exp.Cells.keys`)."""
    if grid is None:
        b = np.unique(np.concatenate(([lower, upper], keys1, keys2)).astype(np.float64))
        lo, hi = b[:-1], b[1:]
        rep = 0.5 * (lo + hi)
        return Refinement(lo, hi, rep, np.log(hi - lo), None, np.searchsorted(keys1, rep, side="left"),
                          np.searchsorted(keys2, rep, side="left"))
    # L(k) = #{keys < k} changes at k = key + 1; grid indices 0..grid.size
    end = int(grid.size) + 1
    b = np.unique(np.concatenate(([0, end], np.asarray(keys1, np.int64) + 1, np.asarray(keys2, np.int64) + 1)))
    b = b[b <= end]
    first = b[:-1]
    count = np.diff(b)
    return Refinement(grid.values(first), grid.values(b[1:] - 1), grid.values(first), np.log(count.astype(np.float64)),
                      count, np.searchsorted(keys1, first, side="left"), np.searchsorted(keys2, first, side="left"))


def _regions(K: int, m: int) -> np.ndarray:
    """Every non-decreasing tuple of m interval indices in 0..K-1, shape (C(K + m - 1, m), m)."""
    it = itertools.combinations_with_replacement(range(K), m)
    return np.fromiter(itertools.chain.from_iterable(it), dtype=np.int64).reshape(-1, m)


def _run_rank(T: np.ndarray) -> np.ndarray:
    """For sorted tuples T (R, m): the 0-based position of each entry inside its run of equal entries."""
    R, m = T.shape
    rank = np.zeros((R, m), dtype=np.int64)
    for k in range(1, m):
        rank[:, k] = np.where(T[:, k] == T[:, k - 1], rank[:, k - 1] + 1, 0)
    return rank


def _log_volume(ref: Refinement, T: np.ndarray) -> np.ndarray:
    """log base measure of each region: sum_l r_l log w_l - log r_l! (continuous; sorted vectors)
    or sum_l log C(N_l + r_l - 1, r_l) (grid; sorted grid vectors = multisets)."""
    s = _run_rank(T).astype(np.float64)
    if ref.count is None:
        return np.sum(ref.log_size[T] - np.log1p(s), axis=1)
    return np.sum(np.log(ref.count[T].astype(np.float64) + s) - np.log1p(s), axis=1)


def _hockey(lp1: np.ndarray, lp2: np.ndarray, eps: float) -> float:
    """max over directions of sum_R max(0, P1(R) - e^eps P2(R)) from region log masses."""
    p1, p2 = np.exp(lp1), np.exp(lp2)
    e = math.exp(eps)
    return float(max(np.sum(np.maximum(p1 - e * p2, 0.0)), np.sum(np.maximum(p2 - e * p1, 0.0))))


def _describe(ref: Refinement, tup: Any, grid: bool) -> str:
    if tup is None:
        return "-"
    parts = [f"[{ref.lo[i]:.6g}, {ref.hi[i]:.6g}]" if grid else f"({ref.lo[i]:.6g}, {ref.hi[i]:.6g})" for i in tup]
    return "sorted outputs in " + " x ".join(parts)


# --------------------------------------------------------------------------------------------
# JointExp: max-plus dynamic programme


def joint_exp_max_log_ratio(L1: np.ndarray, L2: np.ndarray, t1: np.ndarray, t2: np.ndarray, n1: int, n2: int,
                            beta: float) -> tuple[float, tuple[int, ...]]:
    """max over non-decreasing (i_1..i_m) of beta (u_1 - u_2), u_D = -sum_{j=1}^{m+1} |L_D(i_j) - L_D(i_{j-1}) - t_D,j|
    (L(i_0) = 0, L(i_{m+1}) = n_D), and an argmax tuple. Chain DP, O(m K^2)."""
    m = int(t1.size) - 1
    L1 = L1.astype(np.float64)
    L2 = L2.astype(np.float64)
    K = L1.size
    V = -beta * np.abs(L1 - t1[0]) + beta * np.abs(L2 - t2[0])
    back = np.zeros((m, K), dtype=np.int64)
    tri = np.arange(K)
    block = max(1, _BLOCK_ELEMS // max(K, 1))
    for j in range(1, m):
        newV = np.empty(K)
        for s in range(0, K, block):
            cols = tri[s:s + block]                                  # i (current)
            # F[i', i] for i' in 0..K-1 (rows), i in cols
            F = (-beta * np.abs(L1[None, cols] - L1[:, None] - t1[j]) + beta * np.abs(L2[None, cols] - L2[:, None] - t2[j]))
            S = V[:, None] + F
            S[tri[:, None] > cols[None, :]] = -np.inf                # i' <= i
            arg = np.argmax(S, axis=0)
            back[j, cols] = arg
            newV[cols] = S[arg, np.arange(cols.size)]
        V = newV
    fin = V - beta * np.abs(n1 - L1 - t1[m]) + beta * np.abs(n2 - L2 - t2[m])
    i = int(np.argmax(fin))
    best = float(fin[i])
    tup = [i]
    for j in range(m - 1, 0, -1):
        i = int(back[j, i])
        tup.append(i)
    return best, tuple(reversed(tup))


# --------------------------------------------------------------------------------------------
# the loss


@dataclass(frozen=True, eq=False)
class VectorExactLoss(ExactLoss):
    """:class:`verifiers.exact.ExactLoss` of a sorted-vector law; ``delta_at`` by region enumeration
    (``ValueError`` past the enumeration cap)."""

    _delta_fn: Callable[[float], float] | None = field(repr=False, default=None)

    def delta_at(self, epsilon: float) -> float:
        if self._delta_fn is None:
            raise ValueError(f"delta not computed for this law: {self.method}")
        return float(self._delta_fn(float(epsilon)))


def _finish(ef: float, eb: float, wf: str, wb: str, delta_fn: Callable[[float], float] | None,
            eps_claim: float, delta_claim: float, method: str) -> VectorExactLoss:
    ef, eb = max(ef, 0.0), max(eb, 0.0)
    eps = max(ef, eb)
    support = math.isinf(eps)
    if delta_fn is not None and math.isfinite(eps_claim):
        delta = delta_fn(eps_claim)
    elif eps <= eps_claim:
        delta = 0.0  # the pointwise log ratio never exceeds eps_claim: the hockey-stick sum is empty
    else:
        delta = math.nan
        method += "; delta not computed (too many regions to enumerate)"
    if delta_claim > 0:
        violated = bool(delta > delta_claim * (1 + _TOL) + 1e-15) if not math.isnan(delta) else False
    else:
        violated = bool(eps > eps_claim * (1 + _TOL) + 1e-12)
    return VectorExactLoss(epsilon=eps, epsilon_forward=ef, epsilon_backward=eb, delta=delta, support_violation=support,
                           witness=wf if ef >= eb else wb, epsilon_claimed=eps_claim, delta_claimed=delta_claim,
                           violated=violated, method=method, _delta_fn=delta_fn)


def _joint_exp(law: Any, d1: Any, d2: Any, eps_claim: float, delta_claim: float) -> VectorExactLoss:
    f1, f2 = law.forward(d1), law.forward(d2)
    if not math.isclose(f1.beta, f2.beta, rel_tol=1e-15):  # pragma: no cover - beta is data-independent
        raise ValueError("JointExp's beta differs between the datasets")
    grid = law.grid
    ref = refine(f1.cells.keys, f2.cells.keys, law.lower, law.upper, grid)
    n1, n2, beta = f1.cells.n, f2.cells.n, f1.beta
    fwd, tf = joint_exp_max_log_ratio(ref.L1, ref.L2, f1.targets, f2.targets, n1, n2, beta)
    bwd, tb = joint_exp_max_log_ratio(ref.L2, ref.L1, f2.targets, f1.targets, n2, n1, beta)
    ef = fwd + f2.log_z - f1.log_z
    eb = bwd + f1.log_z - f2.log_z
    m = law.m
    delta_fn = None
    if math.comb(ref.K + m - 1, m) <= _ENUM_CAP:
        T = _regions(ref.K, m)
        vol = _log_volume(ref, T)
        lp1 = beta * _je.utility_of_cells(ref.L1[T], f1.targets, n1) - f1.log_z + vol
        lp2 = beta * _je.utility_of_cells(ref.L2[T], f2.targets, n2) - f2.log_z + vol

        def delta_fn(e: float, lp1: np.ndarray = lp1, lp2: np.ndarray = lp2) -> float:
            return _hockey(lp1, lp2, e)
    g = grid is not None
    return _finish(ef, eb, _describe(ref, tf, g), _describe(ref, tb, g), delta_fn, eps_claim, delta_claim,
                   f"joint_exp: max-plus DP over {ref.K} refined intervals")


def _independent(law: Any, d1: Any, d2: Any, eps_claim: float, delta_claim: float) -> VectorExactLoss:
    m = law.m
    grid = law.grid
    c1 = _je.cells_of(check_data(d1), law.lower, law.upper, grid)
    c2 = _je.cells_of(check_data(d2), law.lower, law.upper, grid)
    ref = refine(c1.keys, c2.keys, law.lower, law.upper, grid)
    # log mass of coordinate j's marginal on each refined interval (its density is constant there)
    M1 = np.empty((m, ref.K))
    M2 = np.empty((m, ref.K))
    for j in range(m):
        for M, d in ((M1, d1), (M2, d2)):
            mg = law.marginal(d, j)
            lp = mg.log_pdf(ref.rep) if grid is None else mg.log_pmf(ref.rep)
            M[j] = lp + ref.log_size
    with np.errstate(invalid="ignore"):
        diff = M1 - M2
    diff = np.where(np.isnan(diff), -np.inf, diff)  # no mass under either: not an output
    with np.errstate(invalid="ignore"):
        rdiff = np.where(np.isnan(M2 - M1), -np.inf, M2 - M1)
    ub_f = float(np.sum(np.max(diff, axis=1)))
    ub_b = float(np.sum(np.max(rdiff, axis=1)))
    g = grid is not None
    nreg = math.comb(ref.K + m - 1, m)
    if nreg * math.factorial(m) > _ENUM_CAP:
        wf = "per-coordinate maxima: " + _describe(ref, tuple(int(i) for i in np.argmax(diff, axis=1)), g)
        wb = "per-coordinate maxima: " + _describe(ref, tuple(int(i) for i in np.argmax(rdiff, axis=1)), g)
        return _finish(ub_f, ub_b, wf, wb, None, eps_claim, delta_claim,
                       f"independent: upper bound by post-processing (sum of {m} per-coordinate exact losses; "
                       f"{nreg:,} regions not enumerated)")
    T = _regions(ref.K, m)
    # log permanent of [M[j, T_k]]_{j,k}: log-sum-exp over the m! orderings
    terms1, terms2 = [], []
    rows = np.arange(m)
    for perm in itertools.permutations(range(m)):
        cols = T[:, list(perm)]
        terms1.append(np.sum(M1[rows[None, :], cols], axis=1))
        terms2.append(np.sum(M2[rows[None, :], cols], axis=1))
    tie = np.sum(np.log1p(_run_rank(T).astype(np.float64)), axis=1)   # log prod_l r_l!
    lp1 = special.logsumexp(np.stack(terms1), axis=0) - tie
    lp2 = special.logsumexp(np.stack(terms2), axis=0) - tie
    with np.errstate(invalid="ignore"):
        r = lp1 - lp2
    live1 = np.isfinite(lp1) | np.isfinite(lp2)
    rf = np.where(live1 & ~np.isnan(r), r, -np.inf)
    rb = np.where(live1 & ~np.isnan(r), -r, -np.inf)
    kf, kb = int(np.argmax(rf)), int(np.argmax(rb))

    def delta_fn(e: float, lp1: np.ndarray = lp1, lp2: np.ndarray = lp2) -> float:
        return _hockey(lp1, lp2, e)
    return _finish(float(rf[kf]), float(rb[kb]), _describe(ref, tuple(T[kf]), g), _describe(ref, tuple(T[kb]), g),
                   delta_fn, eps_claim, delta_claim,
                   f"independent: {nreg:,} regions x {math.factorial(m)} orderings enumerated "
                   f"(post-processing bound {max(ub_f, ub_b, 0.0):.6g})")


def exact_vector(mechanism: Any, d1: Any, d2: Any, claim: Any) -> VectorExactLoss:
    """Exact loss of a sorted-vector mechanism (see the module docstring); ``claim`` is the outer
    mechanism's :class:`mechanisms.base.PrivacyClaim`."""
    law = vector_law_of(mechanism)
    if law is None:
        raise ValueError(f"{type(mechanism).__name__} declares no sorted-vector law (exact_vector_law)")
    eps_c, del_c = float(claim.epsilon), float(claim.delta)
    if type(law).exact_vector_law == "joint_exp":
        return _joint_exp(law, d1, d2, eps_c, del_c)
    return _independent(law, d1, d2, eps_c, del_c)
