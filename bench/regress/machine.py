"""``dpharness regress --json PATH`` / ``--junit PATH``: the verdict as ``dpharness.regress/1`` JSON and
as JUnit XML (one test case per cell; a regression is a failure carrying the cell's numbers).

Built from a :class:`~bench.regress.report.RegressionReport`, so the files say exactly what the
printed table says. Schema: ``bench/schemas/regress.json``; fields in docs/outputs.md.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from dpharness.bench.report.verdicts import JUnitCase, run_manifest, verdict_block, write_json, write_junit
from dpharness.bench.regress.report import RegressionReport

__all__ = ["SCHEMA", "regress_document", "regress_junit_cases", "write_regress_outputs"]

SCHEMA = "dpharness.regress/1"

#: numeric fields of each cell, as computed by :func:`bench.regress.compare_cells`
CELL_NUMBERS = ("baseline", "new", "change_pct", "p_value", "baseline_se", "new_se", "n_baseline", "n_new",
                "t_worse", "df_worse", "p_worse", "p_worse_holm", "p_better", "p_better_holm", "detectable_pct")


def _manifest_of(run_dir: str) -> dict[str, Any] | None:
    try:
        m = json.loads((Path(run_dir) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return m if isinstance(m, dict) else None


def _cells(report: RegressionReport) -> list[dict[str, Any]]:
    c = report.cells
    if not len(c):
        return []
    short = report.short_labels()
    cols = [col for col in report.cell_columns if col in c.columns]
    out = []
    for i, (_, r) in enumerate(c.iterrows()):
        row = {"cell": str(r["cell"]), "label": short[i], "values": {col: r[col] for col in cols},
               "verdict": str(r["verdict"]), "test": str(r["test"])}
        row.update({k: r[k] for k in CELL_NUMBERS})
        out.append(row)
    return out


def regress_document(report: RegressionReport, exit_code: int, *, baseline_updated: bool = False) -> dict[str, Any]:
    """The ``dpharness.regress/1`` document of ``report`` (``exit_code``: what the command returns)."""
    c = report.cells
    n_reg = int((c["verdict"] == "regression").sum()) if len(c) else 0
    n_imp = int((c["verdict"] == "improvement").sum()) if len(c) else 0
    return {
        "schema": SCHEMA,
        "verdict": verdict_block(exit_code, report.message, comparable=report.exit_code != 2, cells=len(c),
                                 regressions=n_reg, improvements=n_imp, baseline_updated=baseline_updated),
        "new_run": report.new_dir,
        "baseline_run": report.baseline_dir,
        "alpha": report.alpha,
        "tolerance": report.tolerance,
        "metric": report.metric or None,
        "lower_is_better": report.lower_is_better,
        "paired": report.paired,
        "cell_columns": list(report.cell_columns),
        "cells": _cells(report),
        "runs": {"new": _manifest_of(report.new_dir), "baseline": _manifest_of(report.baseline_dir)},
        "manifest": run_manifest(),
    }


def _fmt(x: Any, spec: str = ".4g") -> str:
    return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def regress_junit_cases(report: RegressionReport) -> list[JUnitCase]:
    """One test case per cell (failure = significant regression); one errored case when the runs
    could not be compared."""
    suite = Path(report.baseline_dir).name or "regress"
    if report.exit_code == 2 or not len(report.cells):
        return [JUnitCase(name="compare runs", classname=f"dpharness.regress.{suite}", error=report.message,
                          detail=f"{report.new_dir} vs {report.baseline_dir}: {report.message}")]
    cases = []
    worse = (f"new > (1 + {report.tolerance:g}) x baseline" if report.lower_is_better
             else f"new < (1 - {report.tolerance:g}) x baseline")
    for doc in _cells(report):
        text = (f"{report.metric}: new {_fmt(doc['new'])} ± {_fmt(doc['new_se'], '.2g')} vs baseline "
                f"{_fmt(doc['baseline'])} ± {_fmt(doc['baseline_se'], '.2g')} ({_fmt(doc['change_pct'], '+.1f')}%); "
                f"{doc['test']} of {worse}: p = {_fmt(doc['p_worse'], '.3g')}, Holm-adjusted "
                f"{_fmt(doc['p_worse_holm'], '.3g')} (alpha {report.alpha:g}); n = {doc['n_new']} new, "
                f"{doc['n_baseline']} baseline; detectable {_fmt(doc['detectable_pct'], '.0f')}%")
        fail = doc["verdict"] == "regression"
        cases.append(JUnitCase(
            name=doc["cell"], classname=f"dpharness.regress.{suite}",
            failure=f"REGRESSION: {text}" if fail else None,
            detail=f"{doc['verdict']}: {text}\nnew run: {report.new_dir}\nbaseline: {report.baseline_dir}",
            properties={"verdict": doc["verdict"], "change_pct": _fmt(doc["change_pct"], ".3g"),
                        "p_value": _fmt(doc["p_value"], ".3g")}))
    return cases


def write_regress_outputs(report: RegressionReport, exit_code: int, json_path: Path | None,
                          junit_path: Path | None, *, baseline_updated: bool = False) -> list[Path]:
    """Write the requested files (each atomically); returns the paths written."""
    written = []
    if json_path is not None:
        write_json(json_path, regress_document(report, exit_code, baseline_updated=baseline_updated), "regress")
        written.append(json_path)
    if junit_path is not None:
        write_junit(junit_path, f"dpharness regress {Path(report.baseline_dir).name}", regress_junit_cases(report),
                    properties={"new_run": report.new_dir, "baseline_run": report.baseline_dir,
                                "alpha": report.alpha, "tolerance": report.tolerance})
        written.append(junit_path)
    return written

