"""Sensitivity bugs of the library-bugs suite (:mod:`verifiers.controls.suites.library_bugs`): noise
calibrated to the wrong sensitivity (a replace-one Gaussian sum, a covariance of unclipped data, a mean
whose noise uses the private n, a sensitivity taken from the wrong bound, probability-scale noise on
counts), each beside its fixed twin, with the exact Gaussian laws their true epsilons come from."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from dpharness.mechanisms.base import check_data, check_epsilon
from dpharness.verifiers.controls.suites.base import SuiteEntry, suite_entry
from dpharness.verifiers.controls.suites.library_bugs_common import SUITE, _check_prob, _check_size, _entry

__all__ = [
    "rdp_gaussian_epsilon", "gaussian_exact_epsilon", "gaussian_exact_delta", "gaussian_replace_one",
    "gaussian_replace_one_fixed", "covariance_no_clip", "covariance_no_clip_fixed", "mean_noise_from_n",
    "mean_noise_from_n_fixed", "linreg_diag_sensitivity", "linreg_diag_sensitivity_fixed", "privbayes_count_noise",
    "privbayes_count_noise_fixed",
]


# --------------------------------------------------------------------------------------------
# exact laws of the Gaussian mechanism (the true epsilons of entry 4)

def _phi(x: float) -> float:
    """Standard normal CDF (erfc keeps the lower tail accurate)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def gaussian_exact_delta(epsilon: float, mu: float) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism whose sensitivity is ``mu`` standard deviations
    (Balle, Wang, ICML 2018, Theorem 8): Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)."""
    return _phi(mu / 2 - epsilon / mu) - math.exp(epsilon) * _phi(-mu / 2 - epsilon / mu)


def gaussian_exact_epsilon(delta: float, mu: float) -> float:
    """The smallest epsilon with :func:`gaussian_exact_delta` <= delta (bisection; delta(eps) decreases)."""
    lo, hi = 0.0, 1.0
    while gaussian_exact_delta(hi, mu) > delta:
        hi *= 2.0
    if gaussian_exact_delta(lo, mu) <= delta:
        return 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gaussian_exact_delta(mid, mu) > delta else (lo, mid)
    return hi


#: RDP orders of the conversion below (a grid like the accountants'; the minimum barely moves with it).
_RDP_ORDERS = np.concatenate([1.0 + np.arange(1, 100) / 10.0, np.arange(12, 64, dtype=np.float64), [128.0, 256.0, 512.0]])


def rdp_gaussian_epsilon(noise_multiplier: float, delta: float) -> float:
    """The epsilon an RDP accountant reports at ``delta`` for one Gaussian step of noise multiplier z
    (RDP alpha / (2 z^2), converted with eps = rdp - (log delta + log alpha)/(alpha - 1) +
    log((alpha - 1)/alpha), minimised over the orders; Canonne, Kamath, Steinke 2020, Prop. 12 --
    the conversion dp_accounting's RdpAccountant uses)."""
    a = _RDP_ORDERS
    eps = a / (2.0 * noise_multiplier**2) - (math.log(delta) + np.log(a)) / (a - 1.0) + np.log((a - 1.0) / a)
    return float(np.min(eps))


# --------------------------------------------------------------------------------------------
# 4. noise one sensitivity unit short: replace-one Gaussian sum (google/differential-privacy#378)

def _gaussian_sum(data: Any, size: int, rng: np.random.Generator, *, clip: float, sigma: float) -> np.ndarray:
    s = float(np.sum(np.clip(check_data(data, allow_empty=True), -clip, clip)))
    return s + rng.normal(0.0, sigma, size=size)


def _gaussian_replace_one(name: str, noise_multiplier: float, delta: float, fixed: bool) -> SuiteEntry:
    z = _check_prob(noise_multiplier, "noise_multiplier", 0.0, math.inf)
    delta = _check_prob(delta, "delta", 0.0, 0.1)
    clip = 1.0
    claim = rdp_gaussian_epsilon(z, delta)
    sigma = z * (2.0 * clip if fixed else clip)
    true_eps = gaussian_exact_epsilon(delta, 2.0 * clip / sigma)
    fn = partial(_gaussian_sum, clip=clip, sigma=sigma)
    pairs = ((np.array([clip, clip, clip, clip]), np.array([-clip, clip, clip, clip])),)
    if fixed:
        note = (f"Fixed twin: sigma = z * 2C = {sigma:g} for the replace-one L2 sensitivity 2C; the RDP claim "
                f"{claim:.4g} is loose: the exact epsilon at delta = {delta:g} is {true_eps:.4g} (Balle-Wang).")
    else:
        note = (f"Broken: sigma = z * C = {sigma:g}, accounted as if the sensitivity were C; under replace-one a "
                f"record moves from +C to -C (2C). Claimed (RDP, z = {z:g}): epsilon = {claim:.4g} at delta = "
                f"{delta:g}; exact for sensitivity 2C (Balle-Wang): {true_eps:.4g}, i.e. delta at the claimed "
                f"epsilon is {gaussian_exact_delta(claim, 2.0 * clip / sigma):.3g}.")
    return _entry(name, fn, epsilon=claim, delta=delta, neighbours="replace_one", kind="real", pairs=pairs,
                  broken=not fixed, true_epsilon=true_eps, note=note,
                  bug_class="noise one sensitivity unit short (C instead of 2C under replace-one)",
                  library="Google differential-privacy: dp_accounting (Python)",
                  attributes={"clip": clip, "noise_multiplier": z, "sigma": sigma, "lower": -clip, "upper": clip})


@suite_entry(SUITE, "gaussian_replace_one")
def gaussian_replace_one(noise_multiplier: float = 2.0, delta: float = 1e-5) -> SuiteEntry:
    """BROKEN: sum of records clipped to [-C, C] plus N(0, (z C)^2), with the (epsilon, delta) an
    RDP accountant gives for noise multiplier z (RDP alpha/(2 z^2)) -- under ``replace_one``, where
    the L2 sensitivity is 2C, so the real multiplier is z/2.

    Claim at z = 2, delta = 1e-5: epsilon = 2.17. True epsilon at delta = 1e-5: 4.38 (exact
    Gaussian privacy profile with sensitivity/sigma = 2/z = 1, Balle-Wang Theorem 8); the exact
    delta at the claimed epsilon is 0.014.
    """
    return _gaussian_replace_one("gaussian_replace_one", noise_multiplier, delta, fixed=False)


@suite_entry(SUITE, "gaussian_replace_one_fixed")
def gaussian_replace_one_fixed(noise_multiplier: float = 2.0, delta: float = 1e-5) -> SuiteEntry:
    """Fixed twin: sigma = z * 2C, the same RDP claim; true epsilon at delta = 1e-5 is 1.99 < 2.17."""
    return _gaussian_replace_one("gaussian_replace_one_fixed", noise_multiplier, delta, fixed=True)


# --------------------------------------------------------------------------------------------
# 5. missing clipping: SmartNoise Synth's DP covariance (smartnoise-sdk#622)

def _covariance(data: Any, size: int, rng: np.random.Generator, *, n: int, lower: float, upper: float,
                scale: float, clipped: bool) -> np.ndarray:
    x = check_data(data, allow_empty=True)
    if x.size != n:
        raise ValueError(f"the number of rows is public here (n = {n}, as DPcovariance's num_rows), got {x.size}")
    censored = np.clip(x, lower, upper)
    # the bug: the censored copy is computed, then the covariance is taken on the original data
    value = float(np.cov(censored if clipped else x))
    return value + rng.laplace(scale=scale, size=size)


def _covariance_entry(name: str, epsilon: float, n: int, fixed: bool) -> SuiteEntry:
    eps = check_epsilon(epsilon)
    n = _check_size(n, "n", 2, 10**6)
    lower, upper = 0.0, 1.0
    sens = 2.0 / n * (upper - lower) ** 2  # snsynth covariance_sensitivity: 2/n * diff_i * diff_j
    fn = partial(_covariance, n=n, lower=lower, upper=upper, scale=sens / eps, clipped=fixed)
    base = np.zeros(n)
    out = base.copy()
    out[-1] = 3.0
    pairs = ((base, out),)
    if fixed:
        note = ("Fixed twin: covariance of the clipped data. With one column the sample variance (ddof = 1) moves "
                "by at most (U-L)^2/n under replace-one (the replaced point moves from the others' mean to the far "
                "bound: (n-1)/n (U-L)^2 / (n-1)), half the declared 2 (U-L)^2/n: true epsilon = epsilon/2, attained "
                "by [0]*(n-1) + [0] vs [0]*(n-1) + [1] (the pair's outlier 3 clips to 1).")
    else:
        note = ("Broken: the variance of the *unclipped* data has unbounded sensitivity, true epsilon = inf. The "
                f"pair [0]*{n} vs [0]*{n - 1} + [3] moves it by 0.9 = {0.9 / sens:g} x the declared sensitivity "
                f"{sens:g}: pair loss {0.9 / sens * eps:g}.")
    return _entry(name, fn, epsilon=eps, neighbours="replace_one", kind="real", pairs=pairs, broken=not fixed,
                  true_epsilon=eps / 2.0 if fixed else math.inf, note=note, bug_class="missing clipping",
                  library="SmartNoise SDK (snsynth DPcovariance)" + (" after PR #624" if fixed else ""),
                  attributes={"lower": lower, "upper": upper, "size": n, "sensitivity_used": sens,
                              "output": "one-column covariance (sample variance, ddof 1) + Laplace"})


@suite_entry(SUITE, "covariance_no_clip")
def covariance_no_clip(epsilon: float = 1.0, n: int = 10) -> SuiteEntry:
    """BROKEN: snsynth's DPcovariance.release for one column: np.cov of the *unclipped* data plus
    Laplace(2 (U-L)^2 / (n epsilon)), bounds [0, 1], n public (``replace_one``).

    True epsilon = inf (no bound on the data reaching np.cov). Exposing pair: [0]*10 vs
    [0]*9 + [3], variance 0 vs 0.9 = 4.5 declared sensitivities: pair loss 4.5 epsilon.
    """
    return _covariance_entry("covariance_no_clip", epsilon, n, fixed=False)


@suite_entry(SUITE, "covariance_no_clip_fixed")
def covariance_no_clip_fixed(epsilon: float = 1.0, n: int = 10) -> SuiteEntry:
    """Fixed twin (smartnoise-sdk PR #624): the covariance of the clipped copy. True epsilon =
    epsilon / 2 (sample-variance sensitivity (U-L)^2/n against the declared 2 (U-L)^2/n)."""
    return _covariance_entry("covariance_no_clip_fixed", epsilon, n, fixed=True)


# --------------------------------------------------------------------------------------------
# 6. sensitivity from the wrong count: a mean whose noise uses the dataset's n (smartnoise-core#355)

def _mean_from_n(data: Any, size: int, rng: np.random.Generator, *, lower: float, upper: float,
                 epsilon: float) -> np.ndarray:
    x = np.clip(check_data(data, allow_empty=True), lower, upper)
    if x.size == 0:
        raise ValueError("the mean of an empty dataset is undefined; data must hold at least one record")
    return float(np.mean(x)) + rng.laplace(scale=(upper - lower) / (x.size * epsilon), size=size)


def _sum_and_count(data: Any, size: int, rng: np.random.Generator, *, lower: float, upper: float,
                   epsilon: float) -> np.ndarray:
    x = np.clip(check_data(data, allow_empty=True), lower, upper)
    half = epsilon / 2.0
    s = float(np.sum(x)) + rng.laplace(scale=max(abs(lower), abs(upper)) / half, size=size)
    c = float(x.size) + rng.laplace(scale=1.0 / half, size=size)
    return np.stack([s, c], axis=1)


_MEAN_PAIRS = ((np.array([0.5]), np.array([0.5, 0.5])), (np.array([0.0]), np.array([0.0, 1.0])))


@suite_entry(SUITE, "mean_noise_from_n")
def mean_noise_from_n(epsilon: float = 1.0) -> SuiteEntry:
    """BROKEN: mean of data clamped to [0, 1] plus Laplace((U - L)/(n epsilon)) with n = |D|, claimed
    epsilon-DP under ``add_remove``.

    True epsilon = inf: neighbours have different n, hence different Laplace scales b and b' < b,
    and the density ratio e^{|y - m|/b' - |y - m'|/b} b/b' grows without bound in the tails (not a
    support bug: every output is possible under both). Exposing pair [0.5] vs [0.5, 0.5]: equal
    means, scales 1/epsilon vs 1/(2 epsilon); P[|y - 0.5| > t] = e^{-epsilon t} vs e^{-2 epsilon t}.
    """
    eps = check_epsilon(epsilon)
    fn = partial(_mean_from_n, lower=0.0, upper=1.0, epsilon=eps)
    return _entry("mean_noise_from_n", fn, epsilon=eps, neighbours="add_remove", kind="real", pairs=_MEAN_PAIRS,
                  broken=True, true_epsilon=math.inf,
                  note="Broken: the noise scale depends on the private n; the loss is unbounded in the tails "
                       "(true epsilon = inf, finite at every output). Pair [0.5] vs [0.5, 0.5]: tail event "
                       "|y - 0.5| > t has loss epsilon * t.",
                  bug_class="sensitivity from the wrong count (n of the dataset under add/remove)",
                  library="SmartNoise Core (sensitivity whitepaper, 2021)",
                  attributes={"lower": 0.0, "upper": 1.0})


@suite_entry(SUITE, "mean_noise_from_n_fixed")
def mean_noise_from_n_fixed(epsilon: float = 1.0) -> SuiteEntry:
    """Fixed twin (the issue's recommendation): release (noisy sum, noisy count), each with
    epsilon/2: Laplace(max(|L|, |U|)/(epsilon/2)) on the clamped sum, Laplace(1/(epsilon/2)) on the
    count; the mean is their ratio (post-processing). Output ``(n, 2)``. True epsilon = epsilon,
    attained (adding a record at U = 1 shifts both coordinates by one full scale unit)."""
    eps = check_epsilon(epsilon)
    fn = partial(_sum_and_count, lower=0.0, upper=1.0, epsilon=eps)
    return _entry("mean_noise_from_n_fixed", fn, epsilon=eps, neighbours="add_remove", kind="real",
                  pairs=_MEAN_PAIRS, broken=False, true_epsilon=eps,
                  note="Fixed twin: noisy sum and noisy count at epsilon/2 each (output (sum, count)); true "
                       "epsilon = epsilon, attained by adding a record at the upper bound.",
                  bug_class="sensitivity from the wrong count (n of the dataset under add/remove)",
                  library="SmartNoise Core", attributes={"lower": 0.0, "upper": 1.0})


# --------------------------------------------------------------------------------------------
# 7. diffprivlib LinearRegression: sensitivity of sum x^2 from the lower bound only (diffprivlib#105)

def _folded_sum_of_squares(data: Any, size: int, rng: np.random.Generator, *, lower: float, upper: float,
                           scale: float) -> np.ndarray:
    x = np.clip(check_data(data, allow_empty=True), lower, upper)
    value = float(np.sum(x * x))
    # diffprivlib's LaplaceFolded with lower=0, upper=inf: values below 0 are reflected to -value
    return np.abs(value + rng.laplace(scale=scale, size=size))


def _linreg(name: str, epsilon: float, lower: float, upper: float, fixed: bool) -> SuiteEntry:
    eps = check_epsilon(epsilon)
    if not (math.isfinite(lower) and math.isfinite(upper) and 0.0 < lower < upper):
        raise ValueError(f"bounds must satisfy 0 < lower < upper (finite), got ({lower!r}, {upper!r})")
    declared = max(abs(lower), abs(upper)) ** 2 if fixed else max(abs(lower), abs(lower)) ** 2
    true_sens = max(abs(lower), abs(upper)) ** 2  # adding a record at U adds U^2 (lower > 0)
    fn = partial(_folded_sum_of_squares, lower=lower, upper=upper, scale=declared / eps)
    base = np.full(10, lower)
    pairs = ((base, np.append(base, upper)),)
    true_eps = eps * true_sens / declared
    if fixed:
        note = ("Fixed twin: sensitivity max(|L|, |U|)^2; true epsilon = epsilon (supremum; the fold at 0 only "
                "lowers ratios).")
    else:
        note = (f"Broken: sensitivity max(|L|, |L|)^2 = {declared:g} instead of max(|L|, |U|)^2 = {true_sens:g} "
                f"(bounds ({lower:g}, {upper:g})): true epsilon = epsilon * (U/L)^2 = {true_eps:g}, approached when "
                "the sum is far above the fold at 0 (pair [L]*10 vs [L]*10 + [U]). With lower = 0 the declared "
                "sensitivity is 0 and the release is exact (support bug), the issue's own example.")
    return _entry(name, fn, epsilon=eps, neighbours="add_remove", kind="real", pairs=pairs, broken=not fixed,
                  true_epsilon=true_eps, note=note, bug_class="sensitivity from the wrong bound",
                  library="diffprivlib LinearRegression " + ("with PR #110" if fixed else "<= 0.6.6"),
                  attributes={"lower": lower, "upper": upper, "sensitivity_used": declared,
                              "output": "noisy sum of x_i^2 (the X_i X_i objective coefficient), folded at 0"})


@suite_entry(SUITE, "linreg_diag_sensitivity")
def linreg_diag_sensitivity(epsilon: float = 0.5, lower: float = 2.0, upper: float = 4.0) -> SuiteEntry:
    """BROKEN: the X_i X_i coefficient of diffprivlib's LinearRegression objective: sum x^2 of data
    clipped to [L, U] plus LaplaceFolded(sensitivity max(|L|, |L|)^2, lower 0).

    Claim: ``epsilon`` is that coefficient's share (LinearRegression(epsilon=3 eps) with one feature
    and one target gives each of its three coefficients eps), ``add_remove``. True epsilon =
    epsilon (U/L)^2 = 4 epsilon = 2.0 at bounds (2, 4): adding a record at U moves the sum by
    U^2 = 16 against a declared 4; the fold is a post-processing and the Laplace tail ratio
    e^{16 epsilon/4} is approached far above 0.
    """
    return _linreg("linreg_diag_sensitivity", epsilon, lower, upper, fixed=False)


@suite_entry(SUITE, "linreg_diag_sensitivity_fixed")
def linreg_diag_sensitivity_fixed(epsilon: float = 0.5, lower: float = 2.0, upper: float = 4.0) -> SuiteEntry:
    """Fixed twin (diffprivlib PR #110): sensitivity max(|L|, |U|)^2. True epsilon = epsilon."""
    return _linreg("linreg_diag_sensitivity_fixed", epsilon, lower, upper, fixed=True)


# --------------------------------------------------------------------------------------------
# 8. DataSynthesizer PrivBayes: probability-scale noise on counts (DataSynthesizer#34)

def _noisy_counts(data: Any, size: int, rng: np.random.Generator, *, n: int, categories: int,
                  scale: float) -> np.ndarray:
    x = check_data(data, allow_empty=True)
    if x.size != n or np.any(x != np.round(x)) or np.any((x < 0) | (x >= categories)):
        raise ValueError(f"data must be {n} category labels in 0..{categories - 1} (the number of tuples is "
                         f"public), got {x.size} records with values {np.unique(x).tolist()[:10]}")
    counts = np.bincount(x.astype(np.int64), minlength=categories).astype(np.float64)
    return counts[None, :] + rng.laplace(scale=scale, size=(size, categories))


def _privbayes(name: str, epsilon: float, n: int, categories: int, fixed: bool) -> SuiteEntry:
    eps = check_epsilon(epsilon)
    n = _check_size(n, "n", 2, 10**6)
    categories = _check_size(categories, "categories", 2, 1000)
    # PrivBayes' scale 2 (d - k)/(n epsilon) with one distribution (d - k = 1); counts need 2/epsilon
    scale = 2.0 / eps if fixed else 2.0 / (n * eps)
    fn = partial(_noisy_counts, n=n, categories=categories, scale=scale)
    base = np.zeros(n)
    moved = base.copy()
    moved[-1] = 1.0
    true_eps = eps if fixed else n * eps
    note = ("Fixed twin: scale 2/epsilon on counts (L1 sensitivity 2 under replace-one); true epsilon = epsilon, "
            "attained." if fixed else
            f"Broken: scale 2/(n epsilon) = {scale:g} on counts whose replace-one L1 sensitivity is 2: true epsilon "
            f"= n epsilon = {true_eps:g}, attained by moving one record between two cells. We release the noisy "
            "counts; DataSynthesizer normalises them (post-processing, which can only lower the loss).")
    return _entry(name, fn, epsilon=eps, neighbours="replace_one", kind="real", pairs=((base, moved),),
                  broken=not fixed, true_epsilon=true_eps, note=note,
                  bug_class="sensitivity from the wrong count (probability-scale noise on counts)",
                  library="DataSynthesizer (PrivBayes) " + ("with the fix of #34" if fixed else "0.1.4"),
                  attributes={"size": n, "categories": categories, "noise_scale": scale})


@suite_entry(SUITE, "privbayes_count_noise")
def privbayes_count_noise(epsilon: float = 0.1, n: int = 10, categories: int = 3) -> SuiteEntry:
    """BROKEN: counts of one categorical attribute (n public tuples, ``replace_one``) plus Laplace of
    scale 2/(n epsilon) -- PrivBayes' noise for *probabilities* (L1 sensitivity 2/n) added to
    counts (L1 sensitivity 2). True epsilon = n epsilon = 1.0 at n = 10, epsilon = 0.1, attained
    by [0]*10 vs [0]*9 + [1]: two cells move by 1 each, an L1 shift of 2 against the scale
    2/(n epsilon)."""
    return _privbayes("privbayes_count_noise", epsilon, n, categories, fixed=False)


@suite_entry(SUITE, "privbayes_count_noise_fixed")
def privbayes_count_noise_fixed(epsilon: float = 0.1, n: int = 10, categories: int = 3) -> SuiteEntry:
    """Fixed twin (the issue's fix): scale 2/epsilon on counts. True epsilon = epsilon, attained."""
    return _privbayes("privbayes_count_noise_fixed", epsilon, n, categories, fixed=True)
