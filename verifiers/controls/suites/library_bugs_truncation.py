"""Truncation bugs of the library-bugs suite (:mod:`verifiers.controls.suites.library_bugs`): geometric
noise censored at the caller's bounds without clamping, and a float threshold truncated to an integer,
each beside its fixed twin."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from dpharness.mechanisms.base import check_epsilon
from dpharness.verifiers.controls.suites.base import SuiteEntry, suite_entry
from dpharness.verifiers.controls.suites.library_bugs_common import SUITE, _entry, _integer, _two_sided_geometric

__all__ = ["geometric_unclamped", "geometric_unclamped_fixed", "count_threshold_truncation",
           "count_threshold_truncation_fixed", "threshold_delta"]


# --------------------------------------------------------------------------------------------
# 9. SmartNoise Core's simple geometric mechanism without the clamp (smartnoise-core#318/#319)

def _geometric(data: Any, size: int, rng: np.random.Generator, *, epsilon: float, lo: int, hi: int,
               clamp: bool) -> np.ndarray:
    x = _integer(data)
    if clamp:
        x = min(max(x, lo), hi)
    k = hi - lo  # the sampler stops after max - min trials: the noise is censored at +-(max - min)
    z = np.clip(_two_sided_geometric(rng, epsilon, size), -k, k)
    out = x + z
    return np.clip(out, lo, hi).astype(np.int64) if clamp else out.astype(np.int64)


def _geometric_entry(name: str, epsilon: float, lo: int, hi: int, fixed: bool) -> SuiteEntry:
    eps = check_epsilon(epsilon)
    if isinstance(lo, bool) or isinstance(hi, bool) or not isinstance(lo, (int, np.integer)) \
            or not isinstance(hi, (int, np.integer)) or lo > hi:
        raise ValueError(f"bounds must be integers with min <= max, got ({lo!r}, {hi!r})")
    fn = partial(_geometric, epsilon=eps, lo=int(lo), hi=int(hi), clamp=fixed)
    pairs = ((int(hi), int(hi) + 1), (int(lo), int(lo) + 1))
    note = ("Fixed twin: clamp the count to [min, max], add the censored noise, clamp the output. For x in [min, max] "
            "censoring at max - min changes nothing after the clamp, so this is the truncated geometric mechanism: "
            "true epsilon = epsilon, attained." if fixed else
            f"Broken: x + Z with Z censored at +-(max - min) = +-{int(hi) - int(lo)} and no clamp, so x + 1 reaches "
            "x + 1 + (max - min), which x never does: support bug, true epsilon = inf (pairs max vs max + 1, min "
            "vs min + 1). With min == max the noise is identically 0.")
    return _entry(name, fn, epsilon=eps, neighbours="value", sensitivity=1.0, kind="finite", pairs=pairs,
                  broken=not fixed, true_epsilon=eps if fixed else math.inf, note=note,
                  bug_class="noise truncated at caller bounds without clamping (support)",
                  library="SmartNoise Core (Rust runtime) " + ("after PR #318" if fixed else "before PR #318 (2020)"),
                  attributes={"min": int(lo), "max": int(hi), "lower": int(lo), "upper": int(hi)})


@suite_entry(SUITE, "geometric_unclamped")
def geometric_unclamped(epsilon: float = 1.0, lo: int = 0, hi: int = 4) -> SuiteEntry:
    """BROKEN: SmartNoise Core's ``sample_simple_geometric_mechanism`` as released before PR #318:
    noise 0 w.p. (1 - a)/(1 + a), else a random sign times a geometric censored at max - min trials
    (a = e^-epsilon; the law of the two-sided geometric clipped to [-(max - min), max - min]), added
    to an integer statistic with no clamp. Claim: epsilon-DP, ``value``, sensitivity 1. True
    epsilon = inf (support): x = max + 1 can output max + 1 + (max - min), x = max cannot."""
    return _geometric_entry("geometric_unclamped", epsilon, lo, hi, fixed=False)


@suite_entry(SUITE, "geometric_unclamped_fixed")
def geometric_unclamped_fixed(epsilon: float = 1.0, lo: int = 0, hi: int = 4) -> SuiteEntry:
    """Fixed twin (PR #318, #358): clamp input and output to [min, max]. True epsilon = epsilon."""
    return _geometric_entry("geometric_unclamped_fixed", epsilon, lo, hi, fixed=True)


# --------------------------------------------------------------------------------------------
# off-by-one threshold of a thresholded count (Google differential-privacy, Go dpagg.Count)

def threshold_delta(epsilon: float, threshold: int) -> float:
    """P[1 + Z >= threshold] for the two-sided geometric Z (P[Z = z] ~ e^(-epsilon |z|)): the chance
    that a partition holding one privacy unit is released, i.e. the delta of the thresholded count
    on the pair (partition absent, one unit). P[Z >= k] = a^k / (1 + a), a = e^-epsilon, for k >= 1."""
    k = int(threshold) - 1
    a = math.exp(-epsilon)
    return 1.0 if k <= 0 else a ** k / (1.0 + a)


def _thresholded_count(data: Any, size: int, rng: np.random.Generator, *, epsilon: float, threshold: float,
                       truncate: bool) -> np.ndarray:
    n = len(np.asarray(data).reshape(-1))
    if n == 0:  # the partition does not exist: nothing is released
        return np.full(size, np.nan)
    noisy = n + _two_sided_geometric(rng, epsilon, size)
    cut = int(threshold) if truncate else math.ceil(threshold)  # int() truncates: the bug
    return np.where(noisy >= cut, noisy.astype(np.float64), np.nan)


def _threshold_entry(name: str, epsilon: float, delta: float, fixed: bool) -> SuiteEntry:
    eps = check_epsilon(epsilon)
    if not (isinstance(delta, (int, float)) and 0.0 < float(delta) < 0.5):
        raise ValueError(f"delta must be a number in (0, 0.5), got {delta!r}")
    # the threshold computed in floating point from the noise's tail, a^t / (1 + a) = delta, as the
    # library computes its threshold from its noise: a non-integer for almost every (epsilon, delta).
    # Rounded up it is exactly right (the tail at ceil(t) is <= delta); truncated it is one short.
    a = math.exp(-eps)
    tau = 1.0 + math.log(1.0 / (float(delta) * (1.0 + a))) / eps
    fn = partial(_thresholded_count, epsilon=eps, threshold=tau, truncate=not fixed)
    used = threshold_delta(eps, math.ceil(tau) if fixed else int(tau))
    pairs = ((np.zeros(0), np.zeros(1)),)
    if fixed:
        note = (f"Fixed twin: release when the noisy count >= ceil(threshold) = {math.ceil(tau)} (threshold "
                f"{tau:.4f} at epsilon {eps:g}, delta {float(delta):g}); a one-unit partition is released with "
                f"probability {used:.4g} <= delta, and present partitions differ by the geometric's epsilon: true "
                "epsilon = epsilon at the claimed delta.")
    else:
        note = (f"Broken: release when the noisy count >= int(threshold) = {int(tau)} (threshold {tau:.4f}); a "
                f"one-unit partition is released with probability {used:.4g} > delta = {float(delta):g} while an "
                "absent one never is, so no epsilon meets the claimed delta on the pair ([], [x]): true epsilon "
                "= inf at that delta (the true delta is about e^epsilon times the claimed one).")
    return _entry(name, fn, epsilon=eps, delta=float(delta), neighbours="add_remove", kind="real", pairs=pairs,
                  broken=not fixed, true_epsilon=eps if fixed else math.inf, note=note,
                  bug_class="off-by-one in a threshold (float threshold truncated to an integer)",
                  library="Google differential-privacy, Go dpagg.Count " + ("after PR #101" if fixed else
                                                                           "before PR #101 (Feb 2022)"),
                  attributes={"threshold": tau, "release_probability": used})


@suite_entry(SUITE, "count_threshold_truncation")
def count_threshold_truncation(epsilon: float = 1.0, delta: float = 0.01) -> SuiteEntry:
    """BROKEN: a thresholded count (partition selection) as Google's Go ``dpagg.Count.ThresholdedResult``
    released it before PR #101: a partition's count + two-sided geometric noise is released when it is
    at least the threshold, but the float threshold was truncated to an integer, so the noisy count
    floor(threshold) was released too. Claim: (epsilon, delta)-DP under add/remove of one privacy unit
    (one record here). True epsilon at the claimed delta = inf: the release probability of a one-unit
    partition exceeds delta while an absent partition is never released (:func:`threshold_delta`).
    delta = 0.01 by default so that the excess (a factor up to e^epsilon on delta) shows within 10^5
    draws; at the library's usual 10^-5 the same excess needs about 10^8."""
    return _threshold_entry("count_threshold_truncation", epsilon, delta, fixed=False)


@suite_entry(SUITE, "count_threshold_truncation_fixed")
def count_threshold_truncation_fixed(epsilon: float = 1.0, delta: float = 0.01) -> SuiteEntry:
    """Fixed twin (PR #101): the threshold is rounded up before the comparison. True epsilon = epsilon."""
    return _threshold_entry("count_threshold_truncation_fixed", epsilon, delta, fixed=True)
