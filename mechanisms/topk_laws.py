"""Exact sequence laws of the top-k selection mechanisms in :mod:`mechanisms.topk`.

Every function takes *scaled score gaps* ``z`` (one entry per candidate, ``-inf`` for a candidate
that can never be chosen; for the exponential mechanism z = eps' (u - max u) / (2 Delta), i.e. the
log weights) and ordered k-tuples of distinct candidate indices ``seqs`` (shape (M, k)), and returns
log-probabilities aligned with the rows of ``seqs``:

* :func:`plackett_luce_log_prob` -- peeling exponential mechanism = one-shot Gumbel top-k:
  P(i_1..i_k) = prod_j w_{i_j} / sum_{r not in {i_1..i_{j-1}}} w_r with log w = z, computed in log
  space (log-sum-exp over the remaining candidates, never a difference of sums);
* :func:`peeling_pf_log_prob` -- peeling permute-and-flip: the product over rounds of the exact
  permute-and-flip law (:func:`mechanisms.selection_laws.pf_log_prob`) on the candidates left;
* :func:`laplace_topk_log_prob` -- one-shot Laplace top-k by nested numerical integration (small
  supports only; accuracy stated there).

:func:`ordered_tuples` enumerates the support, all n!/(n-k)! ordered k-tuples, up to
:data:`SUPPORT_CAP` rows. For ``output="set"`` (the selected indices as an unordered k-subset, a
post-processing of the ordered release), :func:`k_subsets` enumerates the C(n, k) subsets under the
same cap on the n!/(n-k)! orderings they stand for, and :func:`set_log_prob` sums an ordered law
over the k! orderings of each subset.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable

import numpy as np
from scipy import special

from dpharness.mechanisms.selection_laws import pf_log_prob

__all__ = ["SUPPORT_CAP", "LAPLACE_SUPPORT_CAP", "n_ordered", "ordered_tuples", "k_subsets", "check_seqs",
           "set_log_prob", "plackett_luce_log_prob", "peeling_pf_log_prob", "laplace_topk_log_prob"]

#: Most ordered k-tuples ``support`` enumerates (n!/(n-k)!); beyond it use ``log_prob_of``.
SUPPORT_CAP = 10**6
#: Most ordered k-tuples the numerically integrated one-shot Laplace law is computed for at once.
LAPLACE_SUPPORT_CAP = 50_000
#: Width (in noise scales) below the top score that the one-shot Laplace integration grid covers.
_WINDOW = 800.0
#: Elements per temporary (rows x candidates) or (rows x grid points) matrix.
_CHUNK = 1 << 22


def n_ordered(n: int, k: int) -> int:
    """n!/(n-k)!, the number of ordered k-tuples of distinct elements of n."""
    return math.perm(n, k)


def ordered_tuples(n: int, k: int, cap: int = SUPPORT_CAP) -> np.ndarray:
    """All ordered k-tuples of distinct indices in range(n), shape (n!/(n-k)!, k), lexicographic.

    Raises ``ValueError`` when there are more than ``cap`` of them (say how many and what to use).
    """
    m = n_ordered(n, k)
    if m > cap:
        raise ValueError(f"the support has n!/(n-k)! = {m:,} ordered {k}-tuples of {n} candidates, more than the "
                         f"cap of {cap:,}: use log_prob_of(scores, seqs) for the sequences you need")
    out = np.fromiter(itertools.chain.from_iterable(itertools.permutations(range(n), k)), dtype=np.int64,
                      count=m * k)
    return out.reshape(m, k)


def k_subsets(n: int, k: int, cap: int = SUPPORT_CAP) -> np.ndarray:
    """All k-subsets of range(n) as ascending rows, shape (C(n, k), k), lexicographic.

    The set law of a subset is a sum over its k! orderings, so computing it touches all n!/(n-k)!
    ordered k-tuples: the subsets are refused (``ValueError``) under the same cap as
    :func:`ordered_tuples`, when n!/(n-k)! > ``cap``.
    """
    m = n_ordered(n, k)
    if m > cap:
        raise ValueError(f"the set law sums over the k! orderings of each of the {math.comb(n, k):,} {k}-subsets of "
                         f"{n} candidates, n!/(n-k)! = {m:,} ordered {k}-tuples, more than the cap of {cap:,}: "
                         "use log_prob_of(scores, sets) for the subsets you need")
    c = math.comb(n, k)
    out = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), k)), dtype=np.int64,
                      count=c * k)
    return out.reshape(c, k)


def set_log_prob(ordered_law: Callable[[np.ndarray, np.ndarray], np.ndarray], z: np.ndarray,
                 sets: np.ndarray) -> np.ndarray:
    """log P(set) = logsumexp over the k! orderings of each row of ``sets`` of ``ordered_law(z, seqs)``.

    One call of ``ordered_law`` on all M k! orderings (rows grouped by set), then a log-sum-exp per
    set; a set whose orderings all have probability 0 gets -inf.
    """
    m, k = sets.shape
    perms = np.array(list(itertools.permutations(range(k))), dtype=np.int64).reshape(-1, k)  # (k!, k)
    seqs = sets[:, perms].reshape(-1, k)  # row i * k! + p = sets[i] reordered by perms[p]
    lp = np.asarray(ordered_law(z, seqs), dtype=np.float64).reshape(m, perms.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        out = special.logsumexp(lp, axis=1) if m else np.zeros(0)
    return np.where(np.isnan(out), -np.inf, out)


def check_seqs(seqs: Any, n: int, k: int) -> np.ndarray:
    """``seqs`` as an (M, k) int64 array of distinct indices in range(n) per row, or ``ValueError``."""
    s = np.asarray(seqs)
    if s.ndim == 1:
        s = s.reshape(1, -1)
    if s.ndim != 2 or s.shape[1] != k:
        raise ValueError(f"seqs must have shape (M, {k}) (one ordered {k}-tuple of candidate indices per row), "
                         f"got shape {np.shape(seqs)}")
    if s.size and s.dtype.kind not in "iu":
        raise ValueError(f"seqs must hold integer candidate indices, got dtype {s.dtype}")
    s = s.astype(np.int64)
    if s.size and (s.min() < 0 or s.max() >= n):
        raise ValueError(f"seqs must hold candidate indices in [0, {n}), got values in [{s.min()}, {s.max()}]")
    if k > 1 and s.size:
        srt = np.sort(s, axis=1)
        if np.any(srt[:, 1:] == srt[:, :-1]):
            raise ValueError("seqs rows must not repeat a candidate (selection is without replacement)")
    return s


def _removed_mask(seqs: np.ndarray, j: int, n: int) -> np.ndarray:
    """(M, n) boolean: candidates chosen in rounds 0..j-1 of each row."""
    mask = np.zeros((seqs.shape[0], n), dtype=bool)
    if j:
        np.put_along_axis(mask, seqs[:, :j], True, axis=1)
    return mask


def plackett_luce_log_prob(z: Any, seqs: np.ndarray) -> np.ndarray:
    """log P(seq) of the Plackett--Luce law with log weights ``z`` for each row of ``seqs``.

    P(i_1..i_k) = prod_j exp(z_{i_j}) / sum_{r not chosen before round j} exp(z_r): the law of k
    rounds of the exponential mechanism without replacement, and of the top k of z + iid Gumbel
    (Durfee & Rogers, NeurIPS 2019, Sec. 4.1 "Exponential mechanism and Gumbel noise"; Yellott 1977). The normaliser of round j
    is a log-sum-exp over the candidates still in play (masked to -inf), so no difference of sums is
    formed and no cancellation occurs. O(M n k), in chunks of rows.
    """
    z = np.asarray(z, dtype=np.float64)
    n = z.size
    m, k = seqs.shape
    out = np.zeros(m)
    rows = max(1, _CHUNK // max(n, 1))
    for s in range(0, m, rows):
        sq = seqs[s : s + rows]
        acc = np.zeros(sq.shape[0])
        for j in range(k):
            masked = np.where(_removed_mask(sq, j, n), -np.inf, z[None, :])
            with np.errstate(invalid="ignore"):
                acc += z[sq[:, j]] - special.logsumexp(masked, axis=1)
        out[s : s + rows] = acc
    return np.where(np.isnan(out), -np.inf, out)


def peeling_pf_log_prob(z: Any, seqs: np.ndarray) -> np.ndarray:
    """log P(seq) of k rounds of permute-and-flip, each on the candidates not yet chosen.

    Round j's law is the exact permute-and-flip law (McKenna & Sheldon 2020, Alg. 1;
    :func:`mechanisms.selection_laws.pf_log_prob`, exact for <= 128 candidates, certified relative
    error <= 1e-13 beyond) of the log acceptance weights ``z`` restricted to the remaining set. A
    round's law depends only on the *set* already chosen, so each set is computed once (cache):
    at most sum_{j<k} C(n, j) calls.
    """
    z = np.asarray(z, dtype=np.float64)
    n = z.size
    m, k = seqs.shape
    cache: dict[tuple[int, ...], np.ndarray] = {}
    out = np.zeros(m)
    for j in range(k):
        keys = np.sort(seqs[:, :j], axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        table = np.empty((uniq.shape[0], n))
        for u_i, removed in enumerate(uniq):
            key = tuple(int(x) for x in removed)
            lp = cache.get(key)
            if lp is None:
                zz = z.copy()
                zz[list(key)] = -np.inf
                if np.all(np.isneginf(zz)):
                    lp = np.full(n, -np.inf)
                else:
                    lp = pf_log_prob(zz)
                cache[key] = lp
            table[u_i] = lp
        out += table[inv, seqs[:, j]]
    return out


def laplace_topk_log_prob(v: Any, seqs: np.ndarray, h: float = 0.0025, tail: float = 40.0) -> np.ndarray:
    """log P(the k largest of v_i + L_i, in order, are seq) for iid standard Laplace L_i.

    ``v`` is the score vector in units of the noise scale. With f, F the standard Laplace density
    and CDF and seq = (i_1..i_k),

        P = int_{y_1 > ... > y_k} prod_j f(y_j - v_{i_j}) prod_{s not in seq} F(y_k - v_s) dy,

    computed from the inside out: A_k(y) = f(y - v_{i_k}) prod_{s not in seq} F(y - v_s),
    B_j(y) = int_{-inf}^y A_j, A_{j-1}(y) = f(y - v_{i_{j-1}}) B_j(y), P = B_1(+inf). Every A_j is
    analytic between consecutive scores (the only kinks of f and F are at the scores), so the grid
    breaks at every score and each piece is integrated by cumulative Simpson with spacing <= ``h``;
    the line is cut ``tail`` scale units beyond the extreme scores (neglected mass <= e^-40).

    Accuracy: not certified. Measured absolute error per probability ~5e-13 (3e-13 at k = 1) at the default ``h``
    (against the certified report-noisy-max law at k = 1 and against direct quadrature,
    tests/mechanisms/test_topk.py); probabilities below ~1e-12 are not resolved relative to their
    size, and a sequence holding a candidate more than 800 scale units below the top gets 0.
    Meant for small supports (audits, tests): at most :data:`LAPLACE_SUPPORT_CAP` rows; cost
    O(M k (range / h)).
    """
    v = np.asarray(v, dtype=np.float64)
    m, k = seqs.shape
    if m > LAPLACE_SUPPORT_CAP:
        raise ValueError(f"the one-shot Laplace law is integrated numerically for at most {LAPLACE_SUPPORT_CAP:,} "
                         f"sequences at once, got {m:,}")
    out = np.full(m, -np.inf)
    fin = np.isfinite(v)
    ok = np.all(fin[seqs], axis=1)
    if not ok.any():
        return out
    vf = v[fin]
    # Scores more than _WINDOW scale units below the top are kept as factors (their CDF on the
    # grid is ~1) but get no grid of their own: a sequence containing one has probability
    # < e^-(_WINDOW - tail) and underflows to 0 (log -inf).
    lo = max(float(vf.min()), float(vf.max()) - _WINDOW) - tail
    hi = float(vf.max()) + tail
    brk = np.unique(np.concatenate([[lo, hi], vf[(vf > lo) & (vf < hi)]]))
    parts = []
    for a, c in zip(brk[:-1], brk[1:]):
        cnt = max(2, 2 * math.ceil((c - a) / (2 * h)))  # even number of intervals per piece
        parts.append(np.linspace(a, c, cnt + 1))
    y = np.concatenate([parts[0]] + [p[1:] for p in parts[1:]])
    starts = np.cumsum([0] + [p.size - 1 for p in parts])  # node index of each piece's left end

    def log_cdf(x: np.ndarray) -> np.ndarray:
        return np.where(x < 0, math.log(0.5) + np.minimum(x, 0.0), np.log1p(-0.5 * np.exp(-np.abs(x))))

    def cumint(fvals: np.ndarray) -> np.ndarray:
        from scipy import integrate  # here, not at import (~0.1 s)

        res = np.empty_like(fvals)
        res[:, 0] = 0.0
        for pi, p in enumerate(parts):
            a, e = starts[pi], starts[pi + 1]
            seg = integrate.cumulative_simpson(fvals[:, a : e + 1], x=p, axis=1, initial=0.0)
            res[:, a : e + 1] = res[:, a : a + 1] + seg
        return res

    lf_all = math.log(0.5) - np.abs(y[None, :] - vf[:, None])  # (n_fin, G) log density per candidate
    lF_all = log_cdf(y[None, :] - vf[:, None])  # (n_fin, G)
    sum_lF = lF_all.sum(axis=0)
    pos = np.cumsum(fin) - 1  # index among finite candidates
    sq_all = pos[seqs[ok]]
    res = np.empty(sq_all.shape[0])
    rows = max(1, _CHUNK // y.size)
    for s in range(0, sq_all.shape[0], rows):
        sq = sq_all[s : s + rows]
        # A_k: own density times the CDFs of everyone not in the sequence.
        lA = lf_all[sq[:, -1]] + sum_lF[None, :] - lF_all[sq].sum(axis=1)
        B = cumint(np.exp(lA))
        for j in range(k - 2, -1, -1):
            B = cumint(np.exp(lf_all[sq[:, j]]) * B)
        res[s : s + rows] = B[:, -1]
    with np.errstate(divide="ignore"):
        out[ok] = np.log(np.clip(res, 0.0, None))
    return out
