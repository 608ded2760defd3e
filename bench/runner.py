"""The experiment runner: config -> tasks -> chunks on workers -> run folder (``dpharness run``).

Steps: expand the config into tasks (the kind's ``tasks``), run them in *chunks* on workers
(joblib: loky processes, threads, or dask), collect the rows into one tidy table in task order,
then let the kind summarise, plot and write its extra outputs.

Reproducibility. A task's stream is ``SeedSequence(root_seed, spawn_key=(stable_hash(task.key),))``
and shared data comes from ``data_rng`` keyed by the data identity, so ``results.csv`` (timing
aside) is bit-identical for any ``--jobs``, backend (loky, threading, dask), chunk size, and when
the config is reordered or extended: nothing depends on which worker or chunk ran a task.

Chunks. Per-task costs outside the task (a process round trip, a file per task) used to dominate
short tasks, so tasks are sent to workers in chunks. The dispatch order interleaves the whole task
list (a golden-ratio sequence), so every chunk is a representative sample of the sweep and the
chunks cost about the same; with ``chunk_size=None`` the size grows from 1 (at most 4x per step)
towards about :data:`CHUNK_SECONDS` of measured task time, and shrinks near the end so the last
chunks balance across workers. ``chunk_size=N`` fixes it. Short runs stay in one process: with
loky workers not yet running, the first :data:`PROBE_SECONDS` of tasks run in the main process,
and if spreading the rest over the workers would save less than starting them costs
(:data:`STARTUP_SECONDS`), the run finishes there (the manifest records ``jobs: 1`` and why).

Persistence and resume. The worker that ran a chunk writes its records at once as one atomic
``tasks/chunk-<hash>.json`` (parent-side for an external dask scheduler, whose workers may not
see the folder), so finished work is on disk before it is handed back. Re-running the same command
(same config, ``--quick`` and ``--seed``, hence the same config hash) continues the newest
unfinished run folder with that hash under ``<out>/<name>/`` and computes only the tasks without
an ``ok`` record (failed tasks are retried); ``--resume RUN_DIR`` names the folder explicitly.
Folders begun by the older one-file-per-task layout resume too. A finished run (manifest status
``complete``) is never touched again: the next run of the same command starts a new folder.

Interruption (Ctrl-C, SIGTERM). With ``--jobs 1`` the running task is interrupted and the tasks of
its chunk that finished are saved. With workers, the first signal stops dispatching, interrupts the
running tasks (loky workers get SIGINT; threads and dask workers stop between tasks), and every
chunk saves what it finished; a second signal stops at once. Either way the manifest says
``"status": "interrupted"``, no temporary file is left (a ``kill -9`` leftover is removed by the
next run of the folder), and re-running resumes.

Concurrency. A run holds the run folder's lock (:class:`bench.results.RunLock`) while it writes;
a second run into the same folder -- the same command started twice, or ``--resume`` of a folder
in use -- is refused at once with a message naming the holder's pid and host (exit 2). It does
not wait.

Before anything is computed or created: ``--jobs``/``--backend``/``--scheduler`` are checked,
``--out`` must be a writable place for a run folder (and the path short enough), the config is
loaded and validated including the kind's ``check``, and a dask ``--scheduler`` must answer within
:data:`SCHEDULER_TIMEOUT` seconds. Only then is the run folder created.

Experiment-kind hooks used here (contract: :class:`bench.experiments.ExperimentKind`): ``tasks``,
``run_task`` (in workers), ``summarize``, ``plot``; optional ``check(spec)`` (costly validation,
run before the folder exists), ``outputs(spec, results, summary, run_dir)`` (extra files, listed
in the manifest), ``describe_results(spec)`` or ``CELL_COLUMNS``/``METRIC``. An exception in
``summarize``, ``plot`` or ``outputs`` (for example when every task failed) does not lose the
run: it is recorded in ``manifest.json`` (``output_errors``), printed as one line, exit 1.

Exit codes of ``dpharness run``: 0 success; 1 some tasks raised (they are ``status=error`` rows
with the message; the run still finishes), or a summary/figure/output step failed, or the run
failed (a worker died, disk full; the manifest says ``failed``); 2 invalid config or usage
(message names the field or flag), including an unusable ``--out``, a busy run folder and an
unreachable dask scheduler; 3 all tasks ran but a cell is outside the reference tolerance (the
table says which); 130 interrupted (finished tasks are kept, re-run to resume).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import logging
import math
import numbers
import os
import secrets
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from . import experiments
from . import progress as _progress
from .config import Config, ConfigError, load_config
from .results import (
    RunFolderBusy,
    RunLock,
    TaskStore,
    atomic_write_text,
    clean_stale_tmp,
    find_unfinished,
    is_finished,
    load_run_config,
    manifest_base,
    new_run_dir,
    write_run_config,
    write_table,
)
from .tasks import Summary, Task, stable_hash, task_seed

__all__ = ["RunError", "RunResult", "run", "cmd_run", "execute_task", "execute_chunk", "ChunkPlan", "BACKENDS",
           "CHUNK_SECONDS", "SCHEDULER_TIMEOUT"]

BACKENDS = ("loky", "threading", "dask")
TIMING_COLUMNS = ("seconds",)
DASK_HINT = "the dask backend needs the optional extra: pip install -e '.[dask]'"
#: Target task time per automatically sized chunk (seconds): long enough that the per-chunk cost
#: (a process round trip, one file) is ~1 % of it, short enough for a live progress bar and to
#: lose little when a worker is killed.
CHUNK_SECONDS = 0.5
#: How long a dask ``--scheduler`` may take to answer before the run is refused (seconds).
SCHEDULER_TIMEOUT = 5.0
STOP_FILE = ".stop"
#: With loky workers not running yet, this much work (seconds) first runs in this process to
#: measure the task time (see :func:`_compute`).
PROBE_SECONDS = 0.2
#: What starting the worker processes costs (seconds; each imports the scientific stack).
STARTUP_SECONDS = 1.0


class RunError(RuntimeError):
    """A usage problem that is not in the config itself (backend missing, wrong --resume folder,
    unusable --out, busy run folder, unreachable scheduler)."""


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
    workers: int = 1
    status: str = "complete"
    output_errors: dict = field(default_factory=dict)
    clipped_points: int | None = None
    parallelism_note: str | None = None


# -- worker ------------------------------------------------------------------------------------


_SCALARS = (str, float, int, bool, type(None))


def _scalar(v: Any, where: str) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, (str, bool, int, float)):
        return v
    raise TypeError(f"{where}: row values must be scalars (str, int, float, bool), got {type(v).__name__}")


def execute_task(kind: str, spec: Any, task: Task, root_seed: int) -> dict[str, Any]:
    """Run one task and return its JSON-able record.

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
        clean = [r if all(type(k) is str and type(v) in _SCALARS for k, v in r.items())
                 else {str(k): _scalar(v, f"{task.key}: {k}") for k, v in r.items()} for r in rows]
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


