"""Audit figures, plain functions of the results and summary tables (Agg backend).

* ``eps_lower_vs_samples.png`` -- per audit with two or more sample sizes: the certified lower
  bound (median, min-max over repeats) against the sample size, with the claimed epsilon and,
  where it is known, the true epsilon (an arrow and "true = inf" for support bugs).
* ``eps_lower_by_audit.png`` -- the audits run at one sample size (a line needs two): one row each,
  the certified lower bound (median, min-max over repeats) beside the claimed epsilon and, where
  it is known, the true epsilon. Every audit with a result is in one of these two figures.
* ``exact_vs_estimated.png`` -- the certified bound and the plug-in estimate against the exact
  privacy loss of the same pair.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["plot_all", "size_label", "single_size_audits", "multi_size_audits"]


def size_label(n: float) -> str:
    """Short tick text for a sample size: 950, 2k, 20k, 1.5M."""
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            v = n / div
            return f"{v:.3g}{suf}"
    return f"{n:g}"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _finite_lower(table: pd.DataFrame) -> pd.DataFrame:
    """Rows with a certified bound to draw (a summary row of failed tasks only has NaN)."""
    return table[np.isfinite(table["epsilon_lower_median"].to_numpy(float))] if len(table) else table


def multi_size_audits(table: pd.DataFrame) -> list[str]:
    """Audits with a bound at two or more sample sizes (drawn against the sample size)."""
    t = _finite_lower(table)
    return [a for a, g in t.groupby("audit", sort=False) if g["samples"].nunique() >= 2]


def single_size_audits(table: pd.DataFrame) -> list[str]:
    """Audits with a bound at one sample size only (drawn as one row each)."""
    t = _finite_lower(table)
    return [a for a, g in t.groupby("audit", sort=False) if g["samples"].nunique() == 1]


def _suptitle(fig, text: str, width_in: float) -> None:
    """A figure title wrapped to the figure's width (about 11 characters per inch at size 10)."""
    import textwrap

    fig.suptitle(textwrap.fill(text, max(30, int(11 * width_in))), fontsize=10)


def _lower_vs_samples(table: pd.DataFrame, path: Path) -> Path | None:
    multi = multi_size_audits(table)
    if not multi:
        return None
    table = _finite_lower(table)
    plt = _plt()
    from matplotlib.ticker import NullFormatter, NullLocator

    k = len(multi)
    cols = min(3, k)
    rows = math.ceil(k / cols)
    width = max(6.4, 4.6 * cols)  # one panel alone still has room for the title and the legend
    fig, axes = plt.subplots(rows, cols, figsize=(width, 3.3 * rows + 1.1), squeeze=False)
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
    ncol = max(1, min(len(labels), int(width // 2.4)))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    title = "Certified epsilon lower bound vs samples (per dataset; total calls for searches), claimed epsilon"
    _suptitle(fig, title + (" and, where known, the true epsilon" if any_true else ""), width)
    return _save_above_legend(fig, path, len(labels), ncol)


def _save_above_legend(fig: "matplotlib.figure.Figure", path: Path, n_entries: int, ncol: int) -> Path:  # noqa: F821
    """Lay the axes out above the figure legend (``n_entries`` in ``ncol`` columns), save, close."""
    legend_in = 0.22 * math.ceil(n_entries / ncol) + 0.08
    fig.tight_layout(rect=(0, legend_in / fig.get_figheight(), 1, 1))
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def _lower_by_audit(table: pd.DataFrame, path: Path) -> Path | None:
    """One row per audit run at a single sample size: certified bound, claimed and true epsilon."""
    single = single_size_audits(table)
    if not single:
        return None
    t = _finite_lower(table)
    t = t[t["audit"].isin(single)].reset_index(drop=True)
    plt = _plt()
    from matplotlib.lines import Line2D
    from matplotlib.transforms import ScaledTranslation

    n = len(t)
    width = 7.5
    fig, ax = plt.subplots(figsize=(width, 1.9 + 0.34 * n))
    y = np.arange(n, dtype=float)
    med = t["epsilon_lower_median"].to_numpy(float)
    lo = med - t["epsilon_lower_min"].to_numpy(float)
    hi = t["epsilon_lower_max"].to_numpy(float) - med
    claimed = t["epsilon_claimed"].to_numpy(float)
    true = t["true_epsilon"].to_numpy(float)
    # the bound: a dot with its min-max range over repeats; the claim: a tall black tick through the
    # row; the true epsilon: a red triangle just above the row, pointing down at its value (the two
    # often coincide, and a marker on the tick would hide it)
    ax.errorbar(med, y, xerr=[lo, hi], fmt="o", ms=6, capsize=3, color="tab:blue", zorder=3,
                label="certified lower bound (median, range over repeats)")
    ax.plot(claimed, y, ls="none", marker="|", ms=16, mew=2, color="k", zorder=2, label="claimed epsilon")
    fin = np.isfinite(true)
    if fin.any():
        above = ax.transData + ScaledTranslation(0, 11 / 72, fig.dpi_scale_trans)
        ax.plot(true[fin], y[fin], ls="none", marker="v", ms=7, color="tab:red", transform=above, zorder=4,
                label="true epsilon")
    labels = []
    for r in t.itertuples():
        extra = ", true ε = ∞" if r.true_epsilon == math.inf else ""
        labels.append(f"{r.audit} ({r.expect}{extra}), {size_label(float(r.samples))}")
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(n - 0.4, -0.75)  # first audit on top; room above it for its true-epsilon marker
    values = np.concatenate([med + hi, claimed, true[fin]])
    values = values[np.isfinite(values)]
    ax.set_xlim(0, max(1e-3, float(values.max()) if values.size else 1.0) * 1.12)
    ax.set_xlabel("epsilon", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(alpha=0.3, axis="x")
    handles, names = ax.get_legend_handles_labels()
    if (true == math.inf).any() and not fin.any():  # the label says "true ε = ∞": say what it means
        handles.append(Line2D([], [], ls="none"))
        names.append("true ε = ∞: a support violation")
    ncol = max(1, min(len(names), 3))
    fig.legend(handles, names, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    _suptitle(fig, "Certified epsilon lower bound per audit run at one sample size (per dataset; total calls for "
              "searches), claimed epsilon" + (" and, where known, the true epsilon" if fin.any() or
                                             (true == math.inf).any() else ""), width)
    return _save_above_legend(fig, path, len(names), ncol)


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
           _lower_by_audit(table, fig_dir / "eps_lower_by_audit.png"),
           _exact_vs_estimated(results, fig_dir / "exact_vs_estimated.png")]
    return [p for p in out if p is not None]
