"""Experiment kind ``sweep``: every ε-claiming public name of a library release, audited from its
catalogue (``dpharness sweep LIBRARY``; plan in :mod:`bench.sweep.plan`, report in
:mod:`bench.sweep.report`).

One task is one entry in one pass (``<id>.real``: float events off; ``<id>.floats``: on), a
``library:`` search audit with no pair given, run by the audits' own task
(:func:`bench.audits.task.run_audit_task`), so a sweep row is exactly what ``dpharness audit`` would
give for the same audit and seed. What the library's code cannot do -- build from the catalogue's
parameters, release on any generated pair -- is a row ``outcome: no verdict`` with the reason,
never a failed run: a sweep reports every name. Only a fault of dpharness itself is a task error.

The summary is ``ok`` when no function was flagged, no task failed and every relation the catalogue
states is the one its adapter audits; ``dpharness sweep`` then exits 0, else 1.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpharness.bench.audits.build import build_mechanism
from dpharness.bench.audits.task import run_audit_task
from dpharness.bench.config import Ctx
from dpharness.bench.run.folders import atomic_write_text
from dpharness.bench.run.tasks import Summary, Task, make_key
from dpharness.bench.sweep import plan as _plan
from dpharness.bench.sweep import report as _report
from dpharness.bench.sweep.plan import SweepSpec

__all__ = ["parse", "tasks", "run_task", "summarize", "plot", "outputs", "describe_results", "CELL_COLUMNS"]

_KEYS = _plan.KEYS
CELL_COLUMNS = ["audit", "samples"]
_STARTED: float | None = None


def parse(raw: dict, ctx: Ctx) -> SweepSpec:
    return _plan.parse(raw, ctx)


def tasks(spec: SweepSpec) -> list[Task]:
    global _STARTED
    _STARTED = time.monotonic()
    return [Task(make_key(audit=a.id, samples=n, repeat=r), {"audit": a.id, "samples": n, "repeat": r})
            for a in spec.audits.audits for n in a.samples for r in range(a.repeat)]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or repr(exc)
    return f"{type(exc).__name__}: {text.splitlines()[0][:300]}"


def run_task(spec: SweepSpec, task: Task, rng: np.random.Generator) -> list[dict]:
    p = task.params
    a = spec.audits.audit(p["audit"])
    base = {"key": task.key, "audit": a.id, "samples": int(p["samples"]), "repeat": int(p["repeat"]),
            "expect": a.expect, "function": spec.entry(a.id).api}
    started = time.perf_counter()
    try:
        mech, _, _ = build_mechanism(a.mechanism, a.import_paths)
    except Exception as exc:  # the library refuses the catalogue's parameters: a row saying so, not a crash
        return [{**base, "outcome": "no verdict", "reason": f"not built: {_first_line(exc)}",
                 "seconds": time.perf_counter() - started}]
    claim = mech.claim
    info = {"relation_used": str(claim.neighbours), "epsilon_claimed": float(claim.epsilon),
            "delta_claimed": float(claim.delta)}
    try:
        row = run_audit_task(a, int(p["samples"]), int(p["repeat"]), rng)
    except Exception as exc:  # third-party code fails on the generated data in its own ways (any type)
        return [{**base, **info, "outcome": "no verdict", "reason": f"search failed: {_first_line(exc)}",
                 "seconds": time.perf_counter() - started}]
    row.update(key=task.key, function=base["function"], outcome="verdict", **{"relation_used": info["relation_used"]})
    return [row]


def describe_results(spec: SweepSpec) -> dict:
    return {"cell_columns": list(CELL_COLUMNS), "replicate_column": "repeat", "metric": None}


def summarize(spec: SweepSpec, results: pd.DataFrame) -> Summary:
    wall = time.monotonic() - _STARTED if _STARTED is not None else None
    t = _report.table(spec, results)
    probs = _report.problems(t)
    c = _report.counts(t)
    text = [f"sweep of {spec.catalogue.library} {spec.release}: {c['names']} public names, {c['verdict']} of them with "
            f"a verdict; {c['entries']} entries: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())
                                                             if k not in ("verdict", "names", "entries"))]
    text += [f"  {p}" for p in probs]
    t.attrs.update(problems=probs, wall_seconds=wall)
    return Summary(t, "\n".join(text), not probs)


def plot(spec: SweepSpec, results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    p = _report.figure(table, Path(fig_dir) / "claimed_vs_certified.png")
    return [p] if p is not None else []


def outputs(spec: SweepSpec, results: pd.DataFrame, summary: Summary, run_dir: Path) -> list[str]:
    """sweep.csv, sweep.json, report.md."""
    run_dir = Path(run_dir)
    t = summary.table
    atomic_write_text(run_dir / "sweep.csv", t.to_csv(index=False))
    _report.write_json(spec, t, run_dir / "sweep.json")
    _, note = _report.missing_api(spec)
    figures = sorted(str(q.relative_to(run_dir)) for q in (run_dir / "figures").glob("*.png"))
    atomic_write_text(run_dir / "report.md", _report.markdown(spec, t, note=note, figures=figures,
                                                               wall=t.attrs.get("wall_seconds")))
    return ["sweep.csv", "sweep.json", "report.md"]
