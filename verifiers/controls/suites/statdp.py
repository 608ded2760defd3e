"""StatDP's evaluation suite as audit targets (suite ``"statdp"`` of :mod:`verifiers.suites.base`).

Ding, Wang, Wang, Zhang, Kifer, "Detecting Violations of Differential Privacy", CCS 2018
(arXiv:1805.10277), evaluate their tool on eleven mechanisms: four report-noisy-max variants, a
correct and a mis-scaled Laplace histogram, and the sparse vector technique (SVT) with four
incorrect variants taken from Lyu, Su, Li, "Understanding the Sparse Vector Technique for
Differential Privacy", PVLDB 10(6), 2017. Each is implemented here from its definition (noise
laws and scales, threshold rule, cutoff), as published in the paper and in StatDP's repository
(``statdp/algorithms.py``; default arguments in ``examples/benchmark.py``: N = 1 with T = 0.5 for
SVT and T = 1 for the iSVT variants; claimed epsilons 0.2, 0.7 and 1.5).

Raw outputs, not StatDP's post-processing: StatDP's own functions summarise some outputs to a
scalar its tool can handle (SVT: the number of ``False`` answers; iSVT1-3: the Hamming distance to
a fixed pattern; histograms: bin 0 only). Post-processing cannot increase the privacy loss, so we
release what the mechanism releases and let the verifier read vectors:

* noisy max: the index (``kind="finite"``, shape ``(n,)``, int64) or the value (``"real"``,
  ``(n,)``);
* histograms: the whole noisy vector (``"real"``, ``(n, d)``);
* SVT, iSVT1-3: the label vector (``"finite"``, ``(n, d)``, int64) with **1 = above the noisy
  threshold, 0 = below, -1 = not answered** (the mechanism stopped after its N-th ``1``);
* iSVT4: the real vector (``"real"``, ``(n, d)``) holding the noisy answer q_i + nu_i where the
  query was reported above and ``NaN`` elsewhere (below, or not answered; the two are told apart
  by position: entries after the N-th finite one were not answered).

Input pairs are StatDP's generator (``statdp/generators.py``) for its default lengths 5 and 10:
the base vector is all ones; ONE_DIFFER moves the first entry to 0 or 2; ALL_DIFFER adds "one
above, rest below", "one below, rest above", "half above, half below", "all above", "all below"
and the "x shape" pair. ALL_DIFFER is our ``score_linf`` relation and ONE_DIFFER our
``one_differ`` relation, both with sensitivity 1.

StatDP publishes p-value curves over a grid of test epsilons (its Figures), not numeric lower
bounds, so ``published`` stays empty; the curves' visible rejection points are not citable
numbers.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

import numpy as np

from dpharness.mechanisms.base import check_epsilon
from dpharness.verifiers.controls.suites.base import SuiteEntry, suite_entry
from dpharness.verifiers.wrap import wrap

__all__ = [
    "NUM_INPUT", "CLAIMED_EPSILONS", "DEFAULT_EPSILON", "STATDP_SOURCE", "LYU_SOURCE", "DWORK_ROTH_SOURCE",
    "one_differ_pairs", "all_differ_pairs",
    "noisy_max_v1a", "noisy_max_v1b", "noisy_max_v2a", "noisy_max_v2b", "histogram", "histogram_eps",
    "SVT", "iSVT1", "iSVT2", "iSVT3", "iSVT4",
]

#: Query-vector lengths StatDP's generator uses by default (``num_input=(5, 10)``).
NUM_INPUT: tuple[int, ...] = (5, 10)
#: The claimed epsilons of StatDP's evaluation (``examples/benchmark.py``).
CLAIMED_EPSILONS: tuple[float, ...] = (0.2, 0.7, 1.5)
#: The claim our entries use by default: the middle one, where histogram_eps is broken (it is
#: correct for epsilon >= 1).
DEFAULT_EPSILON: float = 0.7

STATDP_SOURCE = ("Ding, Wang, Wang, Zhang, Kifer: Detecting Violations of Differential Privacy, CCS 2018 "
                 "(arXiv:1805.10277), Section 6; github.com/cmla-psu/statdp")
LYU_SOURCE = ("Lyu, Su, Li: Understanding the Sparse Vector Technique for Differential Privacy, "
              "PVLDB 10(6), 2017")
DWORK_ROTH_SOURCE = "Dwork, Roth: The Algorithmic Foundations of Differential Privacy, 2014, Section 3.3"

_NO_PUBLISHED = ("StatDP reports p-value curves against test epsilons (paper figures), not numeric "
                 "lower bounds: published is empty.")

Noise = Literal["laplace", "exponential"]
Pairs = tuple[tuple[np.ndarray, np.ndarray], ...]


# --------------------------------------------------------------------------------------------
# StatDP's input pairs

def _check_lengths(lengths: tuple[int, ...]) -> tuple[int, ...]:
    out = tuple(lengths)
    if not out or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2 for k in out):
        raise ValueError(f"lengths must be a non-empty tuple of integers >= 2, got {lengths!r}")
    return tuple(int(k) for k in out)


def one_differ_pairs(lengths: tuple[int, ...] = NUM_INPUT) -> Pairs:
    """StatDP's ONE_DIFFER pairs: ``[1]*k`` vs the first entry moved to 0 ("one below") or 2
    ("one above"), for each length ``k``."""
    out = []
    for k in _check_lengths(lengths):
        base = np.ones(k)
        for v in (0.0, 2.0):
            other = base.copy()
            other[0] = v
            out.append((base.copy(), other))
    return tuple(out)


def all_differ_pairs(lengths: tuple[int, ...] = NUM_INPUT) -> Pairs:
    """StatDP's ALL_DIFFER pairs: the ONE_DIFFER pairs plus, against ``[1]*k``: one above and the
    rest below, one below and the rest above, the first half above and the rest below, all above,
    all below; and the "x shape" pair ``[1]*floor(k/2) + [0]*ceil(k/2)`` vs its mirror
    ``[0]*floor(k/2) + [1]*ceil(k/2)``."""
    out = list(one_differ_pairs(lengths))
    for k in _check_lengths(lengths):
        base, half, rest = np.ones(k), k // 2, k - k // 2
        for d2 in ([2.0] + [0.0] * (k - 1), [0.0] + [2.0] * (k - 1), [2.0] * half + [0.0] * rest,
                   [2.0] * k, [0.0] * k):
            out.append((base.copy(), np.array(d2)))
        out.append((np.array([1.0] * half + [0.0] * rest), np.array([0.0] * half + [1.0] * rest)))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# samplers: fn(data, n, rng), vectorised over the n draws

def _queries(data: Any) -> np.ndarray:
    """The query-answer vector: 1-D, non-empty, finite reals (``ValueError`` otherwise)."""
    try:
        q = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"data must be a 1-D array of query answers (real numbers): {exc}") from None
    if q.ndim != 1 or q.size == 0:
        raise ValueError(f"data must be a non-empty 1-D array of query answers, got shape {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ValueError(f"data must be finite, got non-finite entries at {np.flatnonzero(~np.isfinite(q)).tolist()}")
    return q


def _noise(rng: np.random.Generator, noise: Noise, scale: float, size: Any) -> np.ndarray:
    if noise == "laplace":
        return rng.laplace(scale=scale, size=size)
    return rng.exponential(scale=scale, size=size)


def _noisy_max(data: Any, n: int, rng: np.random.Generator, *, noise: Noise, scale: float,
               release: Literal["index", "value"]) -> np.ndarray:
    """argmax / max of q + noise, one row of noise per draw (ties have probability 0)."""
    q = _queries(data)
    noisy = q[None, :] + _noise(rng, noise, scale, (n, q.size))
    if release == "index":
        return np.argmax(noisy, axis=1).astype(np.int64)
    return np.max(noisy, axis=1)


def _noisy_vector(data: Any, n: int, rng: np.random.Generator, *, scale: float) -> np.ndarray:
    q = _queries(data)
    return q[None, :] + rng.laplace(scale=scale, size=(n, q.size))


def _above_and_answered(q: np.ndarray, n: int, rng: np.random.Generator, *, threshold: float, rho_scale: float,
                        nu_scale: float, cutoff: int | None, strict: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The SVT comparison for n runs: (noisy answers, above, answered), each ``(n, d)``.

    One threshold noise rho per run (drawn first), one query noise per query (``nu_scale == 0``:
    none, iSVT1). All d comparisons are computed; a query is answered when fewer than ``cutoff``
    earlier queries of its run were above (the run stops at its cutoff-th "above").
    """
    rho = rng.laplace(scale=rho_scale, size=n)
    # Noise is drawn for every query, also after a run stops: those draws are independent of what
    # the run released, so the law is unchanged and the n runs stay one vectorised computation.
    if nu_scale == 0:
        noisy = np.broadcast_to(q, (n, q.size))
    else:
        noisy = q[None, :] + rng.laplace(scale=nu_scale, size=(n, q.size))
    t = threshold + rho[:, None]
    above = noisy > t if strict else noisy >= t
    if cutoff is None:
        answered = np.ones_like(above)
    else:
        earlier = np.cumsum(above, axis=1) - above
        answered = earlier < cutoff
    return noisy, above, answered


