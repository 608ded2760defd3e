"""Reading run folders for ``dpharness regress`` and matching their cells.

A run folder (written by :mod:`bench.run.runner`) holds ``results.csv`` (one tidy row per task, or per
dataset and cell), the resolved ``config.yaml`` and ``manifest.json``, whose ``cell_columns``,
``metric`` (``metric_scaled``), ``replicate_column``, ``se_column`` and ``lower_is_better`` say how
to read the results. Anything that makes a folder unusable -- missing, a file, not a run folder,
a truncated or corrupt file, an unfinished run, errored tasks -- raises
:class:`RegressionInputError` naming the folder and the file at fault.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import yaml

__all__ = [
    "RegressionInputError",
    "Run",
    "REQUIRED_FILES",
    "BASELINE_FILES",
    "IGNORED_CONFIG_KEYS",
    "load_run",
    "matching_hash",
    "check_comparable",
    "config_differences",
    "cell_label",
    "format_row",
    "by_cell",
    "can_pair",
]

#: Files a run folder must contain to be compared.
REQUIRED_FILES = ("results.csv", "config.yaml", "manifest.json")
#: Files ``--update-baseline`` copies (figures and regress outputs are not part of a baseline;
#: committed baselines stay small).
BASELINE_FILES = ("results.csv", "table.csv", "table.md", "config.yaml", "manifest.json")
#: Config keys that may differ between comparable runs: the root seed (different seeds of one
#: config must be comparable) and free text.
IGNORED_CONFIG_KEYS = ("seed", "description")
#: Manifest keys that tell the checker how to read results.csv (from the kind's describe_results).
_DESCRIBE_KEYS = ("cell_columns", "metric", "metric_scaled", "lower_is_better", "replicate_column", "se_column")


class RegressionInputError(ValueError):
    """The runs cannot be compared; the message says why (``dpharness regress`` exits 2)."""


@dataclass(frozen=True)
class Run:
    """A run folder read for comparison.

    Attributes
    ----------
    path : pathlib.Path
    results : pandas.DataFrame
        ``results.csv`` without the rows of cells that carry no metric (e.g. histogram rows).
    config : dict
        The resolved ``config.yaml``.
    manifest : dict
    cell_columns : tuple of str
        Columns whose combination identifies a cell.
    metric : str
        Numeric per-dataset column compared between runs (the manifest's ``metric_scaled`` when
        present, else ``metric``; the tests are scale-free, the scaled one reads like the table).
    match_hash : str
        Hash of the config without the root seed and the description (:func:`matching_hash`).
    lower_is_better : bool
        From the manifest (default True: an error).
    replicate_column : str or None
        Column numbering the replicates (datasets) of a cell, if the manifest names one.
    seed : int or None
        The root seed from ``config.yaml``.
    se_column : str or None
        For kinds that report one row per cell (a Monte Carlo mean of many independent draws) with
        its standard error: the column of that standard error.
    """

    path: Path
    results: pd.DataFrame = field(repr=False)
    config: dict = field(repr=False)
    manifest: dict = field(repr=False)
    cell_columns: tuple[str, ...]
    metric: str
    match_hash: str
    lower_is_better: bool = True
    replicate_column: str | None = None
    seed: int | None = None
    se_column: str | None = None


def matching_hash(config: dict) -> str:
    """Hash used to decide whether two runs come from the same config: :func:`bench.config.config_hash`
    of the resolved config without ``seed`` and ``description``, so that re-runs with a different
    root seed are comparable while any other change (grid, sizes, mechanisms, parameters) is not."""
    from dpharness.bench.config import config_hash

    return config_hash({k: v for k, v in config.items() if k not in IGNORED_CONFIG_KEYS})


def _describe_from_kind(config: dict, need_spec: bool) -> dict:
    """``cell_columns``/``metric``/... from the experiment kind, for manifests that lack them:
    module attributes (``CELL_COLUMNS, METRIC, SE_COLUMN, LOWER_IS_BETTER``), and, when
    ``need_spec``, ``describe_results(spec)`` of the config re-parsed."""
    from dpharness.bench import experiments

    try:
        mod = experiments.get(str(config.get("experiment", "median_accuracy")))
    except Exception:  # the manifest is what counts; this is only a fallback
        return {}
    out: dict = {}
    for attr, key in (("CELL_COLUMNS", "cell_columns"), ("METRIC", "metric"), ("SE_COLUMN", "se_column")):
        if getattr(mod, attr, None) is not None:
            out[key] = list(getattr(mod, attr)) if key == "cell_columns" else getattr(mod, attr)
    if isinstance(getattr(mod, "LOWER_IS_BETTER", None), bool):
        out["lower_is_better"] = mod.LOWER_IS_BETTER
    if need_spec and callable(getattr(mod, "describe_results", None)):
        try:
            from dpharness.bench.config import load_config

            out.update(mod.describe_results(load_config(dict(config)).spec))
        except Exception:  # same: a fallback for old manifests, never the reason to refuse
            pass
    return out


def _one_line(exc: BaseException) -> str:
    """An exception's text on one line (YAML and JSON errors span several)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        return f"line {exc.problem_mark.line + 1}: {exc.problem or exc.context}"
    return " ".join(str(exc).split())


