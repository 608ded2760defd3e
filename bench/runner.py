"""The experiment runner: config -> tasks -> joblib -> run folder (``dpharness run``).

Three plain steps: expand the config into tasks (:func:`bench.experiments` kind ``tasks``), run each
task in a worker from ``(kind, spec, task, root seed)``, collect the rows into one tidy table in
task order. Reproducibility: a task's stream is
``SeedSequence(root_seed, spawn_key=(stable_hash(task.key),))`` and shared data comes from
``data_rng`` keyed by the data identity, so ``results.csv`` (timing aside) is bit-identical for any
``--jobs``, any backend (loky, threading, dask) and when the config is reordered or extended.

Resuming: every finished task is saved at once as ``tasks/<hash>.json`` (temporary file + rename).
Re-running the same command (same config, ``--quick`` and ``--seed``, hence the same config hash)
after Ctrl-C or kill continues the newest unfinished run folder with that hash under
``<out>/<name>/`` and computes only the tasks without an ``ok`` record (failed tasks are retried);
``--resume RUN_DIR`` names the folder explicitly. A finished run is never touched again: the next
run of the same command starts a new folder.

Exit codes of ``dpharness run``: 0 success; 1 some tasks raised (they are ``status=error`` rows
with the message; the run still finishes); 2 invalid config or usage (message names the field);
3 all tasks ran but a cell is outside the reference tolerance (the table says which);
130 interrupted (finished tasks are kept, re-run to resume).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import logging
import math
import numbers
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, TextIO

import numpy as np
import pandas as pd

from . import experiments
from .config import Config, ConfigError, load_config
from .results import (
    TaskStore,
    atomic_write_text,
    find_unfinished,
    is_finished,
    load_run_config,
    manifest_base,
    new_run_dir,
    write_run_config,
    write_table,
)
from .tasks import Summary, Task, stable_hash, task_seed

__all__ = ["RunError", "RunResult", "run", "cmd_run", "execute_task", "BACKENDS"]

BACKENDS = ("loky", "threading", "dask")
TIMING_COLUMNS = ("seconds",)
DASK_HINT = "the dask backend needs the optional extra: pip install -e '.[dask]'"


class RunError(RuntimeError):
    """A usage problem that is not in the config itself (backend missing, wrong --resume folder)."""


@dataclass(frozen=True)
class RunResult:
    """What :func:`run` returns (the same facts are in the run folder)."""

    run_dir: Path
    config: Config
    results: pd.DataFrame
    summary: Summary
    n_tasks: int
    computed: int
    reused: int
    errors: int
    wall_seconds: float
    exit_code: int


# -- worker ------------------------------------------------------------------------------------


def _scalar(v: Any, where: str) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, (str, bool, int, float)):
        return v
    raise TypeError(f"{where}: row values must be scalars (str, int, float, bool), got {type(v).__name__}")


def execute_task(kind: str, spec: Any, task: Task, root_seed: int) -> dict[str, Any]:
    """Run one task in a worker and return its JSON-able record.

    Exceptions (not KeyboardInterrupt) become ``status="error"`` records with the message, so one
    failing cell does not stop the run.
    """
    module = experiments.get(kind)
    spawn = stable_hash(task.key)
    t0 = time.perf_counter()
    try:
        rng = np.random.default_rng(task_seed(root_seed, task.key))
        rows = module.run_task(spec, task, rng)
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise TypeError(f"run_task must return a list of dicts, got {type(rows).__name__}")
        clean = [{str(k): _scalar(v, f"{task.key}: {k}") for k, v in r.items()} for r in rows]
        status, message = "ok", ""
    except Exception as exc:  # noqa: BLE001 - a failing task becomes an error row
        clean, status, message = [], "error", f"{type(exc).__name__}: {exc}"
    return {
        "key": task.key,
        "status": status,
        "message": message,
        "rows": clean,
        "seconds": time.perf_counter() - t0,
        "root_seed": int(root_seed),
        "spawn_key": spawn,
    }


# -- progress ----------------------------------------------------------------------------------


class Progress:
    """``name: done/total tasks (pct), rate, ETA`` on stderr, shown only once a run has taken
    longer than ``delay`` seconds; redrawn in place on a terminal, one line every 5 s otherwise."""

    def __init__(self, total: int, done: int, name: str, stream: TextIO | None = None, enabled: bool = True,
                 delay: float = 1.0):
        self.total, self.done, self.start_done, self.name = total, done, done, name
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and total > done
        self.delay = delay
        self.t0 = time.monotonic()
        self.last = 0.0
        self.shown = False
        self.t_first: float | None = None
        self.first_done = done
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def _line(self) -> str:
        # The rate is measured from the first finished task, so worker start-up does not skew the ETA.
        el = time.monotonic() - (self.t_first if self.t_first is not None else self.t0)
        new = self.done - self.first_done
        rate = new / el if el > 0 and new > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else math.inf
        eta_s = "?" if not math.isfinite(eta) else str(_dt.timedelta(seconds=int(round(eta))))
        pct = 100.0 * self.done / self.total if self.total else 100.0
        return f"{self.name}: {self.done}/{self.total} tasks ({pct:.0f}%), {rate:.1f} tasks/s, ETA {eta_s}"

    def update(self, n: int = 1) -> None:
        if self.t_first is None:
            self.t_first, self.first_done = time.monotonic(), self.done + n
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        el = now - self.t0
        if (el < self.delay or now - self.last < (0.25 if self.tty else 5.0) or self.done <= self.first_done
                or now - self.t_first < 1.0):
            return  # too early, or no rate yet (the first result only marks the end of worker start-up)
        self.last = now
        self.shown = True
        if self.tty:
            self.stream.write("\r" + self._line() + "\x1b[K")
        else:
            self.stream.write(self._line() + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.shown:
            el = time.monotonic() - self.t0
            pct = 100.0 * self.done / self.total if self.total else 100.0
            self.stream.write(("\r" if self.tty else "") + f"{self.name}: {self.done}/{self.total} tasks ({pct:.0f}%), "
                              + ("done" if self.done >= self.total else "stopped") + f" after {el:.1f} s"
                              + ("\x1b[K" if self.tty else "") + "\n")
            self.stream.flush()


# -- execution ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _dask_client(scheduler: str | None, jobs: int) -> Iterator[Any]:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise RunError(DASK_HINT) from None
    if scheduler:
        client = Client(scheduler)
        try:
            yield client
        finally:
            client.close()
        return
    n = jobs if jobs > 0 else None
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR)
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _iter_records(kind: str, spec: Any, todo: list[Task], root_seed: int, jobs: int, backend: str,
                  scheduler: str | None) -> Iterator[dict]:
    """Run ``todo`` and yield each task's record as soon as it finishes (any order)."""
    from joblib import Parallel, delayed, parallel_config

    calls = (delayed(execute_task)(kind, spec, t, root_seed) for t in todo)
    if backend == "dask":
        with _dask_client(scheduler, jobs), parallel_config(backend="dask"):
            yield from Parallel(n_jobs=-1, return_as="generator_unordered")(calls)
        return
    if jobs == 1:
        # joblib's sequential path, in this process (monkeypatching and debuggers work).
        yield from Parallel(n_jobs=1, return_as="generator_unordered")(calls)
        return
    with parallel_config(backend=backend, n_jobs=jobs):
        yield from Parallel(return_as="generator_unordered")(calls)


