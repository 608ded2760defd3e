"""IBM diffprivlib: the one way dpharness builds its mechanisms (benchmarks and audits alike).

* ``tools.median(x, epsilon, bounds=(lower, upper))`` -- the continuous exponential mechanism over
  the gaps of the sorted data, calibrated for replace-one neighbours (under add/remove it is the
  Duff set-definition EM at epsilon/2; docs/peer-libraries.md). Every call gets a *fresh*
  ``BudgetAccountant``: the default global accountant records every spend, so thousands of calls
  would grow its ledger (and time) without bound.
* ``mechanisms.Exponential`` / ``mechanisms.PermuteAndFlip`` over a utility vector -- one draw per
  ``randomise()``; the object is built once per call of ``sample`` (as a user would) and then
  drawn ``draws`` times.

diffprivlib is seeded from our generator (``random_state`` = an integer drawn from it), so these
samplers are reproducible.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpharness.bench.peers import require, version
from dpharness.bench.peers._common import PeerSampler, quiet, seeds

__all__ = ["DIST", "median", "exponential", "permute_and_flip"]

DIST = "diffprivlib"


def median(lower: float, upper: float, epsilon: float) -> PeerSampler:
    """``diffprivlib.tools.median`` on data in ``[lower, upper]`` at ``epsilon`` (replace-one)."""
    tools = require("diffprivlib.tools", DIST)
    accountant = require("diffprivlib.accountant", DIST)

    def sample(x: Any, draws: int, rng: np.random.Generator) -> np.ndarray:
        data = np.array(x, dtype=np.float64)
        out = np.empty(draws)
        for i, s in enumerate(seeds(rng, draws)):
            out[i] = tools.median(data, epsilon=epsilon, bounds=(lower, upper), random_state=s,
                                  accountant=accountant.BudgetAccountant())
        return out

    return PeerSampler("diffprivlib.tools.median", f"diffprivlib {version(DIST)}", quiet(sample), float(epsilon),
                       "one release per call; replace-one calibration")


def _selection(cls_name: str, epsilon: float, sensitivity: float, monotonic: bool) -> PeerSampler:
    mechs = require("diffprivlib.mechanisms", DIST)
    cls = getattr(mechs, cls_name)
    extra = {"monotonic": bool(monotonic)}

    def sample(scores: Any, draws: int, rng: np.random.Generator) -> np.ndarray:
        utility = np.asarray(scores, dtype=np.float64).tolist()  # diffprivlib wants a list
        mech = cls(epsilon=epsilon, sensitivity=sensitivity, utility=utility, random_state=seeds(rng, 1)[0], **extra)
        return np.array([mech.randomise() for _ in range(draws)], dtype=np.int64)

    return PeerSampler(f"diffprivlib.{cls_name}", f"diffprivlib {version(DIST)}", quiet(sample), float(epsilon),
                       "one draw per randomise() call")


def exponential(epsilon: float, sensitivity: float = 1.0, monotonic: bool = False) -> PeerSampler:
    """``diffprivlib.mechanisms.Exponential`` over a utility vector (output: the index)."""
    return _selection("Exponential", epsilon, sensitivity, monotonic)


def permute_and_flip(epsilon: float, sensitivity: float = 1.0, monotonic: bool = False) -> PeerSampler:
    """``diffprivlib.mechanisms.PermuteAndFlip`` over a utility vector (output: the index)."""
    return _selection("PermuteAndFlip", epsilon, sensitivity, monotonic)
