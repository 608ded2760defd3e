"""Exact sampler and exact log-density of JointExp (the exponential mechanism over sorted quantile vectors).

Used by :class:`mechanisms.quantiles.JointQuantiles`; the mechanism, its claim and its sources are
documented there and in docs/mechanisms.md ("Many quantiles at once"). This module holds the
computation only.

Cells
-----
Let L(o) = #{records < o} (records clipped to [lower, upper], snapped to the grid on a discrete
domain). The output range splits into n + 1 *cells* C_0..C_n, C_l = {o : L(o) = l}:

* continuous: C_l is the open gap (x_(l), x_(l+1)) with x_(0) = lower, x_(n+1) = upper (Lebesgue
  measure w_l, possibly 0 with ties);
* grid: C_l is the run of grid points k with ks_(l-1) < k <= ks_(l) (ks = sorted snapped grid indices,
  ks_(-1) = -1, ks_(n) = last grid index), N_l points (possibly 0).

A sorted output o_1 <= ... <= o_m falls in cells l_1 <= ... <= l_m and the utility depends on the
cells only: u = -sum_{j=1}^{m+1} |l_j - l_{j-1} - g_j n| with l_0 = 0, l_{m+1} = n and
g_j = q_j - q_{j-1} (q_0 = 0, q_{m+1} = 1). The base measure of the sorted vectors whose cells are a
given non-decreasing tuple is prod_l w_l^{r_l} / r_l! (continuous; r_l = how many outputs lie in
C_l: sorted uniform order statistics) or prod_l C(N_l + r_l - 1, r_l) (grid: multisets).

Forward recursion (log space)
-----------------------------
With beta = epsilon / (2 Delta) and phi_j(d) = -beta |d - g_j n|, let

    A_j(l)      log mass of (l_1..l_j) with l_j = l and l_{j-1} < l   (a run of equal cells starts at j)
    alpha_j(l,k) log mass of (l_1..l_j) with l_{j-k-1} < l_{j-k} = ... = l_j = l     (run of k + 1)
    H_j(l)      = logsumexp_k alpha_j(l, k)

    A_1(l)        = R(l, 0) + phi_1(l)
    A_j(l)        = R(l, 0) + logsumexp_{l' < l} [H_{j-1}(l') + phi_j(l - l')]          (j >= 2)
    alpha_j(l, k) = A_{j-k}(l) + R(l, k) - R(l, 0) + sum_{i=j-k+1}^{j} phi_i(0)
    log Z         = logsumexp_l [H_m(l) + phi_{m+1}(n - l)]

where R(l, k) is the log base measure of a run of k + 1 sorted outputs in C_l:
(k + 1) log w_l - log (k + 1)! or log C(N_l + k, k + 1). alpha never needs storing (it is A shifted),
so memory is O(m n), not O(m^2 n). The repeat sums cost O(m^2 n) and the convolutions O(m n) or
O(m n log n), the paper's O(mn log n + m^2 n).

The convolution over l' is a Toeplitz product with kernel exp(phi_j(d)), d >= 1. GJK21 (and
google-research dp_multiq) do it with an FFT after subtracting the maxima (``recursion="fft"``,
:func:`log_toeplitz_fft`). Its error is absolute, ~1e-16 of the largest entry: entries more than
~37 nats below the peak come out as noise or 0 (log -> -inf), so the sampler's law is then only
approximately the mechanism's in its far tails. The kernel is two geometric pieces
(exp(beta (d - t)) for d <= t, exp(-beta (d - t)) beyond), so the same sums are exponentially tilted
prefix sums and fixed-length window sums: ``recursion="geometric"`` (default) computes them in
O(n) per quantile with ``np.logaddexp.accumulate`` (windows by the van Herk / Gil-Werman block
trick: one block suffix plus one block prefix, no subtraction), every entry with relative accuracy,
never leaving log space. Both are checked against a slow O(m n^2) definitional DP in the tests.

Backward sampling: l_m from log Z's terms; then, at quantile j with its cell l known, the run length
k + 1 from alpha_j(l, .) (Gumbel-max); the cell of quantile j - k - 1 given the next cell l is drawn
from H(l') + phi(l - l') over l' < l exactly, in O(log n), by choosing the geometric piece (tilted
prefix or window) by its log mass and inverting the block-local cumulative sums by binary search.
Positions: uniform in each gap then sorted (sorted uniforms = uniform order statistics), or a
uniform multiset of the cell's grid points.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.fft import irfft, rfft
from scipy import special

from dpharness.mechanisms.domains import Grid
from dpharness.mechanisms.laws import sample_index

__all__ = ["Cells", "cells_of", "Forward", "forward", "log_toeplitz_fft", "log_toeplitz_geometric",
           "sample_cells", "place", "log_density", "utility_of_cells", "RECURSIONS"]

RECURSIONS: tuple[str, ...] = ("geometric", "fft")
_NEG = -np.inf
#: A log-sum-exp term more than _CUT nats below the running sum cannot change it in float64.
_CUT = 40.0


@dataclass(frozen=True, eq=False)
class Cells:
    """The n + 1 cells of a dataset: log measure of each, and how to place points inside."""

    n: int
    log_size: np.ndarray          # log w_l (continuous) or log N_l (grid); -inf for empty cells
    edges: np.ndarray | None      # continuous: n + 2 edges [lower, sorted clipped data, upper]
    first: np.ndarray | None      # grid: first grid index of each cell
    count: np.ndarray | None      # grid: number of grid points of each cell
    grid: Grid | None
    keys: np.ndarray              # sorted clipped records (continuous) or sorted snapped indices (grid)

    @property
    def discrete(self) -> bool:
        return self.grid is not None

    def run_increment(self, k: int, at: np.ndarray | None = None) -> np.ndarray:
        """R(l, k) - R(l, k - 1) (k >= 1: one more output in a run of k), for every cell or the
        cells ``at``."""
        if self.grid is None:
            ls = self.log_size if at is None else self.log_size[at]
            return ls - np.log(k + 1.0)
        # log C(N + k, k + 1) - log C(N + k - 1, k) = log(N + k) - log(k + 1)
        c = self.count if at is None else self.count[at]
        return np.log(c.astype(np.float64) + k) - np.log(k + 1.0)


def cells_of(x: np.ndarray, lower: float, upper: float, grid: Grid | None) -> Cells:
    """Cells of the (validated, 1-d, non-empty) records ``x`` on [lower, upper] (or the grid)."""
    xs = np.sort(np.clip(x, lower, upper))
    n = int(xs.size)
    if grid is None:
        edges = np.concatenate(([lower], xs, [upper]))
        w = np.diff(edges)
        with np.errstate(divide="ignore"):
            logw = np.log(w)
        return Cells(n=n, log_size=logw, edges=edges, first=None, count=None, grid=None, keys=xs)
    ks = grid.snap(xs)
    bounds = np.concatenate(([-1], ks, [grid.size]))
    count = np.diff(bounds)
    with np.errstate(divide="ignore"):
        logn = np.log(count.astype(np.float64))
    return Cells(n=n, log_size=logn, edges=None, first=bounds[:-1] + 1, count=count, grid=grid, keys=ks)


# --------------------------------------------------------------------------------------------
# log-space Toeplitz products  y(l) = logsumexp_{l' < l} h(l') - beta |l - l' - t|
# --------------------------------------------------------------------------------------------


def log_toeplitz_fft(h: np.ndarray, beta: float, t: float) -> np.ndarray:
    """y(l) = log sum_{d >= 1} exp(-beta |d - t|) exp(h(l - d)) by FFT (maxima factored out).

    Absolute error ~1e-16 x the largest term: entries far below the peak are unreliable (and come
    out -inf when the FFT result rounds to <= 0). See the module docstring.
    """
    N = h.size
    d = np.arange(N, dtype=np.float64)
    c = -beta * np.abs(d - t)
    c[0] = _NEG  # strictly increasing cells: d >= 1
    if N < 2 or not np.isfinite(h).any():
        return np.full(N, _NEG)
    mc, mh = float(np.max(c)), float(np.max(h))
    ec = np.exp(c - mc)
    eh = np.exp(h - mh)
    p = 1 << int(np.ceil(np.log2(2 * N - 1)))
    y = irfft(rfft(ec, n=p) * rfft(eh, n=p), n=p)[:N]
    with np.errstate(divide="ignore"):
        out = np.log(np.maximum(y, 0.0))
    return out + (mc + mh)


@dataclass(frozen=True, eq=False)
class _Geo:
    """Tilted prefix sums and block-window sums of one h for the kernel exp(-beta |d - t|), d >= 1."""

    T: int                  # window length: d in 1..T is the rising piece (d <= t)
    PA: np.ndarray          # PA[s] = logsumexp_{l' <= s} h(l') + beta l'
    pre: np.ndarray | None  # block prefix / suffix sums of h(l') - beta l' (front-padded by T)
    suf: np.ndarray | None
    massA: np.ndarray       # log sum over the falling piece (d > t), per l
    massB: np.ndarray       # log sum over the rising piece (1 <= d <= t), per l


def _geo(h: np.ndarray, beta: float, t: float) -> _Geo:
    N = h.size
    idx = np.arange(N, dtype=np.float64)
    T = int(min(np.floor(t), N - 1)) if t >= 1 else 0
    PA = np.logaddexp.accumulate(h + beta * idx)
    massA = np.full(N, _NEG)
    if T + 1 < N:
        massA[T + 1:] = -beta * (idx[T + 1:] - t) + PA[: N - T - 1]
    massB = np.full(N, _NEG)
    pre = suf = None
    if T >= 1:
        nb = -(-(T + N) // T)
        U = np.full(nb * T, _NEG)
        U[T:T + N] = h - beta * idx
        B = U.reshape(nb, T)
        pre = np.logaddexp.accumulate(B, axis=1).ravel()
        suf = np.logaddexp.accumulate(B[:, ::-1], axis=1)[:, ::-1].ravel()
        s = np.arange(N)
        e = s + T - 1
        W = np.where(s % T == 0, pre[e], np.logaddexp(suf[s], pre[e]))
        massB = beta * (idx - t) + W
    return _Geo(T=T, PA=PA, pre=pre, suf=suf, massA=massA, massB=massB)


def log_toeplitz_geometric(h: np.ndarray, beta: float, t: float) -> np.ndarray:
    """As :func:`log_toeplitz_fft`, exactly in log space in O(n) (tilted prefix and window sums)."""
    g = _geo(h, beta, t)
    return np.logaddexp(g.massA, g.massB)


# --------------------------------------------------------------------------------------------
# forward pass
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Forward:
    """Result of the forward recursion: A (m, n+1), H (m, n+1), the final log weights and log Z."""

    cells: Cells
    beta: float
    targets: np.ndarray   # t_j = g_j n, j = 1..m+1 (index 0..m)
    A: np.ndarray
    H: np.ndarray
    last: np.ndarray      # H_m(l) + phi_{m+1}(n - l)
    log_z: float


def targets_of(quantiles: np.ndarray, n: int) -> np.ndarray:
    q = np.concatenate(([0.0], np.asarray(quantiles, dtype=np.float64), [1.0]))
    return np.diff(q) * n


def forward(cells: Cells, quantiles: np.ndarray, beta: float, recursion: str = "geometric") -> Forward:
    """The forward recursion of the module docstring (log space throughout)."""
    m = int(len(quantiles))
    n = cells.n
    N = n + 1
    t = targets_of(quantiles, n)
    phi0 = -beta * t                       # phi_j(0), j = 1..m+1 at index j-1
    idx = np.arange(N, dtype=np.float64)
    logr = cells.log_size
    A = np.empty((m, N))
    H = np.empty((m, N))
    # ACC[k-1] = R(l, k) - R(l, 0): the log measure added by k more outputs in the same cell
    ACC = np.empty((max(m - 1, 0), N))
    for k in range(1, m):
        ACC[k - 1] = cells.run_increment(k) + (ACC[k - 2] if k > 1 else 0.0)
    A[0] = logr - beta * np.abs(idx - t[0])
    H[0] = A[0]
    conv = log_toeplitz_geometric if recursion == "geometric" else log_toeplitz_fft
    for j in range(2, m + 1):
        A[j - 1] = logr + conv(H[j - 2], beta, t[j - 1])
        if recursion == "fft":
            A[j - 1, 0] = _NEG  # no cell below the first (FFT round-off)
        h = A[j - 1].copy()
        phi_sum = 0.0
        for k in range(1, j):
            phi_sum += phi0[j - k]          # phi_{j-k+1}(0)
            term = A[j - 1 - k] + ACC[k - 1]
            term += phi_sum
            # logaddexp only where the term can change h: exp(-_CUT) is below half an ulp of any
            # |h| >= 1 (and below 4e-18 absolute otherwise), so skipping the rest changes nothing
            with np.errstate(invalid="ignore"):
                live = term > h - _CUT
            if live.any():
                h[live] = np.logaddexp(h[live], term[live])
        H[j - 1] = h
    last = H[m - 1] - beta * np.abs((n - idx) - t[m])
    log_z = float(special.logsumexp(last))
    if not np.isfinite(log_z):
        raise ValueError("the output law has no mass (every cell has zero measure)")
    return Forward(cells=cells, beta=beta, targets=t, A=A, H=H, last=last, log_z=log_z)


# --------------------------------------------------------------------------------------------
# backward sampling
# --------------------------------------------------------------------------------------------


def _first_ge(arr: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Smallest p in [lo, hi] with arr[p] >= target (arr non-decreasing on [lo, hi]; hi if none)."""
    lo = lo.copy()
    hi = hi.copy()
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        ok = arr[mid] >= target
        hi = np.where(open_ & ok, mid, hi)
        lo = np.where(open_ & ~ok, mid + 1, lo)