def _svt_labels(data: Any, n: int, rng: np.random.Generator, **svt: Any) -> np.ndarray:
    """Label vectors: 1 above, 0 below, -1 not answered (int64, ``(n, d)``)."""
    _, above, answered = _above_and_answered(_queries(data), n, rng, **svt)
    return np.where(answered, above.astype(np.int64), np.int64(-1))


def _svt_values(data: Any, n: int, rng: np.random.Generator, **svt: Any) -> np.ndarray:
    """Real vectors: the noisy answer where reported above, NaN elsewhere (float64, ``(n, d)``)."""
    noisy, above, answered = _above_and_answered(_queries(data), n, rng, **svt)
    return np.where(above & answered, noisy, np.nan)


# --------------------------------------------------------------------------------------------
# helpers for the entries

def _k_max(pairs: Pairs) -> int:
    return max(int(np.asarray(d1).size) for d1, _ in pairs)


def _entry(name: str, fn: Any, *, epsilon: float, neighbours: str, kind: str, pairs: Pairs,
           true_epsilon: float | None, source: str, note: str, attributes: dict,
           broken: bool | None = None) -> SuiteEntry:
    """Wrap ``fn`` with its claim; ``broken`` defaults to "true epsilon exceeds the claim"."""
    mech = wrap(fn, epsilon=epsilon, neighbours=neighbours, sensitivity=1.0, kind=kind, name=f"statdp/{name}",
                attributes={"statdp_name": name, "num_queries": NUM_INPUT, **attributes})
    if broken is None:
        broken = true_epsilon is not None and true_epsilon > epsilon * (1 + 1e-12)
    return SuiteEntry(suite="statdp", name=name, mechanism=mech, pairs=pairs, broken=broken,
                      true_epsilon=true_epsilon, published={}, source=source, note=f"{note} {_NO_PUBLISHED}")


