"""Zoo entries with structured outputs or record-level units: a noisy histogram (vector output,
``one_differ`` neighbours), a user-level count (``privacy_unit`` neighbours) and Gumbel top-k
(label rows), each with a broken twin. See :mod:`verifiers.zoo`.

Their witnesses are exact (closed forms: Laplace tails, the Plackett–Luce law of Gumbel top-k), so
the verifier's vector events are checked against known losses, as the scalar zoo is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import special

from dpharness.mechanisms.base import ParamError, PrivacyClaim, as_rng, check_epsilon, check_positive, check_scores
from dpharness.verifiers.events import Event
from dpharness.verifiers.relations.privacy_unit import unit_records
from dpharness.verifiers.controls.zoo.base import ZooWitness, _Base, _n, zoo_register

__all__ = ["ZooNoisyHistogram", "ZooNoisyHistogramHalfNoise", "ZooUserCount", "ZooUserCountOneRecord",
           "ZooTopKGumbel", "ZooTopKTop1Scale", "plackett_luce_log_prob"]


def _shape(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Draws (sample axis first) shaped as ``size`` asked, each draw keeping its own shape."""
    return x.reshape(shape + x.shape[1:]) if shape else x[0]


def _histogram(data: Any) -> np.ndarray:
    a = np.asarray(data, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"data must be a non-empty 1-D vector of finite bin counts, got {data!r}")
    return a


# --------------------------------------------------------------------------------------------
# noisy histogram

@zoo_register("noisy_histogram", broken=False, structured=True)
@dataclass(frozen=True)
class ZooNoisyHistogram(_Base):
    """Noisy histogram: every bin count plus its own Lap(1/epsilon); epsilon-DP, tight.

    Data: the vector of bin counts; ``one_differ`` neighbours, sensitivity 1 (one record moves
    one count by 1). Parallel composition of Laplace mechanisms (Dwork, McSherry, Nissim, Smith
    2006; Dwork–Roth Prop. 3.6 / §3.3). Output: one row of noisy counts per draw. Tight on
    {y[0] <= 0} for counts 0 vs 1 in bin 0.
    """

    epsilon: float = 1.0
    #: noise scale of bin 0 relative to 1/epsilon (1 = correct)
    first_bin_scale: ClassVar[float] = 1.0

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="one_differ", sensitivity=1.0)

    @property
    def true_epsilon(self) -> float:
        return self.epsilon / self.first_bin_scale

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        h = _histogram(data)
        shape, n = _n(size)
        scale = np.full(h.size, 1.0 / self.epsilon)
        scale[0] *= self.first_bin_scale
        y = h + as_rng(rng).laplace(size=(n, h.size)) * scale
        return _shape(y, shape)

    def witness(self) -> ZooWitness:
        b = self.first_bin_scale / self.epsilon
        return ZooWitness(np.zeros(4), np.array([1.0, 0, 0, 0]), Event("le", hi=0.0, coord=0), "d1>d2",
                          0.5, 0.5 * math.exp(-1.0 / b))

    @classmethod
    def example(cls) -> tuple[Any, Any]:
        return cls(), np.array([3.0, 0.0, 5.0, 1.0])


@zoo_register("noisy_histogram_half_noise", broken=True, twin="noisy_histogram", structured=True)
@dataclass(frozen=True)
class ZooNoisyHistogramHalfNoise(ZooNoisyHistogram):
    """BROKEN: the first bin gets Lap(1/(2 epsilon)), half the noise it needs.

    True epsilon = 2 epsilon (the first bin alone loses 2 epsilon between counts 0 and 1); witness
    [0, 0, 0, 0] vs [1, 0, 0, 0], event {y[0] <= 0}.
    """

    first_bin_scale: ClassVar[float] = 0.5


# --------------------------------------------------------------------------------------------
# user-level count

@zoo_register("user_count", broken=False, structured=True)
@dataclass(frozen=True)
class ZooUserCount(_Base):
    """User-level count: number of records, each unit's contribution capped at
    ``max_contributions``, plus Lap(max_contributions/epsilon); epsilon-DP, tight.

    Data: records (2-D array; column 0 the unit id, column 1 a value); ``privacy_unit``
    neighbours (all records of one unit added or removed), sensitivity ``max_contributions``
    after contribution bounding (Wilson et al., "Differentially Private SQL with Bounded User
    Contribution", PoPETs 2020). Tight on {y <= 0} for no records vs one full unit.
    """

    epsilon: float = 1.0
    max_contributions: int = 3
    #: the sensitivity the noise is calibrated to, as a multiple of max_contributions (1 = correct)
    assumed_share: ClassVar[float] = 1.0

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        if isinstance(self.max_contributions, bool) or not isinstance(self.max_contributions, (int, np.integer)) \
                or self.max_contributions < 1:
            raise ParamError("max_contributions", f"max_contributions must be a positive integer, got {self.max_contributions!r}")

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="privacy_unit", sensitivity=float(self.max_contributions),
                            unit_column=0, max_contributions=int(self.max_contributions))

    @property
    def noise_scale(self) -> float:
        return max(1.0, self.assumed_share * self.max_contributions) / self.epsilon

    @property
    def true_epsilon(self) -> float:
        return self.max_contributions / self.noise_scale

    def _count(self, data: Any) -> float:
        rows, col = unit_records(data, self.claim)
        if not rows:
            return 0.0
        _, per_unit = np.unique(np.asarray([r[col] for r in rows]), return_counts=True)
        return float(np.minimum(per_unit, self.max_contributions).sum())

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        shape, n = _n(size)
        return _shape(self._count(data) + self.noise_scale * as_rng(rng).laplace(size=n), shape)

    def witness(self) -> ZooWitness:
        full = np.array([[1.0, 0.0]] * self.max_contributions)
        return ZooWitness(np.zeros((0, 2)), full, Event("le", hi=0.0), "d1>d2", 0.5,
                          0.5 * math.exp(-self.max_contributions / self.noise_scale))

    @classmethod
    def example(cls) -> tuple[Any, Any]:
        return cls(), np.array([[1.0, 3.0], [1.0, 5.0], [2.0, 1.0]])