# Stop requests, per process. A run id lands in _STOPPED when this process was asked to stop that
# run (signal, or the parent for threads); chunks then end before their next task. _SIG tells the
# signal handler of a process that runs tasks in its main thread whether a task is running (then it
# interrupts the task) or not (then it only records the request).
_STOPPED: set[str] = set()
_SIG: dict[str, Any] = {"run": None, "in_task": False}


def _task_signal(signum: int, frame: Any) -> None:
    """SIGINT/SIGTERM where tasks run in the main thread (``--jobs 1``, loky workers)."""
    if _SIG["run"] is not None:
        _STOPPED.add(_SIG["run"])
    if _SIG["in_task"]:
        _SIG["in_task"] = False  # a second signal while the chunk saves must not interrupt the save
        raise KeyboardInterrupt(f"signal {signum}")


def execute_chunk(kind: str, spec: Any, tasks: list[Task], root_seed: int, run_id: str = "",
                  tasks_dir: str | None = None, stop_path: str | None = None,
                  parent_pid: int | None = None) -> dict[str, Any]:
    """Run a chunk of tasks in a worker; save their records as one file when ``tasks_dir`` is set.

    Returns ``{"records", "saved", "interrupted"}``. An interrupt (or a stop request: ``run_id``
    stopped in this process, or the file ``stop_path`` present) ends the chunk early; the tasks
    that finished are still saved and returned.
    """
    main = threading.current_thread() is threading.main_thread()
    if (main and parent_pid is not None and os.getpid() != parent_pid
            and signal.getsignal(signal.SIGINT) is not _task_signal):
        # A worker process (loky): Ctrl-C interrupts its task, and is only noted between chunks.
        signal.signal(signal.SIGINT, _task_signal)
    if main:
        _SIG["run"] = run_id
    records: list[dict] = []
    interrupted = False
    checked = -math.inf
    try:
        for task in tasks:
            now = time.monotonic()
            if run_id in _STOPPED or (stop_path is not None and now - checked > 0.2 and os.path.exists(stop_path)):
                interrupted = True
                break
            if stop_path is not None and now - checked > 0.2:
                checked = now
            if main:
                _SIG["in_task"] = True
            try:
                rec = execute_task(kind, spec, task, root_seed)
            finally:
                if main:
                    _SIG["in_task"] = False
            records.append(rec)
    except KeyboardInterrupt:
        interrupted = True
        _STOPPED.add(run_id)
    saved = False
    if tasks_dir is not None and records:
        TaskStore.at(tasks_dir).save_chunk(records)
        saved = True
    if run_id in _STOPPED:
        interrupted = True
    return {"records": records, "saved": saved, "interrupted": interrupted}


