"""How many processors are free for this run's workers right now (see :mod:`bench.run.runner`, "Chunks").

On a machine shared with other work, ``--jobs 2`` on 2 processors is only faster when the second
processor is idle: when another program keeps it busy, two workers share what one process had and
the run is slower by what starting them costs. :class:`CpuShare` measures it: the busy time of the
processors this process may run on (Linux ``/proc/stat``) minus this process's own CPU time, over
the interval since the previous reading. Elsewhere (no ``/proc/stat``) every processor counts as
free, which was the rule before.
"""

from __future__ import annotations

import os
import time

__all__ = ["CpuShare"]

_STAT = "/proc/stat"


def _allowed_cpus() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return None


def _busy_ticks(cpus: set[int] | None) -> int | None:
    """Busy clock ticks (user, nice, system, irq, softirq, steal) of ``cpus`` since boot, or None."""
    try:
        with open(_STAT, encoding="ascii") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    total = 0
    seen = False
    for line in lines:
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *fields = line.split()
        try:
            cpu = int(name[3:])
        except ValueError:
            continue
        if cpus is not None and cpu not in cpus:
            continue
        v = [int(x) for x in fields[:8]] + [0] * (8 - min(8, len(fields)))
        total += v[0] + v[1] + v[2] + v[5] + v[6] + v[7]  # guest time is already counted in user
        seen = True
    return total if seen else None


class CpuShare:
    """Free processors over the interval since the previous reading (:meth:`free`).

    ``free`` is the number of processors this process may use minus the load of every other
    program on them, between 1 and that number: a process that needs a whole processor (this run)
    is not counted against it. Readings cost a few microseconds (one small file)."""

    def __init__(self) -> None:
        self.cpus = _allowed_cpus()
        self.n = len(self.cpus) if self.cpus else (os.cpu_count() or 1)
        self.hz = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        self._last = self._reading()

    def _reading(self) -> tuple[float, float, int | None]:
        t = os.times()
        return time.monotonic(), t.user + t.system, _busy_ticks(self.cpus)

    def free(self, min_interval: float = 0.1) -> float:
        """Free processors since the previous reading; the reading is kept for the next call
        when the interval was at least ``min_interval`` seconds (a shorter one is too coarse:
        the kernel counts in ticks of 10 ms), else the previous reading stays the reference."""
        now = self._reading()
        wall0, own0, busy0 = self._last
        wall, own, busy = now
        if busy is None or busy0 is None:
            return float(self.n)
        dt = wall - wall0
        if dt < min_interval:
            dt = max(dt, 1e-9)
        else:
            self._last = now
        others = max(0.0, (busy - busy0) / self.hz - (own - own0)) / dt
        return min(float(self.n), max(1.0, self.n - others))
