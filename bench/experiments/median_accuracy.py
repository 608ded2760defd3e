"""Accuracy of private medians and quantiles: ``experiment: median_accuracy`` (the default kind).

Protocol: for every data spec, ``datasets`` datasets are drawn (dataset i is shared by every
mechanism, epsilon and q: it comes from a stream keyed by the data identity); for every mechanism,
epsilon (and q) one task takes ``draws`` samples ``mech.sample(x, size=draws, rng)`` and reports
that dataset's mean error (``metric``) against the truth. The truth is the order statistic of the
data *clipped to [lower, upper]* (the Duff convention); outputs are clipped to the same range when
``clip_output`` (default true). Each results row counts the data points that were clipped
(column ``clipped``); data lying entirely outside the range is refused as a config error (see
:meth:`bench.config.data.DataSpec.outside`). The table has one row per cell (data, n, q, mechanism, epsilon):
``mean`` = mean over datasets of the per-dataset mean error, ``std`` = their standard deviation
across datasets, ``se = std / sqrt(datasets)``, all multiplied by ``scale`` (column suffix
``_x100`` for the default scale 100).

This module is the kind's interface; the config dataclasses and parser live in ``_median_spec.py``,
the comparison with the published values and the printed text in ``_median_report.py``.

Config keys (``configs/duff_table1.yaml`` is the annotated example)::

    data:         see bench.config.data (generator / dataset+column / csv; lists expand into grids)
    statistic:    median (default) | quantile
    q:            quantile level(s) in (0, 1), only with statistic: quantile
    truth:        lower (default; x_(ceil(q n))) | upper (x_(floor(q n) + 1)) | average (of both)
    lower, upper: output range [lower, upper] given to every mechanism (data clipped to it)
    clip_output:  clip every output to [lower, upper] before measuring (default true)
    epsilon:      number or list (the epsilon grid; mechanisms get epsilon from here)
    datasets:     datasets per cell;  draws: samples per dataset
    metric:       abs_error (default, mean |output - truth|) | sq_error (mean squared error)
    scale:        multiply table values by this (default 100: "x100" columns)
    title:        heading of the terminal table and figure
    mechanisms:   list of {label, name: <registry name>, <parameters>}; a list-valued parameter
                  expands into one mechanism per value ("{param}" in the label is replaced)
    reference:    published values to compare with, and the tolerance rule (below)

``reference``::

    source: "where the numbers come from"
    tolerance: {abs: 0.1, se: 3, rel: 0.10}   # |ours - paper| <= max(abs, se*SE + rel*|paper|)
    rows:
      - mechanism: <label>
        mean: {0.5: 64.3, 1: 22.6, 2: 7.9}    # epsilon -> published mean, in table units (x scale)
        std:  {0.5: 17.4, 1: 10.8, 2: 5.3}    # optional published std across datasets
        tolerance: {rel: 0.30}                # optional per-row override of any tolerance part
        note: "printed under the table"
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpharness.bench.run.tasks import Summary, Task, data_rng, format_value, make_key

# The config (dataclasses, parser) and the report text live in private helpers; the config names
# are re-exported here because this module is the kind's interface.
from dpharness.bench.experiments._median_spec import METRIC_TEXT, METRICS, MechSpec, RefRow, Reference, Spec, parse
from dpharness.bench.experiments._median_report import compare_with_reference, hidden_columns, report_text

__all__ = ["MechSpec", "RefRow", "Reference", "Spec", "parse", "tasks", "run_task", "summarize", "plot", "describe_results"]


# -- tasks --------------------------------------------------------------------------------------


def _q_key(spec: Spec) -> bool:
    return spec.statistic == "quantile"


def tasks(spec: Spec) -> list[Task]:
    """One task per (data, q, mechanism, epsilon, dataset), in config order."""
    out = []
    for d in spec.data:
        n = d.size()
        for q in spec.q:
            for m in spec.mechanisms:
                for eps in spec.epsilon:
                    for i in range(spec.datasets):
                        parts: dict[str, Any] = {"data": d.label, "n": n}
                        if _q_key(spec):
                            parts["q"] = q
                        parts.update(mechanism=m.label, epsilon=eps, dataset=i)
                        params = dict(parts, name=m.name, **{k: v for k, v in m.params})
                        out.append(Task(make_key(**parts), params))
    return out


def order_statistic_truth(clipped: np.ndarray, q: float, truth: str) -> float:
    """The truth convention on sorted-or-not data: ``lower`` x_(ceil(q n)), ``upper`` x_(floor(q n)+1),
    ``average`` their mean (1-based order statistics, clamped to [1, n]; q n computed exactly)."""
    n = clipped.size
    qn = Fraction(repr(float(q))) * n
    lo = min(max(math.ceil(qn), 1), n)
    hi = min(max(math.floor(qn) + 1, 1), n)
    if truth == "lower":
        return float(np.partition(clipped, lo - 1)[lo - 1])
    if truth == "upper":
        return float(np.partition(clipped, hi - 1)[hi - 1])
    part = np.partition(clipped, sorted({lo - 1, hi - 1}))
    return 0.5 * (float(part[lo - 1]) + float(part[hi - 1]))


def run_task(spec: Spec, task: Task, rng: np.random.Generator) -> list[dict]:
    """Draw ``draws`` outputs on dataset ``task.params['dataset']`` and report the mean error."""
    p = task.params
    d = spec.data_spec(p["data"], int(p["n"]))
    x = d.generate(data_rng(spec.seed, d.data_key(int(p["dataset"]))))
    q = float(p.get("q", 0.5))
    lower, upper = spec.bounds(d)
    # Points outside [lower, upper] are clipped (the Duff convention); counted, so runs report it.
    clipped = int(np.count_nonzero((x < lower) | (x > upper)))
    truth = order_statistic_truth(np.clip(x, lower, upper), q, spec.truth)
    mech = spec.mech(p["mechanism"]).build(spec, p["epsilon"], q, (lower, upper))
    out = np.asarray(mech.sample(x, size=spec.draws, rng=rng), dtype=np.float64).reshape(-1)
    if out.size != spec.draws:
        raise ValueError(f"{mech.name}.sample returned {out.size} values for size={spec.draws}")
    if spec.clip_output:
        out = np.clip(out, lower, upper)
    err = out - truth
    value = float(np.mean(np.abs(err))) if spec.metric == "abs_error" else float(np.mean(err * err))
    col = METRICS[spec.metric]
    row: dict[str, Any] = {"data": p["data"], "n": int(p["n"])}
    if _q_key(spec):
        row["q"] = q
    row.update(mechanism=p["mechanism"], epsilon=float(p["epsilon"]), dataset=int(p["dataset"]), truth=truth)
    row[col] = value
    row[col + spec.suffix] = value * spec.scale
    row["mean_output"] = float(np.mean(out))
    row["clipped"] = clipped
    return [row]


def cell_columns(spec: Spec) -> list[str]:
    """Columns of results.csv that identify a cell (the per-dataset rows of a cell are replicates)."""
    return ["data", "n"] + (["q"] if _q_key(spec) else []) + ["mechanism", "epsilon"]


def describe_results(spec: Spec) -> dict[str, Any]:
    """For manifest.json and the regression checker: how to read results.csv."""
    return {
        "cell_columns": cell_columns(spec),
        "replicate_column": "dataset",
        "metric": METRICS[spec.metric],
        "metric_scaled": METRICS[spec.metric] + spec.suffix,
        "scale": spec.scale,
        "lower_is_better": True,
        "table_columns": {"mean": "mean" + spec.suffix, "std": "std" + spec.suffix, "se": "se" + spec.suffix},
    }


# -- summary ------------------------------------------------------------------------------------


def summarize(spec: Spec, results: pd.DataFrame) -> Summary:
    """Aggregate per-dataset errors into the table; compare with the reference values if any."""
    sfx = spec.suffix
    mcol = METRICS[spec.metric] + sfx
    ok_rows = results[results["status"] == "ok"] if "status" in results else results
    keys = cell_columns(spec)
    # Config order of the cells (results are already in task order; this keeps it explicit).
    order = []
    for d in spec.data:
        for q in spec.q:
            for m in spec.mechanisms:
                for e in spec.epsilon:
                    order.append((d.label, d.size(), *((q,) if _q_key(spec) else ()), m.label, e))
    records = []
    grouped = {k: g for k, g in ok_rows.groupby(keys, sort=False)} if len(ok_rows) else {}
    for cell in order:
        g = grouped.get(tuple(cell))
        vals = np.asarray(g[mcol], dtype=np.float64) if g is not None else np.empty(0)
        k = vals.size
        mean = float(np.mean(vals)) if k else math.nan
        std = float(np.std(vals, ddof=1)) if k > 1 else math.nan
        rec = dict(zip(keys, cell))
        rec.update({"mean" + sfx: mean, "std" + sfx: std, "se" + sfx: std / math.sqrt(k) if k > 1 else math.nan, "_k": k})
        records.append(rec)
    table = pd.DataFrame.from_records(records)
    ok = compare_with_reference(spec, table)
    text = report_text(spec, table)
    public = table[[c for c in table.columns if not c.startswith("_") and c not in hidden_columns(spec)]]
    return Summary(public.reset_index(drop=True), text, ok)


# -- figures ------------------------------------------------------------------------------------


def _n_is_axis(spec: Spec) -> bool:
    """n is a swept axis (not just each real column's own size) when one data label has several n."""
    sizes: dict[str, set] = {}
    for d in spec.data:
        sizes.setdefault(d.label, set()).add(d.size())
    return any(len(v) > 1 for v in sizes.values())


def plot(spec: Spec, results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    """error vs epsilon (log y, ±SE bars, paper values as hollow diamonds just right of ours), one
    figure per facet combination; plus error vs n when n varies and error vs q when q varies."""
    from dpharness.bench.report import plots

    sfx = spec.suffix
    facets = [f for f in ("data", "n", "q") if f in table.columns and (f != "n" or _n_is_axis(spec))]
    ylabel = f"{METRIC_TEXT[spec.metric]}{' × ' + format_value(spec.scale) if spec.scale != 1 else ''} (bars: ±1 SE)"
    paths = []
    groups = [((), table)] if not facets else list(table.groupby(facets, sort=False))
    for key, sub in groups:
        key = key if isinstance(key, tuple) else (key,)
        tag = ", ".join(f"{f}={format_value(v)}" for f, v in zip(facets, key))
        name = "error_vs_epsilon" + ("_" + plots.slug("_".join(format_value(v) for v in key)) if key else "")
        title = _figure_title(spec, "error vs ε" if tag else "", tag)
        paths.append(plots.line_plot(
            sub, x="epsilon", y="mean" + sfx, err="se" + sfx, series="mechanism",
            ref=("paper_mean" + sfx) if ("paper_mean" + sfx) in sub else None,
            xlabel="ε", ylabel=ylabel, title=title, path=fig_dir / f"{name}.png", logx=True, logy=True,
        ))
    for axis in ("n", "q"):
        if axis in facets:
            others = [f for f in facets if f != axis]
            sub_groups = [((), table)] if not others else list(table.groupby(others, sort=False))
            for key, sub in sub_groups:
                key = key if isinstance(key, tuple) else (key,)
                name = f"error_vs_{axis}" + ("_" + plots.slug("_".join(format_value(v) for v in key)) if key else "")
                paths.append(plots.panel_plot(
                    sub, x=axis, y="mean" + sfx, err="se" + sfx, series="mechanism", panel="epsilon",
                    xlabel=axis, ylabel=ylabel, panel_label="ε",
                    title=_figure_title(spec, f"error vs {axis}", ", ".join(f"{f}={format_value(v)}" for f, v in zip(others, key))),
                    path=fig_dir / f"{name}.png", logx=axis == "n", logy=True,
                ))
    return paths


def _figure_title(spec: Spec, drawn: str, tag: str) -> str:
    """The config's title, then a line with what this figure draws (left out when the title
    already says it, so that "error vs n" is never printed twice) and its fixed facets."""
    head = spec.title or "private median accuracy"
    if drawn and drawn.split(" vs ")[-1] and re.search(r"\bvs\.? " + re.escape(drawn.split(" vs ")[-1]) + r"\b", head):
        drawn = ""
    second = ", ".join(p for p in (drawn, tag) if p)
    return head + (f"\n{second}" if second else "")
