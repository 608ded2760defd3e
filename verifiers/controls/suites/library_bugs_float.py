"""Floating-point bugs of the library-bugs suite (:mod:`verifiers.controls.suites.library_bugs`):
rounding in a float sum and the porous textbook float Laplace, each beside its fixed twin."""

from __future__ import annotations

import itertools
import math
from functools import lru_cache, partial
from typing import Any

import numpy as np

from dpharness.mechanisms.base import check_data, check_epsilon
from dpharness.verifiers.controls.suites.base import SuiteEntry, suite_entry
from dpharness.verifiers.controls.suites.library_bugs_common import (
    SUITE, _check_size, _entry, _integer, _scalar, _two_sided_geometric,
)

__all__ = ["float_sum_worst_case", "float_sum_rounding", "float_sum_rounding_fixed", "float_laplace",
           "float_laplace_fixed"]


# --------------------------------------------------------------------------------------------
# 1. floating-point rounding in a sum (Casacuberta et al., CCS 2022)

_FS_LOWER = 2.0**52  # [2^52, 2^52 + 1] holds exactly two doubles; a sum of 16 of them lies near 2^56


@lru_cache(maxsize=8)
def float_sum_worst_case(n: int) -> tuple[float, tuple[float, ...], tuple[float, ...]]:
    """Exhaustive worst case of the sequential float64 sum of ``n`` records clamped to
    [2^52, 2^52 + 1] (the only two doubles there): the largest |fl_sum(D) - fl_sum(D')| over every
    ordered D in {L, U}^n and every D' whose multiset differs from D's in at most one record, in any
    order (``n`` <= 20: 2^n orderings), and the first pair attaining the largest in-place
    replacement (one record changed, order kept), returned as the exposing pair."""
    n = _check_size(n, "n", 2, 20)
    lo, hi = _FS_LOWER, _FS_LOWER + 1.0
    bits = np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.int64)
    sums = np.cumsum(np.where(bits == 1, hi, lo), axis=1)[:, -1]
    code = bits @ (np.int64(1) << np.arange(n - 1, -1, -1, dtype=np.int64))
    best, arg = -1.0, (0, 0)
    for p in range(n):
        other = code ^ (np.int64(1) << np.int64(n - 1 - p))
        gap = np.abs(sums - sums[other])
        i = int(np.argmax(gap))
        if gap[i] > best:
            best, arg = float(gap[i]), (i, int(other[i]))
    # Multiset neighbours in any order: k and k' (|k - k'| <= 1) records equal to U, any orderings
    # (k = k' is a pure reordering, which the multiset relation counts as distance 0).
    ones = bits.sum(axis=1)
    hi_k = np.array([sums[ones == k].max() for k in range(n + 1)])
    lo_k = np.array([sums[ones == k].min() for k in range(n + 1)])
    for k in range(n + 1):
        for k2 in (k - 1, k, k + 1):
            if 0 <= k2 <= n:
                best = max(best, float(hi_k[k] - lo_k[k2]))
    d1 = tuple(float(v) for v in np.where(bits[arg[0]] == 1, hi, lo))
    d2 = tuple(float(v) for v in np.where(bits[arg[1]] == 1, hi, lo))
    return best, d1, d2


def _float_sum_release(data: Any, size: int, rng: np.random.Generator, *, n: int, lower: float, upper: float,
                       scale: float) -> np.ndarray:
    x = check_data(data, allow_empty=True)
    if x.size != n:
        raise ValueError(f"the dataset size is public here (bounded DP): expected {n} records, got {x.size}")
    # sequential (recursive) summation, as a Python loop or np.cumsum does it -- not np.sum's pairwise
    s = np.cumsum(np.clip(x, lower, upper))[-1]
    return s + rng.laplace(scale=scale, size=size)


def _float_sum(name: str, epsilon: float, n: int, fixed: bool) -> SuiteEntry:
    eps = check_epsilon(epsilon)
    n = _check_size(n, "n", 2, 20)
    lower, upper = _FS_LOWER, _FS_LOWER + 1.0
    worst, d1, d2 = float_sum_worst_case(n)
    ideal = upper - lower
    # OpenDP's relaxation for a sequential f64 sum of at most n terms: 2 * n^2 / 2^52 * max(|L|, U)
    relax = 2.0 * n * n / 2.0**52 * max(abs(lower), abs(upper))
    sens = ideal + relax if fixed else ideal
    fn = partial(_float_sum_release, n=n, lower=lower, upper=upper, scale=sens / eps)
    true_eps = eps * worst / sens
    pair = (np.array(d1), np.array(d2))
    pair_gap = abs(float(np.cumsum(pair[1])[-1] - np.cumsum(pair[0])[-1]))
    attained = "attained in place by the pair" if pair_gap == worst else f"the in-place pair reaches {pair_gap:g}"
    why = (f"replacing one record (in place or with any reordering) moves the sequential float sum by at most "
           f"{worst:g}, {attained} (exhaustive over all 2^{n} orderings of {{2^52, 2^52 + 1}}^{n}), so the "
           "true epsilon is "
           f"epsilon * {worst:g} / sensitivity = {true_eps:.4g}; the release fl(s + Y) lies on the float grid "
           "(spacing 16 above 2^56, 8 below), which a shift by a multiple of 16 maps onto itself, so the cells "
           "far in either tail attain it")
    if fixed:
        note = (f"Fixed twin: sensitivity (U - L) + 2 n^2 max(|L|, U) / 2^52 = {sens:.6g} (OpenDP's relaxation). "
                f"Correct: {why}.")
    else:
        note = (f"Broken: claims sensitivity U - L = 1 for a known-size sum clamped to [2^52, 2^52 + 1]; {why}. "
                f"Exposing pair: the sum of d1 rounds down to 16 * 2^52, that of d2 (one record 2^52 -> "
                f"2^52 + 1) rounds {pair_gap:g} higher.")
    return _entry(name, fn, epsilon=eps, neighbours="replace_one", kind="real", pairs=(pair,), broken=not fixed,
                  true_epsilon=true_eps, note=note, bug_class="floating-point rounding in a sum (sensitivity)",
                  library=("OpenDP's rounding relaxation (make_sized_bounded_float_ordered_sum)" if fixed else
                           "diffprivlib, Google DP, SmartNoise, OpenDP (per Casacuberta et al.)"),
                  attributes={"lower": lower, "upper": upper, "size": n, "sensitivity_used": sens,
                              "rounding_worst_case": worst, "summation": "sequential float64"})