# -- chunking ----------------------------------------------------------------------------------


def spread_order(n: int) -> np.ndarray:
    """A permutation of ``range(n)`` whose every run of consecutive entries is spread evenly over
    ``[0, n)``: entry k is the rank of ``frac(k * phi)`` (the golden-ratio low-discrepancy
    sequence). Chunks cut from it sample the whole sweep, so they cost about the same."""
    x = (np.arange(n, dtype=np.float64) * 0.6180339887498949) % 1.0
    return np.argsort(np.argsort(x, kind="stable"), kind="stable")


class ChunkPlan:
    """Cuts the tasks into chunks as they are dispatched.

    ``chunk_size`` fixes the size (the last chunk takes the rest); ``None`` sizes each chunk from the mean task time measured so
    far (:meth:`record`) to about ``target`` seconds, growing at most 4x per chunk from 1, and at
    most ``remaining / (2 * workers)`` so the last chunks balance across workers.
    """

    def __init__(self, tasks: list[Task], workers: int, chunk_size: int | None = None,
                 target: float = CHUNK_SECONDS):
        order = spread_order(len(tasks))
        self.tasks = [tasks[i] for i in order]
        self.workers = max(1, int(workers))
        self.fixed = chunk_size
        self.target = target
        self.pos = 0
        self.done_n = 0
        self.done_seconds = 0.0
        self.largest_done = 0
        self.sizes: list[int] = []
        self.stopped = False

    @property
    def remaining(self) -> int:
        return len(self.tasks) - self.pos

    @property
    def mean_seconds(self) -> float | None:
        """Mean measured task time so far (None before the first chunk is back)."""
        return self.done_seconds / self.done_n if self.done_n else None

    def record(self, n: int, seconds: float) -> None:
        """A chunk of ``n`` tasks came back, ``seconds`` of task time in all."""
        self.done_n += n
        self.done_seconds += seconds
        self.largest_done = max(self.largest_done, n)

    def stop(self) -> None:
        self.stopped = True

    def next_size(self, max_seconds: float | None = None) -> int:
        remaining = self.remaining
        per = self.mean_seconds
        if self.fixed is not None:
            return min(self.fixed, remaining)
        if per is None:
            size = 1
        else:
            size = int(self.target / per) if per > 0 else remaining
            size = min(size, 4 * max(1, self.largest_done))
        if self.workers > 1:
            size = min(size, math.ceil(remaining / (2 * self.workers)))
        if max_seconds is not None:
            size = min(size, int(max_seconds / per) if per else 1)
        return max(1, min(size, remaining))

    def take(self, max_seconds: float | None = None) -> list[Task] | None:
        """The next chunk (at most about ``max_seconds`` of work), or None when done or stopped."""
        if self.stopped or self.pos >= len(self.tasks):
            return None
        size = self.next_size(max_seconds)
        chunk = self.tasks[self.pos:self.pos + size]
        self.pos += size
        self.sizes.append(size)
        return chunk

    def __iter__(self) -> Iterator[list[Task]]:
        while (chunk := self.take()) is not None:
            yield chunk


# -- execution ---------------------------------------------------------------------------------


@dataclass
class _Executor:
    """Where chunks run: ``workers`` is the real parallelism (recorded in the manifest)."""

    backend: str
    jobs: int
    workers: int
    external: bool = False  # dask scheduler given: workers may not see the run folder
    note: str | None = None  # why the real parallelism differs from the request

    @property
    def sequential(self) -> bool:
        return self.backend != "dask" and self.workers == 1


