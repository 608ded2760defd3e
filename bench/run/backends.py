"""Where chunks run: this process, joblib's loky processes or threads, or dask (local or a scheduler).

Opens the executor for a run (:func:`_open_executor`, checking that a dask ``--scheduler`` answers
within :data:`SCHEDULER_TIMEOUT`), streams the chunks of a plan to its workers
(:func:`_iter_chunks`), and inspects/stops joblib's reusable loky pool. The backends themselves
(:data:`BACKENDS`, the dask client, running calls on joblib's workers) are the verifier's
(:mod:`dpharness.verifiers.statistical.parallel`), which samples an audit's draws the same way.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from dpharness.bench.run.chunks import ChunkPlan
from dpharness.bench.run.execution import _watch_parent, execute_chunk, warm_worker
from dpharness.bench.run.result import RunError
from dpharness.verifiers.statistical.parallel import BACKENDS, SCHEDULER_TIMEOUT, dask_client, run_parallel

__all__ = ["BACKENDS", "DASK_HINT", "SCHEDULER_TIMEOUT"]

DASK_HINT = "the dask backend needs the optional extra: pip install -e '.[dask]'"


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
def _dask_client(scheduler: str | None, jobs: int) -> Iterator[Any]:
    """The run's dask client (:func:`~dpharness.verifiers.statistical.parallel.dask_client`, quiet);
    RunError without the extra, and for a ``--scheduler`` that is not an address or does not answer."""
    try:
        import dask.distributed  # noqa: F401 - the optional extra, checked before anything starts
    except ImportError:
        raise RunError(DASK_HINT) from None
    with contextlib.ExitStack() as stack:
        try:
            client = stack.enter_context(dask_client(scheduler, jobs if jobs > 0 else None, quiet=True))
        except Exception as exc:  # broad: distributed raises OSError, TimeoutError, ValueError... for a bad address
            if not scheduler:  # a local cluster that fails to start is not a usage error
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if isinstance(exc, (ValueError, TypeError)):
                raise RunError(f"--scheduler {scheduler}: not a dask scheduler address ({first}); expected "
                               "e.g. tcp://host:8786") from None
            raise RunError(f"--scheduler {scheduler}: cannot reach the dask scheduler within "
                           f"{SCHEDULER_TIMEOUT:g} s ({first})") from None
        yield client


def _open_executor(stack: contextlib.ExitStack, backend: str, jobs: int, scheduler: str | None) -> _Executor:
    if backend == "dask":
        client = stack.enter_context(_dask_client(scheduler, jobs))
        try:
            info = client.scheduler_info()
            workers = sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values()) or 1
        except Exception:  # broad: only recorded in the manifest; a scheduler that cannot say counts as 1
            workers = 1
        return _Executor("dask", jobs, workers, external=bool(scheduler))
    if jobs > 0:
        return _Executor(backend, jobs, jobs)  # (joblib is imported only when workers start)
    from joblib import effective_n_jobs, parallel_config

    with parallel_config(backend=backend):
        workers = int(effective_n_jobs(jobs))
    return _Executor(backend, jobs, workers)


def _pool_options(ex: _Executor, pid: int) -> dict[str, Any]:
    """joblib's ``parallel_config`` options of the run's pool besides backend and jobs. The same
    every time, so that a pool started early (:class:`_WarmUp`) is the one the chunks then run on
    (loky reuses its executor when the arguments are equal)."""
    if ex.backend != "loky":
        return {}
    # loky workers arm their parent watch at start-up, before any chunk: an idle worker must die
    # with the run too (bench.run.execution._watch_parent). One BLAS/OpenMP thread per worker (joblib
    # sets the thread-count variables in the workers' environment): N workers with N threads each
    # would fight over N processors.
    return {"initializer": _watch_parent, "initargs": (pid,), "inner_max_num_threads": 1}


def _iter_chunks(ex: _Executor, kind: str, spec: Any, plan: ChunkPlan, root_seed: int, run_id: str,
                 tasks_dir: Path, stop_path: Path) -> Iterator[dict]:
    """Run the chunks of ``plan`` on the workers; yield each chunk's result as soon as it is back
    (any order)."""
    tdir = None if ex.external else str(tasks_dir)
    stop = None if ex.external else str(stop_path)
    pid = os.getpid()
    # lazy: each chunk is cut (and sized) when a worker is free for it
    args = ((kind, spec, c, root_seed, run_id, tdir, stop, pid) for c in plan)
    yield from run_parallel(execute_chunk, args, ex.backend, ex.jobs, return_as="generator_unordered",
                            **_pool_options(ex, pid))


class _WarmUp:
    """Start the loky workers in the background: each imports the experiment kind
    (:func:`bench.run.execution.warm_worker`) while this process goes on computing chunks; :meth:`ready`
    says when the pool can take the chunks (:func:`bench.run.runner._compute`)."""

    def __init__(self, ex: _Executor, kind: str):
        self.error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._start, args=(ex, kind, os.getpid()),
                                        name="dpharness-warm-up", daemon=True)
        self._thread.start()

    def _start(self, ex: _Executor, kind: str, pid: int) -> None:
        try:
            list(run_parallel(warm_worker, [(kind,)] * ex.workers, ex.backend, ex.jobs, **_pool_options(ex, pid)))
        except BaseException as exc:  # broad: handed to the main thread, which decides (even a KeyboardInterrupt)
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
    except Exception:  # broad: loky's private attributes; whatever another version lacks means "not warm"
        return False


def _stop_worker_pool() -> None:
    """End joblib's reusable loky pool now (the command is done): its idle workers would otherwise
    outlive the command for a moment. :func:`run` itself keeps the pool for a next call."""
    reusable_executor = sys.modules.get("joblib.externals.loky.reusable_executor")
    ex = getattr(reusable_executor, "_executor", None) if reusable_executor is not None else None
    if ex is not None:
        with contextlib.suppress(Exception):  # broad: the command's result is in; a pool that fails to stop must not change it
            ex.shutdown(wait=True)

