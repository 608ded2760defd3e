"""Cutting the task list into chunks for the workers (see :mod:`bench.run.runner`, "Chunks").

The dispatch order interleaves the whole sweep (a golden-ratio sequence), so every chunk samples
it and chunks cost about the same; automatic sizes aim at :data:`CHUNK_SECONDS` of task time.
Which chunk a task lands in never changes its result.
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from dpharness.bench.run.tasks import Task

__all__ = ["CHUNK_SECONDS", "ChunkPlan", "spread_order"]

#: Target task time per automatically sized chunk (seconds): long enough that the per-chunk cost
#: (a process round trip, one file) is ~1 % of it, short enough for a live progress bar and to
#: lose little when a worker is killed.
CHUNK_SECONDS = 0.5


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
