"""Exact privacy loss of one dataset pair, from the mechanism's exact output law.

docs/auditing.md, "Exact mode". Works on

* finite mechanisms (``support(data)`` / ``log_prob(data)``);
* ``distribution(data)`` laws of :mod:`mechanisms.laws`: ``"piecewise"`` (log-linear pieces),
  ``"grid_runs"`` (uniform or geometric runs on a grid; on one grid, compared run by run without
  enumerating it: the log ratio is linear on each segment) and ``"location_scale"`` (Laplace or Cauchy, with the
  clipping atoms).

Every law is put in one canonical form: *atoms* (output values with positive mass) plus a
*continuous part* made of pieces on which the log density is either linear,
``c + s (x - x0)``, or Cauchy, ``c - log(b^2 + (x - mu)^2)``. For a pair of laws, on every
segment between the merged breakpoints both log densities have one of these forms, so the log
ratio g = log f1 - log f2 has a derivative whose numerator is a polynomial of degree <= 4:

    g'(x) = (s1 - s2) - 2(x - mu1)/D1 + 2(x - mu2)/D2   (Cauchy terms only where present),

and the supremum of g over a segment is attained at a segment end (one-sided limit; analytic limit
at +-inf) or at a real root of that polynomial. No grid search: the maximum is exact up to floating
point, for Laplace (piecewise linear g), piecewise densities (linear g) and Cauchy (rational g').

Pure DP: epsilon(D, D') = max over outputs of |log p(o|D) - log p(o|D')| (+inf when an output has
positive mass or density under one dataset only: a support violation).

Approximate DP: the hockey-stick divergence delta(eps) = max over directions of
sum_atoms max(0, p1 - e^eps p2) + integral max(0, f1 - e^eps f2). On each monotone stretch of g the
set {g >= eps} is an interval found by Brent's method, and the piece masses are integrated in
closed form (exponential pieces, arctan for Cauchy).

Modules: :mod:`verifiers.losses.canonical` (canonical forms), :mod:`verifiers.losses.compare` (the
comparison), :mod:`verifiers.losses.grids` (two laws on one grid); this module is the API.
"""

from __future__ import annotations

import math
from typing import Any

from dpharness.mechanisms.base import PrivacyClaim
from dpharness.verifiers.losses.canonical import Canonical, _canonical_of, canonical
from dpharness.verifiers.losses.compare import _compare
from dpharness.verifiers.losses.loss import _TOL, ExactLoss

__all__ = ["exact", "ExactLoss", "loss_between", "canonical", "Canonical"]



def _where(w: Any) -> str:
    if w is None:
        return "-"
    kind = w[0]
    if kind == "atom":
        return f"output {w[1]!r}"
    if kind == "interval":
        return f"outputs in ({w[1]:.6g}, {w[2]:.6g})"
    x = w[1]
    return f"y -> {x}" if math.isinf(x) else f"y = {x:.6g}"


def loss_between(A: Canonical, B: Canonical, *, epsilon_claimed: float = math.inf, delta_claimed: float = 0.0) -> ExactLoss:
    """Exact loss between two canonical laws (see :func:`canonical`)."""
    eps_for_delta = epsilon_claimed if math.isfinite(epsilon_claimed) else None
    acc = _compare(A, B, eps_for_delta)
    ef = max(acc.eps[0], 0.0)
    eb = max(acc.eps[1], 0.0)
    eps = max(ef, eb)
    wit = _where(acc.wit[0] if ef >= eb else acc.wit[1])
    delta = float(max(acc.delta)) if eps_for_delta is not None else math.nan
    if delta_claimed > 0:
        violated = bool(delta > delta_claimed * (1 + _TOL) + 1e-15)
    else:
        violated = bool(eps > epsilon_claimed * (1 + _TOL) + 1e-12)
    return ExactLoss(epsilon=eps, epsilon_forward=ef, epsilon_backward=eb, delta=delta,
                     support_violation=bool(acc.support[0] or acc.support[1]), witness=wit,
                     epsilon_claimed=epsilon_claimed, delta_claimed=delta_claimed, violated=violated,
                     method=f"{A.source}/{B.source}" if A.source != B.source else A.source, _laws=(A, B))


def _claim_of(mechanism: Any) -> PrivacyClaim:
    claim = getattr(mechanism, "claim", None) if not isinstance(mechanism, type) else None
    if not isinstance(claim, PrivacyClaim):
        raise TypeError(f"mechanism must be a mechanism instance with a `claim` (PrivacyClaim) and an exact law "
                        f"(support/log_prob or distribution); got {type(mechanism).__name__} {mechanism!r:.60}")
    return claim


def exact(mechanism: Any, d1: Any, d2: Any) -> ExactLoss:
    """Exact privacy loss of ``mechanism`` between ``d1`` and ``d2``.

    Needs finite ``support``/``log_prob`` or ``distribution(data)`` returning a piecewise,
    grid_runs or location_scale law, or a sorted-vector law declared by ``exact_vector_law``
    (:mod:`verifiers.losses.vector`; ``ValueError`` otherwise). For a pure claim, ``violated`` is
    ``epsilon > claimed epsilon``; for an (epsilon, delta) claim it is
    ``delta(claimed epsilon) > claimed delta`` (hockey-stick divergence).
    """
    claim = _claim_of(mechanism)
    from dpharness.verifiers.losses.vector import exact_vector, vector_law_of  # sorted-vector laws (many quantiles)

    if vector_law_of(mechanism) is not None:
        return exact_vector(mechanism, d1, d2, claim)
    A = _canonical_of(mechanism, d1)
    B = _canonical_of(mechanism, d2)
    return loss_between(A, B, epsilon_claimed=float(claim.epsilon), delta_claimed=float(claim.delta))