def _check_svt_params(N: int, T: float) -> tuple[int, float]:
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 1:
        raise ValueError(f"N (the number of 'above' answers before the SVT stops) must be an integer >= 1, got {N!r}")
    if not isinstance(T, (int, float, np.integer, np.floating)) or not np.isfinite(T):
        raise ValueError(f"T (the threshold) must be a finite number, got {T!r}")
    return int(N), float(T)


# --------------------------------------------------------------------------------------------
# noisy max (Dwork-Roth Section 3.3; StatDP Section 6)

@suite_entry("statdp", "noisy_max_v1a")
def noisy_max_v1a(epsilon: float = DEFAULT_EPSILON) -> SuiteEntry:
    """Report noisy max, Laplace noise: argmax_i (q_i + Lap(2/epsilon)), the index.

    Claim: epsilon-DP, ``score_linf`` neighbours (StatDP's ALL_DIFFER), sensitivity 1. Correct
    (Dwork-Roth Claim 3.9 with scale 2 Delta/epsilon for queries moving in either direction).
    True epsilon = epsilon as a supremum: with two queries and the gap q_0 - q_1 moved by 2, the
    ratio P[index 0] of the two gaps tends to e^{2/b} = e^epsilon as the gap -> -inf (the
    difference of two Laplace(b) has tails ~ (1 + |t|/b) e^{-|t|/b}).
    """
    eps = check_epsilon(epsilon)
    fn = partial(_noisy_max, noise="laplace", scale=2.0 / eps, release="index")
    return _entry("noisy_max_v1a", fn, epsilon=eps, neighbours="score_linf", kind="finite",
                  pairs=all_differ_pairs(), true_epsilon=eps, source=f"{STATDP_SOURCE}; {DWORK_ROTH_SOURCE}",
                  note="Correct. True epsilon = epsilon (supremum over gaps, not attained).",
                  attributes={"noise": "laplace", "noise_scale": 2.0 / eps, "output": "index, int64 (n,)"})