@contextlib.contextmanager
def _quiet_distributed() -> Iterator[None]:
    loggers = [logging.getLogger(n) for n in ("distributed", "tornado")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, lv in zip(loggers, levels):
            lg.setLevel(lv)


@contextlib.contextmanager
def _dask_client(scheduler: str | None, jobs: int) -> Iterator[Any]:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise RunError(DASK_HINT) from None
    if scheduler:
        try:
            with _quiet_distributed():
                client = Client(scheduler, timeout=SCHEDULER_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - OSError/TimeoutError/ValueError: one message
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if isinstance(exc, (ValueError, TypeError)):
                raise RunError(f"--scheduler {scheduler}: not a dask scheduler address ({first}); expected "
                               "e.g. tcp://host:8786") from None
            raise RunError(f"--scheduler {scheduler}: cannot reach the dask scheduler within "
                           f"{SCHEDULER_TIMEOUT:g} s ({first})") from None
        try:
            yield client
        finally:
            with _quiet_distributed():
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


def _open_executor(stack: contextlib.ExitStack, backend: str, jobs: int, scheduler: str | None) -> _Executor:
    if backend == "dask":
        client = stack.enter_context(_dask_client(scheduler, jobs))
        try:
            info = client.scheduler_info()
            workers = sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values()) or 1
        except Exception:  # noqa: BLE001 - provenance only
            workers = 1
        return _Executor("dask", jobs, workers, external=bool(scheduler))
    if jobs > 0:
        return _Executor(backend, jobs, jobs)  # (joblib is imported only when workers start)
    from joblib import effective_n_jobs, parallel_config

    with parallel_config(backend=backend):
        workers = int(effective_n_jobs(jobs))
    return _Executor(backend, jobs, workers)


def _iter_chunks(ex: _Executor, kind: str, spec: Any, plan: ChunkPlan, root_seed: int, run_id: str,
                 tasks_dir: Path, stop_path: Path) -> Iterator[dict]:
    """Run the chunks of ``plan`` on the workers; yield each chunk's result as soon as it is back
    (any order)."""
    from joblib import Parallel, delayed, parallel_config

    tdir = None if ex.external else str(tasks_dir)
    stop = None if ex.external else str(stop_path)
    pid = os.getpid()
    calls = (delayed(execute_chunk)(kind, spec, c, root_seed, run_id, tdir, stop, pid) for c in plan)
    if ex.backend == "dask":
        with parallel_config(backend="dask"):
            yield from Parallel(n_jobs=-1, batch_size=1, return_as="generator_unordered")(calls)
        return
    with parallel_config(backend=ex.backend, n_jobs=ex.jobs):
        yield from Parallel(batch_size=1, return_as="generator_unordered")(calls)


def _loky_pool_is_warm(workers: int) -> bool:
    """True when joblib's reusable loky pool already runs ``workers`` live processes (a second run
    in the same process): then starting workers costs nothing."""
    reusable_executor = sys.modules.get("joblib.externals.loky.reusable_executor")
    if reusable_executor is None:  # never imported: no pool (and no import cost for a short run)
        return False
    try:
        ex = reusable_executor._executor
        return (ex is not None and ex._max_workers == workers and ex._flags.broken is None
                and not ex._flags.shutdown and len(ex._processes) == workers)
    except Exception:  # noqa: BLE001 - private API: assume a cold start
        return False


def _child_pids() -> list[int]:
    """This process's child processes (Linux /proc; empty elsewhere)."""
    pids: list[int] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children", encoding="ascii") as fh:
                pids.extend(int(p) for p in fh.read().split())
    except OSError:
        return []
    return pids


class _StopRequest:
    """The parent's SIGINT/SIGTERM handling while workers compute (see the module docstring)."""

    def __init__(self, ex: _Executor, run_id: str, plan: ChunkPlan, stop_path: Path):
        self.ex, self.run_id, self.plan, self.stop_path = ex, run_id, plan, stop_path
        self.requested = False

    def handler(self, signum: int, frame: Any) -> None:
        if self.requested or self.ex.external:
            raise KeyboardInterrupt(f"signal {signum}")
        self.requested = True
        self.plan.stop()
        _STOPPED.add(self.run_id)  # threads stop before their next task
        try:
            self.stop_path.touch()  # processes (loky, dask) stop before their next task
        except OSError:
            pass
        if self.ex.backend == "loky":
            for pid in _child_pids():  # interrupt the running tasks (their chunk saves what finished)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGINT)
        print("stopping: saving the tasks that finished (press Ctrl-C again to stop at once)",
              file=sys.stderr, flush=True)


@contextlib.contextmanager
def _signals(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """Install ``handler`` for SIGINT and SIGTERM (main thread only), restore on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


# -- output ------------------------------------------------------------------------------------


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


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _clipped_points(results: pd.DataFrame) -> int | None:
    """Sum of the ``clipped`` column (data points clipped to the declared bounds), if present."""
    if "clipped" not in results.columns:
        return None
    col = pd.to_numeric(results["clipped"], errors="coerce")
    return int(col.fillna(0).sum())


def _check_out(parent: Path, name: str | None = None) -> None:
    """Refuse an ``--out`` that cannot hold run folders, before any work (RunError naming it)."""
    shown = str(parent)
    p = Path(os.path.abspath(parent))
    anc = p  # the nearest existing folder: where run folders would be created
    while not os.path.lexists(anc) and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        where = "is not a directory" if anc == p else f"is not a directory ({anc} is a file)"
        raise RunError(f"--out {shown}: {where}; give a folder to hold run folders")
    try:
        name_max, path_max = os.pathconf(anc, "PC_NAME_MAX"), os.pathconf(anc, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    for part in p.parts[1:] + ((name,) if name else ()):
        if len(os.fsencode(part)) > name_max:
            what = f"the config name {name!r}" if part == name else f"the component {part[:40]}..."
            raise RunError(f"--out {shown}: {what} is longer than {name_max} bytes, the file-name limit")
    # deepest file: <out>/<name>/<stamp>_<hash>-NNN/tasks/.chunk-<16 hex>.json.<pid>-<8 hex>.tmp,
    # plus room for a kind's own output names.
    longest = len(os.fsencode(str(p / (name or "x")))) + 1 + 32 + 1 + 128
    if longest >= path_max:
        raise RunError(f"--out {shown}: the path is too long for run folders under it "
                       f"(files would need about {longest} bytes; the limit is {path_max})")
    if name and anc == p and os.path.lexists(p / name):
        anc = p / name
        if not anc.is_dir():
            raise RunError(f"--out {shown}: {anc} (the folder for config {name!r}) is a file, not a directory")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise RunError(f"--out {shown}: cannot create run folders: {anc} is not writable")
    try:  # permission bits are not the whole story (read-only mounts, /proc, root squash): try
        probe = tempfile.mkdtemp(prefix=".dpharness-probe-", dir=anc)
        os.rmdir(probe)
    except OSError as exc:
        raise RunError(f"--out {shown}: cannot create run folders in {anc}: {exc.strerror}") from None


def _validate_args(jobs: Any, backend: str, scheduler: str | None, chunk_size: Any, out: Any) -> None:
    """The run's own arguments (messages name the CLI flag; the Python argument has the same name)."""
    if backend not in BACKENDS:
        raise RunError(f"--backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    if not isinstance(jobs, numbers.Integral) or isinstance(jobs, bool) or jobs == 0 or jobs < -1:
        raise RunError(f"--jobs must be a positive integer or -1 (all cores), got {jobs!r}")
    if chunk_size is not None and (not isinstance(chunk_size, numbers.Integral) or isinstance(chunk_size, bool)
                                   or chunk_size < 1):
        raise RunError(f"--chunk-size must be a positive integer (omit it for automatic chunks), got {chunk_size!r}")
    if out is not None and not str(out).strip():
        raise RunError("--out must name a folder, got an empty path")
    if scheduler is not None and backend != "dask":
        raise RunError("--scheduler is only used with --backend dask")
    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
        raise RunError(f"--scheduler must be a scheduler address such as tcp://host:8786, got {scheduler!r}")
    if backend == "dask":
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            raise RunError(DASK_HINT) from None


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
    chunk_size: int | None = None,
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
        scheduler address, which must answer within :data:`SCHEDULER_TIMEOUT` s, otherwise a
        LocalCluster with ``jobs`` workers is started for the run).
    out
        Parent folder of run folders (default ``results``): the run goes to
        ``<out>/<name>/<UTC timestamp>_<config hash>/``. Checked before any work.
    seed, quick
        Override the root seed; apply the config's ``quick:`` section.
    resume
        A run folder to complete. Without it, the newest unfinished folder with the same config
        hash is resumed automatically, else a new folder is created.
    progress
        Show a progress bar on stderr (only for runs longer than about a second).
    figures
        Draw ``figures/`` (``dpharness plot RUN_DIR`` can always draw them later).
    chunk_size
        Tasks per chunk sent to a worker; ``None`` (default) sizes chunks automatically (module
        docstring). Results do not depend on it.

    Raises
    ------
    ConfigError, RunError
        Invalid config or usage, nothing created. KeyboardInterrupt propagates after the finished
        tasks are saved and the manifest says ``interrupted``; any other exception after the run
        folder exists propagates after the manifest says ``failed``.
    """
    t_start = time.monotonic()
    started = _dt.datetime.now(_dt.timezone.utc)
    _validate_args(jobs, backend, scheduler, chunk_size, out)
    parent = Path(out) if out is not None else Path("results")
    if resume is None:
        _check_out(parent)
    cfg = load_config(config, quick=quick, seed=seed)
    module = experiments.get(cfg.experiment)
    if resume is None:
        _check_out(parent, cfg.name)
    if hasattr(module, "check"):  # costly checks, before any run folder exists
        module.check(cfg.spec)
    tasks = list(module.tasks(cfg.spec))
    keys = [t.key for t in tasks]
    key_set = set(keys)
    if len(key_set) != len(keys):
        seen: set[str] = set()
        dup = next(k for k in keys if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise RunError(f"experiment {cfg.experiment!r} produced the task key {dup!r} twice")
    if len({stable_hash(k) for k in keys}) != len(keys):  # pragma: no cover - 2^-64 per pair
        raise RunError("two task keys have the same 64-bit hash; rename a label")

    with contextlib.ExitStack() as stack:
        ex = _open_executor(stack, backend, jobs, scheduler)  # a dask scheduler must answer first
        run_dir, resumed, lock = _claim_run_dir(cfg, parent, resume)
        stack.callback(lock.release)
        return _run_in(run_dir, resumed, cfg, module, tasks, key_set, ex, t_start, started, progress,
                       command, figures, chunk_size, scheduler)
    raise AssertionError("unreachable")  # pragma: no cover


def _claim_run_dir(cfg: Config, parent: Path, resume: str | Path | None) -> tuple[Path, bool, RunLock]:
    """The run folder to write, locked: ``resume``, else the newest unfinished one of this config
    hash, else a new one (locked before its config.yaml exists, so no one else resumes it)."""
    if resume is not None:
        run_dir = Path(resume)
        if not (run_dir / "config.yaml").is_file():
            raise RunError(f"--resume {run_dir}: not a run folder (no config.yaml)")
        old = load_run_config(run_dir)
        if old.hash != cfg.hash:
            raise RunError(f"--resume {run_dir}: that run used a different config (hash {old.hash}, this command "
                           f"gives {cfg.hash}); pass the same CONFIG, --quick and --seed")
        lock = _lock(run_dir)
        if is_finished(run_dir):
            lock.release()
            raise RunError(f"--resume {run_dir}: that run is complete (manifest.json status complete); "
                           "finished run folders are never rewritten")
        return run_dir, True, lock
    found = find_unfinished(parent, cfg.name, cfg.hash)
    if found is not None:
        lock = _lock(found)
        if not is_finished(found):  # it may have finished while we looked
            return found, True, lock
        lock.release()
    run_dir = new_run_dir(parent, cfg.name, cfg.hash)
    lock = _lock(run_dir)
    try:
        write_run_config(run_dir, cfg)
    except BaseException:
        lock.release()
        raise
    return run_dir, False, lock


def _lock(run_dir: Path) -> RunLock:
    try:
        lock = RunLock(run_dir).acquire()
    except RunFolderBusy as exc:
        raise RunError(str(exc)) from None
    clean_stale_tmp(run_dir)  # left by a run that was killed; we are the only writer now
    with contextlib.suppress(OSError):
        (run_dir / STOP_FILE).unlink()
    return lock


def _run_in(run_dir: Path, resumed: bool, cfg: Config, module: Any, tasks: list[Task], key_set: set[str],
            ex: _Executor, t_start: float, started: _dt.datetime, show_progress: bool, command: str | None,
            figures: bool, chunk_size: int | None, scheduler: str | None) -> RunResult:
    """Compute the missing tasks into the locked ``run_dir``, then write the outputs and manifest."""
    store = TaskStore(run_dir)
    known = store.load_all() if resumed else {}
    state = _State({k: r for k, r in known.items() if k in key_set and r.get("status") == "ok"})
    todo = [t for t in tasks if t.key not in state.records]
    if resumed:
        print(f"resuming {run_dir}: {len(state.records)}/{len(tasks)} tasks already done", file=sys.stderr)
    plan = ChunkPlan(todo, ex.workers, chunk_size)

    def manifest(status: str, **extra: Any) -> dict[str, Any]:
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
            **manifest_base(),
        }
        if command is not None:
            m["command"] = command
        return m

    def write_manifest(m: dict) -> None:
        atomic_write_text(run_dir / "manifest.json", json.dumps(m, indent=2, default=str) + "\n")

    try:
        _compute(ex, cfg, plan, run_dir, store, state, len(tasks), show_progress)
        res = _finish(run_dir, cfg, module, tasks, state, figures, manifest, write_manifest, t_start, ex)
    except BaseException as exc:
        # Leave a manifest that says why the run stopped (still "unfinished": re-running resumes).
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        msg = "interrupted (SIGINT/SIGTERM); re-run the same command to resume" if status == "interrupted" \
            else _one_line(exc)
        with contextlib.suppress(Exception):
            write_manifest(manifest(status, message=msg, exit_code=130 if status == "interrupted" else 1))
        raise
    return res


@dataclass
class _State:
    records: dict[str, dict]
    computed: int = 0
    compute_seconds: float = 0.0  # wall time of the compute phase of this invocation


def _compute(ex: _Executor, cfg: Config, plan: ChunkPlan, run_dir: Path, store: TaskStore, state: _State,
             n_total: int, show_progress: bool) -> None:
    """Run the plan's chunks, keeping every record that comes back; KeyboardInterrupt when stopped.

    ``--jobs 1`` runs in this process. With loky workers not yet started, the first
    :data:`PROBE_SECONDS` of work also run here, to measure the task time: when the rest would
    take less than what starting the workers costs (:data:`STARTUP_SECONDS`, saved by parallelism
    ``rest * (1 - 1/workers)``), the whole run stays here (the manifest records ``jobs: 1`` and
    why), so a short run is never slower with ``--jobs 2``.
    """
    run_id = secrets.token_hex(8)
    stop_path = run_dir / STOP_FILE
    interrupted = False
    kind, spec, seed, tasks_dir = cfg.experiment, cfg.spec, cfg.seed, str(store.dir)

    def keep(out: dict) -> None:
        nonlocal interrupted
        recs = out["records"]
        if recs and not out["saved"]:
            store.save_chunk(recs)
        for r in recs:
            state.records[r["key"]] = r
        state.computed += len(recs)
        plan.record(len(recs), float(sum(r["seconds"] for r in recs)))
        bar.update(len(recs))
        if out["interrupted"]:
            interrupted = True
            plan.stop()

    def here(seconds: float | None = None) -> None:
        """Run chunks in this process (for at most about ``seconds``, if given)."""
        t0 = time.monotonic()
        while not interrupted and run_id not in _STOPPED:
            left = None if seconds is None else seconds - (time.monotonic() - t0)
            if left is not None and left <= 0:
                return
            chunk = plan.take(left)
            if chunk is None:
                return
            keep(execute_chunk(kind, spec, chunk, seed, run_id, tasks_dir, None, None))

    probe = ex.backend == "loky" and ex.workers > 1 and not _loky_pool_is_warm(ex.workers)
    t0 = time.monotonic()
    bar = _progress.progress(n_total, desc=cfg.name, initial=len(state.records), enabled=show_progress)
    try:
        with bar:
            if ex.sequential or probe:
                with _signals(_task_signal):
                    _SIG["run"] = run_id  # a signal between tasks is noted, the chunk ends early
                    try:
                        here(PROBE_SECONDS if probe else None)
                        if probe and not interrupted and plan.mean_seconds is not None:
                            rest = plan.remaining * (plan.mean_seconds or 0.0)
                            if rest * (1 - 1 / ex.workers) <= STARTUP_SECONDS:
                                ex.note = (f"ran in this process: spreading the remaining work (about {rest:.2g} s) over "
                                           f"{ex.workers} workers would save less than starting them costs "
                                           f"(about {STARTUP_SECONDS:g} s)")
                                ex.workers = plan.workers = 1
                                here()
                    finally:
                        _SIG["run"] = None
                interrupted = interrupted or run_id in _STOPPED
            if not ex.sequential and plan.remaining and not interrupted:
                stopper = _StopRequest(ex, run_id, plan, stop_path)
                with _signals(stopper.handler):
                    try:
                        for out in _iter_chunks(ex, kind, spec, plan, seed, run_id, store.dir, stop_path):
                            keep(out)
                    except Exception:
                        if stopper.requested:
                            # e.g. a worker that was idle when the signal came died of it: we were stopping anyway
                            raise KeyboardInterrupt("stopped") from None
                        raise
                interrupted = interrupted or stopper.requested or run_id in _STOPPED
    finally:
        state.compute_seconds = time.monotonic() - t0
        with contextlib.suppress(OSError):
            stop_path.unlink()
        clean_stale_tmp(run_dir)  # a worker killed mid-write (second Ctrl-C) leaves its temporary file
        _STOPPED.discard(run_id)
    if interrupted:
        raise KeyboardInterrupt("stopped")


def _finish(run_dir: Path, cfg: Config, module: Any, tasks: list[Task], state: _State, figures: bool,
            manifest: Callable[..., dict], write_manifest: Callable[[dict], None], t_start: float,
            ex: _Executor) -> RunResult:
    """results.csv, then the kind's summary, figures and extra outputs (their failures are recorded,
    not raised), then manifest.json."""
    records = state.records
    output_errors: dict[str, str] = {}
    try:
        describe = _describe(module, cfg.spec)
    except Exception as exc:  # noqa: BLE001 - a kind bug must not lose the run
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
    except Exception as exc:  # noqa: BLE001 - e.g. every task failed: no metric column to summarise
        output_errors["summary"] = _one_line(exc)
        summary, summary_failed = Summary(pd.DataFrame(), "", ok=False), True
    fig_dir = run_dir / "figures"
    fig_dir.mkdir(exist_ok=True)
    fig_list: list[str] = []
    if figures and not summary_failed:
        try:
            drawn = module.plot(cfg.spec, results, summary.table, fig_dir)
            fig_list = [str(Path(p).relative_to(run_dir)) for p in drawn]
        except Exception as exc:  # noqa: BLE001
            output_errors["figures"] = _one_line(exc)
    extra_files: list[str] = []
    if hasattr(module, "outputs") and not summary_failed:
        try:
            extra_files = [str(p) for p in module.outputs(cfg.spec, results, summary, run_dir)]
        except Exception as exc:  # noqa: BLE001
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


def _stop_worker_pool() -> None:
    """End joblib's reusable loky pool now (the command is done): its idle workers would otherwise
    outlive the command for a moment. :func:`run` itself keeps the pool for a next call."""
    reusable_executor = sys.modules.get("joblib.externals.loky.reusable_executor")
    ex = getattr(reusable_executor, "_executor", None) if reusable_executor is not None else None
    if ex is not None:
        with contextlib.suppress(Exception):
            ex.shutdown(wait=True)


_FATAL_RUN_ERRORS = ("TerminatedWorkerError", "BrokenProcessPool", "MemoryError")


def cmd_run(args: argparse.Namespace) -> int:
    """``dpharness run CONFIG [--jobs N] [--backend B] [--scheduler ADDR] [--out DIR] [--seed S]
    [--quick] [--resume RUN_DIR] [--chunk-size N]``: print the summary, write the run folder; exit
    codes in the module docstring."""
    def _terminate(signum: int, frame: Any) -> None:
        # `kill` behaves like Ctrl-C: finished tasks are saved, workers are stopped, not orphaned.
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        res = run(args.config, jobs=args.jobs, backend=args.backend, scheduler=args.scheduler, out=args.out,
                  seed=args.seed, quick=args.quick, resume=args.resume, chunk_size=getattr(args, "chunk_size", None))
    except (ConfigError, RunError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (NotADirectoryError, FileExistsError, PermissionError) as exc:
        # --out pointing at a file, or an unwritable place: a usage error, not a crash.
        print(f"error: cannot write the run folder: {exc.strerror}: {exc.filename} (check --out)", file=sys.stderr)
        return 2
    except OSError as exc:  # disk full, I/O error: the manifest says failed
        print(f"error: the run failed: {exc.strerror or exc}{': ' + str(exc.filename) if exc.filename else ''}; "
              "finished tasks are saved, re-run the same command to resume", file=sys.stderr)
        return 1
    except Exception as exc:
        if type(exc).__name__ not in _FATAL_RUN_ERRORS:
            raise
        print(f"error: the run failed: {_one_line(exc)}; finished tasks are saved, re-run the same command to "
              "resume", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
        _stop_worker_pool()
    if res.summary.text:
        print(res.summary.text)
        print()
    if res.errors:
        print(f"{res.errors} of {res.n_tasks} tasks FAILED (status=error rows in results.csv); first message: "
              + next(m for m, s in zip(res.results["message"], res.results["status"]) if s != "ok"))
    if res.output_errors:
        print("error: " + "; ".join(f"{k} failed: {v}" for k, v in res.output_errors.items())
              + f" (recorded in {res.run_dir / 'manifest.json'})", file=sys.stderr)
    if res.clipped_points:
        print(f"{res.clipped_points} data points outside [lower, upper] were clipped; see results.csv column clipped")
    print(f"run folder: {res.run_dir}  ({res.n_tasks} tasks, {res.computed} computed, {res.reused} reused; "
          f"wall {res.wall_seconds:.1f} s, jobs={res.workers}, backend={args.backend})")
    if res.parallelism_note:
        print(f"note: {res.parallelism_note}")
    if res.exit_code == 3:
        print("exit 3: some cells are outside the reference tolerance (see the table above)")
    return res.exit_code
