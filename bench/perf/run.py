"""Run a :class:`.plan.Plan`: every section in turn, then the figure and the JSON document.

The output paths are checked *before* anything is timed (a benchmark that cannot save its
results is refused with a :class:`.plan.BenchInputError`), and the JSON is written atomically (a
temporary file renamed into place), so a failed or interrupted run leaves no half-written file.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import numpy as np

from dpharness.bench.report import progress as _progress
from dpharness.bench.perf.plan import BenchInputError, Plan
from dpharness.bench.perf.report import PEER_HINT_NOTE, median_goal
from dpharness.bench import schemas
from dpharness.bench.run.folders import atomic_write_text
from dpharness.bench.report.provenance import command_line
from dpharness.bench.report.verdicts import jsonable, run_manifest, verdict_block
from dpharness.bench.perf.gate import DEFAULT_ALPHA, DEFAULT_TOLERANCE, compare
from dpharness.bench.perf.rows import ROW_FIELDS, SCHEMA, Report

__all__ = ["default_json", "figure_path", "output_paths", "planned_steps", "run_bench", "run_bench_to"]

#: section -> (module, function); imported when the section runs, so that checking the options
#: (``output_paths`` and the plan) loads no section, scipy or peer library
_SECTIONS: dict[str, Any] = {
    "median": ("medians", "bench_medians"), "finite": ("finite", "bench_finite"), "table1": ("table1", "bench_table1"),
    "verifier": ("verifier", "bench_verifier"), "draws": ("draws", "bench_draws"),
}


def _section(name: str) -> Callable[[Plan, Report], None]:
    import importlib

    entry = _SECTIONS[name]
    if callable(entry):  # a section function put in the table directly (tests record rows this way)
        return entry
    module, fn = entry
    return getattr(importlib.import_module(f"dpharness.bench.perf.{module}"), fn)


def default_json(quick: bool) -> pathlib.Path:
    """``results/perf/bench_<UTC stamp>[_quick].json``, relative to the working directory (like
    the runner's default ``results/`` folder)."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return pathlib.Path("results") / "perf" / f"bench_{stamp}{'_quick' if quick else ''}.json"


def figure_path(json_path: pathlib.Path) -> pathlib.Path:
    """The scaling figure goes next to the JSON: ``<stem>_scaling.png``."""
    return json_path.with_name(json_path.stem + "_scaling.png")


def _probe_folder(folder: pathlib.Path, what: str) -> None:
    """Create and remove a file in ``folder``: the only honest writability test (root ignores
    permission bits, read-only mounts ignore them the other way)."""
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".dpharness-bench-", suffix=".probe")
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise BenchInputError(f"{what}: cannot write in the folder {folder}: {exc.strerror or exc}") from None


def output_paths(json_path: str | os.PathLike[str] | None, quick: bool = False,
                 what: str = "json_path") -> tuple[pathlib.Path, pathlib.Path]:
    """(JSON path, figure path) for ``json_path``, checked writable without writing them.

    An explicit path must name a file (not a folder) in an existing, writable folder; the
    default path's folders are created when the results are written. ``what`` names the
    argument in the error message (``--json`` on the command line).
    """
    if json_path is None:
        path = default_json(quick)
        ancestor = path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise BenchInputError(f"{what}: the default output folder {path.parent} cannot be created: "
                                  f"{ancestor} is not a folder; give a path with --json")
        _probe_folder(ancestor, what)
        return path, figure_path(path)
    if not str(json_path).strip():
        raise BenchInputError(f"{what}: empty path; give a file path such as results/perf/bench.json")
    path = pathlib.Path(json_path)
    if path.is_dir():
        raise BenchInputError(f"{what}: {path} is a folder; give a file path such as {path / 'bench.json'}")
    if path.exists() and not path.is_file():
        raise BenchInputError(f"{what}: {path} exists and is not a regular file")
    parent = path.parent
    if not parent.exists():
        raise BenchInputError(f"{what}: the folder {parent} does not exist; create it first or choose another path")
    if not parent.is_dir():
        raise BenchInputError(f"{what}: {parent} is not a folder")
    if path.exists() and not os.access(path, os.W_OK):
        raise BenchInputError(f"{what}: {path} is not writable")
    _probe_folder(parent, what)
    png = figure_path(path)
    if png.exists() and not png.is_file():
        raise BenchInputError(f"{what}: the figure would go to {png}, which is not a regular file")
    return path, png