def _table_frame(tasks: list[Task], records: dict[str, dict], cell_cols: list[str]) -> pd.DataFrame:
    """results.csv: one row per returned row, in task order. Columns: task, status, message, the
    kind's row columns, ``p_<param>`` for task parameters the rows do not report themselves, seed
    info (root_seed, spawn_key), then timing (seconds)."""
    rows: list[dict] = []
    row_cols: dict[str, None] = {}
    p_cols: dict[str, None] = {}
    for t in tasks:
        rec = records[t.key]
        base = {"task": t.key, "status": rec["status"], "message": rec["message"]}
        tail = {"root_seed": rec["root_seed"], "spawn_key": rec["spawn_key"], "seconds": rec["seconds"]}
        body_rows = rec["rows"] if rec["status"] == "ok" else [{c: t.params[c] for c in cell_cols if c in t.params}]
        for r in body_rows:
            for c in r:
                row_cols.setdefault(c)
            ps = {f"p_{k}": v for k, v in t.params.items() if k not in r and k not in cell_cols}
            for c in ps:
                p_cols.setdefault(c)
            rows.append({**base, **r, **ps, **tail})
    cols = ["task", "status", "message", *row_cols, *p_cols, "root_seed", "spawn_key", *TIMING_COLUMNS]
    return pd.DataFrame.from_records(rows, columns=cols)