def _last_ge(arr: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Largest p in [lo, hi] with arr[p] >= target (arr non-increasing on [lo, hi]; lo if none)."""
    lo = lo.copy()
    hi = hi.copy()
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = hi - (hi - lo) // 2
        ok = arr[mid] >= target
        lo = np.where(open_ & ok, mid, lo)
        hi = np.where(open_ & ~ok, mid - 1, hi)


def _log_u(rng: np.random.Generator, n: int) -> np.ndarray:
    """log of uniforms in (0, 1]."""
    return np.log1p(-rng.random(n))


def _sample_previous(g: _Geo, nxt: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Cells l' < nxt with probability proportional to exp(h(l') - beta |nxt - l' - t|), exactly."""
    s = nxt.size
    mA, mB = g.massA[nxt], g.massB[nxt]
    tot = np.logaddexp(mA, mB)
    useA = _log_u(rng, s) <= mA - tot
    out = np.empty(s, dtype=np.int64)
    T = g.T
    if useA.any():
        end = nxt[useA] - T - 1
        target = g.PA[end] + _log_u(rng, int(useA.sum()))
        out[useA] = np.minimum(np.searchsorted(g.PA, target, side="left"), end)
    b = ~useA
    if b.any():
        st = nxt[b]                    # window U[st .. st + T - 1] (U = h - beta l' front-padded by T)
        en = st + T - 1
        aligned = st % T == 0
        msuf = np.where(aligned, _NEG, g.suf[st])
        mpre = g.pre[en]
        use_suf = ~aligned & (_log_u(rng, st.size) <= msuf - np.logaddexp(msuf, mpre))
        p = np.empty(st.size, dtype=np.int64)
        lu = _log_u(rng, st.size)
        if use_suf.any():
            lo = st[use_suf]
            hi = (lo // T) * T + T - 1
            p[use_suf] = _last_ge(g.suf, lo, hi, g.suf[lo] + lu[use_suf])
        up = ~use_suf
        if up.any():
            hi = en[up]
            lo = (hi // T) * T
            p[up] = _first_ge(g.pre, lo, hi, g.pre[hi] + lu[up])
        out[b] = p - T
    return out


def sample_cells(fw: Forward, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` exact draws of the cell tuple (size, m), non-decreasing along each row."""
    m = fw.A.shape[0]
    cells = fw.cells
    out = np.empty((size, m), dtype=np.int64)
    cur = np.full(size, m, dtype=np.int64)       # quantile (1-based) whose cell is drawn next
    nxt = np.zeros(size, dtype=np.int64)         # cell of the following run (strictly above)
    phi0 = -fw.beta * fw.targets
    cols = np.arange(m)
    for j in range(m, 0, -1):
        sel = np.flatnonzero(cur == j)
        if sel.size == 0:
            continue
        if j == m:
            lj = sample_index(fw.last, sel.size, rng)
        else:
            g = _geo(fw.H[j - 1], fw.beta, float(fw.targets[j]))
            lj = _sample_previous(g, nxt[sel], rng)
        # run length k + 1 of quantile j's run: log weights alpha_j(l, k), k = 0..j-1
        logw = np.empty((sel.size, j))
        logw[:, 0] = fw.A[j - 1, lj]
        acc = np.zeros(sel.size)
        phi_sum = 0.0
        for k in range(1, j):
            phi_sum += phi0[j - k]
            acc += cells.run_increment(k, lj)
            logw[:, k] = fw.A[j - 1 - k, lj] + acc + phi_sum
        k = np.argmax(logw + rng.gumbel(size=logw.shape), axis=1)
        start = j - 1 - k                        # 0-based first column of the run
        mask = (cols[None, :] >= start[:, None]) & (cols[None, :] <= j - 1)
        rows = out[sel]
        rows[mask] = np.broadcast_to(lj[:, None], mask.shape)[mask]
        out[sel] = rows
        cur[sel] = start                         # next quantile to draw (1-based) = start
        nxt[sel] = lj
    return out


def _uniform_multisets(rows: np.ndarray, run_id: np.ndarray, pos: np.ndarray, length: np.ndarray,
                       npts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Offsets of uniformly random multisets: for each run (size r from N points) a sorted tuple,
    as a uniform r-subset of {0..N+r-2} shifted by its position (stars and bars); exact rejection
    on collisions, with ``rng.choice`` without replacement for runs that keep colliding."""
    off = np.zeros(rows.size, dtype=np.int64)
    M = npts + length - 1
    todo = np.flatnonzero((npts > 1) & (length > 1))
    single = (npts > 1) & (length == 1)
    off[single] = rng.integers(0, npts[single])
    for _ in range(30):
        if todo.size == 0:
            return off
        v = rng.integers(0, M[todo])
        order = np.lexsort((v, run_id[todo]))
        idxs, vs, rid = todo[order], v[order], run_id[todo][order]
        dup = np.zeros(idxs.size, dtype=bool)
        same = (rid[1:] == rid[:-1]) & (vs[1:] == vs[:-1])
        bad_runs = np.unique(rid[1:][same])
        dup = np.isin(rid, bad_runs)
        good = ~dup
        # within a run sorted ascending: the i-th smallest value minus i is the i-th multiset element
        rank = np.zeros(idxs.size, dtype=np.int64)
        if idxs.size:
            newrun = np.concatenate(([True], rid[1:] != rid[:-1]))
            starts = np.flatnonzero(newrun)
            runlen = np.diff(np.concatenate((starts, [idxs.size])))
            rank = np.arange(idxs.size) - np.repeat(starts, runlen)
        off[idxs[good]] = vs[good] - rank[good]
        todo = idxs[dup]
    # runs that kept colliding (tiny cells, long runs): exact draws one run at a time
    for r in np.unique(run_id[todo]):
        members = todo[run_id[todo] == r]
        members = members[np.argsort(pos[members])]
        v = np.sort(rng.choice(int(M[members[0]]), size=members.size, replace=False))
        off[members] = v - np.arange(members.size)
    return off


def place(fw: Forward, cell_rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Output values for cell tuples (size, m): uniform points in the gaps, sorted (continuous), or
    uniform multisets of each cell's grid points (grid)."""
    c = fw.cells
    if c.grid is None:
        lo = c.edges[cell_rows]
        hi = c.edges[cell_rows + 1]
        x = lo + (hi - lo) * rng.random(cell_rows.shape)
        x = np.minimum(np.maximum(x, lo), hi)
        return np.sort(x, axis=1)
    size, m = cell_rows.shape
    flat = cell_rows.ravel()
    row = np.repeat(np.arange(size), m)
    newrun = np.ones(flat.size, dtype=bool)
    same = (cell_rows[:, 1:] == cell_rows[:, :-1])
    newrun.reshape(size, m)[:, 1:] = ~same
    run_id = np.cumsum(newrun) - 1
    starts = np.flatnonzero(newrun)
    runlen = np.diff(np.concatenate((starts, [flat.size])))
    length = np.repeat(runlen, runlen)
    pos = np.arange(flat.size) - np.repeat(starts, runlen)
    npts = c.count[flat]
    off = _uniform_multisets(row, run_id, pos, length, npts, rng)
    k = c.first[flat] + off
    return np.sort(c.grid.values(k).reshape(size, m), axis=1)


# --------------------------------------------------------------------------------------------
# utility and exact log-density
# --------------------------------------------------------------------------------------------


def utility_of_cells(L: np.ndarray, targets: np.ndarray, n: int) -> np.ndarray:
    """u = -sum_j |L_j - L_{j-1} - t_j| for cell (count-below) tuples L (..., m)."""
    L = np.asarray(L, dtype=np.float64)
    shape = L.shape[:-1]
    full = np.concatenate((np.zeros(shape + (1,)), L, np.full(shape + (1,), float(n))), axis=-1)
    return -np.sum(np.abs(np.diff(full, axis=-1) - targets), axis=-1)


def log_density(fw: Forward, lower: float, upper: float, x: Any) -> np.ndarray:
    """Exact log density of sorted rows ``x`` (..., m): Lebesgue measure on sorted vectors of
    [lower, upper]^m (continuous) or counting measure on sorted grid vectors; -inf off the support
    (unsorted rows, points outside [lower, upper], off-grid points)."""
    c = fw.cells
    m = fw.A.shape[0]
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0 or x.shape[-1] != m:
        raise ValueError(f"x must have last axis of length m = {m} (one sorted row per output), got shape {x.shape}")
    ok = np.all(np.isfinite(x), axis=-1) & np.all((x >= lower) & (x <= upper), axis=-1)
    ok &= np.all(np.diff(x, axis=-1) >= 0, axis=-1)
    xx = np.where(np.isfinite(x), x, lower)
    if c.grid is None:
        L = np.searchsorted(c.keys, xx, side="left")
    else:
        g = c.grid
        k = np.rint((xx - g.lower) / g.step)
        on = np.abs(g.lower + g.step * k - xx) <= 1e-9 * np.maximum(1.0, np.abs(xx))
        ok &= np.all(on, axis=-1)
        L = np.searchsorted(c.keys, np.clip(k, 0, g.size).astype(np.int64), side="left")
    u = utility_of_cells(L, fw.targets, c.n)
    return np.where(ok, fw.beta * u - fw.log_z, _NEG)
