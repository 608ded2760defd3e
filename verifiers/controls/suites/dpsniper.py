"""DP-Sniper's evaluation suite as audit targets (suite ``"dpsniper"`` of :mod:`verifiers.suites.base`).

Bichsel, Steffen, Bogunovic, Vechev, "DP-Sniper: Black-Box Discovery of Differential Privacy
Violations using Classifiers", IEEE S&P 2021, evaluate their tool on twenty mechanisms. Each is
implemented here from its definition (noise laws and scales, threshold rule, cutoff, hashing), with
the parameters of their S&P 2021 evaluation (``dpsniper/experiments/exp_default.py`` of
github.com/eth-sri/dp-sniper): epsilon = 0.1 everywhere (LaplaceParallel: 20 copies at 0.005);
SVT1 with c = 1, T = 0.5; SVT2-6 with c = 1, T = 1; SVT34Parallel and NumericalSVT with their
defaults c = 2, T = 1; RAPPOR with h = 4 hashes into 20 bits (f = 0.75, p = 0.45, q = 0.55;
one-time RAPPOR f = 0.95); the truncated geometric mechanism counts n = 5 individuals.

Input pairs are DP-Sniper's pattern generator (StatDP's patterns, :func:`pattern_pairs`): against
the all-ones vector, "one below" / "one above" (the first entry moved to 0 or 2) and, where DP-Sniper
uses component-wise neighbourhoods, also "one above rest below", "one below rest above", "half
half", "all above", "all below" and the "X shape" pair; every pair is also used swapped. Query
lengths are theirs: 1 (scalar mechanisms, ``value`` neighbours), 5 (histograms: ``one_differ``;
noisy max: ``score_linf``), 10 (SVT family, PrefixSum: ``score_linf``). Each sampler accepts exactly
that length, because several true epsilons grow with it (e.g. ReportNoisyMax3: k * epsilon / 2).

Raw outputs (the verifier reads vectors natively):

* scalars: ``(n,)`` float64 (Laplace, ReportNoisyMax3/4) or int64 (TruncatedGeometric: the count
  0..5; ReportNoisyMax1/2: the index 0..4);
* real vectors ``(n, d)`` float64 (NoisyHist1/2, LaplaceParallel, PrefixSum); SVT3 and
  NumericalSVT hold the released value where the query was reported above and ``NaN`` elsewhere
  (below the threshold, or not answered after the c-th answer: told apart by position);
* label vectors ``(n, d)`` int64: SVT1/2/4 **1 = above, 0 = below, -1 = not answered** (after the
  c-th 1); SVT5/6 have no cutoff (1/0 only); RAPPOR bits 0/1;
* SVT34Parallel: ``(n, 20)`` float64, columns 0-9 SVT3's (values / NaN), columns 10-19 SVT4's
  labels as 1.0 / 0.0 / -1.0.

``published`` holds DP-Sniper's certified lower bounds (``eps_lcb``) from
``eval_sp2021/reference-results/dd_search_{reg,mlp}_data.log``, rounded like the paper's table.

The samplers (noise laws, SVT, RAPPOR's hashing) are in :mod:`verifiers.controls.suites.dpsniper_samplers`;
this module holds the entries: claims, pairs, true epsilons and published bounds.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Callable

import numpy as np

from dpharness.verifiers.controls.suites.base import SuiteEntry, suite_entry
from dpharness.verifiers.controls.suites.dpsniper_samplers import (
    _geo_k, _geo_true_epsilon, _laplace, _laplace_copies, _noisy_hist, _noisy_max, _numerical_svt, _prefix_sum, _rappor,
    _rappor_max_symdiff, _svt2_labels, _svt34_parallel, _svt_labels, _svt_values, _truncated_geometric, bloom_bits,
    geo_sample_cdf, geo_sample_pmf, murmur3_32, rappor_bit_probabilities,
)
from dpharness.verifiers.wrap import wrap

__all__ = [
    "EPSILON", "PUBLISHED", "DPSNIPER_SOURCE", "pattern_pairs", "scalar_pairs", "murmur3_32", "bloom_bits",
    "geo_sample_cdf", "geo_sample_pmf", "rappor_bit_probabilities",
]

#: The epsilon of DP-Sniper's evaluation (every mechanism's default).
EPSILON: float = 0.1

DPSNIPER_SOURCE = ("Bichsel, Steffen, Bogunovic, Vechev: DP-Sniper: Black-Box Discovery of Differential Privacy "
                   "Violations using Classifiers, IEEE S&P 2021; github.com/eth-sri/dp-sniper")
_DING = "Ding, Wang, Wang, Zhang, Kifer: Detecting Violations of Differential Privacy, CCS 2018"
_LYU = "Lyu, Su, Li: Understanding the Sparse Vector Technique for Differential Privacy, PVLDB 10(6), 2017"
_SHADOWDP = "Wang, Ding, Wang, Kifer, Zhang: Proving Differential Privacy with Shadow Execution, PLDI 2019"
_RAPPOR = "Erlingsson, Pihur, Korolova: RAPPOR: Randomized Aggregatable Privacy-Preserving Ordinal Response, CCS 2014"
_DMNS = "Dwork, McSherry, Nissim, Smith: Calibrating Noise to Sensitivity in Private Data Analysis, TCC 2006"
_BV = "Balcer, Vadhan: Differential Privacy on Finite Computers, ITCS 2018 (arXiv:1709.05396), Alg. 4.8 GeoSample"

#: DP-Sniper's published lower bounds (logistic regression, MLP): ``eps_lcb`` of the reference logs.
PUBLISHED: dict[str, tuple[float, float]] = {
    "LaplaceMechanism": (0.097, 0.098),
    "TruncatedGeometric": (0.116, 0.116),
    "NoisyHist1": (0.098, 0.098),
    "NoisyHist2": (4.60, 4.60),
    "ReportNoisyMax1": (0.092, 0.093),  # logs: 0.09225 / 0.09250
    "ReportNoisyMax2": (0.098, 0.098),  # logs: 0.09750 / 0.09792
    "ReportNoisyMax3": (0.248, 0.249),
    "ReportNoisyMax4": (0.346, 0.353),
    "SparseVectorTechnique1": (0.086, 0.086),
    "SparseVectorTechnique2": (0.086, 0.085),  # logs: 0.08593 / 0.08525
    "SparseVectorTechnique3": (0.172, 0.182),
    "SparseVectorTechnique4": (0.169, 0.170),
    "SparseVectorTechnique5": (1.76, 1.76),
    "SparseVectorTechnique6": (0.272, 0.270),
    "Rappor": (0.293, 0.301),
    "OneTimeRappor": (0.598, 0.600),
    "LaplaceParallel": (0.035, 0.030),
    "SVT34Parallel": (0.261, 0.262),
    "PrefixSum": (0.504, 0.577),
    "NumericalSVT": (0.034, 0.035),
}

Pairs = tuple[tuple[Any, Any], ...]


# --------------------------------------------------------------------------------------------
# DP-Sniper's input pairs (StatDP's patterns)

def pattern_pairs(d: int, component_wise: bool) -> Pairs:
    """DP-Sniper's pattern pairs of length ``d``, each followed by its swap (float64 arrays).

    ``component_wise=False`` (one entry differs): [1]*d vs [0, 1, ...] and vs [2, 1, ...].
    ``component_wise=True`` adds, against [1]*d: [2, 0, ...], [0, 2, ...], [2]*(d//2) + [0]*rest,
    [2]*d, [0]*d, and the X shape [1]*(d//2) + [0]*rest vs [0]*(d//2) + [1]*rest.
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    d = int(d)
    half, rest = d // 2, d - d // 2
    ones = [1.0] * d
    raw = [(ones, [0.0] + [1.0] * (d - 1)), (ones, [2.0] + [1.0] * (d - 1))]
    if component_wise:
        raw += [(ones, [2.0] + [0.0] * (d - 1)), (ones, [0.0] + [2.0] * (d - 1)),
                (ones, [2.0] * half + [0.0] * rest), (ones, [2.0] * d), (ones, [0.0] * d),
                ([1.0] * half + [0.0] * rest, [0.0] * half + [1.0] * rest)]
    out = []
    for a, b in raw:
        out.append((np.array(a), np.array(b)))
        out.append((np.array(b), np.array(a)))
    return tuple(out)


def scalar_pairs() -> Pairs:
    """The one-dimensional patterns as scalars: (1, 0), (0, 1), (1, 2), (2, 1)."""
    return tuple((float(a[0]), float(b[0])) for a, b in pattern_pairs(1, component_wise=False))


# --------------------------------------------------------------------------------------------
# entries

def _entry(name: str, fn: Callable[..., np.ndarray], *, epsilon: float, neighbours: str, kind: str,
           pairs: Pairs, true_epsilon: float | None, source: str, note: str, sensitivity: float = 1.0,
           attributes: dict | None = None) -> SuiteEntry:
    mech = wrap(fn, epsilon=epsilon, neighbours=neighbours, sensitivity=sensitivity, kind=kind,
                name=f"dpsniper/{name}", attributes={"dpsniper_name": name, **(attributes or {})})
    broken = true_epsilon is not None and true_epsilon > epsilon * (1 + 1e-12)
    reg, mlp = PUBLISHED[name]
    return SuiteEntry(suite="dpsniper", name=name, mechanism=mech, pairs=pairs, broken=broken,
                      true_epsilon=true_epsilon, published={"dpsniper_reg": reg, "dpsniper_mlp": mlp},
                      source=f"{DPSNIPER_SOURCE}; {source}", note=note)


_SVT_DIM = 10
_SVT_ENCODING = "int64 (n, 10): 1 above, 0 below, -1 not answered"


@suite_entry("dpsniper", "LaplaceMechanism")
def laplace_mechanism() -> SuiteEntry:
    """f(D) + Lap(1/epsilon), epsilon = 0.1.

    Claim: 0.1-DP, ``value`` neighbours (|f - f'| <= 1), sensitivity 1 (Dwork, McSherry, Nissim,
    Smith 2006). Correct and tight: true epsilon 0.1, attained on {y <= 0} for f = 0 vs 1.
    """
    return _entry("LaplaceMechanism", partial(_laplace, scale=1.0 / EPSILON), epsilon=EPSILON, neighbours="value",
                  kind="real", pairs=scalar_pairs(), true_epsilon=EPSILON, source=_DMNS,
                  note="Correct, tight: true epsilon = 1/scale = 0.1 (attained in either tail).",
                  attributes={"output": "float64 (n,)"})


@suite_entry("dpsniper", "TruncatedGeometric")
def truncated_geometric() -> SuiteEntry:
    """Balcer-Vadhan GeoSample on a count c in [0, 5] with DP-Sniper's k = ceil(ln(2/0.1)) = 3.

    Claim: ln(1 + 2^-k) = ln(9/8) = 0.1178-DP (the guarantee DP-Sniper's implementation states,
    Balcer-Vadhan Thm. 4.7), ``value`` neighbours on integer counts (c vs c +- 1), sensitivity 1.
    The law is the two-sided geometric with ratio 2^k/(2^k+1) truncated to [0, 5]: adjacent
    counts' pmfs differ by exactly that ratio at every output, so the true epsilon is ln(9/8)
    (computed exactly from the integer CDF). Note: the parameter epsilon = 0.1 is *not* met --
    DP-Sniper computes k with the natural logarithm, which gives k = 3 and 2^-k > epsilon/2;
    audited against a 0.1 claim this entry would be broken (true 0.1178).
    """
    count, k = 5, _geo_k(EPSILON)
    claim = math.log1p(2.0 ** -k)
    true = _geo_true_epsilon(count, k)
    return _entry("TruncatedGeometric", partial(_truncated_geometric, count=count, k=k), epsilon=claim,
                  neighbours="value", kind="finite", pairs=scalar_pairs(), true_epsilon=true, source=_BV,
                  note=f"Correct at its stated guarantee ln(1+2^-{k}) = {claim:.4f} (exact, tight: every output's "
                       "pmf ratio between adjacent counts is 1+2^-k). It does not meet its parameter epsilon = 0.1 "
                       "(k = ceil(ln(2/eps)) with the natural log).",
                  attributes={"lower": 0, "upper": count, "k": k, "output": "int64 (n,), the count 0..5"})


def _noisy_hist_entry(name: str, scale: float, true: float, note: str) -> SuiteEntry:
    d = 5
    return _entry(name, partial(_noisy_hist, scale=scale, d=d), epsilon=EPSILON, neighbours="one_differ",
                  kind="real", pairs=pattern_pairs(d, component_wise=False), true_epsilon=true, source=_DING,
                  note=note, attributes={"d": d, "noise_scale": scale, "output": "float64 (n, 5)"})


@suite_entry("dpsniper", "NoisyHist1")
def noisy_hist1() -> SuiteEntry:
    """Histogram + Lap(1/epsilon) per bin (Ding et al. Alg. 9), 5 bins.

    Claim: 0.1-DP, ``one_differ`` neighbours (one bin moves by <= 1), sensitivity 1. Correct,
    tight: true epsilon 0.1 (the moved bin's Laplace tail).
    """
    return _noisy_hist_entry("NoisyHist1", 1.0 / EPSILON, EPSILON,
                             "Correct, tight: true epsilon 0.1 (one bin moves by 1 under Lap(10)).")


@suite_entry("dpsniper", "NoisyHist2")
def noisy_hist2() -> SuiteEntry:
    """BROKEN: histogram + Lap(epsilon) instead of Lap(1/epsilon) (Ding et al. Alg. 10), 5 bins.

    Claim: 0.1-DP, ``one_differ``, sensitivity 1. True epsilon = 1/scale = 1/0.1 = 10, attained on
    the moved bin's tail.
    """
    return _noisy_hist_entry("NoisyHist2", EPSILON, 1.0 / EPSILON,
                             "Broken: scale epsilon instead of 1/epsilon; true epsilon = 1/0.1 = 10 (DP-Sniper's "
                             "4.60 = ln 100 is the ceiling of its probability estimates).")


def _rnm_entry(name: str, noise: str, release: str, true: float, note: str) -> SuiteEntry:
    d = 5
    kind, out = ("finite", "int64 (n,), the index 0..4") if release == "index" else ("real", "float64 (n,)")
    fn = partial(_noisy_max, noise=noise, scale=2.0 / EPSILON, d=d, release=release)
    return _entry(name, fn, epsilon=EPSILON, neighbours="score_linf", kind=kind,
                  pairs=pattern_pairs(d, component_wise=True), true_epsilon=true,
                  source=f"{_DING}; Dwork-Roth 2014 Section 3.3", note=note,
                  attributes={"d": d, "noise": noise, "noise_scale": 2.0 / EPSILON, "output": out})


@suite_entry("dpsniper", "ReportNoisyMax1")
def report_noisy_max1() -> SuiteEntry:
    """argmax_i (q_i + Lap(2/epsilon)) over 5 queries (Ding et al. Alg. 5).

    Claim: 0.1-DP, ``score_linf`` (every query moves by <= 1), sensitivity 1. Correct; true
    epsilon 0.1 as a supremum: a candidate far behind the leader, moved up while the leader moves
    down, gains e^{2/b} = e^epsilon in the limit of the gap (difference of Laplace tails).
    """
    return _rnm_entry("ReportNoisyMax1", "laplace", "index", EPSILON,
                      "Correct; true epsilon 0.1 (supremum over the gap, not attained).")


@suite_entry("dpsniper", "ReportNoisyMax2")
def report_noisy_max2() -> SuiteEntry:
    """argmax_i (q_i + Exp(2/epsilon)) over 5 queries (Ding et al. Alg. 6): permute-and-flip.

    Claim: 0.1-DP, ``score_linf``, sensitivity 1. Correct (McKenna-Sheldon 2020); true epsilon
    0.1: with two queries the difference of two Exp(b) is Laplace(b), so a trailing candidate's
    probability e^{-g/b}/2 changes by exactly e^{2/b} = e^epsilon when its gap g moves by 2.
    """
    return _rnm_entry("ReportNoisyMax2", "exponential", "index", EPSILON,
                      "Correct; true epsilon 0.1 (permute-and-flip; attained with a trailing candidate).")


@suite_entry("dpsniper", "ReportNoisyMax3")
def report_noisy_max3() -> SuiteEntry:
    """BROKEN: releases the value max_i (q_i + Lap(2/epsilon)), 5 queries (Ding et al. Alg. 7).

    Claim: 0.1-DP, ``score_linf``, sensitivity 1. True epsilon = k/b = k epsilon/2 = 0.25 (k = 5):
    the density sum_i f(y - q_i) prod_{j != i} F(y - q_j) has k Laplace factors per term, each
    log-Lipschitz with constant 1/b, and on {y < min q} with all queries moved by 1 every factor
    is in the left tail, so the ratio is exactly e^{k/b}.
    """
    return _rnm_entry("ReportNoisyMax3", "laplace", "value", 5 * EPSILON / 2.0,
                      "Broken: true epsilon = k*eps/2 = 0.25 (attained on {y < min q}, all queries moved by 1).")


@suite_entry("dpsniper", "ReportNoisyMax4")
def report_noisy_max4() -> SuiteEntry:
    """BROKEN: releases the value max_i (q_i + Exp(2/epsilon)), 5 queries (Ding et al. Alg. 8).

    Claim: 0.1-DP, ``score_linf``, sensitivity 1. True epsilon = inf: the output is >= max_i q_i;
    for [1]*5 vs [2]*5 the event {1 <= y < 2} has probability (1 - e^{-1/20})^5 > 0 vs 0.
    """
    return _rnm_entry("ReportNoisyMax4", "exponential", "value", math.inf,
                      "Broken: support bug, true epsilon = inf ([1]*5 vs [2]*5, event {y < 2}).")


def _svt_entry(name: str, fn: Callable[..., np.ndarray], *, kind: str, true: float, note: str, params: dict,
               output: str, claim: float = EPSILON) -> SuiteEntry:
    return _entry(name, fn, epsilon=claim, neighbours="score_linf", kind=kind,
                  pairs=pattern_pairs(_SVT_DIM, component_wise=True), true_epsilon=true, source=_LYU, note=note,
                  attributes={"d": _SVT_DIM, **params, "output": output})


@suite_entry("dpsniper", "SparseVectorTechnique1")
def sparse_vector_technique1() -> SuiteEntry:
    """SVT, Lyu et al. Alg. 1: eps1 = eps2 = epsilon/2, rho ~ Lap(1/eps1), nu_i ~ Lap(2c/eps2),
    above iff q_i + nu_i >= T + rho, stop after c answers above; c = 1, T = 0.5, 10 queries.

    Claim: 0.1-DP, ``score_linf``, sensitivity 1. Correct (Lyu et al. Thm. 2). True epsilon 0.1
    as a supremum: queries reported below far above T (pinning rho > 0) moving up by 1 cost
    e^{eps1}, a reported-above query far below them moving down by 1 costs e^{2/(2c/eps2)} = e^{eps2}
    in the right tail of nu; the ratio tends to e^{eps1 + eps2} as the gaps grow.
    Output: 1 above, 0 below, -1 not answered.
    """
    c, t = 1, 0.5
    params = {"c": c, "threshold": t, "rho_scale": 2.0 / EPSILON, "nu_scale": 2 * c / (EPSILON / 2)}
    fn = partial(_svt_labels, d=_SVT_DIM, c=c, threshold=t, rho_scale=params["rho_scale"],
                 nu_scale=params["nu_scale"])
    return _svt_entry("SparseVectorTechnique1", fn, kind="finite", true=EPSILON, params=params,
                      output=_SVT_ENCODING, note="Correct; true epsilon 0.1 (supremum, approached as gaps grow).")


@suite_entry("dpsniper", "SparseVectorTechnique2")
def sparse_vector_technique2() -> SuiteEntry:
    """SVT, Lyu et al. Alg. 2: rho ~ Lap(c/eps1) redrawn after every answer above, nu_i ~
    Lap(2c/eps2), eps1 = eps2 = epsilon/2; c = 1, T = 1, 10 queries.

    Claim: 0.1-DP, ``score_linf``, sensitivity 1. Correct (Lyu et al.); with c = 1 it stops at the
    first answer above, so it coincides with Alg. 1 and its true epsilon is 0.1 (supremum, same
    construction). Output: 1 above, 0 below, -1 not answered.
    """
    c, t = 1, 1.0
    params = {"c": c, "threshold": t, "rho_scale": c / (EPSILON / 2), "nu_scale": 2 * c / (EPSILON / 2)}
    fn = partial(_svt2_labels, d=_SVT_DIM, c=c, threshold=t, rho_scale=params["rho_scale"],
                 nu_scale=params["nu_scale"])
    return _svt_entry("SparseVectorTechnique2", fn, kind="finite", true=EPSILON, params=params,
                      output=_SVT_ENCODING, note="Correct; true epsilon 0.1 (supremum; c = 1 makes it Alg. 1).")


def _svt3_params(c: int) -> dict:
    return {"c": c, "threshold": 1.0, "rho_scale": 2.0 / EPSILON, "nu_scale": c / (EPSILON / 2)}


def _svt4_params(c: int) -> dict:
    return {"c": c, "threshold": 1.0, "rho_scale": 4.0 / EPSILON, "nu_scale": 1.0 / (3 * EPSILON / 4)}


def _kw(params: dict) -> dict:
    return {k: params[k] for k in ("c", "threshold", "rho_scale", "nu_scale")}


@suite_entry("dpsniper", "SparseVectorTechnique3")
def sparse_vector_technique3() -> SuiteEntry:
    """BROKEN: SVT releasing q_i + nu_i for queries above, nu_i ~ Lap(c/eps2) (Lyu et al. Alg. 3);
    eps1 = eps2 = epsilon/2, rho ~ Lap(1/eps1); c = 1, T = 1, 10 queries.

    Claim: 0.1-DP, ``score_linf``, sensitivity 1. Lyu et al.: not private for any finite epsilon
    as the number of queries grows. At d = 10: true epsilon = d eps2 / c = 0.5. Upper bound: for a
    fixed rho every below-factor F(T + rho - q_i) and the released value's density f(a - q_j) is
    log-Lipschitz with constant 1/b = eps2/c, and at most d of them occur. Attained: [0]*10 vs
    [1]*10 on {9 below, then a value a < 0}, where rho <= a - T keeps every factor in the left
    tail, ratio exactly e^{10/20}. Output: the value where above, NaN below / not answered.
    """
    p = _svt3_params(1)
    fn = partial(_svt_values, d=_SVT_DIM, **_kw(p))
    return _svt_entry("SparseVectorTechnique3", fn, kind="real", true=_SVT_DIM * (EPSILON / 2) / p["c"], params=p,
                      output="float64 (n, 10): q_i + nu_i where above, NaN elsewhere",
                      note="Broken: true epsilon = d*eps2/c = 0.5 at d = 10 (unbounded in d).")


@suite_entry("dpsniper", "SparseVectorTechnique4")
def sparse_vector_technique4() -> SuiteEntry:
    """BROKEN: SVT with nu_i ~ Lap(1/eps2) instead of Lap(2c/eps2) (Lyu et al. Alg. 4);
    eps1 = epsilon/4, eps2 = 3 epsilon/4, rho ~ Lap(1/eps1); c = 1, T = 1, 10 queries.

    Claim: 0.1-DP, ``score_linf``, sensitivity 1. True epsilon = (1 + 6c) epsilon / 4 = 0.175
    (Lyu et al. Thm. 5: rho shifted by 1 costs eps1, each of the c answers above costs 2 eps2), a
    supremum approached as in SVT1 (below-queries far above T move up, the above-query far below
    them moves down). Output: 1 above, 0 below, -1 not answered.
    """
    p = _svt4_params(1)
    fn = partial(_svt_labels, d=_SVT_DIM, **_kw(p))
    return _svt_entry("SparseVectorTechnique4", fn, kind="finite", true=(1 + 6 * p["c"]) * EPSILON / 4, params=p,
                      output=_SVT_ENCODING, note="Broken: true epsilon = (1+6c)*eps/4 = 0.175 (supremum).")


@suite_entry("dpsniper", "SparseVectorTechnique5")
def sparse_vector_technique5() -> SuiteEntry:
    """BROKEN: SVT without query noise and without cutoff: 1 iff q_i >= T + rho, rho ~
    Lap(2/epsilon) (Lyu et al. Alg. 5); T = 1, 10 queries.

    Claim: 0.1-DP, ``score_linf``, sensitivity 1. True epsilon = inf: the output is a threshold
    cut of q, so on [1]*10 the output is all-1 or all-0, while on [2]*5 + [0]*5 the output
    [1]*5 + [0]*5 has probability P(-1 < rho <= 1) > 0. Output: 1 above, 0 below.
    """
    p = {"c": None, "threshold": 1.0, "rho_scale": 2.0 / EPSILON, "nu_scale": 0.0}
    fn = partial(_svt_labels, d=_SVT_DIM, **_kw(p))
    return _svt_entry("SparseVectorTechnique5", fn, kind="finite", true=math.inf, params=p,
                      output="int64 (n, 10): 1 above, 0 below (no cutoff)",
                      note="Broken: support bug, true epsilon = inf ([1]*10 vs [2]*5+[0]*5).")


@suite_entry("dpsniper", "SparseVectorTechnique6")
def sparse_vector_technique6() -> SuiteEntry:
    """BROKEN: SVT without cutoff, nu_i ~ Lap(1/eps2), rho ~ Lap(1/eps1), eps1 = eps2 = epsilon/2
    (Lyu et al. Alg. 6); T = 1, 10 queries.

    Claim: 0.1-DP, ``score_linf``, sensitivity 1. Not private for any finite epsilon as d grows;
    at d = 10 true epsilon = d eps2 = 0.5: for a fixed rho each of the d factors F or 1 - F is
    log-Lipschitz with constant eps2 (upper bound); the ratio tends to e^{d eps2} for outputs
    whose above-queries lie far below and below-queries far above the threshold, each moved by 1
    towards the wrong side (supremum). Output: 1 above, 0 below.
    """
    p = {"c": None, "threshold": 1.0, "rho_scale": 2.0 / EPSILON, "nu_scale": 2.0 / EPSILON}
    fn = partial(_svt_labels, d=_SVT_DIM, **_kw(p))
    return _svt_entry("SparseVectorTechnique6", fn, kind="finite", true=_SVT_DIM * EPSILON / 2, params=p,
                      output="int64 (n, 10): 1 above, 0 below (no cutoff)",
                      note="Broken: true epsilon = d*eps2 = 0.5 at d = 10 (supremum; unbounded in d).")


def _rappor_entry(name: str, f: float, p: float | None, q: float | None, note: str) -> SuiteEntry:
    lo, hi, h, m = -10, 10, 4, 20
    one, zero = rappor_bit_probabilities(f, p, q)
    bit_loss = max(math.log(one / zero), math.log((1 - zero) / (1 - one)))
    claim = 2 * h * bit_loss  # RAPPOR's bound: at most 2h Bloom bits differ between two values
    true = _rappor_max_symdiff(lo, hi, h, m) * bit_loss
    fn = partial(_rappor, lo=lo, hi=hi, n_hashes=h, filter_size=m, f=f, p=p, q=q)
    return _entry(name, fn, epsilon=claim, neighbours="value", sensitivity=float(hi - lo), kind="finite",
                  pairs=scalar_pairs(), true_epsilon=true, source=_RAPPOR,
                  note=f"{note} Per differing Bloom bit the loss is ln({one:.4f}/{zero:.4f}) = {bit_loss:.5f}; the claim "
                       f"is 2h times that; the true epsilon is the largest Bloom-set difference over the domain "
                       f"[{lo}, {hi}] times it.",
                  attributes={"lower": lo, "upper": hi, "n_hashes": h, "filter_size": m, "f": f, "p": p, "q": q,
                              "output": "int64 (n, 20): reported bits 0/1"})


@suite_entry("dpsniper", "Rappor")
def rappor() -> SuiteEntry:
    """RAPPOR steps 1-3: Bloom filter (h = 4 MurmurHash3 bits of 20), permanent randomized
    response f = 0.75, instantaneous randomized response p = 0.45, q = 0.55 (Erlingsson et al.).

    Claim: epsilon_1 = h ln(q*(1-p*)/(p*(1-q*))) = 0.4001 for one report, q* = 0.5125,
    p* = 0.4875. Neighbours: any two client values (local DP), expressed as ``value`` neighbours
    on the evaluated domain [-10, 10] (sensitivity 20). Correct; true epsilon = (largest Bloom-set
    symmetric difference over the domain) x ln(q*/p*) <= the claim.
    """
    return _rappor_entry("Rappor", 0.75, 0.45, 0.55, "Correct (local DP).")


@suite_entry("dpsniper", "OneTimeRappor")
def one_time_rappor() -> SuiteEntry:
    """One-time RAPPOR, steps 1-2: Bloom filter (h = 4 bits of 20) and permanent randomized
    response with f = 0.95 (Erlingsson et al.).

    Claim: epsilon_inf = 2h ln((1 - f/2)/(f/2)) = 0.8007; ``value`` neighbours on [-10, 10]
    (sensitivity 20: any two client values). Correct; true epsilon = (largest Bloom-set symmetric
    difference over the domain) x ln((1 - f/2)/(f/2)) <= the claim.
    """
    return _rappor_entry("OneTimeRappor", 0.95, None, None, "Correct (local DP).")


@suite_entry("dpsniper", "LaplaceParallel")
def laplace_parallel() -> SuiteEntry:
    """20 independent Laplace mechanisms f(D) + Lap(1/0.005) on the same scalar.

    Claim: 20 x 0.005 = 0.1-DP by composition, ``value`` neighbours, sensitivity 1. Correct and
    tight: all 20 outputs shift by 1 under scale 200, ratio e^{20/200} in the common tail.
    """
    copies, eps_each = 20, 0.005
    return _entry("LaplaceParallel", partial(_laplace_copies, scale=1.0 / eps_each, copies=copies),
                  epsilon=copies * eps_each, neighbours="value", kind="real", pairs=scalar_pairs(),
                  true_epsilon=copies * eps_each, source=_DMNS,
                  note="Correct, tight: composition of 20 Laplace(200) releases, true epsilon 0.1.",
                  attributes={"copies": copies, "epsilon_each": eps_each, "output": "float64 (n, 20)"})


@suite_entry("dpsniper", "SVT34Parallel")
def svt34_parallel() -> SuiteEntry:
    """BROKEN: SVT3 and SVT4 run independently on the same 10 queries, each at epsilon = 0.1 with
    DP-Sniper's defaults c = 2, T = 1.

    Claim: 0.2-DP (the two 0.1 claims composed), ``score_linf``, sensitivity 1. True epsilon =
    d eps2/c + (1 + 6c) epsilon/4 = 0.25 + 0.325 = 0.575: the sum of the parts' worst cases is an
    upper bound, and one pair reaches both (queries 1-8 far above T moving up, queries 9-10 far
    below them moving down; SVT3 reports 8 below and values between the two groups, SVT4 8 below
    and 2 above). Output ``(n, 20)`` float64: SVT3's values / NaN, then SVT4's 1.0 / 0.0 / -1.0.
    """
    c = 2
    p3, p4 = _svt3_params(c), _svt4_params(c)
    fn = partial(_svt34_parallel, svt3={"d": _SVT_DIM, **_kw(p3)}, svt4={"d": _SVT_DIM, **_kw(p4)})
    true = _SVT_DIM * (EPSILON / 2) / c + (1 + 6 * c) * EPSILON / 4
    return _svt_entry("SVT34Parallel", fn, kind="real", true=true, claim=2 * EPSILON,
                      params={"svt3": p3, "svt4": p4},
                      output="float64 (n, 20): SVT3 values/NaN, then SVT4 labels 1/0/-1",
                      note="Broken: true epsilon = 0.25 (SVT3, c=2) + 0.325 (SVT4, c=2) = 0.575 vs the composed "
                           "claim 0.2.")


@suite_entry("dpsniper", "PrefixSum")
def prefix_sum() -> SuiteEntry:
    """BROKEN under DP-Sniper's neighbourhood: prefix sums of q_i + Lap(1/epsilon), 10 queries
    (ShadowDP's PrefixSum).

    Claim: 0.1-DP, ``score_linf`` (DP-Sniper's component-wise neighbours), sensitivity 1. The
    prefix sums are an invertible linear map of the noisy answers q + nu, so the true epsilon is
    that of 10 Laplace(10) releases each moving by 1: 10 epsilon = 1.0 (attained in the tails).
    It is 0.1-DP when only one query may change (``one_differ``).
    """
    d = 10
    return _entry("PrefixSum", partial(_prefix_sum, scale=1.0 / EPSILON, d=d), epsilon=EPSILON,
                  neighbours="score_linf", kind="real", pairs=pattern_pairs(d, component_wise=True),
                  true_epsilon=d * EPSILON, source=_SHADOWDP,
                  note="Broken under score_linf: true epsilon = d*eps = 1.0 (0.1 under one_differ).",
                  attributes={"d": d, "noise_scale": 1.0 / EPSILON, "output": "float64 (n, 10)"})


@suite_entry("dpsniper", "NumericalSVT")
def numerical_svt() -> SuiteEntry:
    """ShadowDP's NumericalSVT: rho ~ Lap(3/epsilon), nu_i ~ Lap(6c/epsilon), above iff
    q_i + nu_i >= T + rho, then release q_i + Lap(3c/epsilon) (fresh); stop after c answers;
    c = 2, T = 1, 10 queries.

    Claim: 0.1-DP, ``score_linf``, sensitivity 1. Correct (three thirds of epsilon: threshold,
    comparisons, released values). True epsilon 0.1 as a supremum (the SVT1 construction plus the
    released values' tails). Output: the released value where above, NaN below / not answered.
    """
    c = 2
    p = {"c": c, "threshold": 1.0, "rho_scale": 3.0 / EPSILON, "nu_scale": 6.0 * c / EPSILON,
         "value_scale": 3.0 * c / EPSILON}
    fn = partial(_numerical_svt, d=_SVT_DIM, **p)
    return _svt_entry("NumericalSVT", fn, kind="real", true=EPSILON, params=p,
                      output="float64 (n, 10): q_i + Lap(3c/eps) where above, NaN elsewhere",
                      note="Correct; true epsilon 0.1 (supremum).")
