"""``dpharness run CONFIG ...``: run an experiment config (:func:`dpharness.bench.runner.run`), print
the summary and where the run folder is, return the exit code (listed in :mod:`bench.runner`)."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from dpharness.bench.backends import _stop_worker_pool
from dpharness.bench.config import ConfigError
from dpharness.bench.run_result import _one_line
from dpharness.bench.runner import RunError, run

__all__ = ["cmd_run", "invoke_run"]

_FATAL_RUN_ERRORS = ("TerminatedWorkerError", "BrokenProcessPool", "MemoryError")


def invoke_run(config: Any, **kwargs: Any) -> tuple[Any, int | None]:
    """Call :func:`~dpharness.bench.runner.run` the way every command does and turn its failures
    into one printed message: ``(RunResult, None)`` on success, ``(None, exit code)`` otherwise
    (2 for a config or usage error, 1 for a run that failed mid-way; finished work is kept)."""
    def _terminate(signum: int, frame: Any) -> None:
        # `kill` behaves like Ctrl-C: finished tasks are saved, workers are stopped, not orphaned.
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return run(config, **kwargs), None
    except (ConfigError, RunError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None, 2
    except (NotADirectoryError, FileExistsError, PermissionError) as exc:
        # --out pointing at a file, or an unwritable place: a usage error, not a crash.
        print(f"error: cannot write the run folder: {exc.strerror}: {exc.filename} (check --out)", file=sys.stderr)
        return None, 2
    except OSError as exc:  # disk full, I/O error: the manifest says failed
        print(f"error: the run failed: {exc.strerror or exc}{': ' + str(exc.filename) if exc.filename else ''}; "
              "finished tasks are saved, re-run the same command to resume", file=sys.stderr)
        return None, 1
    except Exception as exc:
        if type(exc).__name__ not in _FATAL_RUN_ERRORS:
            raise
        print(f"error: the run failed: {_one_line(exc)}; finished tasks are saved, re-run the same command to "
              "resume", file=sys.stderr)
        return None, 1
    finally:
        signal.signal(signal.SIGTERM, previous)
        _stop_worker_pool()


def cmd_run(args: argparse.Namespace) -> int:
    """``dpharness run CONFIG [--jobs N] [--backend B] [--scheduler ADDR] [--out DIR] [--seed S]
    [--quick] [--resume RUN_DIR] [--chunk-size N]``: print the summary, write the run folder; exit
    codes in the :mod:`bench.runner` docstring."""
    shown = []

    def show(summary: Any) -> None:
        # the verdict as soon as the table is written; the figures are drawn after it
        if summary.text:
            print(summary.text)
            print(flush=True)
        shown.append(summary)

    res, code = invoke_run(args.config, jobs=args.jobs, backend=args.backend, scheduler=args.scheduler,
                           out=args.out, seed=args.seed, quick=args.quick, resume=args.resume,
                           chunk_size=getattr(args, "chunk_size", None), on_summary=show)
    if res is None:
        return code
    if not shown and res.summary.text:
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
