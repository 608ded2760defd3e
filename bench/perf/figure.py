"""The scaling figure: log-log seconds per call against n (medians) and k (finite selection).

One line per implementation, floors dashed, min-max error bars. The panel titles name only what
is drawn: "and peers" appears only when at least one peer was measured.
"""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np

__all__ = ["panel_title", "plot_scaling"]

_SUBJECT = {"median": "median mechanisms", "finite": "finite selection"}


def panel_title(section: str, kinds: set[str]) -> str:
    """``"<subject> vs floors and peers"`` naming only the kinds of line actually drawn."""
    against = [w for w, k in (("floors", "floor"), ("peers", "peer")) if k in kinds]
    title = _SUBJECT[section]
    if against:
        title += " vs " + " and ".join(against)
    if "peer" not in kinds:
        title += " (no peer measured)"
    return title


def plot_scaling(rows: list[dict[str, Any]], path: pathlib.Path) -> pathlib.Path | None:
    """Log-log time vs n, one line per implementation (median panel; finite panel if measured).

    Returns ``path``, or ``None`` when there is nothing to draw.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    panels = [s for s in ("median", "finite")
              if any(r["section"] == s and r["seconds"] is not None for r in rows)]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    for ax, sec in zip(axes[0], panels):
        series: dict[str, dict[int, tuple[float, float, float]]] = {}
        kind_of: dict[str, str] = {}
        for r in rows:
            if r["section"] == sec and r["seconds"] is not None:
                series.setdefault(r["name"], {})[r["n"]] = (r["seconds"], r["seconds_min"], r["seconds_max"])
                kind_of[r["name"]] = r["kind"]
        palette = plt.get_cmap("tab20").colors  # > 10 lines: tab10 would repeat colours
        for i, (name, pts) in enumerate(sorted(series.items())):
            ns = sorted(pts)
            med = np.array([pts[n][0] for n in ns])
            err = np.array([[pts[n][0] - pts[n][1] for n in ns], [pts[n][2] - pts[n][0] for n in ns]])
            floor = kind_of[name] == "floor"
            label = name + (" (floor)" if floor else " (peer)" if kind_of[name] == "peer" else "")
            ax.errorbar(ns, med, yerr=err, fmt=("--" if floor else "-") + "o", ms=3, capsize=2,
                        color=palette[(2 * i) % 20 + (i // 10) % 2], label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        if sec == "median":
            draws = next((r["size"] for r in rows if r["section"] == sec and r["size"] > 1), None)
            peers = "peer" in kind_of.values()
            ax.set_xlabel("n (records)")
            ax.set_ylabel("seconds per call" + (f" (dpharness: {draws} draws" if draws else "")
                          + ("; peers: 1 release)" if draws and peers else ")" if draws else ""))
        else:
            size = next(r["size"] for r in rows if r["section"] == sec)
            ax.set_xlabel("k (candidates)")
            ax.set_ylabel(f"seconds for {size:g} draws")
        ax.set_title(panel_title(sec, set(kind_of.values())))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
