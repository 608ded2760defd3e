"""Experiment kinds: each module of this package is one kind, named by its module name.

A config selects its kind with ``experiment: <module name>``; adding a kind is adding a module here
(listed in package order, no registration step and no discovery outside this package). The module
itself is the plugin: it satisfies :class:`ExperimentKind` (module-level functions), which
:func:`get` checks when it loads the kind.

Required functions::

    def parse(raw: dict, ctx: bench.config.Ctx) -> Spec          # frozen dataclass; errors via ctx
    def tasks(spec) -> list[bench.run.tasks.Task]                    # Task(key, params); unique keys
    def run_task(spec, task, rng: np.random.Generator) -> list[dict]   # in a worker; flat scalar rows
    def summarize(spec, results: pd.DataFrame) -> bench.run.tasks.Summary
    def plot(spec, results: pd.DataFrame, table: pd.DataFrame, fig_dir: pathlib.Path) -> list[pathlib.Path]

Optional, used when present (:data:`OPTIONAL_HOOKS`)::

    def check(spec) -> None          # checks too costly for parse (building every mechanism,
                                     # probing pairs); raises ConfigError. Run by `validate` and by
                                     # `run` before it creates a run folder.
    def outputs(spec, results, summary, run_dir) -> list[str]
                                     # extra files written into the run folder after table.csv
                                     # (paths relative to run_dir, listed in manifest.json)
    def describe_results(spec) -> dict
                                     # {"cell_columns": [...], "metric": "...", ...} for the
                                     # regression checker, written into manifest.json; or the
                                     # module attributes CELL_COLUMNS / METRIC instead

How the runner (:func:`bench.run.runner.run`) uses them: ``tasks`` once in the parent; ``run_task`` in
workers, once per task, with a generator keyed by the task key (so it must not depend on any other
state of the process); ``summarize``, ``plot`` and ``outputs`` once in the parent on the whole
``results.csv`` table -- which may hold ``status=error`` rows, even only those: an exception there
is recorded in ``manifest.json`` (``output_errors``) and the run exits 1, but the kind should
rather report missing cells in its summary text. ``run_task`` rows become ``results.csv`` rows; a
row column ``clipped`` (data points clipped to declared bounds) is summed into the manifest's
``clipped_points``.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

__all__ = ["available", "get", "ExperimentKind", "REQUIRED_FUNCTIONS", "OPTIONAL_HOOKS"]


@runtime_checkable
class ExperimentKind(Protocol):
    """The contract of a kind module (the required functions; optional hooks in the module doc)."""

    def parse(self, raw: dict, ctx: Any) -> Any: ...

    def tasks(self, spec: Any) -> list: ...

    def run_task(self, spec: Any, task: Any, rng: Any) -> list[dict]: ...

    def summarize(self, spec: Any, results: Any) -> Any: ...

    def plot(self, spec: Any, results: Any, table: Any, fig_dir: Path) -> list: ...


#: The functions every kind must define (the members of :class:`ExperimentKind`).
REQUIRED_FUNCTIONS = ("parse", "tasks", "run_task", "summarize", "plot")
#: Hooks a kind may define; the runner and ``validate`` call them when present.
OPTIONAL_HOOKS = ("check", "outputs", "describe_results")


def available() -> list[str]:
    """Sorted names of the experiment kinds (modules of this package not starting with ``_``)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


_LOADED: dict[str, ModuleType] = {}


def get(kind: str) -> ModuleType:
    """Import the kind module; ``ValueError`` listing the accepted kinds if it does not exist, or
    naming what it lacks if it does not satisfy :class:`ExperimentKind` (a required function
    missing, or an optional hook that is not callable)."""
    if kind in _LOADED:  # called once per task in workers: skip the directory scan
        return _LOADED[kind]
    if kind not in available():
        raise ValueError(f"unknown experiment kind {kind!r}; accepted: {', '.join(available())}")
    mod = importlib.import_module(f"{__name__}.{kind}")
    missing = [f for f in REQUIRED_FUNCTIONS if not callable(getattr(mod, f, None))]
    if missing:
        raise ValueError(f"experiment kind {kind!r} lacks {', '.join(missing)} (see bench.experiments.ExperimentKind)")
    bad = [h for h in OPTIONAL_HOOKS if hasattr(mod, h) and not callable(getattr(mod, h))]
    if bad:
        raise ValueError(f"experiment kind {kind!r}: {', '.join(bad)} must be a function")
    _LOADED[kind] = mod
    return mod
