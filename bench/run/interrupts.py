"""The parent's Ctrl-C / SIGTERM handling while a run computes (see :mod:`bench.run.runner`, "Interruption").

The first signal stops dispatching, marks the run stopped for threads, drops a stop file for
processes and interrupts running loky tasks; a second signal stops at once. The worker-side
half (``_STOPPED``, ``_task_signal``) lives in :mod:`bench.run.execution`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from dpharness.bench.run.backends import _Executor
from dpharness.bench.run.chunks import ChunkPlan
from dpharness.bench.run.execution import _STOPPED


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
