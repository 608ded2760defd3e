"""Events on the binary representation of released doubles (floating-point leaks).

A release computed in floating point can carry its input in the low-order bits of the double even
when its *real value* is perfectly private (Mironov, "On significance of the least significant
bits for differential privacy", CCS 2012). Example: ``y = x + Y`` with ``Y`` Laplace. For ``x = 1``
and ``Y`` in [-1, -1/2], ``1 + Y`` is computed exactly (Sterbenz's lemma), so every output in
(0, 1/4) is a multiple of 2^-53; for ``x = 0`` the output ``Y`` itself mostly is not (its last bit
lies below 2^-53). The event "the lowest set bit of y is below 2^-53" then has positive probability
under one input and none under the other: an infinite loss, invisible to every threshold,
interval or atom on the real value.

Every output ``y`` gets a label of three integers (:func:`float_labels`):

* ``sign`` -- 0 for +, 1 for - (the sign bit, so -0.0 differs from +0.0);
* ``binade`` -- ``E`` with ``2^(E-1) <= |y| < 2^E`` (``numpy.frexp``'s exponent);
* ``low`` -- the exponent ``k`` of the lowest set bit of ``y``: the largest ``k`` with
  ``y`` in the lattice ``2^k Z`` (``low <= binade - 1``; ``binade - low - 1`` is the number of
  significant bits in use, so "trailing zero bits of the significand" is ``low - binade + 53``).

Zeros, infinities and NaN get labels of their own (:data:`ZERO`, :data:`INF`, :data:`NAN` as the
``binade``). Two label families are candidates, each as single labels and as prefix unions ranked
by the empirical ratio (:func:`verifiers.events.finite.set_candidates`): the full label
``(sign, binade, low)`` -- "a double of this binade whose last set bit is 2^low" -- and the lattice
label ``(sign, low)`` -- "y in 2^low Z but not in 2^(low+1) Z", pooled over binades. A union of
labels is any set of such bit patterns, e.g. "in (0, 1/4) and not a multiple of 2^-53".

Soundness is that of every other family: a label is a function of the output, so an event on
labels is an event on outputs; it is chosen on the selection draws and certified on fresh ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpharness.verifiers.events import bits
from dpharness.verifiers.events.bits import float_labels, label_keys
from dpharness.verifiers.events.core import Candidates, LabelEvent, concat
from dpharness.verifiers.events.families import Draws, Family, register
from dpharness.verifiers.events.finite import set_candidates
from dpharness.verifiers.events.reachable import reachable_candidates

__all__ = ["float_candidates", "float_labels", "FLOAT_VECTOR_WIDTH", "BitPattern", "FLOAT_FAMILY"]

#: Rows of at most this many coordinates get bit-pattern events per coordinate (each coordinate's
#: labels are candidates of their own; about 1,100 candidates and 20 ms per coordinate at 10^5
#: draws). Parameter vectors of released models are this narrow; wider rows get none.
FLOAT_VECTOR_WIDTH = 64


class BitPattern(LabelEvent):
    """The bit-pattern label of v (the output, or coordinate ``coord`` of rows) is one of ``values``:
    ``(sign, binade, low)`` labels or lattice labels ``(sign, low)`` (:func:`float_labels`)."""

    kinds = ("float",)

    def contains(self, y: Any) -> np.ndarray:
        y = np.asarray(y)
        return bits.contains(self.values, y.reshape(y.shape[0], -1)[:, self.coord] if self.coord >= 0 else y)

    def describe(self) -> str:
        v = "y" if self.coord < 0 else f"y[{self.coord}]"
        labs = "; ".join(bits.describe_label(x) for x in self.values[:4])
        more = f"; ... ({len(self.values)} bit patterns)" if len(self.values) > 4 else ""
        return f"{{bits of {v}: {labs}{more}}}"


def _label_block(l1: np.ndarray, l2: np.ndarray, coord: int) -> Candidates:
    both = np.concatenate([l1, l2])
    # labels compared through one int64 key each: np.unique on a 1-D array, not rows (several times faster)
    _, first, inv = np.unique(label_keys(both), return_index=True, return_inverse=True)
    vals = both[first]
    inv = inv.reshape(-1)
    k = len(vals)
    n1 = np.bincount(inv[: len(l1)], minlength=k)
    n2 = np.bincount(inv[len(l1):], minlength=k)
    return set_candidates(n1, n2, [tuple(r) for r in vals.tolist()], kind="float", coord=coord)


def float_candidates(y1: Any, y2: Any, coord: int = -1) -> Candidates:
    """Candidate events on the bit patterns of real outputs ``y1``/``y2`` (selection draws under D
    and D'): every ``(sign, binade, low)`` label and every lattice label ``(sign, low)``, each with
    prefix unions ranked by the empirical ratio in both directions. ``coord`` >= 0 reads that
    coordinate of vector rows."""
    a = np.asarray(y1, dtype=np.float64)
    b = np.asarray(y2, dtype=np.float64)
    if coord >= 0:
        a = a.reshape(a.shape[0], -1)[:, coord]
        b = b.reshape(b.shape[0], -1)[:, coord]
    l1, l2 = float_labels(a), float_labels(b)
    full = _label_block(l1, l2, coord)
    lattice = _label_block(l1[:, [0, 2]], l2[:, [0, 2]], coord)
    return concat([full, lattice])


class Floats(Family):
    """Opt-in (``float_events=True``, on by default for library adapters): the bit-pattern labels of
    real outputs, and of every coordinate of float rows of at most :data:`FLOAT_VECTOR_WIDTH`."""

    name = "floats"
    order = 40
    laws = ("real",)
    presets = ()

    def candidates(self, d: Draws) -> list[Candidates]:
        if not d.rows:
            return [float_candidates(d.y1, d.y2), *reachable_candidates(d.y1, d.y2, d.context)]
        if np.asarray(d.y1).dtype.kind != "f" or d.width > FLOAT_VECTOR_WIDTH:
            return []
        return [float_candidates(d.y1, d.y2, coord=j) for j in range(d.width)]


FLOAT_FAMILY = register(Floats())
