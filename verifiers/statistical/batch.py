"""Statistical audit of one dataset pair: select a witness on one split, certify it on fresh samples.

Procedure (docs/auditing.md, "Select, then certify"):

1. Draw ``n_sel`` selection samples under each dataset.
2. Build candidate events from them (:mod:`verifiers.events`) and score every (event, direction)
   by the *predicted certified bound* :func:`selection_score`: the epsilon lower bound that the
   certification split would give if it reproduced the selection frequencies (with a pseudo-count
   of 0.5 on the denominator, so an event never seen under D' is not taken for certain). This
   prefers events that are both lopsided and frequent enough to certify, instead of the largest
   raw ratio (which is noise on rare events).
3. Choose the best one, and the split of alpha between its two Clopper–Pearson bounds, from the
   selection data only.
4. Draw fresh certification samples -- Poisson(n_cert) of them under each dataset, so that the
   event counts are exactly independent Poisson -- and certify the single chosen event:
   pure claims: epsilon_LB = ln(pi_L / (1 - pi_L)), pi_L the exact Clopper–Pearson lower bound on
   K1 / (K1 + K2) (exactly binomial given the total); (epsilon, delta) claims: Garwood's exact
   Poisson bounds, epsilon_LB = ln((L1 - delta) / U2) and delta_LB = L1 - e^epsilon U2
   (:mod:`verifiers.bounds`).

Why this is sound for the whole search: every choice (pair, event, direction, alpha split) is a
function of the selection samples, which are independent of the certification samples; given
the choice, the certification is a single pre-registered test at level alpha (Bonferroni over the
one certified candidate). Hence P[epsilon_LB > true epsilon] <= alpha whatever was searched.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dpharness.mechanisms.base import ParamError
from dpharness.mechanisms.contracts import check_auditable
from dpharness.verifiers import bounds
from dpharness.verifiers.events.bits import FLOAT_KINDS
from dpharness.verifiers.events import Candidates, Event, build_candidates, event_families, registry, resolve_events
from dpharness.verifiers.events.families import FLOATS, check_events, check_float_events, mechanism_families
from dpharness.verifiers.events.reachable import data_context
from dpharness.verifiers.statistical.draws import CERTIFY, CHUNK_BYTES, SELECT, count_draws, draw, is_finite, seed_of, stream
from dpharness.verifiers.statistical.parallel import active, sample_count_pair, sample_draws_pair, sampling
from dpharness.verifiers.verdict import Verdict, Witness, event_family, summarize

__all__ = ["audit", "replay", "certify_best", "best_choices", "event_family",
           "selection_score", "Choice", "DEFAULT_SELECTION", "DIRECTIONS", "seed_of", "stream", "draw",
           "best_choice", "certify", "resolve_float_events", "resolve_events", "candidates_for", "detectable_epsilon",
           "check_samples", "check_selection", "count_draws", "CHUNK_BYTES"]

#: Fraction of the per-dataset samples used to select the witness (the rest certify it).
DEFAULT_SELECTION = 0.3
#: Grid of alpha splits (share of alpha given to the numerator's lower bound).
ALPHA_SPLITS = np.round(np.arange(0.05, 0.951, 0.05), 2)


#: Accepted values of ``direction`` (None: both, Bonferroni).
DIRECTIONS = ("d1>d2", "d2>d1")


# --------------------------------------------------------------------------------------------
# selection

#: One-sided level of the selection-split bounds that shrink candidate frequencies (see
#: :func:`selection_score`); ``None`` = adaptive, :func:`shrink_level` of the number of candidates.
SHRINK: float | None = None


def shrink_level(n_candidates: int) -> float:
    """Shrinkage level for a selection among ``n_candidates`` (event, direction) pairs:
    0.5/sqrt(n), clipped to [1e-3, 0.25]. Few candidates (a finite mechanism with k = 2) need little
    protection against the winner's curse; thousands of thresholds need a lot, though far less
    than Bonferroni would suggest because neighbouring thresholds are strongly correlated."""
    return float(min(0.25, max(1e-3, 0.5 / math.sqrt(max(n_candidates, 1)))))


def selection_score(c_num: Any, c_den: Any, n_sel: int, n_cert: int, alpha: float, delta: float = 0.0,
                    shrink: float | None = None) -> np.ndarray:
    """Predicted certified bound of an event seen ``c_num`` times (numerator dataset) and ``c_den``
    times (denominator dataset) in ``n_sel`` selection draws each.

    The selection frequencies are first shrunk towards what they could plausibly be --
    p_num = CP_lower(c_num, n_sel; shrink), p_den = CP_upper(c_den, n_sel; shrink) -- so that among
    thousands of candidates the winner is not merely the luckiest rare event (winner's curse), and
    an event never seen under D' is not taken for impossible. The score is the bound the
    certification would give at the expected counts k = n_cert p: the conditional bound
    ln(pi_L/(1 - pi_L)), pi_L = CP_lower(k_num, k_num + k_den; alpha), for pure claims;
    ln((L(k_num)/n_cert - delta)/(U(k_den)/n_cert)) with Garwood bounds at alpha/2 each for
    (epsilon, delta) claims (-inf when L <= delta). Increasing in ``c_num``, decreasing in
    ``c_den``: the exact function the selection maximises (:mod:`verifiers.power` relies on it).
    """
    shrink = (SHRINK if SHRINK is not None else 0.1) if shrink is None else shrink
    c_num = np.asarray(c_num, dtype=np.float64)
    c_den = np.asarray(c_den, dtype=np.float64)
    p_num = np.asarray(bounds.cp_lower(np.minimum(c_num, n_sel), n_sel, shrink))
    p_den = np.asarray(bounds.cp_upper(np.minimum(c_den, n_sel), n_sel, shrink))
    k1 = p_num * n_cert
    k2 = p_den * n_cert
    if delta == 0.0:
        out = np.full(np.broadcast(k1, k2).shape, -np.inf)
        k1b, k2b = np.broadcast_arrays(k1, k2)
        ok = k1b > 0
        if ok.any():
            pl = np.asarray(bounds.cp_lower(k1b[ok], k1b[ok] + k2b[ok], alpha)).reshape(-1)
            with np.errstate(divide="ignore"):
                out[ok] = np.log(pl) - np.log1p(-pl)
        return out
    lo = np.asarray(bounds.poisson_lower(k1, alpha / 2)) / n_cert
    up = np.asarray(bounds.poisson_upper(k2, alpha / 2)) / n_cert
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.log(np.maximum(lo - delta, 1e-300)) - np.log(up)
    return np.where(lo - delta > 0, s, -np.inf)


@dataclass(frozen=True)
class Choice:
    """The selected (event, direction) of one pair with its selection counts and score."""

    score: float
    event: Event
    direction: str  # "d1>d2" or "d2>d1"
    c1: int  # selection count under d1
    c2: int  # selection count under d2
    n_sel: int
    shrink: float = 0.1


#: A support event (never seen under the denominator in selection) may score this much below the
#: best support event when it needs fewer hits to get there (:func:`best_choice`).
SUPPORT_SLACK = 0.05


def candidates_for(y1: np.ndarray, y2: np.ndarray, finite: bool, events: Any = "all",
                   float_events: bool | None = None, context: Any = None) -> Candidates:
    """Candidate events from the selection draws: those of every family in ``events`` (a set of
    family names, or anything :func:`verifiers.events.event_families` reads, with ``float_events``
    True/False switching the ``floats`` family on/off), in the families' order
    (:func:`verifiers.events.build_candidates`). ``ValueError`` naming ``events`` when those
    families have no candidate for these outputs."""
    fams = event_families(events, float_events)
    cand = build_candidates(y1, y2, finite, fams, context)
    if not len(cand):
        what = f"{'finite' if finite else 'real'} {'rows' if np.ndim(y1) >= 2 else 'outputs'}"
        known = ", ".join(f"{f.name} ({'/'.join(f.laws)})" for f in registry())
        raise ValueError(f"events: the families {', '.join(sorted(fams))} give no candidate event for {what}; "
                         f"add one that reads them (families and the outputs they read: {known})")
    return cand


def resolve_float_events(mechanism: Any, float_events: Any) -> bool:
    """The ``float_events`` setting of an audit: True/False as given, or None for the mechanism's
    own default (the ``floats`` family in its default set: on for library adapters, off otherwise)."""
    fl = check_float_events(float_events)
    return FLOATS in mechanism_families(mechanism) if fl is None else fl


def best_choice(y1: np.ndarray, y2: np.ndarray, *, finite: bool, n_cert: int, alpha: float,
                delta: float = 0.0, events: Any = "all", float_events: bool | None = None,
                epsilon: float | None = None, context: Any = None) -> Choice:
    """Maximise :func:`selection_score` over every candidate event and both directions.

    Only candidates more frequent under the numerator than under the denominator (and above delta)
    can have a positive bound; the score is computed for those (ties: first in candidate order).

    With ``epsilon`` (the claim), a *support* candidate -- never seen under the denominator in the
    selection draws -- whose predicted bound exceeds the claim is preferred to a higher-scoring
    event seen under both: if certified, it shows an infinite loss (the output is possible under
    one dataset only), which says more than a finite bound a little higher. Every choice is still
    made on the selection draws alone, so the certification keeps its level.
    """
    n_sel, cand, gamma = _candidates(y1, y2, finite, events, float_events, context)
    return _choose(cand, None, n_sel=n_sel, n_cert=n_cert, alpha=alpha, delta=delta, epsilon=epsilon, gamma=gamma)


def _candidates(y1: np.ndarray, y2: np.ndarray, finite: bool, events: Any, float_events: bool | None,
                context: Any = None) -> tuple[int, Candidates, float]:
    """(selection draws per dataset, the candidate events, their shrinkage level)."""
    n_sel = int(np.shape(y1)[0])  # draws, not coordinates: rows of vector outputs count once
    cand = candidates_for(y1, y2, finite, events, float_events, context)
    return n_sel, cand, SHRINK if SHRINK is not None else shrink_level(2 * len(cand))


def best_choices(y1: np.ndarray, y2: np.ndarray, *, finite: bool, n_cert: int, alpha: float, delta: float = 0.0,
                 events: Any = "all", epsilon: float | None = None, context: Any = None,
                 shrink: float | None = None) -> tuple[Choice, Choice | None]:
    """:func:`best_choice` over every family of ``events``, and the best choice among the events that
    are not bit patterns (None when there is none), from one set of candidates: the second is what
    a certification beside a winning bit-pattern event needs (:func:`certify_best`). ``shrink``
    overrides the shrinkage level of the candidates' frequencies (None: :func:`shrink_level`)."""
    n_sel, cand, gamma = _candidates(y1, y2, finite, events, None, context)
    if shrink is not None:
        gamma = float(shrink)
    return choose_with_real(cand, None, n_sel=n_sel, n_cert=n_cert, alpha=alpha, delta=delta, epsilon=epsilon,
                            gamma=gamma)


def choose_with_real(cand: Candidates, mask: np.ndarray | None, *, n_sel: int, n_cert: int, alpha: float,
                     delta: float, epsilon: float | None, gamma: float) -> tuple[Choice, Choice | None]:
    """The best choice among the candidates of ``mask`` (None: all) and, when it is a bit pattern,
    the best real-valued choice among all the candidates (None when there is none)."""
    first = _choose(cand, mask, n_sel=n_sel, n_cert=n_cert, alpha=alpha, delta=delta, epsilon=epsilon, gamma=gamma)
    if getattr(first.event, "kind", "") not in FLOAT_KINDS:
        return first, first
    real = ~np.isin(np.asarray(cand.kinds), list(FLOAT_KINDS))
    if not real.any():
        return first, None
    return first, _choose(cand, real, n_sel=n_sel, n_cert=n_cert, alpha=alpha, delta=delta, epsilon=epsilon,
                          gamma=gamma)


def _choose(cand: Candidates, mask: np.ndarray | None, *, n_sel: int, n_cert: int, alpha: float, delta: float,
            epsilon: float | None, gamma: float) -> Choice:
    """The choice of :func:`best_choice` among the candidates of ``mask`` (None: all)."""
    best: Choice | None = None
    support: Choice | None = None
    ok = np.ones(len(cand), dtype=bool) if mask is None else mask
    for direction, num, den in (("d1>d2", cand.c1, cand.c2), ("d2>d1", cand.c2, cand.c1)):
        keep = np.flatnonzero((num > den) & (num > delta * n_sel) & ok)
        if keep.size == 0:
            continue
        s = selection_score(num[keep], den[keep], n_sel, n_cert, alpha, delta, shrink=gamma)
        j = int(np.argmax(s))
        if best is None or s[j] > best.score:
            i = int(keep[j])
            best = Choice(float(s[j]), cand.event(i), direction, int(cand.c1[i]), int(cand.c2[i]), n_sel, gamma)
        if epsilon is not None:
            zero = np.flatnonzero(den[keep] == 0)
            if zero.size:
                # the support candidate with the fewest hits among those within SUPPORT_SLACK of the
                # best support score: a long union grows its score by a hair with every rare output
                # seen once under the numerator, each a chance of an output the denominator has too
                top = float(np.max(s[zero]))
                near = zero[s[zero] >= top - SUPPORT_SLACK]
                j = int(near[np.argmin(num[keep][near])])
                if s[j] > epsilon and (support is None or s[j] > support.score):
                    i = int(keep[j])
                    support = Choice(float(s[j]), cand.event(i), direction, int(cand.c1[i]), int(cand.c2[i]),
                                     n_sel, gamma)
    if support is not None:
        return support
    if best is None:
        # Nothing is more likely under one dataset: certify the most frequent event (bound 0).
        i = int(np.argmax(np.where(ok, cand.c1, -1)))
        best = Choice(-math.inf, cand.event(i), "d1>d2", int(cand.c1[i]), int(cand.c2[i]), n_sel, gamma)
    return best


def alpha_split(choice: Choice, n_cert: int, alpha: float, delta: float = 0.0) -> tuple[float, float]:
    """For (epsilon, delta) claims: split alpha between the numerator's lower and the denominator's
    upper Garwood bound to maximise the predicted bound of the chosen event (selection data only, so
    the split is pre-registered). Pure claims use one conditional bound: (alpha, 0)."""
    if delta == 0.0:
        return alpha, 0.0
    num, den = (choice.c1, choice.c2) if choice.direction == "d1>d2" else (choice.c2, choice.c1)
    n_sel = max(choice.n_sel, 1)
    k1 = float(bounds.cp_lower(min(num, n_sel), n_sel, choice.shrink)) * n_cert
    k2 = float(bounds.cp_upper(min(den, n_sel), n_sel, choice.shrink)) * n_cert
    if k1 <= 0:
        return alpha / 2, alpha / 2
    w = ALPHA_SPLITS
    lo = np.asarray(bounds.poisson_lower(np.full(w.size, k1), alpha * w)) / n_cert
    up = np.asarray(bounds.poisson_upper(np.full(w.size, k2), alpha * (1 - w))) / n_cert
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(lo > delta, np.log(np.maximum(lo - delta, 1e-300)) - np.log(up), -np.inf)
    j = int(np.argmax(sc))
    return float(alpha * w[j]), float(alpha * (1 - w[j]))


# --------------------------------------------------------------------------------------------
# certification

@lru_cache(maxsize=1024)
def detectable_epsilon(n: float, alpha: float, epsilon: float, delta: float = 0.0, p_num: float = 0.5) -> float:
    """Smallest loss ln((p_num - delta)/p_den) on an event of probability ``p_num`` that a
    certification with n expected draws per dataset detects at the median counts (k = n p).

    Bisection for the largest p_den whose certified bound (the same formula as the certification,
    at alpha split evenly for delta > 0) still exceeds ``epsilon``.
    """
    if p_num <= delta:
        return math.inf
    k1 = p_num * n

    def bound(p_den: float) -> float:
        k2 = p_den * n
        if delta == 0.0:
            return float(bounds.conditional_epsilon_lower(k1, k2, alpha))
        return float(bounds.poisson_epsilon_lower(k1, k2, n, alpha1=alpha / 2, alpha2=alpha / 2, delta=delta))

    if bound(0.0) <= epsilon:
        return math.inf
    a, b = 0.0, p_num
    for _ in range(60):
        m = 0.5 * (a + b)
        if bound(m) > epsilon:
            a = m
        else:
            b = m
    return math.log((p_num - delta) / a) if a > 0 else math.inf


class EventList:
    """Several events counted on the same draws: ``count`` returns one count per event."""

    def __init__(self, events: list[Event]) -> None:
        self.events = list(events)

    def count(self, y: Any) -> np.ndarray:
        return np.asarray([e.count(y) for e in self.events], dtype=np.int64)


def _counts(k: Any, m: int) -> tuple[int, ...]:
    """Counts of an :class:`EventList` of ``m`` events (0 when no draw was made)."""
    if np.ndim(k) == 0:
        return (int(k),) * m
    return tuple(int(x) for x in k)


def certify(mechanism: Any, d1: Any, d2: Any, *, choice: Choice | None, event: Event, direction: str,
            n_cert: int, alpha1: float, alpha2: float, seed: int, key: tuple[int, ...],
            calls_so_far: int, pairs_tried: int, label: str = "", alpha: float) -> Verdict:
    """Certify ``event`` in ``direction`` on Poisson(``n_cert``) fresh draws per dataset."""
    sizes = stream(seed, *key, CERTIFY, 2).poisson(n_cert, size=2)
    n1, n2 = int(sizes[0]), int(sizes[1])
    k1, k2 = sample_count_pair(mechanism, d1, d2, n1, n2, seed, (*key, CERTIFY, 0), (*key, CERTIFY, 1), event)
    return _verdict(mechanism, d1, d2, choice=choice, event=event, direction=direction, counts=(k1, k2),
                    draws=(n1, n2), n_cert=n_cert, alpha1=alpha1, alpha2=alpha2, seed=seed, key=key,
                    calls_so_far=calls_so_far, pairs_tried=pairs_tried, label=label, alpha=alpha)


def _verdict(mechanism: Any, d1: Any, d2: Any, *, choice: Choice | None, event: Event, direction: str,
             counts: tuple[int, int], draws: tuple[int, int], n_cert: int, alpha1: float, alpha2: float, seed: int,
             key: tuple[int, ...], calls_so_far: int, pairs_tried: int, label: str, alpha: float) -> Verdict:
    """The verdict of certification counts ``counts`` of ``event`` out of ``draws`` per dataset."""
    claim = mechanism.claim
    eps_c, dl_c = float(claim.epsilon), float(claim.delta)
    k1, k2 = counts
    n1, n2 = draws
    num, den = (k1, k2) if direction == "d1>d2" else (k2, k1)
    lam = float(n_cert)
    if dl_c == 0.0:
        eps_lb = float(bounds.conditional_epsilon_lower(num, den, alpha1))
        dl_lb = 0.0
        est = 0.0 if num == 0 else (math.inf if den == 0 else max(math.log(num / den), 0.0))
    else:
        eps_lb = float(bounds.poisson_epsilon_lower(num, den, lam, alpha1=alpha1, alpha2=alpha2, delta=dl_c))
        dl_lb = float(bounds.poisson_delta_lower(num, den, lam, epsilon=eps_c, alpha1=alpha1, alpha2=alpha2))
        p1, p2 = num / lam, den / lam
        est = 0.0 if p1 <= dl_c else (math.inf if p2 == 0 else max(math.log((p1 - dl_c) / p2), 0.0))
    violated = bool(eps_lb > eps_c)
    sel_den = 0
    if choice is not None:
        sel_den = choice.c2 if direction == "d1>d2" else choice.c1
    support = bool(violated and den == 0 and sel_den == 0)
    w = Witness(d1=d1, d2=d2, direction=direction, event=event, counts=(k1, k2), samples=n_cert, seed=seed,
                selection_counts=(choice.c1, choice.c2) if choice else (0, 0),
                selection_samples=choice.n_sel if choice else 0, alpha_split=(alpha1, alpha2), pair_label=label,
                draws=(n1, n2), key=tuple(int(k) for k in key), chunked=active() is not None)
    fields = dict(
        epsilon_claimed=eps_c, delta_claimed=dl_c, epsilon_lower=eps_lb, epsilon_estimate=float(est),
        delta_lower=dl_lb, violated=violated, witness=w, support_violation=support,
        detectable_epsilon=detectable_epsilon(float(lam), float(alpha), eps_c, dl_c),
        blind_delta=bounds.blind_delta(max(n_cert, 1), alpha), alpha=alpha,
        calls=calls_so_far + n1 + n2, pairs_tried=pairs_tried, neighbours=claim.neighbours,
    )
    fields["summary"] = summarize(fields)
    return Verdict(**fields)


def certify_best(mechanism: Any, d1: Any, d2: Any, *, choices: list[Choice], n_cert: int, alpha: float, seed: int,
                 key: tuple[int, ...], calls_so_far: int, pairs_tried: int, label: str = "",
                 split_cert: int | None = None) -> Verdict:
    """Certify each of ``choices`` at ``alpha / len(choices)`` on the *same* certification draws
    (Bonferroni over the choices: the bound kept is valid at ``alpha``) and return the verdict with
    the highest bound (ties: the first choice). With one choice this is :func:`certify` at ``alpha``.
    The verdict's ``extra["certified"]`` lists each choice's event family and bound. ``split_cert``:
    the certification size the (epsilon, delta) alpha split is predicted for (default ``n_cert``)."""
    dl_c = float(mechanism.claim.delta)
    share = alpha / len(choices)
    splits = [alpha_split(ch, n_cert if split_cert is None else split_cert, share, dl_c) for ch in choices]
    if len(choices) == 1:
        (a1, a2), ch = splits[0], choices[0]
        return certify(mechanism, d1, d2, choice=ch, event=ch.event, direction=ch.direction, n_cert=n_cert,
                       alpha1=a1, alpha2=a2, seed=seed, key=key, calls_so_far=calls_so_far,
                       pairs_tried=pairs_tried, label=label, alpha=alpha)
    sizes = stream(seed, *key, CERTIFY, 2).poisson(n_cert, size=2)
    n1, n2 = int(sizes[0]), int(sizes[1])
    both = EventList([ch.event for ch in choices])
    k1, k2 = sample_count_pair(mechanism, d1, d2, n1, n2, seed, (*key, CERTIFY, 0), (*key, CERTIFY, 1), both)
    k1, k2 = _counts(k1, len(choices)), _counts(k2, len(choices))
    verdicts = [_verdict(mechanism, d1, d2, choice=ch, event=ch.event, direction=ch.direction, counts=(k1[i], k2[i]),
                         draws=(n1, n2), n_cert=n_cert, alpha1=a1, alpha2=a2, seed=seed, key=key,
                         calls_so_far=calls_so_far, pairs_tried=pairs_tried, label=label, alpha=alpha)
                for i, (ch, (a1, a2)) in enumerate(zip(choices, splits))]
    best = max(range(len(verdicts)), key=lambda i: (verdicts[i].epsilon_lower, verdicts[i].delta_lower, -i))
    v = verdicts[best]
    v.extra["certified"] = [{"family": event_family(ch.event), "epsilon_lower": u.epsilon_lower,
                             "delta_lower": u.delta_lower, "alpha": share} for ch, u in zip(choices, verdicts)]
    return v


#: The anytime-valid certification, plugged in by :mod:`verifiers.sequential` when it is imported
#: (the package imports it): ``"audit"`` and ``"certify"``. This module does not import it, so the
#: sequential module can build on this one without an import cycle.
SEQUENTIAL: dict[str, Any] = {}


def check_sequential(sequential: Any) -> bool:
    """``sequential`` must be True or False (``TypeError`` naming it otherwise)."""
    if not isinstance(sequential, (bool, np.bool_)):
        raise TypeError(f"sequential must be True or False, got {sequential!r}")
    return bool(sequential)


def check_samples(samples: Any, name: str = "samples", minimum: int = 2) -> int:
    if not isinstance(samples, (numbers.Integral, np.integer)) or isinstance(samples, bool) or samples < minimum:
        raise ParamError(name, f"{name} must be an integer >= {minimum}, got {samples!r}")
    return int(samples)


def check_selection(selection: Any, name: str = "selection") -> float:
    """The selection share: a number strictly between 0 and 1 (``ValueError`` naming it otherwise)."""
    ok = isinstance(selection, (numbers.Real, np.floating, np.integer)) and not isinstance(selection, bool)
    if not ok or not (0.0 < float(selection) < 1.0):
        raise ParamError(name, f"{name} must be a number in (0, 1), got {selection!r}")
    return float(selection)


def audit(mechanism: Any, d1: Any, d2: Any, *, samples: int, alpha: float = 0.05, rng: Any = None,
          event: Event | None = None, direction: str | None = None,
          selection: float = DEFAULT_SELECTION, events: Any = None, check_pair: bool = True,
          sequential: bool = False, float_events: bool | None = None, jobs: int | None = None,
          backend: str | None = None, scheduler: str | None = None) -> Verdict:
    """Certified lower bound on the privacy loss of ``mechanism`` between ``d1`` and ``d2``.

    Parameters
    ----------
    mechanism
        Anything with ``claim`` (a :class:`mechanisms.PrivacyClaim`) and
        ``sample(data, size, rng)``; ``kind == "finite"`` switches to finite-output events.
    d1, d2
        Neighbouring datasets under ``mechanism.claim.neighbours`` (checked unless
        ``check_pair=False``). For a privacy-map claim (:mod:`verifiers.claims`) any two inputs
        at a finite distance where the map is valid: the audit holds the mechanism to the map at
        their distance (``Verdict.extra["d_in"]``).
    samples
        Draws per dataset: ``round(selection * samples)`` for selection, then Poisson with mean
        ``samples - n_sel`` for certification (so the total per dataset is ``samples`` on average;
        the exact numbers are in ``Verdict.calls`` and ``witness.draws``).
    alpha
        Family-wise error: P[epsilon_lower > true epsilon] <= alpha.
    rng
        Seed, Generator, SeedSequence or None; the integer seed actually used is in the witness.
    event, direction
        Replay a known witness: certify this event with all samples (no selection). Without
        ``direction`` both directions are certified at alpha/2 each (Bonferroni).
    selection
        Fraction of the samples used for selection (ignored when ``event`` is given).
    events
        The event families searched (:mod:`verifiers.events`): a family name (``"real"``,
        ``"intervals"``, ``"finite"``, ``"vector"``, ``"floats"``, ...) or a set of them, or a named
        set: ``"all"`` (every family but the opt-in ones: thresholds, atoms, intervals and their
        complements for real outputs, every output and unions for finite ones, patterns and learned
        scores for rows) or ``"thresholds"`` (``"all"`` without ``"intervals"``: fewer candidates,
        and what :func:`verifiers.power.audit_power` can analyse); a named set also keeps the
        mechanism's own opt-in families (``floats`` for library adapters). None (default): the
        mechanism's own set (its ``event_families``: ``"all"``, plus ``floats`` when its
        ``float_events`` is True).
    sequential
        Anytime-valid audit (:mod:`verifiers.sequential`): draw in growing batches, at most
        ``samples`` per dataset, and stop as soon as a violation is certified (``Verdict.extra``
        says ``looks`` and ``stopped``; ``calls`` are the draws actually made).
    float_events
        Also search events on the binary representation of real outputs (the lattice 2^k Z their
        lowest set bit puts them in, per binade and sign: :mod:`verifiers.events.floats`), which
        catch floating-point leaks no event on the real value can see: True adds the ``floats``
        family to ``events``, False removes it. None (default): as ``events`` says (by default the
        mechanism's own ``float_events`` attribute: True for library adapters, else False).
    jobs, backend, scheduler
        Draw the samples on ``jobs`` workers (-1: every core) of ``backend`` (``"loky"`` processes,
        the default; ``"threading"``; ``"dask"``, a local cluster or the one at ``scheduler``):
        every keyed batch is cut into chunks whose sizes depend on the batch alone, each with its
        own keyed Generator, so the verdict is bit-identical for every ``jobs``, backend and
        scheduler (:mod:`verifiers.statistical.parallel`, which also says what the mechanism needs to pickle).
        ``jobs=None`` (default): one Generator per role, in this process.

    Returns
    -------
    Verdict
        ``violated`` is True when the certified bound exceeds the claimed epsilon (for an
        (epsilon, delta) claim: the bound at the claimed delta, equivalently a delta lower bound
        above the claimed delta).
    """
    from dpharness.verifiers.relations import check_neighbours

    check_auditable(mechanism)
    samples = check_samples(samples)
    alpha = bounds.check_alpha(alpha)
    check_events(events)
    check_selection(selection)
    if direction is not None and (not isinstance(direction, str) or direction not in DIRECTIONS):
        raise ParamError("direction", f"direction must be one of {', '.join(map(repr, DIRECTIONS))} or None (both), got {direction!r}")
    if event is not None and not isinstance(event, Event):
        raise TypeError(f"event must be a verifiers.Event or None, got {type(event).__name__} {event!r}")
    if not isinstance(check_pair, (bool, np.bool_)):
        raise TypeError(f"check_pair must be True or False, got {check_pair!r}")
    if jobs is not None or backend is not None or scheduler is not None:
        from dpharness.verifiers.statistical.parallel import sampling

        with sampling(jobs, backend, scheduler):
            return audit(mechanism, d1, d2, samples=samples, alpha=alpha, rng=rng, event=event, direction=direction,
                         selection=selection, events=events, check_pair=check_pair, sequential=sequential,
                         float_events=float_events)
    from dpharness.verifiers.claims import annotate, at_pair, is_map_claim

    if is_map_claim(mechanism.claim):  # a privacy map: held to the map at this pair's distance (verifiers.claims)
        held = at_pair(mechanism, d1, d2)
        return annotate(audit(held, d1, d2, samples=samples, alpha=alpha, rng=rng, event=event, direction=direction,
                              selection=selection, events=events, check_pair=False, sequential=sequential,
                              float_events=float_events), held)
    if check_pair:
        try:
            check_neighbours(d1, d2, mechanism.claim)
        except ValueError as exc:
            if getattr(mechanism, "neighbours_defaulted", False):
                raise ValueError(f"{exc} (add_remove is the default relation of wrap: no neighbours= was given; "
                                 "declare the relation your mechanism is calibrated for, e.g. neighbours='value')"
                                 ) from None
            raise
    fams = resolve_events(mechanism, events, float_events)
    seed = seed_of(rng)
    dl_c = float(mechanism.claim.delta)
    if check_sequential(sequential):
        return SEQUENTIAL["audit"](mechanism, d1, d2, samples=samples, alpha=alpha, seed=seed, events=fams,
                                   event=event, direction=direction)
    if event is not None:
        if direction is not None:
            a1, a2 = (alpha, 0.0) if dl_c == 0.0 else (alpha / 2, alpha / 2)
            return certify(mechanism, d1, d2, choice=None, event=event, direction=direction, n_cert=samples,
                           alpha1=a1, alpha2=a2, seed=seed, key=(0,), calls_so_far=0, pairs_tried=1, alpha=alpha)
        # Both directions on the same certification samples, alpha/2 each (Bonferroni over 2).
        a1, a2 = (alpha / 2, 0.0) if dl_c == 0.0 else (alpha / 4, alpha / 4)
        vs = [certify(mechanism, d1, d2, choice=None, event=event, direction=dr, n_cert=samples,
                      alpha1=a1, alpha2=a2, seed=seed, key=(0,), calls_so_far=0, pairs_tried=1,
                      alpha=alpha) for dr in ("d1>d2", "d2>d1")]
        best = max(vs, key=lambda v: v.epsilon_lower)
        return _with_calls(best, sum(best.witness.draws))  # same draws serve both directions
    n_sel = max(1, int(round(samples * float(selection))))
    n_cert = samples - n_sel
    if n_cert < 1:
        raise ValueError(f"samples={samples} leaves no certification draws at selection={selection}")
    finite = is_finite(mechanism)
    y1, y2 = sample_draws_pair(mechanism, d1, d2, n_sel, seed, (0, SELECT, 0), (0, SELECT, 1))
    # a bit-pattern winner is certified beside the best real-valued event (certify_best)
    ch, second = best_choices(y1, y2, finite=finite, n_cert=n_cert, alpha=alpha, delta=dl_c, events=fams,
                              epsilon=float(mechanism.claim.epsilon), context=data_context(mechanism, d1, d2))
    backup = second if second is not None and second is not ch else None
    return certify_best(mechanism, d1, d2, choices=[ch] if backup is None else [ch, backup], n_cert=n_cert,
                        alpha=alpha, seed=seed, key=(0,), calls_so_far=2 * n_sel, pairs_tried=1)


def replay(mechanism: Any, d1: Any, d2: Any, *, event: Event, direction: str, samples: int, seed: int,
           key: tuple[int, ...] = (0,), chunked: bool = False, alpha: float = 0.05) -> Verdict:
    """Certify a recorded witness again on the very draws it was certified on.

    ``event``, ``direction``, ``samples`` (the Poisson mean of the certification draws), ``seed``,
    ``key`` and ``chunked`` are the :class:`Witness` fields of the same names (in a run's files:
    ``event_json``, ``direction``, ``cert_samples``, ``witness_seed``, ``witness_key``,
    ``witness_chunked``). The counts are the witness's whenever ``mechanism`` draws from the
    generator it is given (an unseedable library draws afresh); the bound is the one these counts
    give at ``alpha`` with no selection, which for a search's witness differs from the recorded one
    by the search's split of alpha.
    """
    if direction not in ("d1>d2", "d2>d1"):
        raise ValueError(f"direction must be 'd1>d2' or 'd2>d1', got {direction!r}")
    samples = check_samples(samples)
    dl_c = float(mechanism.claim.delta)
    a1, a2 = (alpha, 0.0) if dl_c == 0.0 else (alpha / 2, alpha / 2)
    key = tuple(int(k) for k in key)

    def go() -> Verdict:
        return certify(mechanism, d1, d2, choice=None, event=event, direction=direction, n_cert=samples, alpha1=a1,
                       alpha2=a2, seed=int(seed), key=key, calls_so_far=0, pairs_tried=1, alpha=alpha)

    if chunked and active() is None:
        with sampling(1):  # keyed chunks: the same draws on any number of workers, so one will do
            return go()
    return go()


def _with_calls(v: Verdict, calls: int) -> Verdict:
    from dataclasses import replace

    d = {f: getattr(v, f) for f in ("epsilon_claimed", "delta_claimed", "epsilon_lower", "epsilon_estimate",
                                    "delta_lower", "violated", "witness", "support_violation",
                                    "detectable_epsilon", "blind_delta", "alpha", "pairs_tried", "neighbours")}
    d["calls"] = calls
    return replace(v, calls=calls, summary=summarize(d))