@suite_entry("statdp", "noisy_max_v1b")
def noisy_max_v1b(epsilon: float = DEFAULT_EPSILON) -> SuiteEntry:
    """BROKEN: report noisy max releasing the noisy maximum *value* max_i (q_i + Lap(2/epsilon)).

    Claim: epsilon-DP, ``score_linf``, sensitivity 1. True epsilon at length k: k epsilon / 2.
    Upper bound: the density sum_i f(y - q_i) prod_{j != i} F(y - q_j) has k factors per term, each
    moving by at most e^{1/b} (b = 2/epsilon). Attained: [1]*k vs [2]*k on {y <= 1}, where every
    factor is in the Laplace left tail F(x) = e^{x/b}/2. Over StatDP's lengths (5, 10) the worst
    case is 10 epsilon / 2 = 5 epsilon (unbounded if the length is).
    """
    eps = check_epsilon(epsilon)
    pairs = all_differ_pairs()
    k = _k_max(pairs)
    fn = partial(_noisy_max, noise="laplace", scale=2.0 / eps, release="value")
    return _entry("noisy_max_v1b", fn, epsilon=eps, neighbours="score_linf", kind="real", pairs=pairs,
                  true_epsilon=k * eps / 2.0, source=f"{STATDP_SOURCE}; {DWORK_ROTH_SOURCE}",
                  note=f"Broken: true epsilon = k*epsilon/2 at length k, {k}*epsilon/2 over StatDP's lengths "
                       "(pair [1]*k vs [2]*k, event {y <= 1}).",
                  attributes={"noise": "laplace", "noise_scale": 2.0 / eps, "output": "max value, float64 (n,)"})


@suite_entry("statdp", "noisy_max_v2a")
def noisy_max_v2a(epsilon: float = DEFAULT_EPSILON) -> SuiteEntry:
    """Report noisy max, exponential noise: argmax_i (q_i + Exp(2/epsilon)), the index.

    Claim: epsilon-DP, ``score_linf``, sensitivity 1. Correct: it is permute-and-flip (McKenna,
    Sheldon 2020; Ding et al. 2021), epsilon-DP at scale 2 Delta/epsilon. True epsilon = epsilon,
    attained: with two queries the difference of two Exp(b) is Laplace(b), so P[index 0] =
    e^{-g/b}/2 for gap g = q_1 - q_0 >= 0, and g moving by 2 gives exactly e^{2/b} = e^epsilon.
    """
    eps = check_epsilon(epsilon)
    fn = partial(_noisy_max, noise="exponential", scale=2.0 / eps, release="index")
    return _entry("noisy_max_v2a", fn, epsilon=eps, neighbours="score_linf", kind="finite",
                  pairs=all_differ_pairs(), true_epsilon=eps, source=f"{STATDP_SOURCE}; {DWORK_ROTH_SOURCE}",
                  note="Correct. True epsilon = epsilon (attained with two queries whose gap moves by 2).",
                  attributes={"noise": "exponential", "noise_scale": 2.0 / eps, "output": "index, int64 (n,)"})


@suite_entry("statdp", "noisy_max_v2b")
def noisy_max_v2b(epsilon: float = DEFAULT_EPSILON) -> SuiteEntry:
    """BROKEN: releases the value max_i (q_i + Exp(2/epsilon)).

    Claim: epsilon-DP, ``score_linf``, sensitivity 1. True epsilon = inf (support bug): the
    noise is non-negative, so the output is >= max_i q_i; on [1]*k vs [2]*k the event
    {1 <= y < 2} has positive probability on the first input and none on the second.
    """
    eps = check_epsilon(epsilon)
    fn = partial(_noisy_max, noise="exponential", scale=2.0 / eps, release="value")
    return _entry("noisy_max_v2b", fn, epsilon=eps, neighbours="score_linf", kind="real",
                  pairs=all_differ_pairs(), true_epsilon=float("inf"),
                  source=f"{STATDP_SOURCE}; {DWORK_ROTH_SOURCE}",
                  note="Broken: support bug, true epsilon = inf ([1]*k vs [2]*k, event {1 <= y < 2}).",
                  attributes={"noise": "exponential", "noise_scale": 2.0 / eps, "output": "max value, float64 (n,)"})


# --------------------------------------------------------------------------------------------
# histograms (Dwork, McSherry, Nissim, Smith 2006; Dwork-Roth Section 3.3)

