"""Audit figures, plain functions of the results and summary tables (Agg backend).

* ``eps_lower_vs_samples.png`` -- per audit with two or more sample sizes: the certified lower
  bound (median, min-max over repeats) against the sample size, with the claimed epsilon and,
  where it is known, the true epsilon (an arrow and "true = inf" for support bugs).
* ``exact_vs_estimated.png`` -- the certified bound and the plug-in estimate against the exact
  privacy loss of the same pair.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["plot_all", "size_label"]


def size_label(n: float) -> str:
    """Short tick text for a sample size: 950, 2k, 20k, 1.5M."""
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            v = n / div
            return f"{v:.3g}{suf}"
    return f"{n:g}"


def _plt():  # noqa: ANN202 - matplotlib is imported only when drawing
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _lower_vs_samples(table: pd.DataFrame, path: Path) -> Path | None:
    multi = [a for a, g in table.groupby("audit", sort=False) if g["samples"].nunique() >= 2]
    if not multi:
        return None
    plt = _plt()
    from matplotlib.ticker import NullFormatter, NullLocator

    k = len(multi)
    cols = min(3, k)
    rows = math.ceil(k / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.3 * rows + 0.6), squeeze=False)
    any_true = False
    for ax, aid in zip(axes.flat, multi):
        g = table[table["audit"] == aid].sort_values("samples")
        x = g["samples"].to_numpy(float)
        y = g["epsilon_lower_median"].to_numpy(float)
        lo = y - g["epsilon_lower_min"].to_numpy(float)
        hi = g["epsilon_lower_max"].to_numpy(float) - y
        ax.errorbar(x, y, yerr=[lo, hi], fmt="o-", capsize=3, label="certified lower bound (median, range)")
        ax.axhline(float(g["epsilon_claimed"].iloc[0]), color="k", ls="--", lw=1, label="claimed epsilon")
        te = float(g["true_epsilon"].iloc[0])
        if math.isfinite(te):
            ax.axhline(te, color="tab:red", ls=":", lw=1.5, label="true epsilon")
            any_true = True
        elif te == math.inf:
            lo_y, hi_y = ax.get_ylim()  # headroom, so the note does not cover the largest budget's point
            ax.set_ylim(lo_y, hi_y + 0.18 * (hi_y - lo_y))
            ax.annotate("true epsilon = inf", xy=(0.02, 0.97), xycoords="axes fraction", ha="left", va="top",
                        fontsize=8, color="tab:red")
            any_true = True
        ax.set_xscale("log")
        # Ticks at the sample sizes actually run, in short text: log-axis minor labels
        # (2x10^4, 3x10^4, ...) overlap on a narrow panel.
        ax.set_xticks(x)
        ax.set_xticklabels([size_label(v) for v in x], fontsize=8)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(x.min() / 1.6, x.max() * 1.6)
        ax.set_xlabel("samples", fontsize=8)
        ax.set_ylabel("epsilon", fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
        ax.set_title(f"{aid} ({g['expect'].iloc[0]})", fontsize=9)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[k:]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if any_true and "true epsilon" not in labels:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color="tab:red", ls=":", lw=1.5))
        labels.append("true epsilon")
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    title = "Certified epsilon lower bound vs samples (per dataset; total calls for searches), claimed epsilon"
    fig.suptitle(title + (" and, where known, the true epsilon" if any_true else ""), fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _exact_vs_estimated(results: pd.DataFrame, path: Path) -> Path | None:
    if "exact_epsilon" not in results.columns:
        return None
    r = results[(results["status"] == "ok") & results["exact_epsilon"].notna()] if "status" in results else results
    r = r[np.isfinite(r["exact_epsilon"].astype(float))]
    if r.empty:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 5))
    ex = r["exact_epsilon"].astype(float)
    ax.scatter(ex, r["epsilon_lower"].astype(float), s=14, label="certified lower bound", alpha=0.7)
    est = r["epsilon_estimate"].astype(float)
    fin = np.isfinite(est)
    ax.scatter(ex[fin], est[fin], s=14, marker="x", label="plug-in estimate", alpha=0.7)
    m = float(max(ex.max(), 1e-3)) * 1.1
    ax.plot([0, m], [0, m], "k--", lw=1, label="y = exact")
    ax.set_xlabel("exact privacy loss of the witness pair (epsilon)")
    ax.set_ylabel("statistical audit (epsilon)")
    ax.set_title("Exact vs estimated privacy loss (same pair)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_all(results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    """Draw the audit figures into ``fig_dir``; returns the files written."""
    fig_dir = Path(fig_dir)
    fig_dir.mkdir(parents=True, exist_ok=True)
    out = [_lower_vs_samples(table, fig_dir / "eps_lower_vs_samples.png"),
           _exact_vs_estimated(results, fig_dir / "exact_vs_estimated.png")]
    return [p for p in out if p is not None]
