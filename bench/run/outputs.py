"""A run's outputs: results.csv (tidy, task order), the kind's summary, figures and extra files, and
manifest.json (status, counts, seeds, parallelism, provenance).

A failing summary/plot/outputs step is recorded in the manifest (``output_errors``), not raised,
so the computed tasks are never lost.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from dpharness.bench.run.backends import _Executor
from dpharness.bench.run.chunks import ChunkPlan
from dpharness.bench.config import Config
from dpharness.bench.report.provenance import provenance
from dpharness.bench.run.folders import atomic_write_text, write_table
from dpharness.bench.run.result import RunResult, _one_line, _State
from dpharness.bench.run.tasks import Summary, Task

TIMING_COLUMNS = ("seconds",)


def _table_frame(tasks: list[Task], records: dict[str, dict], cell_cols: list[str]) -> pd.DataFrame:
    """results.csv: one row per returned row, in task order. Columns: task, status, message, the
    kind's row columns, ``p_<param>`` for task parameters the rows do not report themselves, seed
    info (root_seed, spawn_key), then timing (seconds)."""
    rows: list[dict] = []
    row_cols: dict[str, None] = {}
    p_cols: dict[str, None] = {}
    # Which parameters become p_ columns depends only on the parameter names and the row's
    # columns: worked out once per such shape (a sweep has a handful), not once per row.
    shapes: dict[tuple, list[tuple[str, str]]] = {}
    for t in tasks:
        rec = records[t.key]
        params = t.params
        body_rows = rec["rows"] if rec["status"] == "ok" else [{c: params[c] for c in cell_cols if c in params}]
        for r in body_rows:
            sig = (tuple(params), tuple(r))
            ps = shapes.get(sig)
            if ps is None:
                ps = shapes[sig] = [(k, f"p_{k}") for k in params if k not in r and k not in cell_cols]
                for c in r:
                    row_cols.setdefault(c)
                for _, c in ps:
                    p_cols.setdefault(c)
            row = {"task": t.key, "status": rec["status"], "message": rec["message"]}
            row.update(r)
            for k, c in ps:
                row[c] = params[k]
            row["root_seed"], row["spawn_key"], row["seconds"] = rec["root_seed"], rec["spawn_key"], rec["seconds"]
            rows.append(row)
    cols = ["task", "status", "message", *row_cols, *p_cols, "root_seed", "spawn_key", *TIMING_COLUMNS]
    return pd.DataFrame.from_records(rows, columns=cols)


def _describe(module: Any, spec: Any) -> dict[str, Any]:
    if hasattr(module, "describe_results"):
        return dict(module.describe_results(spec))
    return {"cell_columns": list(getattr(module, "CELL_COLUMNS", [])), "metric": getattr(module, "METRIC", None)}


def _clipped_points(results: pd.DataFrame) -> int | None:
    """Sum of the ``clipped`` column (data points clipped to the declared bounds), if present."""
    if "clipped" not in results.columns:
        return None
    col = pd.to_numeric(results["clipped"], errors="coerce")
    return int(col.fillna(0).sum())


def run_manifest(status: str, extra: dict[str, Any], *, cfg: Config, tasks: list[Task], state: _State,
                 ex: _Executor, plan: ChunkPlan, chunk_size: int | None, scheduler: str | None, resumed: bool,
                 started: _dt.datetime, t_start: float, command: str | None) -> dict[str, Any]:
    """The manifest.json mapping of a run, as of now (``extra`` goes after the task counts)."""
    done = [state.records[t.key] for t in tasks if t.key in state.records]
    errors = sum(1 for r in done if r["status"] != "ok")
    counts = {"total": len(tasks), "ok": len(done) - errors, "errors": errors, "computed": state.computed,
              "reused": len(done) - state.computed}
    if len(done) < len(tasks):
        counts["missing"] = len(tasks) - len(done)
    m: dict[str, Any] = {
        "status": status,
        "name": cfg.name,
        "experiment": cfg.experiment,
        "config_source": cfg.source,
        "config_hash": cfg.hash,
        "quick": cfg.quick,
        "seed": cfg.seed,
        "tasks": counts,
        **extra,
        "task_columns": ["task", "status", "message"],
        "seed_columns": ["root_seed", "spawn_key"],
        "timing_columns": list(TIMING_COLUMNS),
        "seed_derivation": ("SeedSequence(root_seed, spawn_key=(spawn_key,)), spawn_key = first 8 bytes of "
                            "sha256(task) as int"),
        # the real parallelism (an external dask scheduler: its worker threads), then what was asked
        "jobs": ex.workers,
        "jobs_requested": ex.jobs,
        "backend": ex.backend,
        "scheduler": scheduler,
        "chunks": {"count": len(plan.sizes), "size": "auto" if chunk_size is None else chunk_size,
                   "smallest": min(plan.sizes, default=0), "largest": max(plan.sizes, default=0)},
        "resumed": resumed,
        "started_utc": started.isoformat(timespec="seconds"),
        "finished_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_seconds": round(time.monotonic() - t_start, 3),
        "task_seconds_total": round(float(sum(r["seconds"] for r in done)), 3),
        "compute_seconds": round(state.compute_seconds, 3),  # wall time of this invocation's tasks
        **provenance(),
    }
    if command is not None:
        m["command"] = command
    return m


def write_manifest(run_dir: Path, m: dict) -> None:
    """Write ``run_dir/manifest.json`` atomically."""
    atomic_write_text(run_dir / "manifest.json", json.dumps(m, indent=2, default=str) + "\n")


def _finish(run_dir: Path, cfg: Config, module: Any, tasks: list[Task], state: _State, figures: bool,
            manifest: Callable[..., dict], write_manifest: Callable[[dict], None], t_start: float,
            ex: _Executor, on_summary: Callable[[Summary], None] | None = None) -> RunResult:
    """results.csv, then the kind's summary (handed to ``on_summary`` as soon as it is written, so
    the verdict can be shown before the figures are drawn), figures and extra outputs (their
    failures are recorded, not raised), then manifest.json."""
    records = state.records
    output_errors: dict[str, str] = {}
    try:
        describe = _describe(module, cfg.spec)
    except Exception as exc:  # broad: the kind's code may raise anything; recorded, the run is kept
        output_errors["describe_results"] = _one_line(exc)
        describe = {}
    cell_cols = list(describe.get("cell_columns") or [])
    if describe.get("replicate_column"):
        cell_cols.append(describe["replicate_column"])
    results = _table_frame(tasks, records, cell_cols)
    atomic_write_text(run_dir / "results.csv", results.to_csv(index=False))
    summary_failed = False
    try:
        summary = module.summarize(cfg.spec, results)
        write_table(run_dir, summary.table, heading=f"# {cfg.name}\n\n{cfg.description.strip()}".rstrip())
    except Exception as exc:  # broad: the kind's code may raise anything; recorded, the run is kept
        output_errors["summary"] = _one_line(exc)
        summary, summary_failed = Summary(pd.DataFrame(), "", ok=False), True
    if on_summary is not None and not summary_failed:
        on_summary(summary)
    fig_dir = run_dir / "figures"
    fig_dir.mkdir(exist_ok=True)
    fig_list: list[str] = []
    if figures and not summary_failed:
        try:
            drawn = module.plot(cfg.spec, results, summary.table, fig_dir)
            fig_list = [str(Path(p).relative_to(run_dir)) for p in drawn]
        except Exception as exc:  # broad: the kind's code may raise anything; recorded, the run is kept
            output_errors["figures"] = _one_line(exc)
    extra_files: list[str] = []
    if hasattr(module, "outputs") and not summary_failed:
        try:
            extra_files = [str(p) for p in module.outputs(cfg.spec, results, summary, run_dir)]
        except Exception as exc:  # broad: the kind's code may raise anything; recorded, the run is kept
            output_errors["outputs"] = _one_line(exc)
    errors = sum(1 for t in tasks if records[t.key]["status"] != "ok")
    exit_code = 1 if (errors or output_errors) else (0 if summary.ok else 3)
    status = "errors" if errors else ("failed" if output_errors else "complete")
    clipped = _clipped_points(results)
    extra: dict[str, Any] = {"summary_ok": bool(summary.ok), "exit_code": exit_code, **describe}
    if output_errors:
        extra["output_errors"] = output_errors
        extra["message"] = "; ".join(f"{k} failed: {v}" for k, v in output_errors.items())
    if clipped is not None:
        extra["clipped_points"] = clipped
    extra["figures"] = fig_list
    extra["outputs"] = extra_files
    if ex.note:
        extra["parallelism_note"] = ex.note
    m = manifest(status, **extra)
    write_manifest(m)
    return RunResult(run_dir, cfg, results, summary, len(tasks), state.computed, len(tasks) - state.computed, errors,
                     time.monotonic() - t_start, exit_code, workers=ex.workers, status=status,
                     output_errors=output_errors, clipped_points=clipped,
                     parallelism_note=ex.note)