_HIST_SOURCE = f"{STATDP_SOURCE}; {DWORK_ROTH_SOURCE} (histogram queries)"


@suite_entry("statdp", "histogram")
def histogram(epsilon: float = DEFAULT_EPSILON) -> SuiteEntry:
    """Laplace histogram: q + Lap(1/epsilon) per bin, the whole noisy vector.

    Claim: epsilon-DP, ``one_differ`` neighbours (StatDP's ONE_DIFFER: one bin moves by at most
    1), sensitivity 1. True epsilon = epsilon, attained (the moved bin is a Laplace shift of
    1/b = epsilon; the other bins are identical). StatDP's own code releases bin 0 only, which its
    pairs all move, so that projection has the same true epsilon.
    """
    eps = check_epsilon(epsilon)
    fn = partial(_noisy_vector, scale=1.0 / eps)
    return _entry("histogram", fn, epsilon=eps, neighbours="one_differ", kind="real", pairs=one_differ_pairs(),
                  true_epsilon=eps, source=_HIST_SOURCE,
                  note="Correct. True epsilon = epsilon (Laplace shift of one bin). StatDP's code releases "
                       "bin 0 only; we release the whole vector.",
                  attributes={"noise_scale": 1.0 / eps, "output": "noisy histogram, float64 (n, d)"})


@suite_entry("statdp", "histogram_eps")
def histogram_eps(epsilon: float = DEFAULT_EPSILON) -> SuiteEntry:
    """BROKEN for epsilon < 1: q + Lap(epsilon) per bin (scale epsilon instead of 1/epsilon).

    Claim: epsilon-DP, ``one_differ``, sensitivity 1. True epsilon = 1/epsilon (one bin shifted
    by 1 under Laplace scale epsilon), attained; broken exactly when 1/epsilon > epsilon, i.e.
    epsilon < 1 (claims 0.2 -> 5, 0.7 -> 1.43; 1.5 -> 0.67 is correct, merely loose).
    """
    eps = check_epsilon(epsilon)
    fn = partial(_noisy_vector, scale=eps)
    return _entry("histogram_eps", fn, epsilon=eps, neighbours="one_differ", kind="real", pairs=one_differ_pairs(),
                  true_epsilon=1.0 / eps, source=_HIST_SOURCE,
                  note="True epsilon = 1/epsilon (Laplace scale epsilon instead of 1/epsilon): broken iff "
                       "epsilon < 1. StatDP's code releases bin 0 only; we release the whole vector.",
                  attributes={"noise_scale": eps, "output": "noisy histogram, float64 (n, d)"})


# --------------------------------------------------------------------------------------------
# sparse vector technique (Lyu, Su, Li 2017)

_SVT_SOURCE = f"{STATDP_SOURCE}; {LYU_SOURCE}"
_LABELS = "label vector, int64 (n, d): 1 above, 0 below, -1 not answered (after the N-th 1)"


@suite_entry("statdp", "SVT")
def SVT(epsilon: float = DEFAULT_EPSILON, N: int = 1, T: float = 0.5) -> SuiteEntry:
    """Sparse vector technique (Lyu-Su-Li Algorithm 1 with epsilon_1 = epsilon_2 = epsilon/2).

    rho = Lap(2/epsilon); for each query, 1 if q_i + Lap(4N/epsilon) >= T + rho else 0; stop
    after N ones. Claim: epsilon-DP, ``score_linf``, sensitivity 1 (StatDP: N = 1, T = 0.5).
    True epsilon = epsilon at N = 1 (``None`` for N > 1, where only the upper bound is derived
    here): the upper bound is Lyu-Su-Li's Theorem (threshold epsilon/2, N
    "above" answers 2/(4N/epsilon) = epsilon/(2N) each). It is approached (supremum) with the
    output "0 x (d-1), then 1": put the first d-1 queries at a -> inf (moving up by 1) and the
    last one at b <= a (moving down by 1); substituting rho -> rho + 1 in the second input, the
    integrand's ratio is e^{epsilon/2} (threshold, rho >= 0) times e^{epsilon/2} (the last query
    in its upper tail), and the "below" factors F(T + rho - a)^{d-1} push all mass to rho ~ a - T
    (their growth (d-1) epsilon/4 beats the decay 3 epsilon/4 for d >= 5).
    """
    eps = check_epsilon(epsilon)
    N, T = _check_svt_params(N, T)
    fn = partial(_svt_labels, threshold=T, rho_scale=2.0 / eps, nu_scale=4.0 * N / eps, cutoff=N, strict=False)
    return _entry("SVT", fn, epsilon=eps, neighbours="score_linf", kind="finite", pairs=all_differ_pairs(),
                  true_epsilon=eps if N == 1 else None, source=_SVT_SOURCE,
                  note="Correct. True epsilon = epsilon at N = 1 (Lyu-Su-Li Alg. 1; supremum approached with far-above "
                       "queries answered 'below' followed by one 'above'). StatDP's code releases the number "
                       "of 'below' answers; we release the label vector.",
                  attributes={"N": N, "T": T, "rho_scale": 2.0 / eps, "nu_scale": 4.0 * N / eps, "output": _LABELS})


