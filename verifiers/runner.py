"""Running an audit config: tasks (audit x sample size x repeat), executed with joblib.

Every task's seed is derived from the root seed and the task's *name* (``bench.tasks.task_seed``),
so results do not depend on ``--jobs`` or on the order of the config. Mechanisms are rebuilt inside
the worker from their (picklable) spec.
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..bench.tasks import make_key, task_seed

from .config import AuditConfig, AuditSpec
from .verdict import format_data

__all__ = ["Task", "build_mechanism", "tasks_of", "run_task", "exact_rows"]


@dataclass(frozen=True)
class Task:
    key: str
    audit: AuditSpec
    samples: int
    repeat: int


def build_mechanism(spec: dict) -> tuple[Any, str, float | None]:
    """(mechanism, display name, true epsilon or None) from a config ``mechanism:`` mapping."""
    params = {k: v for k, v in spec.items() if k not in ("zoo", "registry", "peer", "example")}
    if "zoo" in spec:
        from . import zoo

        m = zoo.make(spec["zoo"], **params)
        return m, f"zoo:{spec['zoo']}", float(m.true_epsilon)
    if "registry" in spec:
        from .. import mechanisms

        if spec.get("example"):
            m, _ = mechanisms.registry.get(spec["registry"]).example()
        else:
            m = mechanisms.make(spec["registry"], **params)
        return m, spec["registry"], None
    from . import peers

    m = peers.build(spec["peer"], **params)
    return m, f"peer:{spec['peer']}", None


def tasks_of(cfg: AuditConfig) -> list[Task]:
    out = []
    for a in cfg.audits:
        for n in a.samples:
            for r in range(a.repeat):
                out.append(Task(make_key(audit=a.id, samples=n, repeat=r), a, n, r))
    return out


def _pairs(audit: AuditSpec, mech: Any) -> list[tuple[Any, Any, Any, str]]:
    """(d1, d2, witness event or None, label) for audits with given pairs."""
    if audit.pairs == "witness":
        w = mech.witness()
        return [(w.d1, w.d2, w, "witness")]
    return [(np.asarray(d1), np.asarray(d2), None, f"pair {i}") for i, (d1, d2) in enumerate(audit.pairs)]


def run_task(task: Task, root_seed: int) -> dict:
    """One audit (every pair of the audit, the best verdict kept) or one search; a flat row."""
    a = task.audit
    t0 = time.perf_counter()
    row: dict[str, Any] = {"key": task.key, "audit": a.id, "samples": task.samples, "repeat": task.repeat,
                           "expect": a.expect, "status": "ok", "message": ""}
    try:
        from .. import verifiers

        mech, name, true_eps = build_mechanism(a.mechanism)
        row["mechanism"] = name
        row["true_epsilon"] = a.true_epsilon if a.true_epsilon is not None else (true_eps if true_eps is not None else math.nan)
        seed = int(task_seed(root_seed, task.key).generate_state(1, np.uint64)[0] >> np.uint64(1))
        kw = {} if a.selection is None else {"selection": a.selection}
        if a.search:
            v = verifiers.search(mech, generator=a.generator, budget=task.samples, alpha=a.alpha, rng=seed, **kw)
            label = v.witness.pair_label if v.witness else ""
        else:
            best = None
            pairs = _pairs(a, mech)
            # Several given pairs share alpha (Bonferroni): each is audited at alpha / #pairs.
            for i, (d1, d2, _, lab) in enumerate(pairs):
                vi = verifiers.audit(mech, d1, d2, samples=task.samples, alpha=a.alpha / len(pairs), rng=seed + i,
                                     events=a.events, **kw)
                if best is None or vi.epsilon_lower > best[0].epsilon_lower:
                    best = (vi, lab)
            v, label = best  # type: ignore[misc]
        row.update(v.row())
        row["pair"] = label
        row["alpha"] = a.alpha
        row["summary"] = v.summary
        if v.witness is not None:
            row["draws_per_dataset"] = int(v.witness.selection_samples + max(v.witness.draws))
        # Exact mode once per audit and sample size (repeat 0): the pair is the same in every repeat
        # of a given-pair audit, and the quadratures of some laws are not free.
        if a.exact and v.witness is not None and (task.repeat == 0 or a.search):
            try:
                ex = verifiers.exact(mech, v.witness.d1, v.witness.d2)
                row.update(ex.row())
            except (ValueError, NotImplementedError) as exc:
                row["exact_method"] = f"n/a: {str(exc)[:80]}"
    except Exception as exc:  # noqa: BLE001 - a failing task becomes a row, the run continues
        row["status"] = "error"
        row["message"] = f"{type(exc).__name__}: {exc}"
        row["traceback"] = traceback.format_exc(limit=3)
    row["seconds"] = time.perf_counter() - t0
    return row


def exact_rows(cfg: AuditConfig) -> list[dict]:
    """For search audits with exact mode: the exact loss of every generated pair (max kept)."""
    from .. import verifiers

    out = []
    for a in cfg.audits:
        if not (a.search and a.exact):
            continue
        try:
            mech, name, _ = build_mechanism(a.mechanism)
            pairs = verifiers.pairs_for(mech, a.generator)
        except Exception as exc:  # noqa: BLE001
            out.append({"audit": a.id, "status": "error", "message": f"{type(exc).__name__}: {exc}"})
            continue
        best = None
        n_ok = 0
        for p in pairs:
            try:
                ex = verifiers.exact(mech, p.d1, p.d2)
            except (ValueError, NotImplementedError):
                continue
            n_ok += 1
            key = ex.delta if mech.claim.delta > 0 else ex.epsilon
            if best is None or key > best[0]:
                best = (key, ex, p)
        if best is None:
            out.append({"audit": a.id, "mechanism": name, "status": "ok", "exact_pairs": 0,
                        "message": "no exact law: statistical audit only"})
            continue
        _, ex, p = best
        out.append({"audit": a.id, "mechanism": name, "status": "ok", "exact_pairs": n_ok,
                    "exact_max_epsilon": ex.epsilon, "exact_max_delta": ex.delta, "exact_violated": ex.violated,
                    "exact_support_violation": ex.support_violation, "exact_pair": p.label,
                    "exact_d1": format_data(p.d1), "exact_d2": format_data(p.d2),
                    "epsilon_claimed": mech.claim.epsilon, "delta_claimed": mech.claim.delta, "expect": a.expect})
    return out
