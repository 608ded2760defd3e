"""Drawing one audit's samples on several cores or a dask cluster, bit-identically for any number
of workers.

An audit's draws are keyed by role (pair, phase, dataset, round: :func:`verifiers.statistical.batch.stream`).
With ``jobs`` given, every keyed batch of ``n`` draws is cut into chunks whose sizes depend on ``n``
only (:func:`chunk_sizes`), and chunk ``i`` is drawn from the Generator keyed ``(*key, CHUNK, i)``.
The chunks run where :func:`sampling` says -- in this process, on joblib's loky processes or
threads, or on a dask cluster -- and come back in chunk order, so the draws, the counts and the
verdict are the same for every ``jobs``, backend and scheduler. ``jobs=None`` (the default of
:func:`verifiers.audit`) keeps one Generator per role: the draws of earlier versions.

What a mechanism needs to be sampled in worker processes: it must pickle. joblib pickles with
cloudpickle, so a function defined in ``__main__`` or a lambda travels by value; a function of an
importable module (``mypkg.mech.noisy_count``) travels by reference and the workers import it, so
that module must be importable in the workers (installed, or on their ``sys.path``: a dask cluster
started elsewhere needs it installed there). Objects holding OS handles or foreign pointers (an
OpenDP ``Measurement``) do not pickle: wrap a module-level factory instead, or use
``backend="threading"`` (useful when the library releases the GIL).

The backends themselves -- :data:`BACKENDS`, a dask client for the duration (:func:`dask_client`) and
running calls on joblib's workers (:func:`run_parallel`) -- are also what ``dpharness run`` sends its
chunks of tasks to (``bench.run.backends``), so both parallelise the same way.
"""

from __future__ import annotations

import contextlib
import logging
import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from dpharness.mechanisms.base import ParamError
from dpharness.verifiers.statistical.draws import count_draws, draw, stream

__all__ = ["sampling", "chunk_sizes", "sample_draws", "sample_count", "sample_draws_pair", "sample_count_pair", "active", "BACKENDS", "CHUNK", "MIN_CHUNK",
           "MAX_CHUNKS", "check_jobs", "SCHEDULER_TIMEOUT", "dask_client", "quiet_distributed", "run_parallel"]

#: Backends of :func:`sampling` and of ``dpharness run --backend``.
BACKENDS = ("loky", "threading", "dask")
#: How long a dask scheduler may take to answer before the connection fails (seconds).
SCHEDULER_TIMEOUT = 5.0
#: Key element that marks a chunk's Generator (``stream(seed, *key, CHUNK, i)``).
CHUNK = 7
#: Smallest chunk (rows) and most chunks per keyed batch: a batch of n draws has
#: ceil(n / max(MIN_CHUNK, ceil(n / MAX_CHUNKS))) chunks -- a function of n alone.
MIN_CHUNK = 2048
MAX_CHUNKS = 256


@dataclass
class _Sampler:
    jobs: int
    backend: str
    scheduler: str | None = None

    def map(self, fn: Any, items: list[tuple]) -> list[Any]:
        if self.jobs == 1 or len(items) == 1:  # the same keyed chunks, drawn here: identical results
            return [fn(*it) for it in items]
        try:
            return list(run_parallel(fn, items, self.backend, self.jobs))
        except Exception as exc:  # joblib/loky raise their own classes for what does not pickle
            if self.backend == "threading" or not _is_pickling_error(exc):
                raise
            raise ParamError("jobs", f"the mechanism cannot be sent to {self.backend} worker processes "
                             f"({type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''});"
                             " pass a module-level function or factory that builds it, or backend='threading'") from None