def _describe(module: Any, spec: Any) -> dict[str, Any]:
    if hasattr(module, "describe_results"):
        return dict(module.describe_results(spec))
    return {"cell_columns": list(getattr(module, "CELL_COLUMNS", [])), "metric": getattr(module, "METRIC", None)}


def run(
    config: "str | Path | dict | Config",
    jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    out: str | Path | None = None,
    seed: int | None = None,
    quick: bool = False,
    resume: str | Path | None = None,
    progress: bool = True,
    command: str | None = None,
    figures: bool = True,
) -> RunResult:
    """Run an experiment config and write (or complete) its run folder.

    Parameters
    ----------
    config
        YAML path, mapping or :class:`~bench.config.Config`.
    jobs
        Parallel workers (``-1``: all cores). Results do not depend on it.
    backend
        ``loky`` (processes), ``threading`` or ``dask`` (joblib's dask backend; ``scheduler`` is a
        scheduler address, otherwise a LocalCluster with ``jobs`` workers is started for the run).
    out
        Parent folder of run folders (default ``results``): the run goes to
        ``<out>/<name>/<UTC timestamp>_<config hash>/``.
    seed, quick
        Override the root seed; apply the config's ``quick:`` section.
    resume
        A run folder to complete. Without it, the newest unfinished folder with the same config
        hash is resumed automatically, else a new folder is created.
    progress
        Show progress on stderr (only for runs longer than about a second).
    figures
        Draw ``figures/`` (``dpharness plot RUN_DIR`` can always draw them later).

    Raises
    ------
    ConfigError, RunError
        Invalid config or usage. KeyboardInterrupt propagates (finished tasks are saved).
    """
    t_start = time.monotonic()
    started = _dt.datetime.now(_dt.timezone.utc)
    if backend not in BACKENDS:
        raise RunError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    if not isinstance(jobs, numbers.Integral) or isinstance(jobs, bool) or jobs == 0 or jobs < -1:
        raise RunError(f"jobs must be a positive integer or -1 (all cores), got {jobs!r}")
    if scheduler and backend != "dask":
        raise RunError("--scheduler is only used with --backend dask")
    if backend == "dask":
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            raise RunError(DASK_HINT) from None
    cfg = load_config(config, quick=quick, seed=seed)
    module = experiments.get(cfg.experiment)
    if hasattr(module, "check"):  # costly checks, before any run folder exists
        module.check(cfg.spec)
    tasks = list(module.tasks(cfg.spec))
    keys = [t.key for t in tasks]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise RunError(f"experiment {cfg.experiment!r} produced the task key {dup!r} twice")
    hashes = {stable_hash(k) for k in keys}
    if len(hashes) != len(keys):  # pragma: no cover - 2^-64 per pair
        raise RunError("two task keys have the same 64-bit hash; rename a label")
    parent = Path(out) if out is not None else Path("results")

    resumed = False
    if resume is not None:
        run_dir = Path(resume)
        if not (run_dir / "config.yaml").is_file():
            raise RunError(f"--resume {run_dir}: not a run folder (no config.yaml)")
        if is_finished(run_dir):
            raise RunError(f"--resume {run_dir}: that run is complete (manifest.json status complete); "
                           "finished run folders are never rewritten")
        old = load_run_config(run_dir)
        if old.hash != cfg.hash:
            raise RunError(f"--resume {run_dir}: that run used a different config (hash {old.hash}, this command "
                           f"gives {cfg.hash}); pass the same CONFIG, --quick and --seed")
        resumed = True
    else:
        found = find_unfinished(parent, cfg.name, cfg.hash)
        if found is not None:
            run_dir, resumed = found, True
        else:
            run_dir = new_run_dir(parent, cfg.name, cfg.hash)
            write_run_config(run_dir, cfg)

    store = TaskStore(run_dir)
    known = store.load_all() if resumed else {}
    records = {k: r for k, r in known.items() if k in set(keys) and r.get("status") == "ok"}
    todo = [t for t in tasks if t.key not in records]
    if resumed:
        print(f"resuming {run_dir}: {len(records)}/{len(tasks)} tasks already done", file=sys.stderr)
    prog = Progress(len(tasks), len(records), cfg.name, enabled=progress)
    computed = 0
    try:
        for rec in _iter_records(cfg.experiment, cfg.spec, todo, cfg.seed, jobs, backend, scheduler):
            store.save(rec)
            records[rec["key"]] = rec
            computed += 1
            prog.update()
    finally:
        prog.close()

    describe = _describe(module, cfg.spec)
    cell_cols = list(describe.get("cell_columns") or [])
    if describe.get("replicate_column"):
        cell_cols.append(describe["replicate_column"])
    results = _table_frame(tasks, records, cell_cols)
    atomic_write_text(run_dir / "results.csv", results.to_csv(index=False))
    summary = module.summarize(cfg.spec, results)
    write_table(run_dir, summary.table, heading=f"# {cfg.name}\n\n{cfg.description.strip()}".rstrip())
    fig_dir = run_dir / "figures"
    fig_dir.mkdir(exist_ok=True)
    drawn = module.plot(cfg.spec, results, summary.table, fig_dir) if figures else []
    fig_list = [str(Path(p).relative_to(run_dir)) for p in drawn]
    extra_files = list(module.outputs(cfg.spec, results, summary, run_dir)) if hasattr(module, "outputs") else []
    errors = sum(1 for t in tasks if records[t.key]["status"] != "ok")
    wall = time.monotonic() - t_start
    exit_code = 1 if errors else (0 if summary.ok else 3)
    manifest = {
        "status": "errors" if errors else "complete",
        "name": cfg.name,
        "experiment": cfg.experiment,
        "config_source": cfg.source,
        "config_hash": cfg.hash,
        "quick": cfg.quick,
        "seed": cfg.seed,
        "tasks": {"total": len(tasks), "ok": len(tasks) - errors, "errors": errors, "computed": computed,
                  "reused": len(tasks) - computed},
        "summary_ok": bool(summary.ok),
        "exit_code": exit_code,
        **describe,
        "task_columns": ["task", "status", "message"],
        "seed_columns": ["root_seed", "spawn_key"],
        "timing_columns": list(TIMING_COLUMNS),
        "seed_derivation": "SeedSequence(root_seed, spawn_key=(spawn_key,)), spawn_key = first 8 bytes of sha256(task) as int",
        "jobs": jobs,
        "backend": backend,
        "scheduler": scheduler,
        "resumed": resumed,
        "started_utc": started.isoformat(timespec="seconds"),
        "finished_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_seconds": round(wall, 3),
        "task_seconds_total": round(float(sum(records[t.key]["seconds"] for t in tasks)), 3),
        "figures": fig_list,
        "outputs": extra_files,
        **manifest_base(),
    }
    if command is not None:
        manifest["command"] = command
    atomic_write_text(run_dir / "manifest.json", json.dumps(manifest, indent=2, default=str) + "\n")
    return RunResult(run_dir, cfg, results, summary, len(tasks), computed, len(tasks) - computed, errors, wall, exit_code)


