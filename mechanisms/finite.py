"""Finite-output selection mechanisms: exponential mechanism, report noisy max, permute-and-flip,
randomized response.

Every mechanism here selects one of k candidates from a utility (score) vector, exposes its exact
output law (``support(data)``, ``log_prob(data)``; see :mod:`mechanisms.selection_laws`) and
samples in log space, vectorised over ``size``.

Utilities (``utility=``):

* ``"scores"`` -- ``data`` *is* the score vector, one score per candidate. Neighbouring inputs
  move every score by at most ``sensitivity`` (``score_linf``), or, with ``monotone=True``, all in
  the same direction (``score_monotone``). The output is the candidate index (or
  ``candidates[index]`` when labels are given).
* ``"count"`` -- ``data`` is an array of records (labels); the score of candidate c is the number
  of records equal to c (records matching no candidate count for none). Adding or removing one
  record changes one count by 1, so the sensitivity is 1, the scores are monotone, and the
  neighbour relation is ``add_remove``. The output is a label from ``candidates``.

Scores may be ``-inf`` (that candidate is never chosen); ``+inf``/NaN scores are rejected. All
computations use score *gaps* u - max u, so scaled utilities of any magnitude (1e6 and beyond) are
safe.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpharness.mechanisms.base import (Mechanism, ParamError, PrivacyClaim, as_rng, check_choice, check_epsilon, check_positive, check_present,
                   check_scores, check_size)
from dpharness.mechanisms.laws import sample_index
from dpharness.mechanisms.registry import register
from dpharness.mechanisms.selection_laws import em_log_prob, laplace_rnm_log_prob, pf_log_prob

__all__ = ["ExponentialMechanism", "ReportNoisyMax", "PermuteAndFlip", "RandomizedResponse"]

UTILITIES: tuple[str, ...] = ("scores", "count")
NOISES: tuple[str, ...] = ("laplace", "exponential", "gumbel")
#: ``direct`` runs the mechanism's own randomisation (O(k) per draw); ``law`` draws from the exact
#: output law by inverse CDF (set-up = one ``log_prob``, then O(log k) per draw).
SAMPLERS: tuple[str, ...] = ("direct", "law")
#: Noise values per temporary (draws x candidates) matrix when sampling by adding noise.
_SAMPLE_CHUNK = 1 << 22
_EXAMPLE_SCORES = np.array([0.0, 1.0, 2.0, 2.5])


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ParamError(name, f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_candidates(candidates: Any, utility: str) -> tuple[Any, ...] | None:
    if candidates is None:
        if utility == "count":
            raise ParamError("candidates", "candidates must be a non-empty tuple of labels when utility='count', got None")
        return None
    if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__iter__"):
        raise ParamError("candidates", f"candidates must be a sequence of labels, got {candidates!r}")
    cand = tuple(candidates)
    if len(cand) == 0:
        raise ParamError("candidates", f"candidates must not be empty (no output to select), got {candidates!r}")
    all_str = all(isinstance(c, (str, np.str_)) for c in cand)
    all_num = all(isinstance(c, (numbers.Real, np.number)) and not isinstance(c, (str, np.str_)) for c in cand)
    arr = np.asarray(cand)
    if not (all_str or all_num) or arr.ndim != 1 or arr.dtype.kind not in "biufUS":
        raise ParamError("candidates", f"candidates must be all numbers or all strings (one label each), got {candidates!r}")
    if np.unique(arr).size != len(cand):
        raise ParamError("candidates", f"candidates must be distinct, got {candidates!r}")
    return cand


def _gaps(u: np.ndarray) -> np.ndarray:
    """u - max(u): 0 for the best candidates, -inf stays -inf (overflow to -inf is harmless)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return u - np.max(u)


def _scale(gaps: np.ndarray, factor: float) -> np.ndarray:
    # Gaps are <= 0 and the factor is finite and > 0, so the product is <= 0 or -inf, never NaN.
    with np.errstate(over="ignore"):
        return gaps * factor


def _n_draws(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape)) if shape else 1


