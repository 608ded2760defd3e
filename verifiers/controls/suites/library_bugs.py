"""Privacy bugs of released DP libraries as audit targets (suite ``"library_bugs"`` of
:mod:`verifiers.suites.base`).

Each bug documented publicly for a released library (paper, security advisory, GitHub issue) is
re-implemented here from its public description, in numpy, beside its **fixed twin** (a separate
entry with ``broken=False``): the same computation with the fix the library adopted or the
reporter proposed. Every entry carries the pair(s) that expose the bug, the true privacy loss
(``math.inf`` when it is unbounded or a support bug; derived in the factory's docstring and the
entry's ``note`` when finite), the ``source`` (library, versions, where it was reported) and a
bug class (``mechanism.attributes["bug_class"]``; also ``"library"`` and ``"twin"``).

These are re-implementations of the *descriptions*, not the libraries' code: where the description
leaves a detail open (a version range, which code path used a formula), the note says so.

The bugs (broken entry / fixed twin):

* ``float_sum_rounding`` -- a bounded sum of known size whose sequential float rounding makes one
  record move the sum by 16 when the stated sensitivity is U - L = 1 (Casacuberta, Shoemate, Vadhan,
  Wagaman, CCS 2022); twin: OpenDP's rounding relaxation of the sensitivity.
* ``float_laplace`` -- textbook ``x + rng.laplace(0, 1/eps)``: its low-order bits tell 0 from 1
  (Mironov, CCS 2012; Haney et al., TPDP 2022; Jin et al., S&P 2022); twin: integer data and
  two-sided geometric noise. Audited with float events (``float_events=True``).
* ``rr_bool`` -- OpenDP's boolean randomized response drew its "lie" from Bernoulli(p), so it
  could repeat the truth (opendp#480); twin: the lie is the negation.
* ``gaussian_replace_one`` -- a Gaussian-noised clipped sum accounted with L2 sensitivity C under
  replace-one, where it is 2C (google/differential-privacy#378, dp_accounting); twin: noise for 2C.
* ``covariance_no_clip`` -- SmartNoise Synth's DP covariance clipped a copy of the data and then
  computed on the unclipped data (smartnoise-sdk#622); twin: computes on the clipped copy.
* ``mean_noise_from_n`` -- a mean under add/remove whose Laplace scale (U - L)/(n epsilon) uses
  the dataset's own n (SmartNoise Core sensitivity whitepaper, smartnoise-core#355/#356); twin:
  noisy sum and noisy count.
* ``linreg_diag_sensitivity`` -- diffprivlib's LinearRegression took max(|L|, |L|)^2 as the
  sensitivity of sum x_i^2 (diffprivlib#104/#105, present in 0.6.6); twin: max(|L|, |U|)^2.
* ``privbayes_count_noise`` -- DataSynthesizer's PrivBayes added noise of scale 2/(n epsilon),
  meant for probabilities, to counts (DataSynthesizer#34, 0.1.4); twin: scale 2/epsilon.
* ``geometric_unclamped`` -- SmartNoise Core's geometric mechanism censored its noise at the
  caller's (max - min) without clamping, so min == max meant no noise (smartnoise-core#318/#319);
  twin: input and output clamped to [min, max].
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache, partial
from typing import Any

import numpy as np

from dpharness.mechanisms.base import check_data, check_epsilon
from dpharness.verifiers.controls.suites.base import SuiteEntry, suite_entry
from dpharness.verifiers.wrap import wrap

__all__ = [
    "SOURCES", "float_sum_worst_case", "rdp_gaussian_epsilon", "gaussian_exact_epsilon", "gaussian_exact_delta",
    "rr_bool_true_epsilon",
    "float_sum_rounding", "float_sum_rounding_fixed", "float_laplace", "float_laplace_fixed",
    "rr_bool", "rr_bool_fixed", "gaussian_replace_one", "gaussian_replace_one_fixed",
    "covariance_no_clip", "covariance_no_clip_fixed", "mean_noise_from_n", "mean_noise_from_n_fixed",
    "linreg_diag_sensitivity", "linreg_diag_sensitivity_fixed", "privbayes_count_noise",
    "privbayes_count_noise_fixed", "geometric_unclamped", "geometric_unclamped_fixed", "count_threshold_truncation",
    "count_threshold_truncation_fixed", "threshold_delta",
]

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


def _two_sided_geometric(rng: np.random.Generator, epsilon: float, size: int) -> np.ndarray:
    """P[Z = k] = (1 - a)/(1 + a) a^|k|, a = e^-epsilon: the difference of two Geometric(1 - a)."""
    p = -math.expm1(-epsilon)
    return rng.geometric(p, size=size) - rng.geometric(p, size=size)


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


# --------------------------------------------------------------------------------------------
# 3. biased randomized response (opendp#480)

def rr_bool_true_epsilon(p: float) -> float:
    """True epsilon of the buggy boolean RR (truth w.p. p, else a Bernoulli(p) 'lie'):
    P[1 | 1] = p + (1-p) p, P[1 | 0] = (1-p) p, P[0 | 0] = p + (1-p)^2, P[0 | 1] = (1-p)^2."""
    q = 1.0 - p
    return max(math.log((p + q * p) / (q * p)), math.log((p + q * q) / (q * q)))


def _rr_bool(data: Any, size: int, rng: np.random.Generator, *, p: float, fixed: bool) -> np.ndarray:
    v = _scalar(data)
    if v not in (0.0, 1.0):
        raise ValueError(f"data must be one bit (0 or 1), got {data!r}")
    x = np.int64(v)
    honest = rng.random(size) < p
    # the bug: the "lie" is a fresh Bernoulli(p) draw, which can equal the truth
    lie = (1 - x) * np.ones(size, dtype=np.int64) if fixed else (rng.random(size) < p).astype(np.int64)
    return np.where(honest, x, lie).astype(np.int64)


@suite_entry(SUITE, "rr_bool")
def rr_bool(p: float = 0.75) -> SuiteEntry:
    """BROKEN: OpenDP's ``make_randomized_response_bool`` before the fix of opendp#480:
    ``lie = bernoulli(p); if bernoulli(p) {arg} else {lie}``.

    Claim: ln(p / (1 - p))-DP (ln 3 at p = 3/4), ``bit`` neighbours. True epsilon =
    max(ln((2 - p)/(1 - p)), ln((p + (1-p)^2)/(1-p)^2)) = ln 13 at p = 3/4 (output 0: 13/16 vs
    1/16), attained by the exact law.
    """
    p = _check_prob(p, "p", 0.5, 1.0)
    fn = partial(_rr_bool, p=p, fixed=False)
    true_eps = rr_bool_true_epsilon(p)
    return _entry("rr_bool", fn, epsilon=math.log(p / (1 - p)), neighbours="bit", kind="finite",
                  pairs=((0, 1),), broken=True, true_epsilon=true_eps,
                  note=f"Broken: P[0|0] = p + (1-p)^2 vs P[0|1] = (1-p)^2, true epsilon = {true_eps:.4g} "
                       f"(ln 13 at p = 3/4) against the claimed ln(p/(1-p)) = {math.log(p / (1 - p)):.4g}.",
                  bug_class="biased randomized response", library="OpenDP (Rust core, 2022)",
                  attributes={"p": p})


@suite_entry(SUITE, "rr_bool_fixed")
def rr_bool_fixed(p: float = 0.75) -> SuiteEntry:
    """Fixed twin (the fix given in opendp#480): ``if bernoulli(p) {arg} else {!arg}``.
    Claim and true epsilon: ln(p / (1 - p)), attained."""
    p = _check_prob(p, "p", 0.5, 1.0)
    fn = partial(_rr_bool, p=p, fixed=True)
    eps = math.log(p / (1 - p))
    return _entry("rr_bool_fixed", fn, epsilon=eps, neighbours="bit", kind="finite", pairs=((0, 1),),
                  broken=False, true_epsilon=eps, note="Fixed twin: the lie is the negation; true epsilon = "
                  "ln(p/(1-p)), attained.", bug_class="biased randomized response", library="OpenDP",
                  attributes={"p": p})


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
