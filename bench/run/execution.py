"""Running tasks in a worker: one task -> one JSON-able record; a chunk of tasks -> one saved file.

Both functions run inside loky/dask worker processes or threads, so they stay at module level
(picklable by reference). A task's generator depends only on the root seed and the task key
(:func:`bench.run.tasks.task_seed`), never on the worker or the chunk. The per-process stop flags
(``_STOPPED``, ``_SIG``) let a signal end a chunk early while the tasks that finished are saved.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from typing import Any

import numpy as np

from dpharness.bench import experiments
from dpharness.bench.run.folders import TaskStore
from dpharness.bench.run.tasks import Task, stable_hash, task_seed

__all__ = ["execute_task", "execute_chunk", "warm_worker"]

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
    except Exception as exc:  # broad: the kind's code may raise anything; the task becomes a status=error row
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


#: Seconds between two checks of a worker process that the run's process is still its parent.
PARENT_POLL = 0.5
_WATCHING: set[int] = set()


def _watch_parent(parent_pid: int) -> None:
    """In a worker process started by the run's process (loky): exit as soon as that process is
    gone (``kill -9`` of the run leaves no signal handler to stop the pool, and an idle loky
    worker would otherwise linger for minutes). Once per process; nothing when this process is
    not the run's direct child (dask workers live under a nanny and are stopped by dask)."""
    if parent_pid in _WATCHING:
        return
    if os.getppid() != parent_pid:
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:  # the run died while this worker was starting up
            os._exit(1)
        except OSError:
            pass
        return
    _WATCHING.add(parent_pid)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL)
            if os.getppid() != parent_pid:  # re-parented: the run's process died
                os._exit(1)

    threading.Thread(target=watch, name="dpharness-parent-watch", daemon=True).start()


def warm_worker(kind: str) -> int:
    """A worker's first call when the pool is started ahead of the chunks: import the kind (the
    bulk of a worker's start-up) so that the first chunk runs at once. Returns the worker's pid."""
    experiments.get(kind)
    return os.getpid()


def execute_chunk(kind: str, spec: Any, tasks: list[Task], root_seed: int, run_id: str = "",
                  tasks_dir: str | None = None, stop_path: str | None = None,
                  parent_pid: int | None = None) -> dict[str, Any]:
    """Run a chunk of tasks in a worker; save their records as one file when ``tasks_dir`` is set.

    Returns ``{"records", "saved", "interrupted"}``. An interrupt (or a stop request: ``run_id``
    stopped in this process, or the file ``stop_path`` present) ends the chunk early; the tasks
    that finished are still saved and returned.
    """
    main = threading.current_thread() is threading.main_thread()
    if parent_pid is not None and os.getpid() != parent_pid:
        _watch_parent(parent_pid)
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
