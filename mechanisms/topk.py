"""Top-k selection: release k of n candidates, in selection order, from a score vector.

Four mechanisms, each with parameters ``epsilon, k`` (plus ``sensitivity=1.0``,
``monotone=False`` and ``output="ordered"``). ``data`` *is* the score vector (one score per candidate, as
``utility="scores"`` in :mod:`mechanisms.finite`); neighbouring inputs move every score by at most
``sensitivity`` (``score_linf``), or, with ``monotone=True``, all in the same direction
(``score_monotone``). ``sample(scores, size=None, rng=None)`` returns candidate indices in selection
order, shape ``(k,)`` for one draw and ``size + (k,)`` otherwise (int64). With ``output="set"`` the
same draw is returned sorted ascending, the unordered set of selected candidates: post-processing of
the ordered release, so the privacy claim is unchanged.

All four use the same per-round rate on the score gaps, rate = (eps/k) / (2 Delta), or
(eps/k) / Delta when monotone, so that their noise is comparable at equal epsilon:

* ``peeling_exponential`` -- k rounds of the exponential mechanism at eps/k, each on the candidates
  not chosen yet; eps-DP by basic composition. Sampled by Gumbel-max, one fresh Gumbel per
  candidate and round.
* ``gumbel_top_k`` -- add Gumbel noise of scale 1/rate once, release the k largest in order; the
  same law as peeling_exponential (Durfee & Rogers 2019), so the same claim.
* ``laplace_top_k`` -- add Laplace noise of scale 1/rate = 2 k Delta/eps (k Delta/eps if monotone)
  once, release the k largest in order; eps-DP (Ding, Wang, Zhang & Kifer 2019, Noisy Top-K with
  Gap, which releases more).
* ``peeling_permute_and_flip`` -- k rounds of permute-and-flip at eps/k on the candidates left;
  eps-DP by basic composition.

Exact laws (``support(data)`` = all n!/(n-k)! ordered k-tuples as rows of an (M, k) array, at most
:data:`mechanisms.topk_laws.SUPPORT_CAP`; ``log_prob(data)`` aligned with its rows; and
``log_prob_of(data, seqs)`` for given sequences) are in :mod:`mechanisms.topk_laws`. With
``output="set"`` the support is the C(n, k) k-subsets as ascending rows (refused under the same cap
on n!/(n-k)!), and each subset's log-probability is the log-sum-exp of the ordered law over its k!
orderings (:func:`mechanisms.topk_laws.set_log_prob`); ``log_prob_of`` then takes subsets (rows in
any order).

Scores may be ``-inf`` (never selected) but at least k must be finite; ``+inf``/NaN are rejected.
All computations use the gaps u - max u, in log space.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpharness.mechanisms.base import Mechanism, ParamError, PrivacyClaim, as_rng, check_epsilon, check_positive, check_scores, check_size
from dpharness.mechanisms.registry import register
from dpharness.mechanisms.topk_laws import (SUPPORT_CAP, check_seqs, k_subsets, laplace_topk_log_prob, ordered_tuples,
                        peeling_pf_log_prob, plackett_luce_log_prob, set_log_prob)

__all__ = ["PeelingExponential", "GumbelTopK", "LaplaceTopK", "PeelingPermuteAndFlip"]

#: Noise values per temporary (draws x candidates) matrix.
_SAMPLE_CHUNK = 1 << 22
_EXAMPLE_SCORES = np.array([0.0, 1.0, 2.0, 2.5])
#: Accepted values of ``output``.
OUTPUTS = ("ordered", "set")


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ParamError(name, f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_k(k: Any) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (numbers.Integral, np.integer)) or int(k) < 1:
        raise ParamError("k", f"k must be an integer >= 1 (the number of candidates to select), got {k!r}")
    return int(k)


def _check_output(output: Any) -> str:
    if not isinstance(output, str) or output not in OUTPUTS:
        raise ParamError("output", f"output must be one of {', '.join(repr(o) for o in OUTPUTS)} (indices in selection order, "
                         f"or the selected set sorted ascending), got {output!r}")
    return output


@dataclass(frozen=True)
class _TopK(Mechanism):
    """Shared parameters, validation, claim and law plumbing (not registered).

    ``output="set"`` returns each draw sorted ascending: post-processing of the ordered release, so
    :attr:`claim` is the same for both outputs; the exact law becomes the law of the k-subset.
    """

    epsilon: float
    k: int
    sensitivity: float = 1.0
    monotone: bool = False
    #: "ordered": indices in selection order; "set": the same indices sorted ascending (post-processing).
    output: str = "ordered"

    kind: ClassVar[str] = "finite"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "k", _check_k(self.k))
        object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "monotone", _check_bool(self.monotone, "monotone"))
        object.__setattr__(self, "output", _check_output(self.output))

    @property
    def neighbours(self) -> str:
        return "score_monotone" if self.monotone else "score_linf"

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, 0.0, self.neighbours, self.sensitivity)

    @property
    def rate(self) -> float:
        """Multiplier of the score gaps per round: (eps/k)/(2 Delta), or (eps/k)/Delta if monotone."""
        per_round = self.epsilon / self.k
        return per_round / (self.sensitivity if self.monotone else 2.0 * self.sensitivity)

    @property
    def scale(self) -> float:
        """Noise scale of the one-shot forms: 1/rate = 2 k Delta/eps (k Delta/eps if monotone)."""
        return 1.0 / self.rate

    def scores(self, data: Any) -> np.ndarray:
        """The validated score vector: 1-D, no NaN/+inf, at least k finite scores."""
        u = check_scores(data, "data")
        if self.k > u.size:
            raise ValueError(f"k={self.k} is larger than the number of candidates ({u.size} scores in data)")
        n_fin = int(np.isfinite(u).sum())
        if self.k > n_fin:
            raise ValueError(f"k={self.k} but only {n_fin} of the {u.size} scores are finite; candidates with "
                             "score -inf are never selected, so at least k scores must be finite")
        return u

    def _z(self, data: Any) -> np.ndarray:
        """Scaled gaps rate * (u - max u): <= 0, -inf for -inf scores, never NaN."""
        u = self.scores(data)
        with np.errstate(over="ignore", invalid="ignore"):
            g = u - np.max(u)
        with np.errstate(over="ignore"):
            return g * self.rate

    def support(self, data: Any) -> np.ndarray:
        """All ordered k-tuples of candidate indices, shape (n!/(n-k)!, k), or with ``output="set"`` all
        k-subsets as ascending rows, shape (C(n, k), k); ValueError when n!/(n-k)! exceeds the cap."""
        u = self.scores(data)
        return k_subsets(u.size, self.k) if self.output == "set" else ordered_tuples(u.size, self.k)

    def log_prob(self, data: Any) -> np.ndarray:
        """Exact log-probabilities aligned with the rows of :meth:`support` (sets: log-sum-exp of the
        ordered law over the k! orderings of each subset)."""
        u = self.scores(data)
        z = self._z(u)
        if self.output == "set":
            return set_log_prob(self._law, z, k_subsets(u.size, self.k))
        return self._law(z, ordered_tuples(u.size, self.k))

    def log_prob_of(self, data: Any, seqs: Any) -> np.ndarray:
        """Exact log-probabilities of the given ordered sequences (rows of an (M, k) int array); with
        ``output="set"`` each row is read as a subset (any order) and gets its set probability."""
        z = self._z(data)
        s = check_seqs(seqs, z.size, self.k)
        if self.output != "set":
            return self._law(z, s)
        n_seqs = s.shape[0] * math.factorial(self.k)
        if n_seqs > SUPPORT_CAP:
            raise ValueError(f"{s.shape[0]:,} subsets x {self.k}! orderings = {n_seqs:,} ordered sequences, more than "
                             f"the cap of {SUPPORT_CAP:,}: pass fewer subsets per call")
        return set_log_prob(self._law, z, np.sort(s, axis=1))

    def _law(self, z: np.ndarray, seqs: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _keys(self, z: np.ndarray, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - abstract

    # -- sampling -----------------------------------------------------------------------------
    def _draw(self, data: Any, size: Any, rng: Any, peel: bool) -> np.ndarray:
        shape = check_size(size)
        rng = as_rng(rng)
        z = self._z(data)
        live = np.flatnonzero(np.isfinite(z))  # -inf scores can never be chosen (>= k live: checked)
        z = z[live]
        n_draws = int(np.prod(shape)) if shape else 1
        n, k = z.size, self.k
        out = np.empty((n_draws, k), dtype=np.int64)
        rows = max(1, _SAMPLE_CHUNK // n)
        for s in range(0, n_draws, rows):
            e = min(n_draws, s + rows)
            out[s:e] = _peel(self, z, (e - s, n), k, rng) if peel else _one_shot(self._keys(z, (e - s, n), rng), k)
        res = live[out]
        if self.output == "set":
            res.sort(axis=1)  # post-processing of the ordered draw (live is ascending)
        return res.reshape(shape + (k,))


def _peel(mech: _TopK, z: np.ndarray, shape: tuple[int, int], k: int, rng: np.random.Generator) -> np.ndarray:
    """k rounds of argmax(z + fresh noise) over the candidates not chosen yet (chosen -> -inf)."""
    m = shape[0]
    taken = np.zeros(shape, dtype=bool)
    out = np.empty((m, k), dtype=np.int64)
    rows = np.arange(m)
    for j in range(k):
        keys = mech._keys(z, shape, rng)
        keys[taken] = -np.inf
        pick = np.argmax(keys, axis=1)
        out[:, j] = pick
        taken[rows, pick] = True
    return out


def _one_shot(keys: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest keys per row, largest first (continuous noise: no ties a.s.)."""
    n = keys.shape[1]
    if k < n:
        idx = np.argpartition(keys, n - k, axis=1)[:, n - k :]
    else:
        idx = np.broadcast_to(np.arange(n), keys.shape).copy()
    order = np.argsort(-np.take_along_axis(keys, idx, axis=1), axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1)


