"""Experiment kinds: each module of this package is one kind, named by its module name.

A kind module defines (see the team brief, "Experiment plugin interface")::

    def parse(raw: dict, ctx: bench.config.Ctx) -> Spec          # frozen dataclass; errors via ctx
    def tasks(spec) -> list[bench.tasks.Task]                    # Task(key, params)
    def run_task(spec, task, rng: np.random.Generator) -> list[dict]   # in a worker; flat scalar rows
    def summarize(spec, results: pd.DataFrame) -> bench.tasks.Summary
    def plot(spec, results: pd.DataFrame, table: pd.DataFrame, fig_dir: pathlib.Path) -> list[pathlib.Path]

Optional: ``CELL_COLUMNS`` / ``METRIC`` module attributes or a ``describe_results(spec) -> dict``
function returning ``{"cell_columns": [...], "metric": "..."}`` for the regression checker
(written into ``manifest.json``), and two hooks::

    def check(spec) -> None          # checks too costly for parse (building every mechanism,
                                     # probing pairs); raises ConfigError. Run by `validate` and
                                     # before `run` creates a run folder.
    def outputs(spec, results, summary, run_dir) -> list[str]
                                     # extra files written into the run folder after table.csv
                                     # (paths relative to run_dir, listed in manifest.json)

A config selects its kind with ``experiment: <module name>``; adding a kind is adding a module here
(listed in package order, no registration step and no discovery outside this package).
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

__all__ = ["available", "get", "REQUIRED_FUNCTIONS"]

REQUIRED_FUNCTIONS = ("parse", "tasks", "run_task", "summarize", "plot")


def available() -> list[str]:
    """Sorted names of the experiment kinds (modules of this package not starting with ``_``)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


_LOADED: dict[str, ModuleType] = {}


def get(kind: str) -> ModuleType:
    """Import the kind module; ``ValueError`` listing the accepted kinds if it does not exist."""
    if kind in _LOADED:  # called once per task in workers: skip the directory scan
        return _LOADED[kind]
    if kind not in available():
        raise ValueError(f"unknown experiment kind {kind!r}; accepted: {', '.join(available())}")
    mod = importlib.import_module(f"{__name__}.{kind}")
    missing = [f for f in REQUIRED_FUNCTIONS if not callable(getattr(mod, f, None))]
    if missing:
        raise ValueError(f"experiment kind {kind!r} lacks {', '.join(missing)}")
    _LOADED[kind] = mod
    return mod
