"""Biased randomized response of the library-bugs suite (:mod:`verifiers.controls.suites.library_bugs`):
OpenDP's boolean randomized response whose "lie" could repeat the truth, beside its fixed twin."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from dpharness.verifiers.controls.suites.base import SuiteEntry, suite_entry
from dpharness.verifiers.controls.suites.library_bugs_common import SUITE, _check_prob, _entry, _scalar

__all__ = ["rr_bool_true_epsilon", "rr_bool", "rr_bool_fixed"]


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