def cmd_run(args: argparse.Namespace) -> int:
    """``dpharness run CONFIG [--jobs N] [--backend B] [--scheduler ADDR] [--out DIR] [--seed S]
    [--quick] [--resume RUN_DIR]``: print the summary, write the run folder; exit codes in the
    module docstring."""
    def _terminate(signum: int, frame: Any) -> None:
        # `kill` behaves like Ctrl-C: joblib stops its workers instead of leaving them orphaned.
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        res = run(args.config, jobs=args.jobs, backend=args.backend, scheduler=args.scheduler, out=args.out,
                  seed=args.seed, quick=args.quick, resume=args.resume)
    except (ConfigError, RunError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (NotADirectoryError, FileExistsError, PermissionError) as exc:
        # --out pointing at a file, or an unwritable place: a usage error, not a crash.
        print(f"error: cannot write the run folder: {exc.strerror}: {exc.filename} (check --out)", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(res.summary.text)
    print()
    if res.errors:
        print(f"{res.errors} of {res.n_tasks} tasks FAILED (status=error rows in results.csv); first message: "
              + next(m for m, s in zip(res.results["message"], res.results["status"]) if s != "ok"))
    print(f"run folder: {res.run_dir}  ({res.n_tasks} tasks, {res.computed} computed, {res.reused} reused; "
          f"wall {res.wall_seconds:.1f} s, jobs={args.jobs}, backend={args.backend})")
    if res.exit_code == 3:
        print("exit 3: some cells are outside the reference tolerance (see the table above)")
    return res.exit_code

