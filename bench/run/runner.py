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
towards about :data:`bench.run.chunks.CHUNK_SECONDS` of measured task time, and shrinks near the end so the last
chunks balance across workers. ``chunk_size=N`` fixes it.

Starting workers. Workers pay for themselves only when the rest of the run is long and the
processors are really free, so ``--jobs N`` (loky, no pool running yet) begins in the main
process: after twice :data:`PROBE_SECONDS` of tasks, the task time measured on the second half
(the first tasks also pay what a process pays once -- data, lazy imports, caches -- which every
new worker would pay again: that excess counts in its start-up), the processors that other
programs leave free (:class:`bench.run.cpu_share.CpuShare`, from ``/proc/stat``) and what starting a
worker costs (:data:`STARTUP_SECONDS`) say whether spreading the rest saves at least
:data:`SPREAD_MARGIN` times the start-up (:func:`_spread_estimate`). If not, the run goes on here
and decides again every :data:`RECHECK_SECONDS`; a run that ends here records ``jobs: 1`` and why
(``parallelism_note``). If so, the workers start in the background (one BLAS/OpenMP thread each)
while the main process keeps computing, and they take the rest when ready. So ``--jobs N`` is
not slower than ``--jobs 1`` by more than the noise of that decision, also on a shared machine.
``DPHARNESS_PROBE_SECONDS=0`` (or :data:`PROBE_SECONDS` = 0) sends every chunk to the workers.

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

Concurrency. A run holds the run folder's lock (:class:`bench.run.folders.RunLock`) while it writes;
a second run into the same folder -- the same command started twice, or ``--resume`` of a folder
in use -- is refused at once with a message naming the holder's pid and host (exit 2). It does
not wait.

Before anything is computed or created: ``--jobs``/``--backend``/``--scheduler`` are checked,
``--out`` must be a writable place for a run folder (and the path short enough), the config is
loaded and validated including the kind's ``check``, and a dask ``--scheduler`` must answer within
:data:`bench.run.backends.SCHEDULER_TIMEOUT` seconds. Only then is the run folder created.

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

The other modules of :mod:`bench.run` (one job each): :mod:`bench.run.execution` (tasks
and chunks in a worker), :mod:`bench.run.chunks` (chunk sizes and order), :mod:`bench.run.backends`
(loky/threading/dask executors, scheduler check), :mod:`bench.run.interrupts` (the parent's signal
handling), :mod:`bench.run.claim` (``--out`` checks, claiming and locking the run folder),
:mod:`bench.run.outputs` (results.csv, summary, figures, manifest.json), :mod:`bench.run.result`
(:class:`RunResult`, :class:`RunError`). The printing CLI handler is
:mod:`bench.cli.run`; this module is the orchestration: :func:`run`.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import numbers
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any, Callable

from dpharness.bench import experiments
from dpharness.bench.config import Config, load_config
from dpharness.bench.report import progress as _progress
from dpharness.bench.run.backends import (
    BACKENDS,
    DASK_HINT,
    _Executor,
    _iter_chunks,
    _loky_pool_is_warm,
    _open_executor,
    _WarmUp,
)
from dpharness.bench.run.chunks import ChunkPlan
from dpharness.bench.run.claim import STOP_FILE, _check_out, _claim_run_dir
from dpharness.bench.run.cpu_share import CpuShare
from dpharness.bench.run.execution import _SIG, _STOPPED, _task_signal, execute_chunk
from dpharness.bench.run.folders import TaskStore, clean_stale_tmp
from dpharness.bench.run.interrupts import _signals, _StopRequest
from dpharness.bench.run.outputs import _finish, run_manifest, write_manifest
from dpharness.bench.run.result import RunError, RunResult, _one_line, _State
from dpharness.bench.run.tasks import Task, stable_hash

__all__ = ["RunError", "RunResult", "run"]

