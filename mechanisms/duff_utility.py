"""Closed forms of the Duff utility for medians and quantiles (dataset distance, add/remove edits).

u(S, o) = -min{|S Δ S'| : T(S') = o}: minus the fewest additions/removals of records that make o
the statistic T (Munoz Medina & Gillenwater 2020, arXiv 2010.04235; the inverse-sensitivity
mechanism of Asi & Duchi 2020). It has sensitivity 1 under add/remove neighbours for every T.

Only three counts of S matter: L, E, G = #records <, =, > o. Edits may use any real value (the
closed forms assume values below and above o can always be added; the tests check them against
breadth-first search over multisets of a small integer universe that has such values).

Derivation (checked by BFS in ``tests/mechanisms/test_duff.py``). Write q = a/b in lowest terms, where a/b is
the *decimal* value ``Fraction(repr(q))`` (0.3 means 3/10, as in the runner's truth), and scale by
b so that everything is an integer: alpha = b - a, beta = a, D = alpha L - beta G (= b((1-q)L - qG)).
For N' = L' + E' + G':

* lower q-quantile x_(ceil(q N')) = o  <=>  E' >= 1 and  L' < qN' <= L' + E'
  <=>  -alpha E' <= D' < beta E';
* upper q-quantile x_(floor(q N') + 1) = o  <=>  E' >= 1 and  -alpha E' < D' <= beta E';
* set-valued ("o is a q-quantile": #< o <= qN' and #> o <= (1-q)N', N' >= 1)
  <=>  -alpha E' <= D' <= beta E'  (E' = 0 allowed).

An edit below o moves D by alpha, above o by beta, and a copy of o widens the window by alpha on
the low side and beta on the high side. With E = 0 the lower/upper forms first add one copy of o.
If D is above the window, the useful edits are: remove a record below o (step alpha, at most L
times), add a record above o or a copy of o (step beta, unlimited); below the window: add a record
below o or a copy of o (alpha, unlimited), remove a record above o (beta, at most G times). Every
edit that helps one side never hurts the other, and each step is < b <= the window width b E', so
the greedy (largest steps first, respecting the limits) reaches the window without jumping over it:
the cost is the least t whose best t-step total reaches the required amount. For the set form with
E = 0 there is one more candidate, an exact hit D' = 0 with E' = 0: L' = a k, G' = (b - a) k,
k >= 1, cost min_k |L - a k| + |G - (b - a) k| (convex in k: check the floors/ceilings of L/a and
G/(b - a)).

For q = 1/2 these reduce to the median forms of docs/mechanisms.md ("Duff utility: closed
forms"): lower u = -(add_o + max(0, L - e - G + 1, G - L - e)),
upper u = -(add_o + max(0, L - e - G, G - L - e + 1)), set u = -max(0, |L - G| - E).

Envelope bounds used by the windowed samplers (:func:`cost_lower_bound_left`,
:func:`cost_lower_bound_right`): every definition needs A' = #{<= o} >= qN' and B' = #{< o} <= qN'.
A' - qN' = (1-q)A' - q(N' - A') moves by at most max(q, 1-q) per edit, so
cost >= (qn - A)/max(q, 1-q); symmetrically cost >= (B - qn)/max(q, 1-q).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from dpharness.mechanisms.base import ParamError

__all__ = [
    "DEFINITIONS",
    "quantile_ratio",
    "check_quantile",
    "duff_cost",
    "duff_utility",
    "target_rank",
    "cost_lower_bound_left",
    "cost_lower_bound_right",
    "gap_costs",
    "runs_and_points",
    "distinct_sorted",
]

#: Statistic definitions: lower x_(ceil(qN)), upper x_(floor(qN)+1), set (any q-quantile).
DEFINITIONS: tuple[str, ...] = ("lower", "upper", "set")

# Products alpha * L stay below this bound in int64; above it Python integers are used.
_INT64_SAFE = 2**62


def check_quantile(q: Any, name: str = "q") -> float:
    """Return ``q`` as a float, or raise ``ValueError`` unless it is a real number in (0, 1)."""
    if not isinstance(q, numbers.Real) or isinstance(q, bool) or not math.isfinite(float(q)):
        raise ParamError(name, f"{name} must be a real number in (0, 1), got {q!r}")
    if not 0.0 < float(q) < 1.0:
        raise ParamError(name, f"{name} must be in (0, 1), got {q!r}")
    return float(q)


def quantile_ratio(q: float) -> tuple[int, int]:
    """(a, b) with q = a/b in lowest terms, q read as the decimal it prints as (0.3 -> (3, 10))."""
    f = Fraction(repr(float(check_quantile(q))))
    return f.numerator, f.denominator


def target_rank(n: int, q: float, definition: str = "lower") -> int:
    """1-based rank of the statistic in n sorted records: ceil(qn) ("lower", "set") or floor(qn)+1."""
    qn = Fraction(repr(float(q))) * int(n)
    r = math.floor(qn) + 1 if definition == "upper" else math.ceil(qn)
    return min(max(r, 1), int(n))


def _as_ints(*arrays: Any, scale: int) -> tuple[np.ndarray, ...]:
    """Broadcast count arrays to a common integer dtype that cannot overflow at this scale."""
    arrs = [np.asarray(x) for x in arrays]
    big = max((int(np.max(x)) if x.size else 0) for x in arrs)
    if (big + 2) * scale * 4 < _INT64_SAFE:
        arrs = [x.astype(np.int64) for x in arrs]
    else:  # exact Python integers (slow, only for huge n times a large denominator b)
        arrs = [np.asarray(x.astype(np.int64), dtype=object) for x in arrs]
    return tuple(np.broadcast_arrays(*arrs))


def _ceil_div(z: np.ndarray, d: int) -> np.ndarray:
    return -((-z) // d)


def _steps_high(z: np.ndarray, limited: np.ndarray, alpha: int, beta: int) -> np.ndarray:
    """Fewest edits with total >= z when alpha-steps are limited (to ``limited``) and beta-steps not."""
    z = np.where(z > 0, z, 0)
    if alpha <= beta:
        return _ceil_div(z, beta)
    j = _ceil_div(z, alpha)
    rest = _ceil_div(np.where(z - alpha * limited > 0, z - alpha * limited, 0), beta)
    return np.where(j <= limited, j, limited + rest)


def duff_cost(L: Any, E: Any, G: Any, a: int, b: int, definition: str = "lower") -> np.ndarray:
    """-u(S, o): the fewest add/remove edits of S that make o the statistic (closed form).

    Parameters
    ----------
    L, E, G : array_like of int
        Counts of records below, equal to and above o (broadcast together).
    a, b : int
        q = a/b in lowest terms (:func:`quantile_ratio`); q = 1/2 is the median.
    definition : {"lower", "upper", "set"}

    Returns
    -------
    numpy.ndarray
        Non-negative integer costs (int64, or Python ints for astronomically large inputs).
    """
    if definition not in DEFINITIONS:
        raise ParamError("definition", f"definition must be one of {DEFINITIONS}; got {definition!r}")
    a, b = int(a), int(b)
    if not 0 < a < b or math.gcd(a, b) != 1:
        raise ParamError("q", f"q = a/b must be in lowest terms with 0 < a < b, got a={a}, b={b}")
    L, E, G = _as_ints(L, E, G, scale=b)
    alpha, beta = b - a, a
    D = alpha * L - beta * G
    if definition == "set":
        cost_e = _window_cost(D, np.where(E > 0, E, 1), L, G, alpha, beta, strict_high=False, strict_low=False)
        cost_e = cost_e + (E == 0)
        # exact hit D' = 0 with no copy of o: L' = a k, G' = (b - a) k, k >= 1
        best = None
        for k in (L // a, L // a + 1, G // alpha, G // alpha + 1):
            k = np.where(k >= 1, k, 1)
            c = abs(L - a * k) + abs(G - alpha * k)
            best = c if best is None else np.where(c < best, c, best)
        return np.where(E == 0, np.where(best < cost_e, best, cost_e), cost_e)
    add_o = E == 0
    e1 = E + add_o
    strict_high = definition == "lower"
    return add_o + _window_cost(D, e1, L, G, alpha, beta, strict_high=strict_high, strict_low=not strict_high)


def _window_cost(D, e1, L, G, alpha, beta, *, strict_high: bool, strict_low: bool) -> np.ndarray:
    """Greedy cost to move D into [-alpha e1, beta e1] (ends open where strict)."""
    hi = beta * e1
    lo = -alpha * e1
    need_down = D - hi + (1 if strict_high else 0)  # decrease D by at least this (if > 0)
    need_up = lo - D + (1 if strict_low else 0)  # increase D by at least this (if > 0)
    down = _steps_high(need_down, L, alpha, beta)  # alpha-steps: remove below (<= L)
    up = _steps_high(need_up, G, beta, alpha)  # beta-steps: remove above (<= G)
    return np.where(need_down > 0, down, np.where(need_up > 0, up, 0 * D))


def duff_utility(L: Any, E: Any, G: Any, q: float = 0.5, definition: str = "lower") -> np.ndarray:
    """u(S, o) = -:func:`duff_cost` for counts (L, E, G) = #records (<, =, >) o."""
    a, b = quantile_ratio(q)
    return -duff_cost(L, E, G, a, b, definition)


