"""What exact mode returns: :class:`ExactLoss` (one module, so that every law's exact mode --
:mod:`verifiers.exact` for 1-D laws, :mod:`verifiers.losses.vector` for sorted-vector laws -- can
build it without importing the other)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dpharness.verifiers.losses.compare import _compare

__all__ = ["ExactLoss"]

#: Relative floating-point tolerance of the violated flag.
_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class ExactLoss:
    """Exact privacy loss of a pair.

    ``epsilon`` = max(``epsilon_forward``, ``epsilon_backward``) with
    ``epsilon_forward`` = sup_o log p(o|d1)/p(o|d2); ``delta`` is the hockey-stick divergence at the
    claimed epsilon (both directions, max); ``violated`` compares with the claim (pure claims:
    epsilon; approximate claims: delta at the claimed epsilon), with a floating-point tolerance of
    1e-9 relative. :meth:`delta_at` gives the delta(eps) curve.
    """

    epsilon: float
    epsilon_forward: float
    epsilon_backward: float
    delta: float
    support_violation: bool
    witness: str
    epsilon_claimed: float
    delta_claimed: float
    violated: bool
    method: str
    _laws: tuple = field(repr=False, default=())

    def delta_at(self, epsilon: float) -> float:
        """Hockey-stick delta(epsilon) = max over directions of E[max(0, 1 - e^eps / L)]-type mass."""
        acc = _compare(self._laws[0], self._laws[1], float(epsilon))
        return float(max(acc.delta))

    def row(self) -> dict:
        return {"exact_epsilon": self.epsilon, "exact_delta": self.delta, "exact_support_violation": self.support_violation,
                "exact_violated": self.violated, "exact_witness": self.witness, "exact_method": self.method}