#: With loky workers not running yet, this much work (seconds) first runs in this process to
#: measure the task time (see :func:`_compute`). 0 sends every chunk to the workers at once (no
#: probe, no decision); the environment variable ``DPHARNESS_PROBE_SECONDS`` sets it for a command.
def _probe_seconds(default: float = 0.2) -> float:
    """``DPHARNESS_PROBE_SECONDS`` as a number of seconds >= 0; a value that is not one is said once
    on stderr and the default used (an environment typo must not make every command a traceback)."""
    raw = os.environ.get("DPHARNESS_PROBE_SECONDS")
    if raw is None:
        return default
    try:
        v = float(raw)
    except ValueError:
        v = -1.0
    if not (v >= 0 and v != float("inf")):
        print(f"warning: DPHARNESS_PROBE_SECONDS must be a number of seconds >= 0, got {raw!r}; using {default}",
              file=sys.stderr)
        return default
    return v


PROBE_SECONDS = _probe_seconds()
#: What starting one worker process costs (CPU seconds: an interpreter that imports the scientific
#: stack and the experiment kind; about 0.6-0.9 s measured on a 2-core machine).
STARTUP_SECONDS = 1.0
#: Workers start only when they are expected to save this many times what starting them costs:
#: the estimates are noisy, and a wrong start makes ``--jobs N`` slower than ``--jobs 1``.
SPREAD_MARGIN = 1.5
#: While the run stays in this process (not worth spreading yet), the decision is taken again
#: after about this much more work (seconds): the other load of the machine may have gone.
RECHECK_SECONDS = 1.0


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
    on_summary: Callable[[Any], None] | None = None,
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
        scheduler address, which must answer within :data:`bench.run.backends.SCHEDULER_TIMEOUT` s, otherwise a
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
    on_summary
        Called with the kind's :class:`~bench.run.tasks.Summary` as soon as ``table.csv`` is written,
        before the figures are drawn (``dpharness run`` prints the verdict then). Not called
        when the summary step failed.

    Raises
    ------
    ConfigError, RunError
        Invalid config or usage, nothing created. KeyboardInterrupt propagates after the finished
        tasks are saved and the manifest says ``interrupted``; any other exception after the run
        folder exists propagates after the manifest says ``failed``.
    """
    t_start = time.monotonic()
    share = CpuShare()  # the machine's other load, measured from now on (for --jobs > 1)
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
                       command, figures, chunk_size, scheduler, share, on_summary)
    raise AssertionError("unreachable")  # pragma: no cover


def _run_in(run_dir: Path, resumed: bool, cfg: Config, module: Any, tasks: list[Task], key_set: set[str],
            ex: _Executor, t_start: float, started: _dt.datetime, show_progress: bool, command: str | None,
            figures: bool, chunk_size: int | None, scheduler: str | None, share: CpuShare | None = None,
            on_summary: Callable[[Any], None] | None = None) -> RunResult:
    """Compute the missing tasks into the locked ``run_dir``, then write the outputs and manifest."""
    store = TaskStore(run_dir)
    known = store.load_all() if resumed else {}
    state = _State({k: r for k, r in known.items() if k in key_set and r.get("status") == "ok"})
    todo = [t for t in tasks if t.key not in state.records]
    if resumed:
        print(f"resuming {run_dir}: {len(state.records)}/{len(tasks)} tasks already done", file=sys.stderr)
    plan = ChunkPlan(todo, ex.workers, chunk_size)

    def manifest(status: str, **extra: Any) -> dict[str, Any]:
        return run_manifest(status, extra, cfg=cfg, tasks=tasks, state=state, ex=ex, plan=plan, chunk_size=chunk_size,
                            scheduler=scheduler, resumed=resumed, started=started, t_start=t_start, command=command)

    def write_run_manifest(m: dict) -> None:
        write_manifest(run_dir, m)

    try:
        _compute(ex, cfg, plan, run_dir, store, state, len(tasks), show_progress, share)
        res = _finish(run_dir, cfg, module, tasks, state, figures, manifest, write_run_manifest, t_start, ex,
                      on_summary)
    except BaseException as exc:  # broad on purpose: the manifest says why the run stopped, then re-raise
        # Leave a manifest that says why the run stopped (still "unfinished": re-running resumes).
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        msg = "interrupted (SIGINT/SIGTERM); re-run the same command to resume" if status == "interrupted" \
            else _one_line(exc)
        with contextlib.suppress(Exception):  # broad: best effort while failing; the original error is raised
            # Chunks that workers saved but whose results never reached this process (the pool was
            # being stopped) are finished work too: the manifest counts what is on disk.
            for key, rec in store.load_all().items():
                if key in key_set and key not in state.records and key not in known:
                    state.records[key] = rec
                    state.computed += 1  # saved by a worker of this run
        with contextlib.suppress(Exception):  # broad: best effort while failing; the original error is raised
            write_run_manifest(manifest(status, message=msg, exit_code=130 if status == "interrupted" else 1))
        raise
    return res


def _spread_estimate(remaining: int, per_task: float, workers: int, free: float,
                     startup_cpu: float) -> tuple[bool, float, float, float]:
    """Whether to hand ``remaining`` tasks of ``per_task`` seconds each to ``workers`` new workers,
    with ``free`` processors free (:class:`bench.run.cpu_share.CpuShare`) and ``startup_cpu`` CPU
    seconds to start each worker: ``(worth it, rest s, saved s, start-up s)``.

    The rest takes ``rest`` seconds here; on the workers it takes ``rest / speedup`` with
    ``speedup = min(workers, free)``, once the workers have started on the free processors.
    Worth it when the time saved is at least :data:`SPREAD_MARGIN` times the start-up."""
    rest = remaining * per_task
    speedup = max(1.0, min(float(workers), free))
    startup = startup_cpu * workers / speedup
    saved = rest * (1.0 - 1.0 / speedup)
    return saved >= SPREAD_MARGIN * startup and saved > 0, rest, saved, startup


def _compute(ex: _Executor, cfg: Config, plan: ChunkPlan, run_dir: Path, store: TaskStore, state: _State,
             n_total: int, show_progress: bool, share: CpuShare | None = None) -> None:
    """Run the plan's chunks, keeping every record that comes back; KeyboardInterrupt when stopped.

    ``--jobs 1`` runs in this process. With loky workers not yet started, the first
    :data:`PROBE_SECONDS` of work also run here, to measure the task time, and the run moves to
    the workers only when that saves clearly more than starting them costs
    (:func:`_spread_estimate`), counting only the processors that other programs leave free
    (:class:`bench.run.cpu_share.CpuShare`). Until then the run goes on here, and the decision is
    taken again every :data:`RECHECK_SECONDS`; a run that ends here records ``jobs: 1`` and why
    in the manifest. So ``--jobs N`` is not slower than ``--jobs 1`` by more than the noise of
    that decision. Once it is worth it, the workers start in the background
    (:class:`bench.run.backends._WarmUp`) while this process keeps computing, and take the rest of the
    plan when they are ready.
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

    def here(seconds: float | None = None, until: Callable[[], bool] | None = None) -> None:
        """Run chunks in this process: for at most about ``seconds`` if given, and until
        ``until()`` is true if given (checked between chunks of at most :data:`WARM_POLL` s)."""
        t0 = time.monotonic()
        while not interrupted and run_id not in _STOPPED:
            left = None if seconds is None else seconds - (time.monotonic() - t0)
            if left is not None and left <= 0:
                return
            if until is not None:
                if until():
                    return
                left = WARM_POLL if left is None else min(left, WARM_POLL)
            chunk = plan.take(left)
            if chunk is None:
                return
            keep(execute_chunk(kind, spec, chunk, seed, run_id, tasks_dir, None, None))

    probe = (ex.backend == "loky" and ex.workers > 1 and PROBE_SECONDS > 0
             and not _loky_pool_is_warm(ex.workers))
    t0 = time.monotonic()
    bar = _progress.progress(n_total, desc=cfg.name, initial=len(state.records), enabled=show_progress)
    warm: _WarmUp | None = None
    try:
        with bar:
            if ex.sequential or probe:
                with _signals(_task_signal):
                    _SIG["run"] = run_id  # a signal between tasks is noted, the chunk ends early
                    try:
                        if probe:
                            warm = _probe(ex, kind, plan, share or CpuShare(), here, lambda: interrupted)
                            if warm is not None:
                                here(until=warm.ready)  # the workers start; this process goes on
                                if not plan.remaining and not interrupted:
                                    ex.note = ("ran in this process: the work was done before the workers had "
                                               "started")
                                    ex.workers = plan.workers = 1
                        else:
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
                    except Exception:  # broad: re-raised unless we were stopping anyway (joblib's errors vary)
                        if stopper.requested:
                            # e.g. a worker that was idle when the signal came died of it: we were stopping anyway
                            raise KeyboardInterrupt("stopped") from None
                        raise
                interrupted = interrupted or stopper.requested or run_id in _STOPPED
    finally:
        if warm is not None:
            warm.join(timeout=30.0)  # workers that were still importing: let the call end cleanly
        state.compute_seconds = time.monotonic() - t0
        with contextlib.suppress(OSError):
            stop_path.unlink()
        clean_stale_tmp(run_dir)  # a worker killed mid-write (second Ctrl-C) leaves its temporary file
        _STOPPED.discard(run_id)
    if interrupted:
        raise KeyboardInterrupt("stopped")


