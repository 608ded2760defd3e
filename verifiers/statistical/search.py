"""Search over neighbouring pairs: successive halving on the selection split, one certification.

The budget (total mechanism calls, both datasets) is split into a selection part and a
certification part. Selection runs successive halving over the candidate pairs of
:func:`verifiers.pairs_for`: every live dataset gets a round of draws (one stream per distinct
dataset, shared by the pairs holding it), groups of pairs (by move, by base:
:mod:`verifiers.statistical.pooling`) are ranked on their pooled draws while a grouping has groups to
halve, then pairs one by one by the best predicted certified bound among their events
(:func:`verifiers.statistical.batch.best_choice`, on all selection draws accumulated so far), and
the better half survives (docs/auditing.md, "How the search spends its selection draws"). A pair listed again, or
listed swapped, is searched once: every event is scored in both directions, so (d1, d2) and
(d2, d1) are the same test (``Verdict.extra["swapped_pairs_merged"]`` counts the merged ones). The single winner
(pair, event, direction, alpha split) is certified on fresh draws. Every selection decision uses
only selection draws, so the certified bound is valid at level alpha for the whole search with no
correction for the number of pairs, events or rounds (docs/auditing.md, "Family-wise error across the search").
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from dpharness.mechanisms.contracts import check_auditable
from dpharness.verifiers import bounds
from dpharness.verifiers.claims import annotate, at_pair, pairs_for
from dpharness.verifiers.relations import merge_swaps
from dpharness.verifiers.events.bits import FLOAT_KINDS
from dpharness.verifiers.events.core import _row_keys
from dpharness.verifiers.events.families import FLOATS
from dpharness.verifiers.events.reachable import data_context
from dpharness.verifiers.statistical.batch import (SELECT, SEQUENTIAL, Choice, alpha_split, best_choice, certify,
                                                   certify_best, check_samples, check_selection, check_sequential,
                                                   best_choices, event_family, is_finite, resolve_events, seed_of,
                                                   shrink_level)
from dpharness.verifiers.statistical.held_out import held_out_choices
from dpharness.verifiers.statistical.parallel import sample_draws, sampling
from dpharness.verifiers.statistical.pooling import dataset_index, move_groups
from dpharness.verifiers.verdict import Verdict

__all__ = ["search", "late_shrink", "DEFAULT_SEARCH_SELECTION", "LATE_DRAWS", "FEW_ROWS", "LATE_SHRINK"]

#: Share of the budget spent on selection (pairs x events x directions) in a search.
DEFAULT_SEARCH_SELECTION = 0.4
#: Pairs kept in a round of group ranking for their own score, whatever their groups' scores.
PROTECT = 2
#: Share of the racing pairs a round of group ranking keeps at least (plain halving keeps half): the
#: groups choose which pairs race on, the pairs' own scores fill the rest, so a round of groups cuts
#: no faster than plain halving does.
GROUP_KEEP = 0.5
#: Late rounds of a release with few distinct rows: from this many selection draws per dataset, a
#: vector release showing at most :data:`FEW_ROWS` distinct rows is ranked at :data:`LATE_SHRINK`.
LATE_DRAWS = 40_000
FEW_ROWS = 64
#: The least shrinkage :func:`verifiers.statistical.batch.shrink_level` ever gives (its few-candidate
#: level): the candidates of a few-row release are many views of the same rows, not many events.
LATE_SHRINK = shrink_level(1)


def search(mechanism: Any, *, generator: Any = "auto", budget: int, alpha: float = 0.05, rng: Any = None,
           selection: float = DEFAULT_SEARCH_SELECTION, sequential: bool = False,
           float_events: bool | None = None, jobs: int | None = None, backend: str | None = None,
           scheduler: str | None = None, events: Any = None) -> Verdict:
    """Search neighbouring pairs for a privacy violation and certify the best witness.

    Parameters
    ----------
    mechanism
        Anything with ``claim`` and ``sample(data, size, rng)``.
    generator
        ``"auto"`` (pairs of the family of ``claim.neighbours``), a family name, a callable
        ``generator(mechanism)`` or an iterable of ``(d1, d2)`` pairs; see
        :func:`verifiers.pairs_for`. Under a privacy-map claim (:mod:`verifiers.claims`)
        every pair is held to the map at its own distance (selection and certification); the
        verdict states the winning pair's claim and distance (``Verdict.extra["d_in"]``).
    budget
        Total mechanism calls (both datasets of every pair, selection and certification); the
        Poisson-sized certification keeps a 3-sigma margin, so the budget is exceeded with
        probability < 0.002 (``Verdict.calls`` is the exact count).
    alpha
        Family-wise error over the whole search.
    rng
        Seed, Generator, SeedSequence or None (the integer seed used is in the witness).
    selection
        Share of the budget used for selection.
    sequential
        Certify the winner sequentially (:mod:`verifiers.sequential`): its selection draws start
        the pool, fresh batches of at most the certification budget per dataset follow, and the
        audit stops as soon as a violation is certified.
    float_events
        Also search events on the bit patterns of real outputs (see :func:`verifiers.audit`);
        None: as ``events`` says.
    events
        The event families searched, as in :func:`verifiers.audit` (None: the mechanism's own set).
    jobs, backend, scheduler
        Draw on several workers, bit-identically for any number of them (see :func:`verifiers.audit`).

    Returns
    -------
    Verdict
        With ``pairs_tried`` and ``calls`` (<= budget) filled in; the witness names the pair.
    """
    check_auditable(mechanism)
    budget = check_samples(budget, "budget", minimum=8)
    alpha = bounds.check_alpha(alpha)
    check_selection(selection)
    sequential = check_sequential(sequential)
    fams = resolve_events(mechanism, events, float_events)
    if jobs is not None or backend is not None or scheduler is not None:
        with sampling(jobs, backend, scheduler):
            return search(mechanism, generator=generator, budget=budget, alpha=alpha, rng=rng, selection=selection,
                          sequential=sequential, events=fams)
    listed = pairs_for(mechanism, generator)
    skipped: list[dict] = list(getattr(listed, "skipped", []))
    # (d1, d2) and (d2, d1) are one test (every event is scored in both directions): search it once
    pairs, merged = merge_swaps(listed)
    # Each pair's own claim: a privacy map (verifiers.claims) is evaluated at the pair's distance,
    # and pairs are ranked by predicted bound minus their claim; fixed claims keep the plain score.
    held = [at_pair(mechanism, p.d1, p.d2, check=False, label=p.label or f"pair {j}") for j, p in enumerate(pairs)]
    margin_of = [float(h.claim.epsilon) if h is not mechanism else 0.0 for h in held]
    # Pairs the verifier generated may hit inputs the mechanism cannot handle (OverflowError,
    # IndexError, ...): such a pair is skipped and reported. Pairs the user gave are a contract:
    # an exception there is the user's to see.
    generated = isinstance(generator, str) or callable(generator)
    seed = seed_of(rng)
    finite = is_finite(mechanism)
    n_cert = int(budget * (1.0 - float(selection))) // 2
    sel_budget = budget - 2 * n_cert
    P = len(pairs)
    if sel_budget < 4 * P or n_cert < 1:
        raise ValueError(
            f"budget={budget} is too small for {P} candidate pairs: selection needs >= {4 * P} calls "
            f"(2 per dataset per pair); raise the budget to at least {math.ceil(4 * P / float(selection)) + 2}")
    # One draw stream per distinct dataset (pairs sharing a base share its draws), and pairs moving
    # their data by the same sign pattern ranked as a group on their pooled draws before they are
    # ranked one by one (verifiers/statistical/pooling.py; docs/auditing.md).
    data, ends = dataset_index(pairs)
    factors = [move_groups(pairs), [i1 for i1, _ in ends]]
    # as many rounds as plain halving: a round of groups halves the groups, so at least halves the pairs
    rounds = math.ceil(math.log2(P)) + 1 if P > 1 else 1
    # With float events on, a bit-pattern event that wins the selection by chance must not hide what
    # the real-valued events certify: each pair's best real-valued event is kept beside its best event
    # of every family, its pair is never dropped by the halving, and both winners are certified at
    # alpha/2 each (docs/auditing.md, "Float events cost at most the alpha split").
    two_track = FLOATS in fams and bool(fams - {FLOATS}) and not sequential
    real: dict[int, Choice] = {}
    alive = list(range(P))
    pool: dict[int, list[np.ndarray]] = {}
    failed: dict[int, str] = {}
    choices: dict[int, Choice] = {}
    spent = 0
    for r in range(rounds):
        left = rounds - r
        live = sorted({i for j in alive for i in ends[j]} - set(failed))
        per_round = (sel_budget - spent) // left
        m = per_round // max(1, len(live))
        if r == 0:
            m = max(m, 1)  # sel_budget >= 4P guarantees this fits
        if m < 1:
            break
        for i in live:
            try:
                pool.setdefault(i, []).append(sample_draws(mechanism, data[i], m, seed, (i, SELECT, 2, r)))
                spent += m
            except Exception as exc:  # any failure of a generated pair is reported, not fatal
                if not generated:
                    raise
                failed[i] = f"{type(exc).__name__}: {exc}"[:300]
        for j in list(alive):
            i1, i2 = ends[j]
            if i1 in failed or i2 in failed:
                skipped.append({"pair": pairs[j].label, "error": failed.get(i1) or failed[i2], "phase": "selection"})
                alive.remove(j)
                continue
            # the pair's best event, and its best real-valued one (the same unless a bit pattern won)
            y1, y2 = np.concatenate(pool[i1]), np.concatenate(pool[i2])
            choices[j], second = best_choices(y1, y2, finite=finite, n_cert=n_cert, alpha=alpha,
                                              delta=float(held[j].claim.delta), events=fams,
                                              epsilon=float(held[j].claim.epsilon),
                                              context=data_context(held[j], pairs[j].d1, pairs[j].d2),
                                              shrink=late_shrink(y1, y2, finite))
            real[j] = second if second is not None else choices[j]
        if not alive:
            raise ValueError(f"every one of the {P} generated pairs made the mechanism raise; first: "
                             f"{skipped[0]['pair']}: {skipped[0]['error']}")
        if len(alive) > 1 and r < rounds - 1:
            # the pair of the best real-valued event among those still racing (scored this round)
            jr = max(alive, key=lambda j: (real[j].score - margin_of[j], -j))
            if any(_informative(f, alive) for f in factors):
                alive = _best_groups(alive, factors, pool, ends, choices, margin_of, held, finite=finite,
                                     n_cert=n_cert, alpha=alpha, events=fams)
            else:
                ranked = sorted(alive, key=lambda j: (-(choices[j].score - margin_of[j]), j))
                alive = ranked[: max(1, math.ceil(len(alive) / 2))]
            if two_track and jr not in alive:  # the pair of the best real-valued event stays in the race
                alive.append(jr)
    ys = {j: (pool[ends[j][0]], pool[ends[j][1]]) for j in alive}
    best = max(alive, key=lambda j: (choices[j].score - margin_of[j], -j))
    mech = held[best]  # the mechanism held to the winning pair's claim
    p = pairs[best]
    # Certification draws are Poisson(lam) per dataset (exact conditional bounds); lam keeps a
    # 3-sigma margin so that the total stays within the budget with probability > 0.998.
    lam = max(1, int(n_cert - 3.0 * math.sqrt(n_cert)))
    if sequential:  # fixed batch sizes: exactly n_cert per dataset at most, no Poisson margin needed
        v = annotate(SEQUENTIAL["certify"](mech, p.d1, p.d2, pool1=ys[best][0], pool2=ys[best][1], budget=n_cert,
                               alpha=alpha, seed=seed, key=(best,), calls_so_far=spent, pairs_tried=P,
                               label=p.label, events=fams), mech)
        _report(v, skipped, merged)
        return v
    # the winner's event: its type chosen on a held-out half of the winner's selection draws (the
    # ranking above scored every type on the draws that built it; docs/auditing.md)
    won_on_bits = getattr(choices[best].event, "kind", "") in FLOAT_KINDS
    choices[best], second = held_out_choices(
        np.concatenate(ys[best][0]), np.concatenate(ys[best][1]), finite=finite, n_cert=n_cert, alpha=alpha,
        delta=float(held[best].claim.delta), events=fams, epsilon=float(held[best].claim.epsilon),
        context=data_context(held[best], pairs[best].d1, pairs[best].d2))
    real[best] = second if second is not None else choices[best]
    ch = choices[best]
    jr = max(real, key=lambda j: (real[j].score - margin_of[j], -j))
    if (two_track and won_on_bits and jr != best and getattr(ch.event, "kind", "") not in FLOAT_KINDS
            and real[jr].score - margin_of[jr] > ch.score - margin_of[best]):
        # the pair won the ranking on a bit-pattern event, but its held-out type is real-valued and
        # another pair's real-valued event predicts more: certify that one (one event, full alpha)
        best, ch = jr, real[jr]
        mech, p = held[best], pairs[best]
    if not two_track or real[jr] is ch or getattr(ch.event, "kind", "") not in FLOAT_KINDS:
        v = certify_best(mech, p.d1, p.d2, choices=[ch], n_cert=lam, alpha=alpha, seed=seed, key=(best,),
                         calls_so_far=spent, pairs_tried=P, label=p.label, split_cert=n_cert)
    elif jr == best:  # both events on the one pair: counted on the same draws, alpha/2 each
        v = certify_best(mech, p.d1, p.d2, choices=[ch, real[jr]], n_cert=lam, alpha=alpha, seed=seed, key=(best,),
                         calls_so_far=spent, pairs_tried=P, label=p.label, split_cert=n_cert)
    else:  # two pairs: half the certification draws each, alpha/2 each
        v = _certify_two_pairs(held, pairs, [(best, ch), (jr, real[jr])], n_cert=n_cert, lam=lam, alpha=alpha,
                               seed=seed, spent=spent, P=P)
    v = annotate(v, held[_pair_of(v, pairs, best)])
    _report(v, skipped, merged)
    return v


def late_shrink(y1: np.ndarray, y2: np.ndarray, finite: bool) -> float | None:
    """The shrinkage level a ranking round uses for a pair: :data:`LATE_SHRINK` for a finite vector
    release with at least :data:`LATE_DRAWS` selection draws per dataset and at most :data:`FEW_ROWS`
    distinct rows among them, None (the candidates' own level) otherwise.

    Why (docs/auditing.md, "How the search spends its selection draws"): the level shrinks each
    candidate's frequencies against the winner's curse of a selection among many candidates, and is
    set by their number. A vector release of labels (sparse vector with a cutoff: 11 distinct rows)
    has ~90 candidates -- per-coordinate atoms and thresholds, unions of rows, learned-score
    thresholds -- that are views of the same few rows, so that level shrinks a rare row seen a
    thousand times as hard as a lucky one seen a few times, and the late rounds rank a pair whose
    loss lies in a frequent, weaker event above the pair whose loss lies in a rare, stronger one.
    Once every row that matters is seen hundreds of times, the least shrinkage is enough. Scalar
    releases keep the plain level (their candidates already are the distinct events), and so do
    releases with many distinct rows (sparse vector without a cutoff: 1,024), where a union of rows
    sorted by their ratio is the lucky event the shrinkage guards against."""
    if not finite or np.ndim(y1) < 2 or y1.shape[0] < LATE_DRAWS:
        return None
    # rows keyed as the label-row candidates key them (one int64 per row of small integers)
    keys = _row_keys(y1, y2)
    if keys is not None:
        distinct = np.unique(np.concatenate(keys)).size
    else:
        distinct = len(np.unique(np.concatenate([y1, y2]).reshape(y1.shape[0] + y2.shape[0], -1), axis=0))
    return LATE_SHRINK if distinct <= FEW_ROWS else None


def _informative(factor: list[int], alive: list[int]) -> bool:
    """A grouping worth ranking: two or more groups among the live pairs, one of them of two or more."""
    sizes = np.bincount([factor[j] for j in alive])
    return int(np.count_nonzero(sizes)) > 1 and int(sizes.max()) > 1


def _best_groups(alive: list[int], factors: list[list[int]], pool: dict[int, list[np.ndarray]],
                 ends: list[tuple[int, int]], choices: dict[int, Choice], margin_of: list[float], held: list, *,
                 finite: bool, n_cert: int, alpha: float, events: Any) -> list[int]:
    """The live pairs in the better half of the groups of every informative factor (a factor groups
    pairs: by their move, by their base), each group ranked by the best predicted bound on its
    pooled selection draws minus its members' mean claim (privacy maps); when no pair is in the
    better half of every factor, those of any. The :data:`PROTECT` pairs that lead on their own
    draws stay too: a group's pooled score is conservative (a mixture never beats its best member),
    so one strong pair among weak ones is not lost. When fewer than :data:`GROUP_KEEP` of the live
    pairs are kept so, the best of the others on their own draws fill up to it."""
    kept_by: list[set[int]] = []
    for factor in factors:
        if not _informative(factor, alive):
            continue
        members: dict[int, list[int]] = {}
        for j in alive:
            members.setdefault(factor[j], []).append(j)
        score: dict[int, float] = {}
        for g, js in members.items():
            margin = float(np.mean([margin_of[j] for j in js]))
            if len(js) == 1:
                score[g] = choices[js[0]].score - margin
                continue
            # draws pool only between pairs whose releases have one shape (a move on 5 and on 10
            # queries is one group, scored by the better of its two pools)
            by_shape: dict[tuple, list[int]] = {}
            for j in js:
                by_shape.setdefault(pool[ends[j][0]][0].shape[1:], []).append(j)
            best = -math.inf
            for part in by_shape.values():
                # a dataset shared by members (their base) appears once per member: the mixture
                # weighs every pair alike
                y1 = np.concatenate([a for j in part for a in pool[ends[j][0]]])
                y2 = np.concatenate([a for j in part for a in pool[ends[j][1]]])
                ch = best_choice(y1, y2, finite=finite, n_cert=n_cert, alpha=alpha,
                                 delta=float(held[part[0]].claim.delta), events=events)
                best = max(best, ch.score)
            score[g] = best - margin
        ranked = sorted(members, key=lambda g: (-score[g], min(members[g])))
        top = set(ranked[: max(1, math.ceil(len(ranked) / 2))])
        kept_by.append({j for j in alive if factor[j] in top})
    if not kept_by:
        return alive
    both = set.intersection(*kept_by) or set.union(*kept_by)
    ranked = sorted(alive, key=lambda j: (-(choices[j].score - margin_of[j]), j))
    kept = both | set(ranked[:PROTECT])
    floor = math.ceil(len(alive) * GROUP_KEEP)
    for j in ranked:  # the better half of every grouping can hold a quarter of the pairs or fewer
        if len(kept) >= floor:
            break
        kept.add(j)
    return [j for j in alive if j in kept]


def _pair_of(v: Verdict, pairs: list, default: int) -> int:
    key = v.witness.key if v.witness is not None else ()
    return int(key[0]) if key and 0 <= int(key[0]) < len(pairs) else default


def _certify_two_pairs(held: list, pairs: list, picks: list[tuple[int, Choice]], *, n_cert: int, lam: int,
                       alpha: float, seed: int, spent: int, P: int) -> Verdict:
    """Certify two (pair, choice) picks on their own pairs' draws, ``lam // 2`` per dataset and
    alpha/2 each (Bonferroni); the verdict with the higher bound, its ``calls`` counting both."""
    half = max(1, lam // 2)
    vs = []
    calls = spent
    for j, ch in picks:
        mech = held[j]
        a1, a2 = alpha_split(ch, n_cert // 2, alpha / 2, float(mech.claim.delta))
        v = certify(mech, pairs[j].d1, pairs[j].d2, choice=ch, event=ch.event, direction=ch.direction, n_cert=half,
                    alpha1=a1, alpha2=a2, seed=seed, key=(j,), calls_so_far=0, pairs_tried=P, label=pairs[j].label,
                    alpha=alpha)
        calls += sum(v.witness.draws)
        vs.append(v)
    best = max(range(2), key=lambda i: (vs[i].epsilon_lower, vs[i].delta_lower, -i))
    out = replace(vs[best], calls=calls)
    out.extra["certified"] = [{"family": event_family(ch.event), "pair": pairs[j].label, "epsilon_lower": u.epsilon_lower,
                               "delta_lower": u.delta_lower, "alpha": alpha / 2} for (j, ch), u in zip(picks, vs)]
    return out


def _report(v: Verdict, skipped: list[dict], merged: int) -> None:
    if skipped:
        v.extra["skipped_pairs"] = skipped
    if merged:
        v.extra["swapped_pairs_merged"] = merged
