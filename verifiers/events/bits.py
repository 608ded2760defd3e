"""Exact bit-pattern labels of doubles (the data of :mod:`verifiers.events.floats`).

Every output ``y`` gets ``(sign, binade, low)``: the sign bit, ``E`` with ``2^(E-1) <= |y| < 2^E``,
and the exponent ``k`` of the lowest set bit (the largest ``k`` with ``y`` in ``2^k Z``), read from
the bits of the double. This module imports nothing of the event machinery, so the event objects
(:mod:`.core`) can evaluate float events without a cycle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["float_labels", "describe_label", "label_keys", "contains", "ZERO", "INF", "NAN", "FLOAT_KINDS"]

#: The event kinds of the ``floats`` family: bit-pattern labels and sampler reachability
#: (:mod:`verifiers.events.floats`, :mod:`verifiers.events.reachable`).
FLOAT_KINDS = frozenset({"float", "reachable"})

#: ``binade`` (and ``low``) of +-0.0, +-inf and NaN: outside the range of finite doubles' exponents
#: (-1073 .. 1024), so each is a label of its own.
ZERO, INF, NAN = -2000, 2000, 3000


def float_labels(y: Any) -> np.ndarray:
    """``(n, 3)`` int64 array of ``(sign, binade, low)`` per output (see the module docstring).

    Exact for every double, subnormals included: the lowest set bit is read from the significand's
    bits, not computed in floating point."""
    v = np.ascontiguousarray(np.asarray(y, dtype=np.float64).reshape(-1))
    u = v.view(np.uint64)
    sign = (u >> np.uint64(63)).astype(np.int64)
    biased = ((u >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    frac = u & np.uint64((1 << 52) - 1)
    sig = np.where(biased > 0, frac | np.uint64(1 << 52), frac)
    low_bit = sig & (~sig + np.uint64(1))  # the lowest set bit of the significand, as a power of 2
    # frexp of an exact power of two gives its exponent exactly (uint64 -> float64 is exact for 2^j)
    tz = np.frexp(low_bit.astype(np.float64))[1].astype(np.int64) - 1
    low = np.maximum(biased, 1) - 1075 + tz
    binade = np.frexp(v)[1].astype(np.int64)
    zero = v == 0.0
    nan = np.isnan(v)
    inf = np.isinf(v)
    for mask, code in ((zero, ZERO), (inf, INF), (nan, NAN)):
        binade[mask] = code
        low[mask] = code
    sign[nan] = 0  # NaN payloads and signs are not compared: one "no answer" label
    return np.stack([sign, binade, low], axis=1)


def describe_label(label: tuple) -> str:
    """Human-readable form of one label: ``(sign, binade, low)`` or the lattice label ``(sign, low)``."""
    if len(label) == 2:
        s, low = label
        sg = "-" if s else "+"
        if low in (ZERO, INF, NAN):
            return {ZERO: f"{sg}0", INF: f"{sg}inf", NAN: "nan"}[low]
        return f"{sg}, lowest set bit 2^{low}"
    s, e, low = label
    sg = "-" if s else "+"
    if e in (ZERO, INF, NAN):
        return {ZERO: f"{sg}0", INF: f"{sg}inf", NAN: "nan"}[e]
    return f"{sg}[2^{e - 1}, 2^{e}), lowest set bit 2^{low}"


def label_keys(labels: np.ndarray) -> np.ndarray:
    """One int64 per label row (every column is within +-2^14 of 0, so 16 bits each are enough)."""
    out = np.zeros(labels.shape[0], dtype=np.int64)
    for j in range(labels.shape[1]):
        out = (out << 16) | (labels[:, j] + (1 << 15))
    return out


def contains(values: tuple, y: np.ndarray) -> np.ndarray:
    """Which outputs ``y`` (already reduced to one value per draw) carry one of the labels ``values``."""
    labels = float_labels(y)
    if not values:
        return np.zeros(labels.shape[0], dtype=bool)
    if len(values[0]) == 2:
        labels = labels[:, [0, 2]]
    return np.isin(label_keys(labels), label_keys(np.asarray(values, dtype=np.int64).reshape(len(values), -1)))

