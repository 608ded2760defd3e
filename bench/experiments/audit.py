"""Experiment kind ``audit``: privacy audits of mechanisms (``dpharness audit CONFIG``).

An audit config is selected by its top-level ``audits:`` key (``experiment: audit`` is implied;
format in :mod:`bench.audits.spec`). One task is one audit at one sample size and one repeat; the
runner gives it a generator keyed by the task name, from which the verifier's integer seed is
drawn, so ``results.csv`` is the same for any ``--jobs`` and an interrupted run resumes where it
stopped. ``check`` builds every mechanism and checks every given pair before a run folder exists.

Outputs besides the runner's (results.csv, table.csv, manifest.json, figures/): ``table.md`` (the
compact verdict table), ``targets.csv`` / ``targets.md``, ``exact.csv`` (exact loss over every
generated pair of search audits) and ``report.md``.

The summary is ``ok`` when every audit behaved as its ``expect`` says and every target was met;
targets are reported but not judged when ``max_samples`` / ``max_repeat`` caps apply (``--quick``:
a smoke test at reduced budgets cannot meet budget-specific targets). ``dpharness audit`` exits 1
when the summary is not ok; ``dpharness run`` on an audit config runs the same and exits 3.

``wall_time_at_most`` targets measure the invocation that completes the run (from task expansion
to the summary); after a resume that is the last part only.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpharness.bench.audits import build as _build
from dpharness.bench.audits import plots as _plots
from dpharness.bench.audits import report as _report
from dpharness.bench.audits import spec as _spec
from dpharness.bench.audits.spec import AuditSet
from dpharness.bench.audits.task import run_audit_task
from dpharness.bench.config import Ctx
from dpharness.bench.run.folders import atomic_write_text
from dpharness.bench.report.tables import to_markdown
from dpharness.bench.run.tasks import Summary, Task, make_key

__all__ = ["parse", "check", "tasks", "run_task", "summarize", "plot", "outputs",
           "describe_results", "CELL_COLUMNS"]

CELL_COLUMNS = ["audit", "samples"]

#: When this process expanded the tasks of the run being executed (for wall_time_at_most).
_STARTED: float | None = None


def parse(raw: dict, ctx: Ctx) -> AuditSet:
    return _spec.parse(raw, ctx)


def check(spec: AuditSet) -> None:
    """Build every mechanism, check every given pair against its declared neighbour relation and
    every search's pair generator; peers missing are reported once (ConfigError). Once per spec:
    the spec remembers that it passed (``dpharness audit`` checks it before the runner does)."""
    _build.check(spec)


def tasks(spec: AuditSet) -> list[Task]:
    global _STARTED
    _STARTED = time.monotonic()
    return [Task(make_key(audit=a.id, samples=n, repeat=r), {"audit": a.id, "samples": n, "repeat": r})
            for a in spec.audits for n in a.samples for r in range(a.repeat)]


def run_task(spec: AuditSet, task: Task, rng: np.random.Generator) -> list[dict]:
    p = task.params
    row = run_audit_task(spec.audit(p["audit"]), int(p["samples"]), int(p["repeat"]), rng)
    row["key"] = task.key
    return [row]


def describe_results(spec: AuditSet) -> dict[str, Any]:
    return {"cell_columns": list(CELL_COLUMNS), "replicate_column": "repeat", "metric": None}


def _capped(spec: AuditSet) -> bool:
    return spec.max_samples is not None or spec.max_repeat is not None


def summarize(spec: AuditSet, results: pd.DataFrame) -> Summary:
    wall = time.monotonic() - _STARTED if _STARTED is not None else None
    table = _report.summarize(results)
    targets = _report.evaluate_targets(spec, results, wall)
    problems = _report.judge(spec, results, table)
    if not _capped(spec):
        problems += [f"target {r.target} NOT MET: {r.measured}" for r in targets.itertuples() if r.met == "NOT MET"]
    note = ""
    if _capped(spec):
        caps = ", ".join(f"{k} {v}" for k, v in (("max_samples", spec.max_samples), ("max_repeat", spec.max_repeat))
                         if v is not None)
        note = f"caps applied ({caps}): targets are reported, not judged"
    not_judged = _report.unjudged(spec, table)
    table.attrs.update(targets=targets, problems=problems, wall_seconds=wall, not_judged=not_judged)
    return Summary(table, _report.console_text("", table, targets, problems, note, not_judged), not problems)


def plot(spec: AuditSet, results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    return _plots.plot_all(results, table, fig_dir)


def outputs(spec: AuditSet, results: pd.DataFrame, summary: Summary, run_dir: Path) -> list[str]:
    """table.md (compact), targets.csv/md, exact.csv, report.md."""
    import yaml

    run_dir = Path(run_dir)
    table = summary.table
    attrs = table.attrs
    wall = attrs.get("wall_seconds")
    targets = attrs.get("targets")
    if targets is None:
        targets = _report.evaluate_targets(spec, results, wall)
    problems = attrs.get("problems")
    if problems is None:
        problems = _report.judge(spec, results, table)
    try:
        raw = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        raw = {}
    name = str(raw.get("name", run_dir.parent.name))
    written = []
    atomic_write_text(run_dir / "table.md", f"# {name}: audit summary\n\n" + to_markdown(_report.compact(table), nd=3))
    if len(targets):
        atomic_write_text(run_dir / "targets.csv", targets.to_csv(index=False))
        atomic_write_text(run_dir / "targets.md", f"# {name}: targets\n\n" + to_markdown(targets))
        written += ["targets.csv", "targets.md"]
    exact = _report.exact_table(results)
    if len(exact):
        atomic_write_text(run_dir / "exact.csv", exact.to_csv(index=False))
        written.append("exact.csv")
    figures = sorted(str(p.relative_to(run_dir)) for p in (run_dir / "figures").glob("*.png"))
    md = _report.report_markdown(name, str(raw.get("description", "") or ""), int(raw.get("seed", 0) or 0), spec,
                                 results, table, targets, problems, figures, wall)
    atomic_write_text(run_dir / "report.md", md)
    written.append("report.md")
    return written
