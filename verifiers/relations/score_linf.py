"""``score_linf``: score vectors of one shape, every entry moving by at most the sensitivity, in
any direction (entries equal to -inf stay -inf); the ``scores`` generator, shared with
``score_monotone``."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpharness.verifiers.relations.base import Relation, sensitivity_of
from dpharness.verifiers.relations.pairs import Pair
from dpharness.verifiers.relations.probe import (accepts, answers_each_query, domain_of, example_data, lengths,
                                                releases_a_value, unit)


def _score_moves(base: np.ndarray, s: float, monotone: bool) -> list[tuple[np.ndarray, str]]:
    flat = base.reshape(-1)
    k = flat.size
    moves: list[tuple[np.ndarray, str]] = []
    top = int(np.argmax(flat))
    order = np.argsort(-flat, kind="stable")
    second = int(order[1]) if k > 1 else top
    up = np.full(k, s)
    moves.append((up, "all up"))
    e = np.zeros(k)
    e[top] = s
    moves.append((e, "leader up"))
    if k > 1:
        e = np.zeros(k)
        e[second] = s
        moves.append((e, "runner-up up"))
        e = np.full(k, s)
        e[top] = 0.0
        moves.append((e, "all but leader up"))
        if not monotone:
            e = np.full(k, s)
            e[top] = -s
            moves.append((e, "leader down, others up"))
            e = np.full(k, -s)
            e[top] = s
            moves.append((e, "leader up, others down"))
            e = np.zeros(k)
            e[top], e[second] = -s, s
            moves.append((e, "top two converge"))
        if k >= 4:
            # half the queries up and half down (StatDP's "half half" / "X shape" patterns): what
            # threshold mechanisms (sparse vector) are most sensitive to, since answers below and
            # above the threshold then move to opposite sides of it
            half = np.where(np.arange(k) < k // 2, s, 0.0 if monotone else -s)
            moves.append((half, "first half up" if monotone else "first half up, rest down"))
            if not monotone:
                moves.append((-half, "first half down, rest up"))
    return [((flat + m).reshape(base.shape), lab) for m, lab in moves]


#: Query lengths for a selection that releases the winner's value (its loss can grow with k).
VALUE_LENGTHS = (10, 20)
#: Leader gaps (x sensitivity/epsilon) for a selection that releases the winner's value. Once the
#: leader is a few noise scales ahead, the release is the leader's own noisy score -- a Laplace (or
#: exponential, ...) release of one score, which the "one candidate far ahead" base already is --
#: so gaps 2, 4 and 8 add pairs of that one regime, and each costs the ranking's first rounds draws.
VALUE_GAPS = (0.0, 1.0)
#: Leader gaps (x sensitivity/epsilon) for a selection that releases the winner's index. Its loss
#: per move is at most its claim's worth and, for noise of unbounded support, lies nearest the
#: claim at ties and one noise scale apart; the regime of a runner-up far behind is the "one
#: candidate far ahead" base. Gaps 2, 4 and 8 (27 more pairs at 5 candidates) cost the ranking's
#: first rounds the draws that tell the good pairs apart (docs/auditing.md, "How the search spends its
#: selection draws"). What they found that these do not: the support edge of *bounded* noise,
#: which is still flagged from the ties, at a finite bound.
INDEX_GAPS = (0.0, 1.0)


def score_pairs(mechanism: Any, relation: Relation) -> list[Pair]:
    """Bases with ties and with a leader ahead by 1 x sensitivity/epsilon, one candidate far ahead
    (by 8 x sensitivity/epsilon), the example and its all-ties twin, each moved by the sensitivity
    in every pattern the relation allows (one direction only when ``relation.monotone``).

    A mechanism that answers each query (its release has a coordinate per query: sparse vector,
    prefix sums) gets the ties bases only: a leader far ahead is the pattern of a *selection*
    (noisy max returns one winner); for answers to each query it only fixes the first answer, and
    five such bases would cost the search five times the draws for the query patterns that matter
    (half up and half down, all up, one up). A selection that releases the winner's noisy value
    rather than its index gets longer vectors (:data:`VALUE_LENGTHS`) and only the leader gaps
    0 and 1 x sensitivity/epsilon (:data:`VALUE_GAPS`) beside the candidate far ahead; one that
    releases its index keeps 2 and 5 candidates and gets the same two gaps (:data:`INDEX_GAPS`)."""
    monotone = bool(getattr(relation, "monotone", False))
    sens, eps = unit(mechanism)
    step = sens * max(1.0, 1.0 / eps)
    bases: list[tuple[np.ndarray, str]] = []
    ex = example_data(mechanism)
    if ex is not None:
        a = np.asarray(ex, dtype=np.float64)
        if a.size and np.all(np.isfinite(a)):
            bases.append((a, "example"))
            if a.ndim >= 1 and a.size > 1:
                bases.append((np.zeros_like(a), "example shape, ties"))
    # answers to each query: longer query sequences (a sparse vector's loss grows with the queries
    # answered "below" before its "above"), ties only; a selection: short vectors, gaps 0 and 1
    short = lengths(mechanism, (2, 5))
    each = any(answers_each_query(mechanism, k) for k in short)
    # a selection that releases the winner's noisy value: its loss can grow with the candidates
    # (every score moving up shifts the maximum's law by all of them at once: StatDP's
    # noisy_max_v1b loses k eps / 2), so it gets 10 and 20 candidates; one that releases an index
    # loses at most its claim's worth per move whatever k, and 2 and 5 keep its pairs cheap
    value = not each and any(releases_a_value(mechanism, k) for k in short)
    for k in (lengths(mechanism, VALUE_LENGTHS if value else (5, 10)) if each or value else short):
        for g in ((0.0,) if each else VALUE_GAPS if value else INDEX_GAPS):
            b = np.zeros(k)
            b[0] = g * step
            bases.append((b, f"k={k}, leader gap {g:g}*sens/eps" if g else f"k={k}, ties"))
    for k in lengths(mechanism, (5,)):
        if k > 1 and not answers_each_query(mechanism, k):
            bases.append((np.concatenate([[0.0], np.full(k - 1, -8.0 * step)]), f"k={k}, one candidate far ahead"))
    out: list[Pair] = []
    dom = domain_of(mechanism)
    for b, lab in bases:
        if (dom is not None and not dom.contains(b)) or not accepts(mechanism, b):
            continue
        for d2, mv in _score_moves(b, sens, monotone):
            out.append(Pair(b, d2, f"{lab}; {mv}"))
    return out


class ScoreLinf(Relation):
    name = "score_linf"
    family = "scores"
    metric = "linf_distance"
    default_for = ("linf_distance",)
    finite_under = ("l1_distance", "l2_distance", "linf_distance", "discrete_distance")
    generators = {"scores": score_pairs}
    #: every entry moves in the same direction
    monotone = False

    def why_not_relation(self, d1: Any, d2: Any, claim: Any) -> str | None:
        sens, tol = sensitivity_of(claim)
        a, b = np.asarray(d1, dtype=np.float64), np.asarray(d2, dtype=np.float64)
        if a.shape != b.shape:
            return f"score vectors must have the same shape, got {a.shape} and {b.shape}"
        both_ninf = np.isneginf(a) & np.isneginf(b)
        if np.any(np.isneginf(a) != np.isneginf(b)):
            return "an entry is -inf in one dataset and finite in the other"
        diff = np.where(both_ninf, 0.0, b - a)
        if np.any(~np.isfinite(diff)):
            return "score vectors must be finite (or -inf in both)"
        worst = float(np.max(np.abs(diff))) if diff.size else 0.0
        if worst > sens + tol:
            return f"an entry moves by {worst:g}, more than the sensitivity {sens:g}"
        if self.monotone and np.any(diff > tol) and np.any(diff < -tol):
            return f"{self.name} neighbours must move every entry in the same direction"
        return None


RELATION = ScoreLinf()
