"""One audit task: an audit at one sample size and one repeat, as one flat results row.

Runs in a worker of the one runner (:func:`bench.run.runner.run`); the mechanism is rebuilt there from
its picklable spec (a ``callable:`` is imported there from the folders recorded in the spec, so a
loky worker resolves the user's module exactly as the validating process did). The verifier's
integer seed is drawn from the task's generator, which the runner derives from the root seed and
the task *key* -- so a row does not depend on ``--jobs``, on the order of the config or on which
tasks an interrupted run had already finished.

The first task of a search audit with ``exact: true`` (first sample size, repeat 0) also computes
the exact privacy loss over *every* pair the search generates (``allpairs_*`` columns, written to
``exact.csv``): it is part of a task so that it runs in parallel and is kept across a resume.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpharness.bench.audits.build import build_mechanism, given_pairs
from dpharness.bench.audits.spec import AuditSpec

__all__ = ["run_audit_task", "exact_over_pairs", "ALLPAIRS_COLUMNS"]

#: Columns of the exact loss over every generated pair (first task of search audits with exact mode).
ALLPAIRS_COLUMNS = ("allpairs_exact_pairs", "allpairs_exact_epsilon", "allpairs_exact_delta",
                    "allpairs_exact_violated", "allpairs_exact_support_violation", "allpairs_exact_pair",
                    "allpairs_exact_d1", "allpairs_exact_d2", "allpairs_exact_message")


def exact_over_pairs(mech: Any, generator: str) -> dict[str, Any]:
    """Exact loss of every pair of ``pairs_for(mech, generator)`` that has an exact law; the worst
    pair (largest delta for (epsilon, delta) claims, else largest epsilon) is kept."""
    from dpharness import verifiers
    from dpharness.verifiers.verdict import format_data

    best = None
    n_ok = 0
    for p in verifiers.pairs_for(mech, generator):
        try:
            ex = verifiers.exact(mech, p.d1, p.d2)
        except (ValueError, NotImplementedError):
            continue
        n_ok += 1
        key = ex.delta if mech.claim.delta > 0 else ex.epsilon
        if best is None or key > best[0]:
            best = (key, ex, p)
    if best is None:
        return {"allpairs_exact_pairs": 0, "allpairs_exact_message": "no exact law: statistical audit only"}
    _, ex, p = best
    return {"allpairs_exact_pairs": n_ok, "allpairs_exact_epsilon": ex.epsilon, "allpairs_exact_delta": ex.delta,
            "allpairs_exact_violated": ex.violated, "allpairs_exact_support_violation": ex.support_violation,
            "allpairs_exact_pair": p.label, "allpairs_exact_d1": format_data(p.d1),
            "allpairs_exact_d2": format_data(p.d2), "allpairs_exact_message": ""}


def _published(name: str) -> dict[str, Any]:
    """The bound the suite's own tool published for this mechanism (the best of its variants)."""
    from dpharness.verifiers.controls import suites

    pub = suites.get(name).published
    if not pub:
        return {"peer_lower": math.nan, "peer_source": ""}
    best = max(pub, key=lambda k: pub[k])
    return {"peer_lower": float(pub[best]), "peer_source": best}


#: Releases drawn on each dataset of the certified pair to tell an audit of NaN from an audit.
NAN_PROBE = 16


def _all_nan(mech: Any, d1: Any, d2: Any, seed: int) -> bool:
    """Whether ``mech`` releases only NaN on both datasets of the pair (:data:`NAN_PROBE` scalar draws
    each, from a stream of their own: the verdict is already made). Such an audit compared NaN with NaN."""
    try:
        ys = [np.asarray(mech.sample(d, NAN_PROBE, np.random.default_rng([seed, 7, k])), dtype=np.float64)
              for k, d in enumerate((d1, d2))]
    except (TypeError, ValueError):  # releases that are not numbers (labels, dicts): not NaN
        return False
    # scalar releases only: a NaN coordinate of a vector is an atom (a key absent from a dict release)
    return all(y.ndim == 1 and y.size > 0 and bool(np.isnan(y).all()) for y in ys)


def run_audit_task(a: AuditSpec, samples: int, repeat: int, rng: np.random.Generator) -> dict[str, Any]:
    """:func:`_run_audit_task`, with ``sys.exit()`` in the audited code turned into a failed task (it
    would otherwise end the run -- or a worker -- with the user's exit status, often 0)."""
    try:
        return _run_audit_task(a, samples, repeat, rng)
    except SystemExit as exc:
        raise RuntimeError(f"the audited code called sys.exit({exc.code!r})") from None


