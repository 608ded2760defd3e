"""Where chunks run: this process, joblib's loky processes or threads, or dask (local or a scheduler).

Opens the executor for a run (:func:`_open_executor`, checking that a dask ``--scheduler`` answers
within :data:`SCHEDULER_TIMEOUT`), streams the chunks of a plan to its workers
(:func:`_iter_chunks`), and inspects/stops joblib's reusable loky pool.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from dpharness.bench.chunks import ChunkPlan
from dpharness.bench.execution import _watch_parent, execute_chunk, warm_worker
from dpharness.bench.run_result import RunError

__all__ = ["BACKENDS", "DASK_HINT", "SCHEDULER_TIMEOUT"]

BACKENDS = ("loky", "threading", "dask")
DASK_HINT = "the dask backend needs the optional extra: pip install -e '.[dask]'"
#: How long a dask ``--scheduler`` may take to answer before the run is refused (seconds).
SCHEDULER_TIMEOUT = 5.0


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
        except Exception as exc:
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
        except Exception:
            workers = 1
        return _Executor("dask", jobs, workers, external=bool(scheduler))
    if jobs > 0:
        return _Executor(backend, jobs, jobs)  # (joblib is imported only when workers start)
    from joblib import effective_n_jobs, parallel_config

    with parallel_config(backend=backend):
        workers = int(effective_n_jobs(jobs))
    return _Executor(backend, jobs, workers)


def _pool_config(ex: _Executor, pid: int) -> dict[str, Any]:
    """joblib's ``parallel_config`` of the run's pool. The same arguments every time, so that a
    pool started early (:class:`_WarmUp`) is the one the chunks then run on (loky reuses its
    executor when the arguments are equal)."""
    if ex.backend != "loky":
        return {"backend": ex.backend, "n_jobs": ex.jobs}
    # loky workers arm their parent watch at start-up, before any chunk: an idle worker must die
    # with the run too (bench.execution._watch_parent). One BLAS/OpenMP thread per worker (joblib
    # sets the thread-count variables in the workers' environment): N workers with N threads each
    # would fight over N processors.
    return {"backend": "loky", "n_jobs": ex.jobs, "initializer": _watch_parent, "initargs": (pid,),
            "inner_max_num_threads": 1}


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
    with parallel_config(**_pool_config(ex, pid)):
        yield from Parallel(batch_size=1, return_as="generator_unordered")(calls)


class _WarmUp:
    """Start the loky workers in the background: each imports the experiment kind
    (:func:`bench.execution.warm_worker`) while this process goes on computing chunks; :meth:`ready`
    says when the pool can take the chunks (:func:`bench.runner._compute`)."""

    def __init__(self, ex: _Executor, kind: str):
        self.error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._start, args=(ex, kind, os.getpid()),
                                        name="dpharness-warm-up", daemon=True)
        self._thread.start()

    def _start(self, ex: _Executor, kind: str, pid: int) -> None:
        try:
            from joblib import Parallel, delayed, parallel_config

            with parallel_config(**_pool_config(ex, pid)):
                Parallel(batch_size=1)(delayed(warm_worker)(kind) for _ in range(ex.workers))
        except BaseException as exc:
            self.error = exc
        finally:
            self._done.set()

    def ready(self) -> bool:
        return self._done.is_set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


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
    except Exception:
        return False


def _stop_worker_pool() -> None:
    """End joblib's reusable loky pool now (the command is done): its idle workers would otherwise
    outlive the command for a moment. :func:`run` itself keeps the pool for a next call."""
    reusable_executor = sys.modules.get("joblib.externals.loky.reusable_executor")
    ex = getattr(reusable_executor, "_executor", None) if reusable_executor is not None else None
    if ex is not None:
        with contextlib.suppress(Exception):
            ex.shutdown(wait=True)