@zoo_register("user_count_one_record", broken=True, twin="user_count", structured=True)
@dataclass(frozen=True)
class ZooUserCountOneRecord(ZooUserCount):
    """BROKEN: calibrated as if every unit held one record: Lap(1/epsilon) on a count a unit can
    move by ``max_contributions``. True epsilon = max_contributions * epsilon (3 at the default);
    witness: no records vs one unit of 3 records, event {y <= 0}."""

    assumed_share: ClassVar[float] = 0.0


# --------------------------------------------------------------------------------------------
# Gumbel top-k

def plackett_luce_log_prob(log_weights: np.ndarray, seq: tuple[int, ...]) -> float:
    """log P[the ordered selection is ``seq``] under Plackett–Luce with these log-weights: the law
    of the top k of (log w_i + Gumbel) and of k rounds of peeling (Yellott 1977)."""
    w = np.asarray(log_weights, dtype=np.float64)
    left = np.ones(w.size, dtype=bool)
    out = 0.0
    for i in seq:
        out += float(w[i] - special.logsumexp(w[left]))
        left[i] = False
    return out


@zoo_register("topk_gumbel", broken=False, structured=True)
@dataclass(frozen=True)
class ZooTopKGumbel(_Base):
    """One-shot Gumbel top-k: indices of the k largest ``q_i + Gumbel(2 k sensitivity/epsilon)``,
    in order; epsilon-DP (the law of k peeling rounds of the exponential mechanism at epsilon/k,
    basic composition; Durfee & Rogers, NeurIPS 2019, Lemma 4.2). ``score_linf`` neighbours.
    """

    epsilon: float = 1.0
    k: int = 2
    sensitivity: float = 1.0
    kind: ClassVar[str] = "finite"
    #: True for the broken twin: the noise of top-1 for all k outputs
    top1_noise: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_positive(self.sensitivity, "sensitivity")
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise ParamError("k", f"k must be a positive integer, got {self.k!r}")

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="score_linf", sensitivity=self.sensitivity)

    @property
    def scale(self) -> float:
        return 2.0 * (1 if self.top1_noise else self.k) * self.sensitivity / self.epsilon

    @property
    def true_epsilon(self) -> float:
        return self.k * self.epsilon if self.top1_noise else self.epsilon

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        q = check_scores(data)
        if q.size < self.k:
            raise ValueError(f"k={self.k} needs at least {self.k} candidates, got {q.size}")
        shape, n = _n(size)
        z = q / self.scale + as_rng(rng).gumbel(size=(n, q.size))
        top = np.argsort(-z, axis=1, kind="stable")[:, : self.k]
        return _shape(top.astype(np.int64), shape)

    def witness(self) -> ZooWitness:
        # two targets move up, five others move down: P[(0, 1)] changes by up to 2 k rounds' worth
        d1 = np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]) * self.sensitivity
        d2 = d1 + np.array([1.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0]) * self.sensitivity
        seq = (0, 1)
        p1 = math.exp(plackett_luce_log_prob(d1 / self.scale, seq))
        p2 = math.exp(plackett_luce_log_prob(d2 / self.scale, seq))
        return ZooWitness(d1, d2, Event("set", values=(seq,)), "d2>d1", p1, p2)

    @classmethod
    def example(cls) -> tuple[Any, Any]:
        return cls(), np.array([3.0, 1.0, 2.0, 0.0])


@zoo_register("topk_top1_scale", broken=True, twin="topk_gumbel", structured=True)
@dataclass(frozen=True)
class ZooTopKTop1Scale(ZooTopKGumbel):
    """BROKEN: one-shot Gumbel top-k with the noise of top-1, Gumbel(2 sensitivity/epsilon), for
    all k outputs. Each of the k implied peeling rounds is then an epsilon-DP exponential
    mechanism: true epsilon = k epsilon (2 at the default). Witness: 7 candidates, the two
    targets up and the five others down, event {(0, 1) selected in that order}: loss 1.54."""

    top1_noise: ClassVar[bool] = True