def _run_audit_task(a: AuditSpec, samples: int, repeat: int, rng: np.random.Generator) -> dict[str, Any]:
    """Audit ``a`` at ``samples`` (per dataset, or the total budget of a search), seeded from ``rng``.

    Given pairs are audited each at the audit's ``alpha`` split over the pairs (Bonferroni,
    :func:`verifiers.statistical.alpha.split_alpha`) and the highest certified bound is kept.
    Exceptions propagate: the runner records the task as an error (retried on resume).
    """
    from dpharness import verifiers
    from dpharness.verifiers.statistical.alpha import split_alpha

    mech, name, true_eps = build_mechanism(a.mechanism, a.import_paths)  # callable: imported here too
    seed = int(rng.integers(0, 2**62))
    row: dict[str, Any] = {"key": "", "audit": a.id, "samples": samples, "repeat": repeat, "expect": a.expect,
                           "mechanism": name}
    row["true_epsilon"] = a.true_epsilon if a.true_epsilon is not None else (true_eps if true_eps is not None else math.nan)
    kw = {} if a.selection is None else {"selection": a.selection}
    if a.sequential:
        kw["sequential"] = True
    if a.float_events is not None:
        kw["float_events"] = a.float_events
    if a.draw_jobs is not None:  # keyed chunks: the same draws on any number of workers
        kw.update(jobs=a.draw_jobs, backend=a.draw_backend, scheduler=a.draw_scheduler)
    if a.pairs == "suite":
        # the suite's own input pairs, searched by successive halving with one certification
        from dpharness.verifiers import Pair

        pairs = [Pair(d1, d2, lab) for d1, d2, lab in given_pairs(a, mech)]
        v = verifiers.search(mech, generator=pairs, budget=samples, alpha=a.alpha, rng=seed, **kw)
        label = v.witness.pair_label if v.witness else ""
        row.update(_published(a.mechanism.name))
    elif a.search:
        v = verifiers.search(mech, generator=a.generator, budget=samples, alpha=a.alpha, rng=seed, **kw)
        label = v.witness.pair_label if v.witness else ""
        if a.mechanism.kind == "suite":
            row.update(_published(a.mechanism.name))
    else:
        best = None
        pairs = given_pairs(a, mech)
        each = split_alpha(a.alpha, len(pairs))
        for i, (d1, d2, lab) in enumerate(pairs):
            vi = verifiers.audit(mech, d1, d2, samples=samples, alpha=each, rng=seed + i, events=a.events, **kw)
            if best is None or vi.epsilon_lower > best[0].epsilon_lower:
                best = (vi, lab)
        v, label = best  # type: ignore[misc]
    row.update(v.row())
    crashed = list(v.extra.get("skipped_pairs", []))
    if crashed:  # generated pairs the mechanism raised on (when probed or sampled): the search covered fewer
        probed = sum(s.get("phase") != "selection" for s in crashed)  # never counted in pairs_tried
        row["pairs_crashed"] = len(crashed)
        row["pairs_generated"] = int(v.pairs_tried) + probed
        row["pairs_crashed_first"] = f"{crashed[0]['pair']}: {crashed[0]['error']}"[:300]
    if v.witness is not None and _all_nan(mech, v.witness.d1, v.witness.d2, seed):
        row["all_nan"] = True  # judged by bench.audits.report: nothing was audited
    row["pair"] = label
    row["alpha"] = a.alpha
    row["summary"] = v.summary
    if v.witness is not None:
        row["draws_per_dataset"] = int(v.witness.selection_samples + max(v.witness.draws))
    if v.extra.get("sequential"):
        row["sequential_looks"] = int(v.extra["looks"])
        row["sequential_stopped"] = str(v.extra["stopped"])
    # Exact loss of the certified pair: once per sample size for given pairs (the pair is the
    # same in every repeat, and some laws need quadratures), on every search (pairs differ).
    if a.exact and v.witness is not None and (repeat == 0 or a.search):
        try:
            row.update(verifiers.exact(mech, v.witness.d1, v.witness.d2).row())
        except (ValueError, NotImplementedError) as exc:
            row["exact_method"] = f"n/a: {str(exc)[:80]}"
    if a.pairs == "search" and a.exact and repeat == 0 and samples == a.samples[0]:
        row.update(exact_over_pairs(mech, a.generator))
    return row
