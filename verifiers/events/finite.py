"""Events on finite outputs: every output on its own and prefix unions of outputs ranked by their
empirical ratio (both ways); label rows (2-D outputs) count each distinct row as one label."""

from __future__ import annotations

import numpy as np

from dpharness.verifiers.events.core import _K, Candidates, _row_keys

__all__ = ["finite_candidates", "set_candidates", "row_candidates", "UNION_CAP"]

#: For finite outputs, unions are prefixes (by empirical ratio) of at most this many outputs.
UNION_CAP = 256


def set_candidates(n1: np.ndarray, n2: np.ndarray, labels: list, kind: str = "set", coord: int = -1) -> Candidates:
    """Every label on its own and prefix unions of labels ranked by empirical ratio (both ways)."""
    k = len(labels)
    c1 = [n1]
    c2 = [n2]
    sets: list[tuple] = [(v,) for v in labels]
    if k > 1:
        # Unions: for each direction, labels sorted by the smoothed ratio, longest first useful.
        for num, den in ((n1, n2), (n2, n1)):
            order = np.argsort(-(np.log(num + 0.5) - np.log(den + 0.5)), kind="stable")[: min(k - 1, UNION_CAP)]
            if order.size < 2:
                continue
            c1.append(np.cumsum(n1[order])[1:])
            c2.append(np.cumsum(n2[order])[1:])
            vl = [labels[int(i)] for i in order]
            sets.extend(tuple(vl[: j + 1]) for j in range(1, order.size))
    c1a = np.concatenate(c1).astype(np.int64)
    c2a = np.concatenate(c2).astype(np.int64)
    nan = np.full(c1a.size, np.nan)
    return Candidates(c1=c1a, c2=c2a, kinds=np.full(c1a.size, _K[kind]), lo=nan, hi=nan, sets=tuple(sets),
                      coord=coord)


def finite_candidates(y1: np.ndarray, y2: np.ndarray) -> Candidates:
    """Every output on its own, and prefix unions of outputs ranked by empirical ratio (both ways).

    Outputs may be label rows (2-D arrays, one row per draw): each distinct row is one label."""
    y1 = np.asarray(y1)
    y2 = np.asarray(y2)
    if y1.ndim >= 2:
        return row_candidates(y1.reshape(y1.shape[0], -1), y2.reshape(y2.shape[0], -1), "set")
    vals, inv = np.unique(np.concatenate([y1, y2]), return_inverse=True)
    inv = inv.reshape(-1)
    k = vals.size
    n1 = np.bincount(inv[: y1.size], minlength=k)
    n2 = np.bincount(inv[y1.size:], minlength=k)
    return set_candidates(n1, n2, vals.tolist())


def row_candidates(r1: np.ndarray, r2: np.ndarray, kind: str, cap: int | None = None) -> Candidates | None:
    """Every distinct row as a label (with unions); None when there are more than ``cap`` of them
    (counted before any label tuple is built)."""
    both = np.concatenate([r1, r2])
    if both.dtype == object:
        labels_all = [tuple(r) for r in both.tolist()]
        uniq = sorted(set(labels_all), key=repr)
        index = {v: i for i, v in enumerate(uniq)}
        inv = np.fromiter((index[v] for v in labels_all), dtype=np.int64, count=len(labels_all))
        labels = uniq
    else:
        keys = _row_keys(both)
        if keys is not None:
            _, first, inv = np.unique(keys[0], return_index=True, return_inverse=True)
            vals = both[first]
        else:
            vals, inv = np.unique(both, axis=0, return_inverse=True)
        if cap is not None and len(vals) > cap:
            return None
        inv = inv.reshape(-1)
        labels = [tuple(r) for r in vals.tolist()]
    k = len(labels)
    n1 = np.bincount(inv[: len(r1)], minlength=k)
    n2 = np.bincount(inv[len(r1):], minlength=k)
    return set_candidates(n1, n2, labels, kind=kind)