def _is_pickling_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) says an object could not be pickled."""
    import pickle

    while exc is not None:
        text = f"{type(exc).__name__}: {exc}".lower()
        if isinstance(exc, pickle.PicklingError) or "pickl" in text:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def run_parallel(fn: Callable[..., Any], args: Iterable[tuple], backend: str, jobs: int, *,
                 return_as: str = "list", **pool: Any) -> Iterator[Any]:
    """``fn(*a)`` for every ``a`` of ``args`` on joblib's workers, one call per batch: ``jobs`` loky
    processes or threads, or every worker of the current dask client (``backend="dask"``).

    Yields the results in order (``return_as="generator_unordered"``: as they finish). ``args`` is
    consumed lazily, as workers free up. ``pool`` goes to joblib's ``parallel_config`` of the
    process and thread backends (a loky ``initializer``, ``inner_max_num_threads``): equal arguments
    let joblib reuse its running loky pool."""
    from joblib import Parallel, delayed, parallel_config

    calls = (delayed(fn)(*a) for a in args)
    if backend == "dask":
        with parallel_config(backend="dask"):
            yield from Parallel(n_jobs=-1, batch_size=1, return_as=return_as)(calls)
        return
    with parallel_config(backend=backend, n_jobs=jobs, **pool):
        yield from Parallel(batch_size=1, return_as=return_as)(calls)


@contextlib.contextmanager
def quiet_distributed() -> Iterator[None]:
    """dask's loggers (``distributed``, ``tornado``) silenced for the duration: a scheduler that does
    not answer is then reported once, by the caller, not by pages of connection retries."""
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
def dask_client(scheduler: str | None, workers: int | None, *, quiet: bool = False) -> Iterator[Any]:
    """A dask client for the duration, closed on exit: connected to ``scheduler`` (which must answer
    within :data:`SCHEDULER_TIMEOUT` s), or to a local cluster of ``workers`` single-threaded worker
    processes (``None``: dask's default, one per core) started for the duration.

    Raises ImportError without the ``dask`` extra, and whatever the connection raises when the
    scheduler does not answer (callers word the message). ``quiet`` silences dask's loggers while
    connecting and closing (:func:`quiet_distributed`) and the local cluster's logs below ERROR."""
    from dask.distributed import Client, LocalCluster

    hush = quiet_distributed if quiet else contextlib.nullcontext
    if scheduler:
        with hush():
            client = Client(scheduler, timeout=SCHEDULER_TIMEOUT)
        try:
            yield client
        finally:
            with hush():
                client.close()
        return
    with contextlib.ExitStack() as stack:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               **({"silence_logs": logging.ERROR} if quiet else {}))
        stack.callback(cluster.close)
        client = Client(cluster)
        stack.callback(client.close)  # closed first, then its cluster
        yield client


_ACTIVE: list[_Sampler] = []


def active() -> _Sampler | None:
    """The sampler of the audit in progress (None: one Generator per role, in this process)."""
    return _ACTIVE[-1] if _ACTIVE else None


