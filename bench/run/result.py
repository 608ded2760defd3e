"""What a run returns or raises (:func:`bench.run.runner.run`), and its mutable progress record.

:class:`RunResult` repeats the facts written to the run folder; :class:`RunError` is a usage problem
found before (or while claiming) the run folder; ``_State`` is the records gathered so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dpharness.bench.config import Config
from dpharness.bench.run.tasks import Summary

__all__ = ["RunError", "RunResult"]


class RunError(RuntimeError):
    """A usage problem that is not in the config itself (backend missing, wrong --resume folder,
    unusable --out, busy run folder, unreachable scheduler)."""


@dataclass(frozen=True)
class RunResult:
    """What :func:`run` returns (the same facts are in the run folder)."""

    run_dir: Path
    config: Config
    results: pd.DataFrame
    summary: Summary
    n_tasks: int
    computed: int
    reused: int
    errors: int
    wall_seconds: float
    exit_code: int
    workers: int = 1
    status: str = "complete"
    output_errors: dict = field(default_factory=dict)
    clipped_points: int | None = None
    parallelism_note: str | None = None


@dataclass
class _State:
    records: dict[str, dict]
    computed: int = 0
    compute_seconds: float = 0.0  # wall time of the compute phase of this invocation


def _one_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (for the manifest and one-line CLI errors)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