@suite_entry(SUITE, "float_sum_rounding")
def float_sum_rounding(epsilon: float = 0.02, n: int = 16) -> SuiteEntry:
    """BROKEN: clamp to [2^52, 2^52 + 1], sum sequentially in float64, add Laplace((U - L)/epsilon).

    Claim: epsilon-DP under ``replace_one`` with the size n public and sensitivity U - L = 1
    (the idealised known-size sensitivity). True epsilon = epsilon * W where W is the exhaustive
    worst case of the float sum's change (16 for n = 16: e.g. d1 sums 16 * 2^52 + 4 in the reals
    but rounds to 2^56, d2 sums 2^56 + 5 and rounds to 2^56 + 16). Attained in the tails: the
    release fl(s + Y) lies on a float grid of spacing <= 16 <= W, and shifting by whole cells
    gives cell-mass ratios of exactly e^{epsilon W} far from s.
    """
    return _float_sum("float_sum_rounding", epsilon, n, fixed=False)


@suite_entry(SUITE, "float_sum_rounding_fixed")
def float_sum_rounding_fixed(epsilon: float = 0.02, n: int = 16) -> SuiteEntry:
    """Fixed twin: the same float sum with OpenDP's sensitivity (U - L) + 2 n^2 max(|L|, U)/2^52
    (sequential f64 summation of at most n terms; Casacuberta et al., Section 5). True epsilon =
    epsilon * W / that sensitivity (about epsilon / 32 at n = 16)."""
    return _float_sum("float_sum_rounding_fixed", epsilon, n, fixed=True)


# --------------------------------------------------------------------------------------------
# 2. precision-based attack on a float Laplace (Mironov 2012; Haney et al. 2022; Jin et al. 2022)

def _textbook_laplace(data: Any, size: int, rng: np.random.Generator, *, scale: float) -> np.ndarray:
    return _scalar(data) + rng.laplace(0.0, scale, size=size)


def _integer_laplace(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> np.ndarray:
    x = _integer(data)
    return (x + _two_sided_geometric(rng, epsilon, size)).astype(np.float64)


@suite_entry(SUITE, "float_laplace")
def float_laplace(epsilon: float = 1.0) -> SuiteEntry:
    """BROKEN: the textbook float Laplace ``x + rng.laplace(0, 1/epsilon)``.

    Claim: epsilon-DP, ``value`` neighbours, sensitivity 1. True epsilon = inf (support bug on
    the doubles): for x = 1 and Y in [-1, -1/2], 1 + Y is computed exactly (Sterbenz), so every
    output in (0, 1/2] is a multiple of 2^-53, while for x = 0 the output Y itself mostly has set
    bits below 2^-53 there. The event "in (0, 1/2] with a bit below 2^-53" has positive
    probability under 0 and none under 1. Only bit-pattern events see it (``float_events=True``).
    """
    eps = check_epsilon(epsilon)
    fn = partial(_textbook_laplace, scale=1.0 / eps)
    return _entry("float_laplace", fn, epsilon=eps, neighbours="value", sensitivity=1.0, kind="real",
                  pairs=((0.0, 1.0),), broken=True, true_epsilon=math.inf, float_events=True,
                  note="Broken: support bug on the binary representation (pair 0 vs 1; e.g. outputs in (0, 1/2] "
                       "with a set bit below 2^-53 occur under 0 only). Invisible to events on the real value; "
                       "audited with float events.",
                  bug_class="floating-point precision (porous Laplace)", library="textbook numpy Laplace; "
                  "PINQ/Airavat/Fuzz/GUPT (Mironov); diffprivlib, SmartNoise Core, OpenDP (Haney et al.)",
                  attributes={"noise_scale": 1.0 / eps})


@suite_entry(SUITE, "float_laplace_fixed")
def float_laplace_fixed(epsilon: float = 1.0) -> SuiteEntry:
    """Fixed twin: integer data plus two-sided geometric (discrete Laplace) noise, released as a
    float64 integer (the integer-noise fix of Ghosh-Roughgarden-Sundararajan's geometric mechanism,
    as SmartNoise and OpenDP adopted for integers). Claim: epsilon-DP, ``value``, sensitivity 1.
    True epsilon = epsilon, attained (P[x + Z = k] ratios are exactly e^{+-epsilon} for a shift of
    1); every output is an integer double, so its bits are a function of the integer."""
    eps = check_epsilon(epsilon)
    fn = partial(_integer_laplace, epsilon=eps)
    return _entry("float_laplace_fixed", fn, epsilon=eps, neighbours="value", sensitivity=1.0, kind="real",
                  pairs=((0.0, 1.0),), broken=False, true_epsilon=eps, float_events=True,
                  note="Fixed twin: integer input, two-sided geometric noise; true epsilon = epsilon (attained). "
                       "Audited with float events: integer doubles leak nothing beyond the integer.",
                  bug_class="floating-point precision (porous Laplace)",
                  library="integer noise as in SmartNoise Core / OpenDP", attributes={"noise": "two-sided geometric"})