@dataclass(frozen=True)
class _Selection(Mechanism):
    """Shared parameters, validation and utility handling (not registered)."""

    epsilon: float
    sensitivity: float = 1.0
    monotone: bool = False
    utility: str = "scores"
    candidates: tuple[Any, ...] | None = None

    kind: ClassVar[str] = "finite"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "monotone", _check_bool(self.monotone, "monotone"))
        check_choice(self.utility, "utility", UTILITIES)
        if self.utility == "count" and self.sensitivity != 1.0:
            raise ParamError(
                'sensitivity', "sensitivity must be 1.0 for utility='count' (one record changes one count by 1), "
                f"got {self.sensitivity!r}"
            )
        object.__setattr__(self, "candidates", _check_candidates(self.candidates, self.utility))

    # -- the privacy claim ------------------------------------------------------------------------
    @property
    def neighbours(self) -> str:
        if self.utility == "count":
            return "add_remove"
        return "score_monotone" if self.monotone else "score_linf"

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, 0.0, self.neighbours, self.sensitivity)

    @property
    def rate(self) -> float:
        """Multiplier of the score gaps: eps/(2 Delta), or eps/Delta for monotone utilities."""
        return self.epsilon / (self.sensitivity if self.monotone else 2.0 * self.sensitivity)

    # -- utilities --------------------------------------------------------------------------------
    def scores(self, data: Any) -> np.ndarray:
        """The utility vector u(D, r), one entry per candidate (validated)."""
        if self.utility == "scores":
            u = check_scores(data, "data")
            if self.candidates is not None and u.size != len(self.candidates):
                raise ParamError(
                    'data', f"data must have one score per candidate ({len(self.candidates)}), got {u.size} scores"
                )
            return u
        return check_scores(_count(data, self.candidates), "data")

    def support(self, data: Any) -> np.ndarray:
        """The possible outputs, aligned with :meth:`log_prob`: indices, or the candidate labels."""
        u = self.scores(data)
        if self.candidates is None:
            return np.arange(u.size)
        return np.asarray(self.candidates)

    def _labels(self, idx: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        out = idx if self.candidates is None else np.asarray(self.candidates)[idx]
        return out.reshape(shape)

    def log_prob(self, data: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


def _count(data: Any, candidates: tuple[Any, ...] | None) -> np.ndarray:
    """Number of records equal to each candidate label (vectorised: unique + searchsorted)."""
    assert candidates is not None
    labels = np.asarray(data)
    if labels.ndim == 0:
        labels = labels.reshape(1)
    if labels.ndim != 1:
        raise ParamError("data", f"data must be a 1-D array of labels, got shape {labels.shape}")
    cand = np.asarray(candidates)
    if labels.size == 0:
        return np.zeros(cand.size)
    numeric = "biuf"
    same_kind = (labels.dtype.kind in numeric and cand.dtype.kind in numeric) or (
        labels.dtype.kind in "US" and cand.dtype.kind == labels.dtype.kind
    )
    if not same_kind:
        raise ParamError(
            'data', f"data labels ({labels.dtype}) and candidates ({cand.dtype}) must both be numbers or both strings"
        )
    uniq, cnt = np.unique(labels, return_counts=True)
    pos = np.searchsorted(uniq, cand)
    pos_c = np.minimum(pos, uniq.size - 1)
    hit = (pos < uniq.size) & (uniq[pos_c] == cand)
    return np.where(hit, cnt[pos_c], 0).astype(np.float64)


# ------------------------------------------------------------------------------------------------


@register("exponential")
@dataclass(frozen=True)
class ExponentialMechanism(_Selection):
    """Exponential mechanism: P[r] ∝ exp(eps u(D, r) / (2 Delta u)), or exp(eps u / Delta u) if monotone.

    Claim: eps-DP (pure) with respect to the neighbour relation of ``utility`` (module docstring):
    ``score_linf`` / ``score_monotone`` for ``utility="scores"``, ``add_remove`` for
    ``utility="count"`` (sensitivity 1; counts are monotone, so ``monotone=True`` is valid there).
    Sources: McSherry & Talwar (FOCS 2007); Dwork & Roth, *The Algorithmic Foundations of DP*,
    Def. 3.4 and Thm 3.10; the monotone variant is the remark after Thm 3.10.

    Exact law: log-softmax of eps (u - max u) / (2 Delta u). Sampling: inverse CDF over the
    log-normalised probabilities (:func:`mechanisms.laws.sample_index`), O(k + size log k).
    """

    def log_prob(self, data: Any) -> np.ndarray:
        return em_log_prob(_scale(_gaps(self.scores(data)), self.rate))

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        shape = check_size(size)
        lp = self.log_prob(data)
        idx = sample_index(lp, _n_draws(shape), as_rng(rng))
        return self._labels(idx, shape)

    @classmethod
    def example(cls) -> tuple["ExponentialMechanism", np.ndarray]:
        return cls(epsilon=1.0), _EXAMPLE_SCORES.copy()


@register("report_noisy_max")
@dataclass(frozen=True)
class ReportNoisyMax(_Selection):
    """Report noisy max: release argmax_r (u_r + Z_r) (the index only), Z_r iid noise.

    Noise and scale b (Delta = ``sensitivity``), each eps-DP under the ``utility``'s neighbours:

    * ``laplace``: b = 2 Delta/eps, or Delta/eps if monotone (Dwork & Roth Claim 3.9 proves the
      monotone counting case with b = 1/eps). Exact law: P[r] = int f_r prod_{s != r} F_s,
      computed with a certified error bound <= 1e-13 relative per probability
      (:func:`mechanisms.selection_laws.laplace_rnm_log_prob`).
    * ``exponential`` (one-sided): b = 2 Delta/eps, or Delta/eps if monotone. Identical in law to
      permute-and-flip at the same eps (Ding, Kifer et al. 2021, "The permute-and-flip mechanism is
      identical to report-noisy-max with exponential noise"); the monotone scale follows OpenDP's
      proven privacy map for exponential-noise noisy max (eps = range distance / scale, range =
      Delta for monotonic scores, 2 Delta otherwise; ``make_noisy_top_k``, MaxDivergence), and
      tests/mechanisms/test_finite.py checks it exactly on monotone neighbour grids.
    * ``gumbel``: b = 2 Delta/eps, or Delta/eps if monotone. Identical in law to the exponential
      mechanism (Gumbel-max trick), so ``log_prob`` is the EM's.

    Releasing the noisy maximum *value* as well is not eps-DP; this class never does.

    ``sampler="direct"`` (default) adds the noise literally to the scores shifted by their maximum
    and takes the argmax, in chunks of ~4M noise values, O(k) per draw. Laplace noise is drawn as
    a standard exponential with a random sign and Gumbel noise as -log E, so that
    argmax(z + G) = argmin(E e^{-z}) needs no logarithm; both are exact identities.
    ``sampler="law"`` draws from the exact law by inverse CDF instead (one ``log_prob`` set-up,
    then O(log k) per draw): exact for Gumbel noise and for exponential noise with k <= 128,
    otherwise within the certified 1e-13 relative error of ``log_prob`` (total variation
    <= 1e-13). Use ``direct`` to audit the noise-adding implementation itself.
    """

    noise: str = "laplace"
    sampler: str = "direct"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice(self.noise, "noise", NOISES)
        check_choice(self.sampler, "sampler", SAMPLERS)

    @property
    def scale(self) -> float:
        """Noise scale b = 1 / rate (2 Delta/eps, or Delta/eps when monotone)."""
        return 1.0 / self.rate

    def log_prob(self, data: Any) -> np.ndarray:
        gaps = _gaps(self.scores(data))
        if self.noise == "gumbel":
            return em_log_prob(_scale(gaps, self.rate))
        if self.noise == "exponential":
            return pf_log_prob(_scale(gaps, self.rate))
        return laplace_rnm_log_prob(_scale(gaps, self.rate))

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        shape = check_size(size)
        rng = as_rng(rng)
        n = _n_draws(shape)
        if self.sampler == "law":
            return self._labels(sample_index(self.log_prob(data), n, rng), shape)
        z = _scale(_gaps(self.scores(data)), self.rate)  # scores in units of the noise scale
        with np.errstate(over="ignore"):
            inv_rate = np.exp(-z)  # for Gumbel noise; +inf for -inf scores
        # Candidates that cannot win (score -inf; for Gumbel also rate e^z = 0 in floating point)
        # are left out, so no -inf/inf arithmetic can produce NaN.
        live = np.flatnonzero(np.isfinite(inv_rate) if self.noise == "gumbel" else np.isfinite(z))
        z, inv_rate = z[live], inv_rate[live]
        k = z.size
        idx = np.empty(n, dtype=np.int64)
        rows = max(1, _SAMPLE_CHUNK // k)
        for s in range(0, n, rows):
            e = min(n, s + rows)
            noise = rng.standard_exponential((e - s, k))
            if self.noise == "gumbel":
                # argmax_r z_r + G_r with G_r = -log E_r is argmin_r E_r e^{-z_r}, draw by draw.
                noise *= inv_rate
                idx[s:e] = np.argmin(noise, axis=1)
                continue
            if self.noise == "laplace":
                # A standard Laplace is a standard exponential with an independent random sign.
                np.negative(noise, out=noise, where=rng.integers(0, 2, (e - s, k), dtype=np.bool_))
            noise += z
            idx[s:e] = np.argmax(noise, axis=1)
        return self._labels(live[idx], shape)

    @classmethod
    def example(cls) -> tuple["ReportNoisyMax", np.ndarray]:
        return cls(epsilon=1.0, noise="laplace"), _EXAMPLE_SCORES.copy()


@register("permute_and_flip")
@dataclass(frozen=True)
class PermuteAndFlip(_Selection):
    """Permute-and-flip: visit candidates in uniformly random order, return r with prob. q_r.

    q_r = exp(eps (u_r - u*) / (2 Delta u)) (exp(eps (u_r - u*)/Delta u) if monotone), u* = max u.
    Claim: eps-DP under the ``utility``'s neighbours; never worse expected utility than the
    exponential mechanism (McKenna & Sheldon, NeurIPS 2020, Alg. 1 and Thm 1). The monotone
    variant is eps-DP because permute-and-flip is report noisy max with exponential noise of scale
    Delta/eps (Ding, Kifer et al. 2021; see :class:`ReportNoisyMax`).

    Exact law: P[r] = q_r int_0^1 prod_{s != r} (1 - q_s t) dt, a degree-(k-1) polynomial
    integrated exactly by Gauss--Legendre with ceil(k/2) nodes (k <= 128) or with a certified
    relative error <= 1e-13 (:func:`mechanisms.selection_laws.pf_log_prob`).

    Sampling, vectorised and exact: draw V_r ~ U(0, 1] per candidate. Flip r succeeds iff
    V_r <= q_r, and given success V_r / q_r is uniform and independent, so ranking successes by
    V_r / q_r is a uniformly random visiting order; the first success in that order is
    argmin_r V_r / q_r over all r (failures have V_r / q_r > 1 >= the top candidate's key).
    O(k) per draw, in chunks of ~4M uniforms. ``sampler="law"`` draws from the exact law by
    inverse CDF instead (see :class:`ReportNoisyMax`).
    """

    sampler: str = "direct"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice(self.sampler, "sampler", SAMPLERS)

    def _log_q(self, data: Any) -> np.ndarray:
        return _scale(_gaps(self.scores(data)), self.rate)

    def log_prob(self, data: Any) -> np.ndarray:
        return pf_log_prob(self._log_q(data))

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        shape = check_size(size)
        rng = as_rng(rng)
        if self.sampler == "law":
            return self._labels(sample_index(self.log_prob(data), _n_draws(shape), rng), shape)
        with np.errstate(over="ignore"):
            inv_q = np.exp(-self._log_q(data))  # 1/q_r; +inf when q_r underflows or u_r = -inf
        n, k = _n_draws(shape), inv_q.size
        idx = np.empty(n, dtype=np.int64)
        rows = max(1, _SAMPLE_CHUNK // k)
        for s in range(0, n, rows):
            e = min(n, s + rows)
            key = 1.0 - rng.random((e - s, k))  # in (0, 1], so key * inf = inf, never NaN
            key *= inv_q
            idx[s:e] = np.argmin(key, axis=1)
        return self._labels(idx, shape)

    @classmethod
    def example(cls) -> tuple["PermuteAndFlip", np.ndarray]:
        return cls(epsilon=1.0), _EXAMPLE_SCORES.copy()


@register("randomized_response")
@dataclass(frozen=True)
class RandomizedResponse(Mechanism):
    """Randomized response on one private bit: report the truth with probability e^eps/(1 + e^eps).

    Claim: eps-DP, neighbours ``bit`` (the bit may flip); tight. Source: Warner (1965); Dwork &
    Roth §3.2. Implemented *as* an exponential mechanism over R = {0, 1} with utility
    u(x, r) = 1[r = x], Delta u = 1 (Sherpa.ai shfl tutorial "the exponential mechanism"): the EM
    at parameter eps' reports the truth with probability e^{eps'/2}/(1 + e^{eps'/2}), so classic
    eps-RR is the EM at eps' = 2 eps. The general EM analysis would claim 2 eps; the true privacy
    loss is eps (the analysis is loose by a factor 2 here), and the claim made is eps.

    ``data`` is 0 or 1 (bool, int, or a one-element array); outputs are 0/1 (int64).
    """

    epsilon: float

    kind: ClassVar[str] = "finite"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, 0.0, "bit", 1.0)

    @property
    def as_exponential(self) -> ExponentialMechanism:
        """The equivalent exponential mechanism (eps' = 2 eps, Delta u = 1) on scores 1[r = x]."""
        return ExponentialMechanism(epsilon=2.0 * self.epsilon, sensitivity=1.0)

    @staticmethod
    def scores(data: Any) -> np.ndarray:
        """u(x, r) = 1[r = x] for r = 0, 1."""
        check_present(data, "data", "one private bit (0 or 1)")
        x = np.asarray(data)
        if x.shape not in ((), (1,)) or x.dtype.kind not in "biuf" or x.reshape(-1)[0] not in (0, 1):
            raise ParamError("data", f"data must be one private bit (0 or 1), got {data!r}")
        bit = int(x.reshape(-1)[0])
        return np.array([1.0 - bit, float(bit)])

    def support(self, data: Any) -> np.ndarray:
        self.scores(data)
        return np.array([0, 1])

    def log_prob(self, data: Any) -> np.ndarray:
        return self.as_exponential.log_prob(self.scores(data))

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        return self.as_exponential.sample(self.scores(data), size=size, rng=rng)

    @classmethod
    def example(cls) -> tuple["RandomizedResponse", int]:
        return cls(epsilon=1.0), 1