@suite_entry("statdp", "iSVT1")
def iSVT1(epsilon: float = DEFAULT_EPSILON, N: int = 1, T: float = 1.0) -> SuiteEntry:
    """BROKEN: SVT without query noise and without cutoff (Lyu-Su-Li Algorithm 5, Stoddard et al.).

    rho = Lap(2/epsilon); label i = 1 if q_i >= T + rho else 0, for every query (N is unused, as
    in StatDP). Claim: epsilon-DP, ``score_linf``, sensitivity 1. True epsilon = inf (support
    bug): the labels are a deterministic threshold of q, so [1]*k only ever gives all-0 or all-1
    while [0, 2, ..., 2] gives (0, 1, ..., 1) with probability P[-1 < rho <= 1] > 0.
    """
    eps = check_epsilon(epsilon)
    N, T = _check_svt_params(N, T)
    fn = partial(_svt_labels, threshold=T, rho_scale=2.0 / eps, nu_scale=0.0, cutoff=None, strict=False)
    return _entry("iSVT1", fn, epsilon=eps, neighbours="score_linf", kind="finite", pairs=all_differ_pairs(),
                  true_epsilon=float("inf"), source=_SVT_SOURCE,
                  note="Broken: no query noise, true epsilon = inf ([1]*k vs [0,2,...,2], output (0,1,...,1)). "
                       "StatDP's code releases a Hamming distance; we release the label vector (no -1: "
                       "every query is answered).",
                  attributes={"N": N, "T": T, "rho_scale": 2.0 / eps, "nu_scale": 0.0, "output": _LABELS})


@suite_entry("statdp", "iSVT2")
def iSVT2(epsilon: float = DEFAULT_EPSILON, N: int = 1, T: float = 1.0) -> SuiteEntry:
    """BROKEN: query noise Lap(2/epsilon) (not scaled with N) and no cutoff (Lyu-Su-Li Algorithm 6,
    Chen et al.).

    rho = Lap(2/epsilon); label i = 1 if q_i + Lap(2/epsilon) >= T + rho else 0, for every query.
    Claim: epsilon-DP, ``score_linf``, sensitivity 1. True epsilon at length k: k epsilon / 2.
    Upper bound: given rho the labels are independent and each factor moves by at most
    e^{1/b} = e^{epsilon/2}. Approached for even k: half the queries at -L answered 1 (moving
    down), half at +L answered 0 (moving up), L -> inf: every factor sits in a Laplace tail and
    the rho-dependence cancels. Over StatDP's lengths: 10 epsilon / 2 = 5 epsilon; unbounded over
    unbounded query streams (why Lyu-Su-Li call it infinity-DP).
    """
    eps = check_epsilon(epsilon)
    N, T = _check_svt_params(N, T)
    pairs = all_differ_pairs()
    k = _k_max(pairs)
    fn = partial(_svt_labels, threshold=T, rho_scale=2.0 / eps, nu_scale=2.0 / eps, cutoff=None, strict=False)
    return _entry("iSVT2", fn, epsilon=eps, neighbours="score_linf", kind="finite", pairs=pairs,
                  true_epsilon=k * eps / 2.0, source=_SVT_SOURCE,
                  note=f"Broken: true epsilon = k*epsilon/2 at length k (supremum, even k), {k}*epsilon/2 over "
                       "StatDP's lengths; infinite over unbounded streams. StatDP's code releases a Hamming "
                       "distance; we release the label vector (no -1).",
                  attributes={"N": N, "T": T, "rho_scale": 2.0 / eps, "nu_scale": 2.0 / eps, "output": _LABELS})