def _run_folders_inside(p: Path) -> list[Path]:
    """Run folders directly inside ``p`` (``results/<name>/`` holds one per run), newest name last."""
    try:
        return sorted(c for c in p.iterdir() if c.is_dir() and (c / "manifest.json").is_file())
    except OSError:
        return []


def _check_folder(p: Path, role: str) -> None:
    where = f"{role} run folder {str(p)!r}"
    if not p.exists():
        raise RegressionInputError(f"{where} does not exist")
    if not p.is_dir():
        raise RegressionInputError(f"{where} is a file, not a folder; pass the run folder that holds "
                                   f"{', '.join(REQUIRED_FILES)}")
    missing = [f for f in REQUIRED_FILES if not (p / f).is_file()]
    if missing:
        inside = _run_folders_inside(p)
        hint = (f"; it holds run folders, e.g. {str(inside[-1])!r}: pass one of them" if inside else
                f"; a run folder written by `dpharness run` holds {', '.join(REQUIRED_FILES)}")
        raise RegressionInputError(f"{where} is not a run folder: it lacks {', '.join(missing)}{hint}")


def _read_text(p: Path, where: str) -> str:
    """A run file's text; unreadable or non-UTF-8 files are refused naming ``where``."""
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RegressionInputError(f"{where} is not UTF-8 text (corrupt file?)") from None
    except OSError as exc:
        raise RegressionInputError(f"{where} cannot be read ({exc.strerror or exc})") from None


def _read_mapping(p: Path, name: str, role: str) -> dict:
    where = f"{role} run {str(p.parent)!r}: {name}"
    text = _read_text(p, where)
    try:
        data = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise RegressionInputError(f"{where} is not valid JSON (truncated or corrupt?): {_one_line(exc)}") from None
    except yaml.YAMLError as exc:
        raise RegressionInputError(f"{where} is not valid YAML (truncated or corrupt?): {_one_line(exc)}") from None
    if not isinstance(data, dict):
        raise RegressionInputError(f"{where} must be a mapping, got {type(data).__name__} (truncated or corrupt?)")
    return data


def _read_results(p: Path, role: str) -> pd.DataFrame:
    """``results.csv``, refusing a truncated or corrupt file: not UTF-8, empty, an incomplete last
    line, or a row with another number of fields than the header."""
    where = f"{role} run {str(p.parent)!r}: results.csv"
    text = _read_text(p, where)
    if not text.strip():
        raise RegressionInputError(f"{where} is empty")
    if not text.endswith("\n"):
        # the runner writes the whole file atomically, always ending with a newline
        raise RegressionInputError(f"{where} is truncated (its last line is incomplete)")
    rows = csv.reader(io.StringIO(text))
    header = next(rows)
    for line, row in enumerate(rows, start=2):
        if row and len(row) != len(header):
            raise RegressionInputError(f"{where} is corrupt: line {line} has {len(row)} field(s), the header has {len(header)}")
    try:
        results = pd.read_csv(io.StringIO(text))
    except (ValueError, csv.Error) as exc:
        raise RegressionInputError(f"{where} is not readable CSV: {_one_line(exc)}") from None
    return results