@register("peeling_exponential")
@dataclass(frozen=True)
class PeelingExponential(_TopK):
    """Peeling exponential mechanism: k rounds of the EM at eps/k, removing each chosen candidate.

    Round j picks r among the candidates not chosen yet with P[r] ∝ exp((eps/k) u_r / (2 Delta))
    (exp((eps/k) u_r / Delta) if ``monotone``), the weights of :class:`mechanisms.finite.ExponentialMechanism`
    at eps/k. Claim: eps-DP (pure), neighbours ``score_linf`` (``score_monotone`` if monotone),
    sensitivity Delta = ``sensitivity``: each round is (eps/k)-DP (McSherry & Talwar 2007; Dwork &
    Roth 2014, Thm 3.10, and the remark after it for monotone scores; removing chosen candidates is
    a data-independent restriction given the earlier outputs) and k adaptive rounds compose to eps
    (Dwork & Roth Thm 3.16, basic composition). Tighter, not registered: the rounds are
    (eps/k)-bounded-range, which gives (eps', delta)-DP with eps' of order sqrt(k log(1/delta)) eps/k
    (Durfee & Rogers, NeurIPS 2019, Sec. 4.2) and the optimal composition of Dong, Durfee & Rogers
    (ICML 2020).

    Exact law: Plackett--Luce, P(i_1..i_k) = prod_j w_{i_j} / sum_{r left} w_r with
    log w = rate (u - max u) (:func:`mechanisms.topk_laws.plackett_luce_log_prob`, log space).
    Sampling: per round, Gumbel-max over the candidates left (argmax of log w + Gumbel), vectorised
    over draws; O(n k) per draw.
    """

    def _keys(self, z: np.ndarray, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
        return rng.gumbel(size=shape) + z[None, :]

    def _law(self, z: np.ndarray, seqs: np.ndarray) -> np.ndarray:
        return plackett_luce_log_prob(z, seqs)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        return self._draw(data, size, rng, peel=True)

    @classmethod
    def example(cls) -> tuple["PeelingExponential", np.ndarray]:
        return cls(epsilon=1.0, k=2), _EXAMPLE_SCORES.copy()


@register("gumbel_top_k")
@dataclass(frozen=True)
class GumbelTopK(_TopK):
    """One-shot Gumbel top-k: add Gumbel noise of scale 2 k Delta/eps once, release the top k in order.

    Gumbel scale b = 1/rate = 2 k Delta/eps (k Delta/eps if ``monotone``). The ordered top k of
    log w + Gumbel has exactly the Plackett--Luce law of :class:`PeelingExponential` (Durfee &
    Rogers, "Practical differentially private top-k selection with pay-what-you-get composition",
    NeurIPS 2019, Sec. 4.1 "Exponential mechanism and Gumbel noise": one-shot Gumbel noise = the peeling exponential mechanism; Yellott 1977
    for the Gumbel/Plackett--Luce identity), so the claim is the same: eps-DP (pure), neighbours
    ``score_linf`` (``score_monotone`` if monotone), sensitivity Delta, by basic composition of the
    k exponential mechanisms it is equal in law to (tighter (eps', delta) bounds: see
    :class:`PeelingExponential`). Releasing the noisy values as well would not be covered.

    Exact law: Plackett--Luce (the same function as :class:`PeelingExponential`; the test suite
    checks it against a definitional integral over the Gumbel noise). Sampling: one Gumbel per
    candidate, ``argpartition`` + sort of the top k; O(n + k log k) per draw.
    """

    def _keys(self, z: np.ndarray, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
        return rng.gumbel(size=shape) + z[None, :]

    def _law(self, z: np.ndarray, seqs: np.ndarray) -> np.ndarray:
        return plackett_luce_log_prob(z, seqs)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        return self._draw(data, size, rng, peel=False)

    @classmethod
    def example(cls) -> tuple["GumbelTopK", np.ndarray]:
        return cls(epsilon=1.0, k=2), _EXAMPLE_SCORES.copy()


@register("laplace_top_k")
@dataclass(frozen=True)
class LaplaceTopK(_TopK):
    """One-shot Laplace top-k: add Laplace noise of scale 2 k Delta/eps once, release the top k in order.

    Noise scale b = 2 k Delta/eps, or k Delta/eps if ``monotone`` (k = 1 is report noisy max with
    Laplace noise, :class:`mechanisms.finite.ReportNoisyMax`). Claim: eps-DP (pure), neighbours
    ``score_linf`` (``score_monotone`` if monotone), sensitivity Delta. Source: Ding, Wang, Zhang &
    Kifer, "Free gap information from the differentially private sparse vector and noisy max
    mechanisms", PVLDB 13(3), 2019: Noisy Top-K with Gap, which adds Lap(2k/eps) noise to
    sensitivity-1 queries (Lap(k/eps) for monotone ones) and releases the ordered top-k indices
    *and* the gaps between consecutive noisy values, is eps-DP; releasing only the ordered indices is
    post-processing. (The theorem text could not be retrieved through this project's search tools;
    the scale agrees with published implementations of that algorithm, and
    tests/mechanisms/test_topk.py checks the exact privacy loss <= eps on neighbour grids.)
    Not registered: Qiao, Su & Zhang ("Oneshot differentially private top-k selection", ICML 2021)
    prove (eps, delta)-DP with noise of order sqrt(k log(1/delta))/eps up to log factors (their
    constants were not verified here); Durfee & Rogers (NeurIPS 2019) compare one-shot Laplace with
    Gumbel noise.

    Exact law: numerical nested integration (:func:`mechanisms.topk_laws.laplace_topk_log_prob`,
    absolute error ~5e-13, not certified; at most 50,000 sequences). Sampling: one Laplace per
    candidate, ``argpartition`` + sort of the top k.
    """

    def _keys(self, z: np.ndarray, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
        return rng.laplace(size=shape) + z[None, :]  # z in units of the noise scale

    def _law(self, z: np.ndarray, seqs: np.ndarray) -> np.ndarray:
        return laplace_topk_log_prob(z, seqs)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        return self._draw(data, size, rng, peel=False)

    @classmethod
    def example(cls) -> tuple["LaplaceTopK", np.ndarray]:
        return cls(epsilon=1.0, k=2), _EXAMPLE_SCORES.copy()


@register("peeling_permute_and_flip")
@dataclass(frozen=True)
class PeelingPermuteAndFlip(_TopK):
    """Peeling permute-and-flip: k rounds of permute-and-flip at eps/k, removing each chosen candidate.

    Round j runs permute-and-flip (McKenna & Sheldon, NeurIPS 2020, Alg. 1) on the candidates not
    chosen yet, with acceptance probabilities q_r = exp(rate (u_r - max_left u)), rate =
    (eps/k)/(2 Delta) ((eps/k)/Delta if ``monotone``). Claim: eps-DP (pure), neighbours
    ``score_linf`` (``score_monotone`` if monotone), sensitivity Delta: each round is (eps/k)-DP
    (McKenna & Sheldon Thm 1; the monotone rate as in :class:`mechanisms.finite.PermuteAndFlip`, via
    its identity with exponential-noise report noisy max, Ding, Kifer et al. 2021) and k adaptive
    rounds compose to eps (Dwork & Roth Thm 3.16).

    Exact law: product over rounds of the exact permute-and-flip law on the remaining candidates
    (:func:`mechanisms.topk_laws.peeling_pf_log_prob`). Sampling: per round argmax over the
    candidates left of log q_r + E_r, E_r iid standard exponential (= argmin V_r/q_r with
    V_r = e^{-E_r} uniform, the vectorised permute-and-flip of :class:`mechanisms.finite.PermuteAndFlip`;
    the max over the remaining set only rescales every key, so it is not needed). O(n k) per draw.
    """

    def _keys(self, z: np.ndarray, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
        return rng.standard_exponential(size=shape) + z[None, :]

    def _law(self, z: np.ndarray, seqs: np.ndarray) -> np.ndarray:
        return peeling_pf_log_prob(z, seqs)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        return self._draw(data, size, rng, peel=True)

    @classmethod
    def example(cls) -> tuple["PeelingPermuteAndFlip", np.ndarray]:
        return cls(epsilon=1.0, k=2), _EXAMPLE_SCORES.copy()
