"""``dpharness run CONFIG ...``: run an experiment config (:func:`dpharness.bench.run.runner.run`), print
the summary and where the run folder is, return the exit code (listed in :mod:`bench.run.runner`).

:func:`invoke_run` is how every command that runs a config (``run``, ``audit``) calls the runner.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

__all__ = ["invoke_run", "run"]

NAME = "run"
HELP = "run an experiment config (YAML) and write a run folder"
ORDER = 20

_FATAL_RUN_ERRORS = ("TerminatedWorkerError", "BrokenProcessPool", "MemoryError")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """CONFIG and the run's options."""
    parser.add_argument("config", metavar="CONFIG", help="experiment config (YAML), e.g. configs/duff_table1.yaml")
    parser.add_argument("--jobs", type=int, default=1, help="parallel workers (results do not depend on it)")
    parser.add_argument("--backend", choices=["loky", "threading", "dask"], default="loky")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None, help="dask scheduler address")
    parser.add_argument("--out", metavar="DIR", default=None, help="parent folder for the run (default results/)")
    parser.add_argument("--seed", type=int, default=None, help="override the config's root seed")
    parser.add_argument("--quick", action="store_true", help="use the config's quick: overrides (CI tier)")
    parser.add_argument("--resume", metavar="RUN_DIR", default=None, help="resume this run folder explicitly")
    parser.add_argument("--chunk-size", type=int, default=None, metavar="N",
                        help="tasks per chunk sent to a worker (default: sized automatically; results do not depend on it)")


def invoke_run(config: Any, **kwargs: Any) -> tuple[Any, int | None]:
    """Call :func:`~dpharness.bench.run.runner.run` the way every command does and turn its failures
    into one printed message: ``(RunResult, None)`` on success, ``(None, exit code)`` otherwise
    (2 for a config or usage error, 1 for a run that failed mid-way; finished work is kept)."""
    from dpharness.bench.config import ConfigError
    from dpharness.bench.run import runner
    from dpharness.bench.run.backends import _stop_worker_pool
    from dpharness.bench.run.result import RunError, _one_line

    def _terminate(signum: int, frame: Any) -> None:
        # `kill` behaves like Ctrl-C: finished tasks are saved, workers are stopped, not orphaned.
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return runner.run(config, **kwargs), None
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
    except Exception as exc:  # broad: a dead worker's error comes from joblib/loky, whose classes are not imported here
        if type(exc).__name__ not in _FATAL_RUN_ERRORS:
            raise
        print(f"error: the run failed: {_one_line(exc)}; finished tasks are saved, re-run the same command to "
              "resume", file=sys.stderr)
        return None, 1
    finally:
        signal.signal(signal.SIGTERM, previous)
        _stop_worker_pool()


def run(args: argparse.Namespace) -> int:
    """``dpharness run CONFIG [--jobs N] [--backend B] [--scheduler ADDR] [--out DIR] [--seed S]
    [--quick] [--resume RUN_DIR] [--chunk-size N]``: print the summary, write the run folder; exit
    codes in the :mod:`bench.run.runner` docstring."""
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