def load_run(path: str | Path, role: str = "run") -> Run:
    """Read and check a run folder.

    Parameters
    ----------
    path
        The run folder (``results/<name>/<timestamp>_<hash>/``).
    role
        ``"new"`` or ``"baseline"``; used in messages.

    Raises
    ------
    RegressionInputError
        Naming the folder and what is missing or wrong.
    """
    p = Path(path)
    _check_folder(p, role)
    manifest = _read_mapping(p / "manifest.json", "manifest.json", role)
    config = _read_mapping(p / "config.yaml", "config.yaml", role)
    where = f"{role} run {str(path)!r}"
    if manifest.get("status", "complete") != "complete":
        raise RegressionInputError(
            f"{where} is not complete (manifest status {manifest.get('status')!r}); "
            "re-run the same command to resume it before comparing"
        )
    results = _read_results(p / "results.csv", role)
    if "audits" in config or manifest.get("experiment") == "audit":
        raise RegressionInputError(
            f"{where} is an audit run: regress compares the accuracy cells of experiment runs, and an audit "
            "has privacy verdicts, not an accuracy metric. Compare audits by their verdicts instead "
            "(`dpharness audit CONFIG --json PATH`, or the run's results.csv: epsilon_lower and violated per audit)")

    desc = {k: v for k, v in manifest.items() if k in _DESCRIBE_KEYS and v is not None}
    if not {"cell_columns", "metric", "se_column", "lower_is_better"} <= set(desc):
        # older manifests, or a kind whose module attributes the runner does not copy
        # (SE_COLUMN, LOWER_IS_BETTER); what the manifest states wins
        need_spec = not {"cell_columns", "metric"} <= set(desc)
        desc = {**_describe_from_kind(config, need_spec), **desc}
    if "cell_columns" not in desc or "metric" not in desc:
        raise RegressionInputError(
            f"{where}: manifest.json does not say which columns identify a cell and "
            "which column is the metric (keys 'cell_columns' and 'metric', written by the runner from "
            "the experiment kind)"
        )
    cells = desc["cell_columns"]
    metric = desc["metric"]
    if isinstance(cells, str) or not isinstance(cells, (list, tuple)) or not cells or not all(isinstance(c, str) for c in cells):
        raise RegressionInputError(f"{where}: manifest cell_columns must be a non-empty list of column names, got {cells!r}")
    if not isinstance(metric, str):
        raise RegressionInputError(f"{where}: manifest metric must be a column name, got {metric!r}")
    if isinstance(desc.get("metric_scaled"), str) and desc["metric_scaled"] in results.columns:
        metric = desc["metric_scaled"]
    lower_is_better = desc.get("lower_is_better", True)
    if not isinstance(lower_is_better, bool):
        raise RegressionInputError(f"{where}: manifest lower_is_better must be true or false, got {lower_is_better!r}")
    replicate = desc.get("replicate_column")
    replicate = replicate if isinstance(replicate, str) and replicate in results.columns else None
    se_col = desc.get("se_column")
    if se_col is not None and (not isinstance(se_col, str) or se_col not in results.columns):
        raise RegressionInputError(f"{where}: results.csv lacks the se_column {se_col!r} the manifest names")
    absent = [c for c in (*cells, metric) if c not in results.columns]
    if absent:
        raise RegressionInputError(
            f"{where}: results.csv lacks column(s) {', '.join(absent)} "
            f"(has: {', '.join(map(str, results.columns))})"
        )

    if "status" in results.columns:
        bad = results[results["status"].astype(str) != "ok"]
        if len(bad):
            first = ""
            if "message" in bad.columns and pd.notna(bad["message"].iloc[0]):
                first = f"; first: {' '.join(str(bad['message'].iloc[0]).split())[:200]}"
            raise RegressionInputError(
                f"{where} has {len(bad)} task(s) with status other than ok{first}; "
                "finish or fix the run (re-running the same command resumes it) before comparing"
            )
    metric_values = pd.to_numeric(results[metric], errors="coerce")
    # Rows of cells that do not carry the metric at all (e.g. a textbook kind's histogram rows) are
    # not compared; a cell with the metric in some rows only is an error below.
    keep = ~metric_values.isna().groupby([results[c] for c in cells], dropna=False, sort=False).transform("all")
    results, metric_values = results[keep], metric_values[keep]
    if metric_values.isna().any() or not np.isfinite(metric_values.to_numpy(dtype=float)).all():
        n_bad = int((metric_values.isna() | ~np.isfinite(metric_values.fillna(0).to_numpy(dtype=float))).sum())
        raise RegressionInputError(f"{where}: {n_bad} row(s) of results.csv have a missing or non-finite {metric}")
    if len(results) == 0:
        raise RegressionInputError(f"{where}: results.csv has no rows with a value of {metric}")
    results = results.assign(**{metric: metric_values.astype(float)})
    if se_col is not None:
        se_values = pd.to_numeric(results[se_col], errors="coerce")
        if se_values.isna().any() or (se_values < 0).any():
            raise RegressionInputError(f"{where}: {se_col} must be a number >= 0 in every compared row")
        results = results.assign(**{se_col: se_values.astype(float)})
    if replicate is None and results.duplicated(subset=list(cells)).any():
        raise RegressionInputError(
            f"{where}: results.csv has several rows per cell but the manifest names no "
            "replicate_column, so replicates cannot be told from different quantities (the experiment kind "
            "should declare replicate_column, or one row per cell with an se_column)"
        )
    if replicate is not None:
        dup = results.duplicated(subset=[*cells, replicate])
        if dup.any():
            raise RegressionInputError(
                f"{where}: results.csv has {int(dup.sum())} duplicate row(s) for the same cell and "
                f"{replicate}; expected one row per {replicate} and cell"
            )
    return Run(
        path=p,
        results=results,
        config=config,
        manifest=manifest,
        cell_columns=tuple(cells),
        metric=metric,
        match_hash=matching_hash(config),
        lower_is_better=lower_is_better,
        replicate_column=replicate,
        seed=config.get("seed") if isinstance(config.get("seed"), int) else None,
        se_column=se_col,
    )


