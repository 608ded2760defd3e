"""The one progress display of the harness (``run``, ``audit`` and ``bench``), built on ``tqdm``.

Progress goes to stderr so that stdout stays the command's result (tables, JSON paths). A bar is
only drawn once the work has taken longer than ``delay`` seconds, so quick commands and tests print
nothing; on a non-terminal stream (CI logs, a file) tqdm's in-place redraw is replaced by one whole
line every ``interval`` seconds (no carriage returns).
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from tqdm import tqdm

__all__ = ["progress"]


class _Lines:
    """A non-terminal stream for tqdm: each redraw (``\\r`` + bar) becomes one plain line."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> None:
        for part in text.split("\r"):
            part = part.rstrip()
            if part:
                self.stream.write(part + "\n")

    def flush(self) -> None:
        self.stream.flush()


def progress(total: int, *, desc: str, initial: int = 0, unit: str = "task", enabled: bool = True,
             stream: TextIO | None = None, delay: float = 1.0, interval: float = 5.0) -> Any:
    """A ``tqdm`` bar over ``total`` units (``initial`` already done, e.g. reused on resume).

    Use as a context manager and call ``.update(n)``; disabled bars accept the same calls.
    """
    stream = stream if stream is not None else sys.stderr
    tty = bool(getattr(stream, "isatty", lambda: False)())
    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit=unit,
        file=stream if tty else _Lines(stream),
        disable=not enabled or total <= initial,
        delay=delay,
        # Off a terminal every redraw is a new line: keep them rare.
        mininterval=0.25 if tty else interval,
        maxinterval=max(interval, 10.0),
        dynamic_ncols=tty,
        ncols=None if tty else 100,
        leave=True,
    )