#: While the workers start in the background, this process runs chunks of at most this many
#: seconds, so that the workers get the rest as soon as they are ready.
WARM_POLL = 0.1


def _probe(ex: _Executor, kind: str, plan: ChunkPlan, share: CpuShare, here: Callable[..., None],
           stopped: Callable[[], bool]) -> _WarmUp | None:
    """Run chunks in this process until the workers are worth starting; start them (returned) or
    finish the plan here (``None``, with ``ex.note`` saying why and ``ex.workers = 1``).

    The first :data:`PROBE_SECONDS` warm the process up: the first tasks also pay what a process
    pays once (loading data, lazy imports, caches), and so would every new worker. The task time
    is measured on the tasks after them, and what the first ones took beyond it is added to each
    worker's start-up (:data:`STARTUP_SECONDS`)."""
    here(PROBE_SECONDS)
    n0, s0 = plan.done_n, plan.done_seconds
    here(PROBE_SECONDS)
    previous: float | None = None
    worth, rest, saved, startup, free = False, 0.0, 0.0, 0.0, float(ex.workers)
    while not stopped() and plan.remaining and plan.done_n > n0:
        per_task = (plan.done_seconds - s0) / (plan.done_n - n0)
        once = max(0.0, s0 - n0 * per_task)  # the warm-up's excess over warm tasks
        now = share.free()
        # two readings in a row must agree: a moment when the other programs pause is not enough
        free = now if previous is None else min(now, previous)
        previous = now
        worth, rest, saved, startup = _spread_estimate(plan.remaining, per_task, ex.workers, free,
                                                       STARTUP_SECONDS + once)
        if worth:
            return _WarmUp(ex, kind)
        here(RECHECK_SECONDS)
    if not stopped() and plan.mean_seconds is not None:
        if previous is None:  # done within the probe
            ex.note = (f"ran in this process: the whole work took about {plan.done_seconds:.2g} s, less than "
                       f"starting {ex.workers} workers costs (about {STARTUP_SECONDS:g} s each)")
        else:
            busy = f" with about {free:.1f} of {share.n} processors free" if free < ex.workers else ""
            ex.note = (f"ran in this process: spreading the remaining work (about {rest:.2g} s) over {ex.workers} "
                       f"workers{busy} would save less than starting them costs (about {startup:.2g} s)")
        ex.workers = plan.workers = 1
    return None