def cost_lower_bound_left(n: int, a_max: int, a: int, b: int) -> float:
    """Lower bound on the cost at any o with at most ``a_max`` records <= o (o left of the target)."""
    return max(0.0, (a * int(n) - b * int(a_max)) / max(a, b - a))


def cost_lower_bound_right(n: int, b_min: int, a: int, b: int) -> float:
    """Lower bound on the cost at any o with at least ``b_min`` records < o (o right of the target)."""
    return max(0.0, (b * int(b_min) - a * int(n)) / max(a, b - a))


# --------------------------------------------------------------------------------------------
# the utility on the pieces of the output domain: gaps (continuum) and runs/points (grid)
# --------------------------------------------------------------------------------------------


def gap_costs(n: int, a: int, b: int, definition: str, first: int = 0, stop: int | None = None) -> np.ndarray:
    """Duff costs -u_i of the gaps i = first..stop-1 (default all n+1) for n records: L = i, E = 0."""
    stop = n + 1 if stop is None else stop
    i = np.arange(first, stop, dtype=np.int64)
    return duff_cost(i, 0, n - i, a, b, definition)


def runs_and_points(vals: np.ndarray, E: np.ndarray, L: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """Interleave the points ``vals`` (counts E, L below) with the runs strictly between them.

    Returns (first, count, L, E) of the pieces in increasing grid order, empty runs dropped.
    """
    J = vals.size
    first = np.empty(2 * J - 1, dtype=np.int64)
    count = np.empty(2 * J - 1, dtype=np.int64)
    LL = np.empty(2 * J - 1, dtype=np.int64)
    EE = np.zeros(2 * J - 1, dtype=np.int64)
    first[0::2] = vals
    count[0::2] = 1
    LL[0::2] = L
    EE[0::2] = E
    first[1::2] = vals[:-1] + 1
    count[1::2] = np.diff(vals) - 1
    LL[1::2] = L[:-1] + E[:-1]
    keep = count > 0
    return first[keep], count[keep], LL[keep], EE[keep]


def distinct_sorted(sorted_k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values and multiplicities of a sorted int array (O(n), no second sort)."""
    starts = np.concatenate(([0], np.flatnonzero(np.diff(sorted_k)) + 1))
    counts = np.diff(np.concatenate((starts, [sorted_k.size])))
    return sorted_k[starts], counts