def config_differences(a: dict, b: dict) -> list[str]:
    """Top-level keys (seed and description aside) whose values differ, with both values shown."""
    from dpharness.bench.config import config_hash

    out = []
    for k in sorted(set(a) | set(b)):
        if k in IGNORED_CONFIG_KEYS:
            continue
        if k not in a or k not in b:
            out.append(f"{k} ({'absent' if k not in a else 'set'} in new, {'absent' if k not in b else 'set'} in baseline)")
        elif config_hash({"_": a[k]}) != config_hash({"_": b[k]}):
            va, vb = json.dumps(a[k], default=str), json.dumps(b[k], default=str)
            if len(va) + len(vb) < 120:
                out.append(f"{k} (new {va}, baseline {vb})")
            else:
                out.append(k)
    return out


def check_comparable(new: Run, base: Run) -> None:
    """Raise :class:`RegressionInputError` unless the two runs come from the same config (root
    seed and description aside) and describe their cells alike."""
    if new.match_hash != base.match_hash:
        diffs = config_differences(new.config, base.config)
        raise RegressionInputError(
            "the runs come from different configs (the root seed may differ, nothing else may): "
            f"new {new.match_hash} vs baseline {base.match_hash}; differing key(s): {', '.join(diffs) or '?'}. "
            "Re-run the baseline's config, or record a deliberate change with --update-baseline"
        )
    if (new.cell_columns, new.metric, new.lower_is_better, new.se_column) != (
        base.cell_columns, base.metric, base.lower_is_better, base.se_column
    ):
        raise RegressionInputError(
            f"the runs describe their cells differently: new cell_columns={list(new.cell_columns)} "
            f"metric={new.metric!r}, baseline cell_columns={list(base.cell_columns)} metric={base.metric!r}"
        )


# --------------------------------------------------------------------------------------------
# Cells
# --------------------------------------------------------------------------------------------


def format_row(values: Sequence[Any]) -> list[str]:
    """Canonical text of cell values (:func:`bench.run.tasks.format_value`; NaN as empty)."""
    from dpharness.bench.run.tasks import format_value

    return [format_value(v) if not (isinstance(v, float) and math.isnan(v)) else "" for v in values]


def cell_label(cols: Sequence[str], values: Sequence[Any]) -> str:
    """``mechanism=Duff|epsilon=0.5`` (canonical number text, no escaping: for reading only)."""
    return "|".join(f"{c}={v}" for c, v in zip(cols, values))


def by_cell(
    df: pd.DataFrame, cols: Sequence[str], metric: str, replicate: str | None = None
) -> dict[str, tuple[tuple, np.ndarray, np.ndarray | None]]:
    """``{cell label: (cell values, metric values, replicate ids)}`` in order of first appearance;
    values sorted by replicate id when there is a replicate column."""
    out: dict[str, tuple[tuple, np.ndarray, np.ndarray | None]] = {}
    for values, g in df.groupby(list(cols), sort=False, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        ids = None
        if replicate is not None:
            g = g.sort_values(replicate, kind="stable")
            ids = g[replicate].astype(str).to_numpy()
        out[cell_label(cols, format_row(values))] = (values, g[metric].to_numpy(dtype=float), ids)
    return out


def can_pair(new: pd.DataFrame, base: pd.DataFrame, cell_columns: Sequence[str], replicate: str | None) -> bool:
    """True when every cell has the same replicate ids in both frames (pairs can be formed)."""
    if replicate is None or replicate not in new.columns or replicate not in base.columns:
        return False
    keyed_b = base.groupby(list(cell_columns), sort=False, dropna=False)[replicate].apply(lambda s: tuple(sorted(map(str, s))))
    keyed_n = new.groupby(list(cell_columns), sort=False, dropna=False)[replicate].apply(lambda s: tuple(sorted(map(str, s))))
    return bool(len(keyed_b) == len(keyed_n) and keyed_b.sort_index().equals(keyed_n.sort_index()))
