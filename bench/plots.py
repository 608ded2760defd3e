"""Figures: plain functions of a results/summary table (Agg backend), and ``dpharness plot RUN_DIR``.

Plots are rebuilt from ``results.csv`` alone (plus the run's resolved ``config.yaml``), so a figure
can always be regenerated or restyled without rerunning anything.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["slug", "line_plot", "panel_plot", "rebuild_figures", "cmd_plot"]


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def slug(text: str) -> str:
    """File-name-safe version of ``text``."""
    s = re.sub(r"[^A-Za-z0-9.=-]+", "_", str(text)).strip("_")
    return s or "x"


def _wrap(title: str, width: int = 70) -> str:
    import textwrap

    return "\n".join(textwrap.fill(part, width) for part in title.split("\n"))


def _series(ax: Any, sub: pd.DataFrame, x: str, y: str, err: str | None, ref: str | None, label: str, color: Any,
            logy: bool) -> None:
    sub = sub.sort_values(x)
    xs = sub[x].to_numpy(dtype=float)
    ys = sub[y].to_numpy(dtype=float)
    es = sub[err].to_numpy(dtype=float) if err and err in sub else None
    if es is not None and logy:
        # Keep the lower bar positive on a log axis (a bar reaching <= 0 would vanish).
        lo = [min(e, 0.999 * v) if math.isfinite(e) else 0.0 for v, e in zip(ys, es)]
        hi = [e if math.isfinite(e) else 0.0 for e in es]
        yerr: Any = [lo, hi]
    else:
        yerr = es
    ax.errorbar(xs, ys, yerr=yerr, marker="o", ms=4, capsize=3, lw=1.5, color=color, label=label)
    if ref and ref in sub and sub[ref].notna().any():
        ax.plot(xs, sub[ref].to_numpy(dtype=float), ls="none", marker="D", ms=8, mfc="none", mew=1.5, color=color)


def _finish(ax: Any, xlabel: str, ylabel: str, logx: bool, logy: bool, xs: list[float], ys: Any = None) -> None:
    if logx:
        ax.set_xscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{v:g}" for v in xs])
        ax.minorticks_off()
    if logy:
        pos = [float(v) for v in (ys if ys is not None else []) if math.isfinite(float(v)) and float(v) > 0]
        if ys is not None and len(pos) < sum(1 for v in ys if math.isfinite(float(v))):
            # Exact zeros (e.g. a discrete output that always hits the truth) would vanish on a log
            # axis: use symlog, linear below the smallest positive value, so they stay visible.
            ax.set_yscale("symlog", linthresh=min(pos) if pos else 1.0)
            top = max(pos) if pos else 1.0
            ax.set_ylim(0, top * 2.0)  # errors are >= 0: no negative half
            ylabel += " [symlog: 0 shown]"
        else:
            ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)


def line_plot(table: pd.DataFrame, *, x: str, y: str, err: str | None, series: str, ref: str | None,
              xlabel: str, ylabel: str, title: str, path: Path, logx: bool = False, logy: bool = False) -> Path:
    """One line per ``series`` value of ``y`` against ``x`` with ±``err`` bars; ``ref`` values
    (e.g. a paper's) as hollow diamonds in the same colour. Saves a PNG and returns its path."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (lab, sub) in enumerate(table.groupby(series, sort=False)):
        _series(ax, sub, x, y, err, ref, str(lab), colors[i % len(colors)], logy)
    if ref and ref in table and table[ref].notna().any():
        ax.plot([], [], ls="none", marker="D", ms=8, mfc="none", mew=1.5, color="grey", label="paper (published)")
    _finish(ax, xlabel, ylabel, logx, logy, sorted(table[x].astype(float).unique()), table[y])
    ax.set_title(_wrap(title), fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def panel_plot(table: pd.DataFrame, *, x: str, y: str, err: str | None, series: str, panel: str, xlabel: str,
               ylabel: str, title: str, path: Path, logx: bool = False, logy: bool = False) -> Path:
    """Like :func:`line_plot` with one panel per value of ``panel`` (shared y axis)."""
    plt = _plt()
    panels = list(dict.fromkeys(table[panel]))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 1, 4.5), sharey=True, squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    labels = list(dict.fromkeys(table[series]))
    for ax, pv in zip(axes[0], panels):
        sub = table[table[panel] == pv]
        for lab, s in sub.groupby(series, sort=False):
            _series(ax, s, x, y, err, None, str(lab), colors[labels.index(lab) % len(colors)], logy)
        _finish(ax, xlabel, ylabel if ax is axes[0][0] else "", logx, logy, sorted(sub[x].astype(float).unique()), table[y])
        ax.set_title(f"{panel} = {pv:g}" if isinstance(pv, float) else f"{panel} = {pv}")
    axes[0][-1].legend(fontsize=8)
    fig.suptitle(_wrap(title, 110), fontsize=11)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def rebuild_figures(run_dir: Path) -> list[Path]:
    """Recompute the summary from ``results.csv`` and redraw ``figures/``."""
    from .results import load_run_config

    run_dir = Path(run_dir)
    cfg = load_run_config(run_dir)
    results = pd.read_csv(run_dir / "results.csv", keep_default_na=False, na_values=[""])
    summary = cfg.module.summarize(cfg.spec, results)
    fig_dir = run_dir / "figures"
    fig_dir.mkdir(exist_ok=True)
    return list(cfg.module.plot(cfg.spec, results, summary.table, fig_dir))


def cmd_plot(args: argparse.Namespace) -> int:
    """``dpharness plot RUN_DIR``: rebuild a run's figures from its results.csv."""
    from .config import ConfigError

    run_dir = Path(args.run_dir)
    for need in ("config.yaml", "results.csv"):
        if not (run_dir / need).is_file():
            print(f"{run_dir}: no {need}; is this a finished run folder?", file=sys.stderr)
            return 2
    try:
        paths = rebuild_figures(run_dir)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(p)
    return 0