def planned_steps(plan: Plan) -> dict[str, int]:
    """Progress units per section: one per n (median), k (finite), mechanism x samples
    (verifier), one for Table 1."""
    steps = {"median": len(plan.median_ns), "finite": len(plan.finite_ks), "table1": 1,
             "verifier": len(plan.verifier_mechanisms) * len(plan.verifier_samples), "draws": 1}
    return {s: steps[s] for s in plan.sections}


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def _write_atomically(path: pathlib.Path, text: str) -> None:
    """The harness's one atomic writer (:func:`bench.run.folders.atomic_write_text`), folder created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)


def run_bench(plan: Plan, json_path: str | os.PathLike[str] | None = None,
              log: Callable[[str], None] | None = None, progress: bool = False) -> dict[str, Any]:
    """Run every section of ``plan``; write the JSON and the figure; return the JSON document.

    Nothing is printed: ``log`` (if given) receives one result line per measured step as soon
    as it is known, and ``progress=True`` shows the one progress display of the harness on
    stderr. Raises :class:`.plan.BenchInputError` before timing anything when ``json_path``
    cannot be written (see :func:`output_paths`; ``None`` means the default path).
    """
    return run_bench_to(plan, output_paths(json_path, plan.quick), log=log, progress=progress)


def run_bench_to(plan: Plan, paths: tuple[pathlib.Path, pathlib.Path],
                 log: Callable[[str], None] | None = None, progress: bool = False,
                 baseline: dict[str, Any] | None = None, baseline_path: str = "",
                 tolerance: float = DEFAULT_TOLERANCE, alpha: float = DEFAULT_ALPHA) -> dict[str, Any]:
    """:func:`run_bench` writing to ``paths`` = (JSON, figure) as returned by :func:`output_paths`.

    With ``baseline`` (an earlier document, :func:`.gate.load_baseline`) the performance gate
    (:func:`.gate.compare`) is applied and recorded as ``gate``; the document's ``verdict`` says
    whether it passed (exit code 1 on a significant slowdown, else 0)."""
    path, fig_path = paths
    t0 = time.perf_counter()
    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    from dpharness.bench.perf.environment import environment, load_average
    from dpharness.bench.perf.figure import plot_scaling

    env = environment()
    steps = planned_steps(plan)
    bar = _progress.progress(sum(steps.values()), desc="bench", unit="step", enabled=progress)

    def result_line(msg: str) -> None:
        if log is not None:
            with type(bar).external_write_mode(file=sys.stdout):  # keep the bar intact
                log(msg)

    def step(desc: str) -> None:
        bar.set_postfix_str(desc, refresh=False)
        bar.update(1)

    report = Report(on_result=result_line, on_step=step)
    section_seconds: dict[str, float] = {}
    with bar:
        done = 0
        for sec in plan.sections:
            ts = time.perf_counter()
            _section(sec)(plan, report)
            section_seconds[sec] = time.perf_counter() - ts
            done += steps[sec]
            if bar.n < done:  # steps of skipped work
                bar.update(done - bar.n)
    env["load_average_end"] = load_average()
    path.parent.mkdir(parents=True, exist_ok=True)  # the default results/perf/ folder
    try:
        fig = plot_scaling(report.rows, fig_path)
    except Exception as exc:  # a plotting failure must not lose the measurements
        fig = None
        report.notes.append(f"figure failed: {type(exc).__name__}: {exc}")
    if any(s["name"].startswith(("diffprivlib", "opendp", "pydp")) for s in report.skipped):
        report.notes.append(PEER_HINT_NOTE)
    doc = {
        "schema": SCHEMA,
        "created": started,
        "command": command_line(empty=None),
        "quick": plan.quick,
        "plan": asdict(plan),
        "environment": env,
        "fields": list(ROW_FIELDS),
        "rows": report.rows,
        "skipped": report.skipped,
        "notes": report.notes,
        "figure": str(fig) if fig else None,
        "median_goal": median_goal(report.rows),
        "section_seconds": section_seconds,
        "wall_seconds": time.perf_counter() - t0,
    }
    gate = None
    if baseline is not None:
        gate = compare(doc, baseline, tolerance=tolerance, alpha=alpha, baseline_path=baseline_path)
    code = 0 if gate is None or gate["passed"] else 1
    doc["gate"] = gate
    doc["verdict"] = verdict_block(code, gate["message"] if gate else "measured (no --baseline: nothing is gated)")
    doc["manifest"] = run_manifest({"wall_seconds": doc["wall_seconds"]})
    doc = jsonable(json.loads(json.dumps(doc, default=_json_default)))
    schemas.check(doc, "bench")
    _write_atomically(path, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    return doc