@suite_entry("statdp", "iSVT3")
def iSVT3(epsilon: float = DEFAULT_EPSILON, N: int = 1, T: float = 1.0) -> SuiteEntry:
    """BROKEN: rho = Lap(4/epsilon), query noise Lap(4/(3 epsilon)) not scaled with N, cutoff N
    (Lyu-Su-Li Algorithm 4, Lee and Clifton).

    Label i = 1 if q_i + nu_i > T + rho. Claim: epsilon-DP, ``score_linf``, sensitivity 1. Upper
    bound (1 + 6N) epsilon / 4 (Lyu-Su-Li: threshold shift epsilon/4 plus 2 / (4/(3 epsilon)) =
    3 epsilon / 2 per "above" answer). True epsilon = 7 epsilon / 4 at StatDP's N = 1, approached
    as for :func:`SVT` ("below" factors grow at (d-1) 3 epsilon/4 > epsilon/4 + 3 epsilon/4 for
    d >= 3). The query noise does not scale with N, so the same witness (one final "above")
    gives 7 epsilon / 4 for every N: broken for every N; ``true_epsilon`` is ``None`` for N > 1
    (only bounded between 7 epsilon / 4 and (1 + 6N) epsilon / 4).
    """
    eps = check_epsilon(epsilon)
    N, T = _check_svt_params(N, T)
    fn = partial(_svt_labels, threshold=T, rho_scale=4.0 / eps, nu_scale=4.0 / (3.0 * eps), cutoff=N, strict=True)
    return _entry("iSVT3", fn, epsilon=eps, neighbours="score_linf", kind="finite", pairs=all_differ_pairs(),
                  true_epsilon=7.0 * eps / 4.0 if N == 1 else None, source=_SVT_SOURCE,
                  broken=True,
                  note="Broken: true epsilon = 7*epsilon/4 at N = 1 (supremum). For N > 1 it lies between "
                       "7*epsilon/4 (same witness: one final 'above') and Lyu-Su-Li's (1+6N)*epsilon/4: None. "
                       "StatDP's code releases a Hamming distance; we release the label vector.",
                  attributes={"N": N, "T": T, "rho_scale": 4.0 / eps, "nu_scale": 4.0 / (3.0 * eps),
                              "output": _LABELS})


@suite_entry("statdp", "iSVT4")
def iSVT4(epsilon: float = DEFAULT_EPSILON, N: int = 1, T: float = 1.0) -> SuiteEntry:
    """BROKEN: SVT that releases the noisy answer q_i + nu_i instead of "above" (Lyu-Su-Li
    Algorithm 3, Roth's lecture notes).

    rho = Lap(2/epsilon), nu_i = Lap(2N/epsilon); where q_i + nu_i > T + rho the output holds
    q_i + nu_i, elsewhere NaN; stop after N such answers. Claim: epsilon-DP, ``score_linf``,
    sensitivity 1. True epsilon at length k: k epsilon / (2N). Upper bound: given rho the output
    density factorises into one factor per answered query (F or f of q_i + nu_i), each moving by
    at most e^{epsilon/(2N)}, and the indicator z > T + rho does not depend on the data.
    Attained: k-1 queries at a answered "below" (moving up by 1) and the last at b answered with
    z in [b, a] (moving down by 1): all factors are exact Laplace tails. Over StatDP's lengths
    with N = 1: 5 epsilon; unbounded over unbounded streams (Lyu-Su-Li: infinity-DP).
    """
    eps = check_epsilon(epsilon)
    N, T = _check_svt_params(N, T)
    pairs = all_differ_pairs()
    k = _k_max(pairs)
    fn = partial(_svt_values, threshold=T, rho_scale=2.0 / eps, nu_scale=2.0 * N / eps, cutoff=N, strict=True)
    return _entry("iSVT4", fn, epsilon=eps, neighbours="score_linf", kind="real", pairs=pairs,
                  true_epsilon=k * eps / (2.0 * N), source=_SVT_SOURCE,
                  note=f"Broken: true epsilon = k*epsilon/(2N) at length k, attained; {k}*epsilon/(2N) over "
                       "StatDP's lengths; infinite over unbounded streams. StatDP's code releases (number of "
                       "'below' answers, last output); we release the vector with NaN where not reported above.",
                  attributes={"N": N, "T": T, "rho_scale": 2.0 / eps, "nu_scale": 2.0 * N / eps,
                              "output": "float64 (n, d): q_i + nu_i where reported above, NaN elsewhere"})