def check_jobs(jobs: Any, backend: Any = None, scheduler: Any = None) -> tuple[int | None, str, str | None]:
    """``jobs`` None or an int >= 1 (-1: every core), ``backend`` one of :data:`BACKENDS`
    (default loky), ``scheduler`` a dask address (dask only); ``ValueError`` naming the argument."""
    if jobs is not None:
        if isinstance(jobs, bool) or not isinstance(jobs, (numbers.Integral, np.integer)) or not (jobs >= 1 or jobs == -1):
            raise ParamError("jobs", f"jobs must be None (one stream per role, in this process), an integer >= 1 or -1 (every "
                             f"core), got {jobs!r}")
        jobs = int(jobs)
        if jobs == -1:
            import os

            jobs = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
    b = "loky" if backend is None else backend
    if not isinstance(b, str) or b not in BACKENDS:
        raise ParamError("backend", f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if scheduler is not None:
        if b != "dask":
            raise ParamError("scheduler", f"scheduler is a dask scheduler address; it needs backend='dask', got backend={b!r}")
        if not isinstance(scheduler, str) or not scheduler.strip():
            raise ParamError("scheduler", f"scheduler must be a dask scheduler address such as 'tcp://host:8786', got {scheduler!r}")
    if jobs is None and (backend is not None or scheduler is not None):
        raise ValueError("backend/scheduler need jobs= (the number of workers; -1: every core)")
    return jobs, b, scheduler


@contextlib.contextmanager
def sampling(jobs: int | None, backend: str | None = None, scheduler: str | None = None) -> Iterator[None]:
    """Route the draws of the audits run inside to ``jobs`` workers (see the module docstring);
    ``jobs=None`` changes nothing. A dask backend connects to ``scheduler`` or starts a local
    cluster of ``jobs`` single-threaded worker processes for the duration."""
    jobs, b, scheduler = check_jobs(jobs, backend, scheduler)
    if jobs is None:
        yield
        return
    if b != "dask":
        _ACTIVE.append(_Sampler(jobs, b))
        try:
            yield
        finally:
            _ACTIVE.pop()
        return
    try:
        import dask.distributed  # noqa: F401 - the optional extra, checked before anything starts
    except ImportError:
        raise ValueError("backend='dask' needs the optional extra: pip install 'dpharness[dask]'") from None
    with dask_client(scheduler, jobs):
        _ACTIVE.append(_Sampler(jobs, "dask", scheduler))
        try:
            yield
        finally:
            _ACTIVE.pop()


def chunk_sizes(n: int) -> list[int]:
    """Row counts of the chunks of a batch of ``n`` draws: a function of ``n`` only."""
    n = int(n)
    if n <= 0:
        return []
    size = max(MIN_CHUNK, math.ceil(n / MAX_CHUNKS))
    full, rest = divmod(n, size)
    return [size] * full + ([rest] if rest else [])


def _draw_chunk(mechanism: Any, data: Any, m: int, seed: int, key: tuple) -> np.ndarray:
    return draw(mechanism, data, m, stream(seed, *key))


def _total(hits: list) -> Any:
    """The sum of chunk counts: an int, or a tuple of ints for an event that counts several
    events at once (:class:`verifiers.statistical.batch.EventList`)."""
    if any(np.ndim(h) for h in hits):
        return tuple(int(x) for x in np.sum(np.asarray(hits, dtype=np.int64), axis=0))
    return int(sum(hits))


def _count_chunk(mechanism: Any, data: Any, m: int, seed: int, key: tuple, event: Any) -> int:
    return count_draws(mechanism, data, m, stream(seed, *key), event)


def sample_draws(mechanism: Any, data: Any, n: int, seed: int, key: tuple) -> np.ndarray:
    """``n`` draws of ``mechanism`` on ``data`` for the role ``key``: one Generator keyed ``key``
    without an active sampler, else keyed chunks on the sampler's workers (joined in order)."""
    s = active()
    if s is None:
        return draw(mechanism, data, n, stream(seed, *key))
    sizes = chunk_sizes(n)
    parts = s.map(_draw_chunk, [(mechanism, data, m, seed, (*key, CHUNK, i)) for i, m in enumerate(sizes)])
    shapes = {p.shape[1:] for p in parts}
    if len(shapes) > 1:  # a release whose width changes between calls on the same data
        raise ValueError(f"mechanism.sample returned rows of different shapes on the same dataset: "
                         f"{sorted(shapes)}")
    return np.concatenate(parts)


def sample_draws_pair(mechanism: Any, d1: Any, d2: Any, n: int, seed: int, key1: tuple, key2: tuple
                      ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`sample_draws` for both datasets of a pair, their chunks sent to the workers together
    (better balance than one dataset after the other; the same draws)."""
    s = active()
    if s is None:
        return sample_draws(mechanism, d1, n, seed, key1), sample_draws(mechanism, d2, n, seed, key2)
    sizes = chunk_sizes(n)
    items = [(mechanism, d, m, seed, (*k, CHUNK, i)) for d, k in ((d1, key1), (d2, key2)) for i, m in enumerate(sizes)]
    parts = s.map(_draw_chunk, items)
    out = []
    for half in (parts[: len(sizes)], parts[len(sizes):]):
        if len({p.shape[1:] for p in half}) > 1:
            raise ValueError("mechanism.sample returned rows of different shapes on the same dataset: "
                             f"{sorted({p.shape[1:] for p in half})}")
        out.append(np.concatenate(half))
    return out[0], out[1]


def sample_count_pair(mechanism: Any, d1: Any, d2: Any, n1: int, n2: int, seed: int, key1: tuple, key2: tuple,
                      event: Any) -> tuple[int, int]:
    """:func:`sample_count` for both datasets of a pair (``n1`` and ``n2`` draws), chunks together."""
    s = active()
    if s is None:
        return (sample_count(mechanism, d1, n1, seed, key1, event) if n1 else 0,
                sample_count(mechanism, d2, n2, seed, key2, event) if n2 else 0)
    s1, s2 = chunk_sizes(n1), chunk_sizes(n2)
    items = ([(mechanism, d1, m, seed, (*key1, CHUNK, i), event) for i, m in enumerate(s1)]
             + [(mechanism, d2, m, seed, (*key2, CHUNK, i), event) for i, m in enumerate(s2)])
    hits = s.map(_count_chunk, items)
    return _total(hits[: len(s1)]), _total(hits[len(s1):])


def sample_count(mechanism: Any, data: Any, n: int, seed: int, key: tuple, event: Any) -> int:
    """How many of ``n`` fresh draws (role ``key``) fall in ``event``; as :func:`sample_draws`."""
    s = active()
    if s is None:
        return count_draws(mechanism, data, n, stream(seed, *key), event)
    sizes = chunk_sizes(n)
    return _total(s.map(_count_chunk, [(mechanism, data, m, seed, (*key, CHUNK, i), event)
                                        for i, m in enumerate(sizes)]))
