"""Definitional oracle for the Duff utility: breadth-first search over add/remove edits.

Datasets are multisets over the integer universe {0, ..., V-1}, stored as count vectors in the box
{0..C}^V. For a target output o and statistic T, ``bfs_distance`` runs a multi-source BFS from every
multiset S' with T(S') = o (checked from the order statistics of the counts, no closed form) over
the graph "add one record / remove one record": dist[S] = min |S Δ S'| = -u(S, o).

Truncation to the box can only make distances larger; dist[S] is exact whenever
max_v S_v + dist[S] <= C (a shorter path in the unbounded graph would stay inside the box), and
:func:`exact_cases` keeps only those datasets. Data values are restricted to {1..V-2} and o to the
same range so records below and above o can always be added (as over the reals).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

INF = 10**6


def valid_mask(counts: np.ndarray, o: int, a: int, b: int, definition: str) -> np.ndarray:
    """T(S') = o for every S' in the box (counts has the value axis first), q = a/b."""
    N = counts.sum(0)
    L = counts[:o].sum(0)
    E = counts[o]
    G = N - L - E
    if definition in ("lower", "upper"):
        # r-th smallest record is o  <=>  #(< o) < r <= #(<= o);  r = ceil(qN) or floor(qN) + 1
        r = -((-a * N) // b) if definition == "lower" else (a * N) // b + 1
        return (N >= 1) & (L < r) & (r <= L + E)
    # o is a q-quantile: #(< o) <= qN and #(> o) <= (1 - q)N
    return (N >= 1) & (b * L <= a * N) & (b * G <= (b - a) * N)


@lru_cache(maxsize=None)
def _grid(V: int, C: int) -> np.ndarray:
    return np.indices((C + 1,) * V)


@lru_cache(maxsize=None)
def bfs_distance(V: int, C: int, o: int, a: int, b: int, definition: str) -> np.ndarray:
    """dist[S] for every S in the box {0..C}^V (INF if not reached inside the box)."""
    counts = _grid(V, C)
    d = np.where(valid_mask(counts, o, a, b, definition), 0, INF)
    while True:  # one BFS layer per pass: relax along +-1 in every coordinate
        new = d.copy()
        for ax in range(V):
            up = tuple(slice(1, None) if i == ax else slice(None) for i in range(V))
            dn = tuple(slice(None, -1) if i == ax else slice(None) for i in range(V))
            np.minimum(new[up], d[dn] + 1, out=new[up])
            np.minimum(new[dn], d[up] + 1, out=new[dn])
        if np.array_equal(new, d):
            return d
        d = new


def exact_cases(V: int, C: int, o: int, a: int, b: int, definition: str, nmax: int):
    """(counts [k, V], dist [k]) for datasets with values in 1..V-2, 1 <= n <= nmax, exact dist."""
    counts = _grid(V, C)
    d = bfs_distance(V, C, o, a, b, definition)
    N = counts.sum(0)
    m = (counts[0] == 0) & (counts[V - 1] == 0) & (N >= 1) & (N <= nmax)
    m &= counts.max(0) + d <= C
    return counts[:, m].T.copy(), d[m]


def counts_to_data(counts: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(counts.size), counts).astype(np.float64)
