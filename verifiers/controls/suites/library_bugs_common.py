"""What every entry of the library-bugs suite shares (:mod:`verifiers.controls.suites.library_bugs`):
the suite's name, where each bug was documented (:data:`SOURCES`), the input checks of the samplers,
the entry builder :func:`_entry` and the two-sided geometric noise several fixes use."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpharness.verifiers.controls.suites.base import SuiteEntry
from dpharness.verifiers.wrap import wrap

__all__ = ["SUITE", "SOURCES"]

SUITE = "library_bugs"

#: Where each bug was documented (library, versions, report).
SOURCES: dict[str, str] = {
    "float_sum_rounding": (
        "Casacuberta, Shoemate, Vadhan, Wagaman: Widespread Underestimation of Sensitivity in Differentially "
        "Private Libraries and How to Fix It, ACM CCS 2022 (arXiv:2207.10635): float sums in diffprivlib, "
        "Google differential-privacy, SmartNoise, OpenDP and others (versions of mid-2022); the exposing pair "
        "here is derived by us. Fix: OpenDP's make_sized_bounded_float_ordered_sum (rounding relaxation "
        "2 n^2 max(|L|, U) / 2^52 for sequential f64 sums), OpenDP >= 0.6; google/differential-privacy#126, #127"),
    "float_laplace": (
        "Mironov: On Significance of the Least Significant Bits for Differential Privacy, ACM CCS 2012 (PINQ, "
        "Airavat, Fuzz, GUPT); Haney, Desfontaines, Hartman, Shrestha, Hay: Precision-based attacks and "
        "interval refining, TPDP 2022 (arXiv:2207.13793; diffprivlib, SmartNoise Core, OpenDP as of 2022); Jin, "
        "McMurtry, Rubinstein, Ohrimenko: Are We There Yet? Timing and Floating-Point Attacks on Differential "
        "Privacy Systems, IEEE S&P 2022; IBM/differential-privacy-library#19 (diffprivlib's Laplace, 2020-21)"),
    "rr_bool": (
        "opendp/opendp#480 'make_randomized_response_bool fix' (June 2022): OpenDP's Rust "
        "make_randomized_response_bool (OpenDP 0.5.x era, code as of commit 0213ef7) returned "
        "'if bernoulli(p) {arg} else {bernoulli(p)}'; the issue gives the fix 'else {!arg}'"),
    "gaussian_replace_one": (
        "google/differential-privacy#378 'Sensitivity off by a factor of 2 with replace_one neighbouring "
        "relation' (Dec 2025, dp_accounting Python package at commit 406de87): GaussianDpEvent's noise "
        "multiplier is s/C, C the per-record norm bound, and the RDP accountant uses it unchanged under "
        "REPLACE_ONE, where the L2 sensitivity is 2C; fix proposed in PR #464 (open when we read it)"),
    "covariance_no_clip": (
        "opendp/smartnoise-sdk#622 'Covariance Clipping Bug' (Feb 2026; snsynth DPcovariance.release: "
        "censor_data/fill_missing build new_data, the covariance is then computed on the original data); "
        "fixed by smartnoise-sdk PR #624; reported with Cebere, Erb, Desfontaines, Bellet, Fitzsimons: "
        "Privacy in Theory, Bugs in Practice, PETS 2026 (arXiv:2602.17454)"),
    "mean_noise_from_n": (
        "opendp/smartnoise-core#355 and #356 (Kifer, April 2021): SmartNoise Core's sensitivity whitepaper "
        "(whitepapers/sensitivities/mean/mean.pdf) derives an add/remove sensitivity (U - L)/n of the mean "
        "from the current dataset's n; the issue recommends noisy sum / noisy count"),
    "linreg_diag_sensitivity": (
        "IBM/differential-privacy-library#105 'Sensitivity Misscalibration for Linear Regression' and #104 "
        "(2025-26): diffprivlib models/linear_regression.py _construct_regression_obj uses "
        "np.max(np.abs([bounds_X[0][i], bounds_X[0][i]])) ** 2 for the X_i^2 coefficient; present in "
        "diffprivlib 0.6.6 (checked); fix proposed in PR #110"),
    "privbayes_count_noise": (
        "DataResponsibly/DataSynthesizer#34 'Wrong Conditional Distributions Sensitivity' (March 2021, "
        "DataSynthesizer 0.1.4): PrivBayes.py adds Laplace noise of scale 2 (d - k)/(n epsilon), derived for "
        "probabilities, to counts before normalising them"),
    "geometric_unclamped": (
        "opendp/smartnoise-core#319 'fix circumvention of the simple geometric mechanism' and PR #318 "
        "(Nov 2020), #358 (June 2021): sample_simple_geometric_mechanism censors the geometric at "
        "max - min trials; without the clamp added by #318, min == max gives zero noise"),
    "count_threshold_truncation": (
        "google/differential-privacy PR #101 'Fix a privacy-impacting bug in ThresholdedResult() function of "
        "dpagg.Count' (Go library, Feb 2022): the float threshold was converted to int64 by truncation, so a "
        "noisy count equal to floor(threshold) was released -- an off-by-one in the threshold that raises delta. "
        "Fix: round the threshold up before converting"),
}



# --------------------------------------------------------------------------------------------
# helpers

def _scalar(data: Any, name: str = "data") -> float:
    """One finite real number (``ValueError`` otherwise, strings included)."""
    try:
        x = None if isinstance(data, (str, bytes)) else np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        x = None
    if x is None or x.size != 1 or not np.isfinite(x).all():
        raise ValueError(f"{name} must be one finite real number, got {data!r}")
    return float(x.reshape(()))


def _integer(data: Any, name: str = "data") -> int:
    v = _scalar(data, name)
    if v != math.floor(v) or abs(v) > 2**52:
        raise ValueError(f"{name} must be an integer (|x| <= 2^52), got {data!r}")
    return int(v)


def _check_size(n: Any, name: str, lo: int, hi: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not lo <= n <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {n!r}")
    return int(n)


def _check_prob(p: Any, name: str, lo: float, hi: float) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) or not lo < float(p) < hi:
        raise ValueError(f"{name} must be a number in ({lo}, {hi}), got {p!r}")
    return float(p)


def _entry(name: str, fn: Any, *, epsilon: float, neighbours: str, kind: str, pairs: tuple, broken: bool,
           true_epsilon: float, note: str, bug_class: str, library: str, delta: float = 0.0,
           sensitivity: float | None = None, float_events: bool = False, attributes: dict | None = None) -> SuiteEntry:
    """Wrap ``fn`` with its claim and the bug's metadata; ``name`` ending in ``_fixed`` is a twin."""
    twin = name.removesuffix("_fixed")
    attrs = {"bug_class": bug_class, "library": library, "twin": f"{twin}_fixed" if twin == name else twin,
             **(attributes or {})}
    mech = wrap(fn, epsilon=epsilon, delta=delta, neighbours=neighbours, sensitivity=sensitivity, kind=kind,
                name=f"{SUITE}/{name}", attributes=attrs, float_events=float_events)
    return SuiteEntry(suite=SUITE, name=name, mechanism=mech, pairs=tuple(pairs), broken=broken,
                      true_epsilon=true_epsilon, published={}, source=SOURCES[twin], note=note)


def _two_sided_geometric(rng: np.random.Generator, epsilon: float, size: int) -> np.ndarray:
    """P[Z = k] = (1 - a)/(1 + a) a^|k|, a = e^-epsilon: the difference of two Geometric(1 - a)."""
    p = -math.expm1(-epsilon)
    return rng.geometric(p, size=size) - rng.geometric(p, size=size)
