"""Figures: plain functions of a results/summary table (Agg backend), and what ``dpharness plot`` draws.

Plots are rebuilt from ``results.csv`` alone (plus the run's resolved ``config.yaml``), so a figure
can always be regenerated or restyled without rerunning anything. ``dpharness plot`` refuses a
folder whose ``results.csv`` lacks tasks of its config (a truncated or edited file would draw a
partial figure that looks complete) and, unless ``--out DIR`` is given, a committed regression
baseline under ``results/baselines/`` (figures are not part of a baseline). The command's
handler, which prints, is :func:`dpharness.bench.cli.plot.run`.

Log axes and exact zeros. An error that is exactly 0 (a discrete output that hit the truth in every
draw) has no place on a log axis. It is drawn at a *floor* one decade below the smallest positive
value plotted, with a hollow down-pointing triangle, on a dotted line whose tick reads "0"; the
legend says so. Values in between are never drawn at the floor (it is below all of them).

Nothing hides anything. Reference values (a paper's) are hollow diamonds a fixed 10 points to the
right of our marker at the same x, above our series. Points of different series that would sit on
top of each other at one x (equal values, shared zeros, a cap on another series' dot) are spread
sideways by a few points: the figure is laid out, measured in display units, and drawn again; the
x label says so when it happens. ``tests/bench/test_figures.py`` checks every shipped figure for
markers hidden under, or crossed by, another series' markers.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["slug", "line_plot", "panel_plot", "zero_floor", "rebuild_figures", "check_run_folder",
           "is_baseline", "PlotInputError", "NothingToDraw", "draw_figures"]

#: Marker of a value that is exactly zero, drawn at the floor of a log axis.
ZERO_MARKER = "v"
ZERO_LABEL = "exactly 0 (no error in any draw): on the '0' line\nbelow the log scale; shared zeros side by side"


class PlotInputError(ValueError):
    """The run folder cannot be plotted as asked; the message says why (``dpharness plot`` exits 2)."""


def _figure(figsize: tuple[float, float]) -> Any:
    """A Figure with an Agg canvas, without pyplot (no global state, safe in threads)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def slug(text: str) -> str:
    """File-name-safe version of ``text``."""
    s = re.sub(r"[^A-Za-z0-9.=-]+", "_", str(text)).strip("_")
    return s or "x"


def _wrap(title: str, width: int = 70) -> str:
    import textwrap

    return "\n".join(textwrap.fill(part, width) for part in title.split("\n"))


def zero_floor(values: Any) -> float | None:
    """Where exact zeros go on a log axis: the power of ten one decade below the smallest positive
    finite value (1e-1 if none is positive); ``None`` when no finite value is <= 0."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not np.any(v <= 0):
        return None
    pos = v[v > 0]
    smallest = float(pos.min()) if pos.size else 1.0
    return float(10.0 ** (math.floor(math.log10(smallest)) - 1))


# Marker geometry in points (what _series draws), for the dodge below.
_DOT_R = 4.5 / 2 + 0.5  # our dot: radius plus half its edge
_CAP_HW = 3.0  # half-width of an error-bar cap (capsize)
_ZERO_R = 9 / 2 + 0.75  # the hollow triangle of an exact zero
DODGE_NOTE = "points that would coincide are drawn side by side"


def _collision_dodge(ax: Any, table: pd.DataFrame, x: str, y: str, err: str | None, series: str, logy: bool,
                     floor: float | None) -> dict[tuple[str, float], float]:
    """Sideways positions for points of different series that would hide each other at one x:
    markers that overlap (equal values, or exact zeros sharing the "0" line) or an error-bar cap
    of one lying on the other's marker. Measured on ``ax`` as drawn (after layout), in display
    units, from the marker sizes above. Returns (series label, x) -> drawn x for the points that
    move; each group of such points is spread symmetrically around x, far enough apart that no
    marker or cap touches a neighbour's marker."""
    pt = ax.figure.dpi / 72
    recs: list[dict] = []
    for lab, s in table.groupby(series, sort=False):
        es = s[err].to_numpy(float) if err and err in s else np.full(len(s), np.nan)
        for xv, v, e in zip(s[x].to_numpy(float), s[y].to_numpy(float), es):
            if not (math.isfinite(xv) and math.isfinite(v)):
                continue
            zero = logy and floor is not None and v <= 0
            shown = floor if zero else v
            if logy and shown <= 0:
                continue
            dx, dy = ax.transData.transform((xv, shown))
            caps = []
            if not zero and math.isfinite(e) and e > 0:
                ends = [v + e] + ([v - e] if not logy or v - e > (floor if floor is not None else 0.001 * v) else [])
                caps = [float(ax.transData.transform((xv, c))[1]) for c in ends]
            r = _ZERO_R if zero else _DOT_R
            recs.append({"x": float(xv), "label": str(lab), "dx": float(dx), "dy": float(dy), "r": r * pt,
                         "hw": (r if zero or not caps else max(r, _CAP_HW)) * pt, "caps": caps})
    out: dict[tuple[str, float], float] = {}
    inv = ax.transData.inverted()
    for xv in sorted({r["x"] for r in recs}):
        pts = [r for r in recs if r["x"] == xv]

        def touch(a: dict, b: dict) -> bool:
            if abs(a["dy"] - b["dy"]) < a["r"] + b["r"] + 1:
                return True
            return any(abs(c - b["dy"]) < b["r"] + pt + 1 for c in a["caps"]) or any(
                abs(c - a["dy"]) < a["r"] + pt + 1 for c in b["caps"])

        group = list(range(len(pts)))  # union-find over the points that touch

        def root(i: int) -> int:
            while group[i] != i:
                i = group[i]
            return i

        for i in range(len(pts)):
            for j in range(i + 1, len(pts)):
                if touch(pts[i], pts[j]):
                    group[root(j)] = root(i)
        for g in {root(i) for i in range(len(pts))}:
            c = [pts[i] for i in range(len(pts)) if root(i) == g]  # in series order
            if len(c) < 2:
                continue
            offs = [0.0]
            for a, b in zip(c, c[1:]):
                offs.append(offs[-1] + a["hw"] + b["hw"] + 1)
            mid = offs[-1] / 2
            for r, o in zip(c, offs):
                out[(r["label"], xv)] = float(inv.transform((r["dx"] + o - mid, r["dy"]))[0])
    return out


def _series(ax: Any, sub: pd.DataFrame, x: str, y: str, err: str | None, ref: str | None, label: str, color: Any,
            logy: bool, floor: float | None, dodge: dict[tuple[str, float], float] | None = None) -> None:
    sub = sub.sort_values(x)
    xs = sub[x].to_numpy(dtype=float)
    ys = sub[y].to_numpy(dtype=float)
    es = sub[err].to_numpy(dtype=float) if err and err in sub else None
    zero = np.isfinite(ys) & (ys <= 0) if (logy and floor is not None) else np.zeros(ys.shape, dtype=bool)
    shown = np.where(zero, floor if floor is not None else 0.0, ys)
    data_x = xs
    if dodge:
        xs = np.array([dodge.get((label, float(v)), v) for v in xs], dtype=float)
    yerr: Any = es
    # A cap marks where a bar really ends: none on a zero-length bar, at an exact zero (its marker
    # is the hollow triangle) or at an end cut off by a log axis (the bar runs on to the "0" line,
    # where a cap would cross another series' zero marker and claim an end that is not there).
    finite_e = np.isfinite(es) & (es > 0) if es is not None else np.zeros(len(xs), dtype=bool)
    cap_hi = finite_e & ~zero
    cap_lo = cap_hi.copy()
    if es is not None and logy:
        # On a log axis a bar reaching <= 0 would vanish: it ends at the floor ("0") if there is
        # one, else just above 0.
        lo, hi = [], []
        for i, (v, e, z) in enumerate(zip(shown, es, zero)):
            if not math.isfinite(e) or z:
                lo.append(0.0)
                hi.append(0.0 if not math.isfinite(e) else e)
                continue
            bottom = max(v - e, floor) if floor is not None else max(v - e, 0.001 * v)
            cap_lo[i] = cap_lo[i] and bottom == v - e
            lo.append(v - bottom)
            hi.append(e)
        yerr = [lo, hi]
    bars = ax.errorbar(xs, shown, yerr=yerr, marker="o", ms=4.5, capsize=3, lw=1.5, color=color, label=label,
                       markevery=[i for i in range(len(xs)) if not zero[i]], zorder=3)
    _keep_caps(bars, xs, shown, cap_lo, cap_hi)
    if zero.any():
        ax.plot(xs[zero], shown[zero], ls="none", marker=ZERO_MARKER, ms=9, mfc="white", mew=1.5, color=color,
                zorder=4)
    if ref and ref in sub and sub[ref].notna().any():
        _ref_markers(ax, xs, sub[ref].to_numpy(dtype=float), color, data_x)


def _keep_caps(bars: Any, xs: np.ndarray, ys: np.ndarray, cap_lo: np.ndarray, cap_hi: np.ndarray) -> None:
    """Show an error bar's lower / upper cap only where ``cap_lo`` / ``cap_hi`` is true (matplotlib
    draws one cap line per end; each cap is matched to its point by x and by lying below/above it)."""
    for capline in bars.lines[1] or ():
        cx = np.asarray(capline.get_xdata(), dtype=float)
        cy = np.asarray(capline.get_ydata(), dtype=float)
        keep = []
        for j, (u, w) in enumerate(zip(cx, cy)):
            for i in np.flatnonzero(xs == u):
                if (w < ys[i] and cap_lo[i]) or (w > ys[i] and cap_hi[i]):
                    keep.append(j)
                    break
        capline.set_markevery(keep)


#: How far (points) the reference (paper) markers sit to the right of our marker at the same x.
REF_SHIFT_PT = 10.0
REF_STYLE = dict(ls="none", marker="D", ms=7, mfc="none", mew=1.3)


def _ref_markers(ax: Any, xs: np.ndarray, refs: np.ndarray, color: Any, data_x: np.ndarray) -> None:
    """Reference values (e.g. a paper's) as hollow diamonds :data:`REF_SHIFT_PT` points to the right
    of our marker at the same x: centred on ours, a diamond's outline crossed our dot and hid our
    error bar wherever the two agreed. Shifted, a diamond (half-width 5.6 pt with its edge) clears
    our dot and our error-bar caps (3 pt), so it is drawn on top: our line passes under its hollow
    middle and both stay whole. The shift is in display units (the same on any axis scale), and
    the legend says the diamonds sit beside ours."""
    from matplotlib.transforms import ScaledTranslation

    shift = ax.transData + ScaledTranslation(REF_SHIFT_PT / 72, 0, ax.figure.dpi_scale_trans)
    ax.plot(xs, refs, color=color, transform=shift, zorder=3.5, **REF_STYLE)
    ok = np.isfinite(data_x) & np.isfinite(refs)
    if ok.any():  # a line with a non-data transform does not count in the axes' data limits
        ax.update_datalim(np.column_stack([data_x[ok], refs[ok]]))


def _log_y(ax: Any, lo: float, hi: float, floor: float | None) -> None:
    """Log y axis on [lo, hi] with major ticks at powers of ten only (labels never crowd), and
    the floor, when there is one, labelled "0" on a dotted line."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    bottom = (floor if floor is not None else lo) / 10 ** 0.3
    top = hi * 10 ** 0.3
    ax.set_ylim(bottom, top)
    k0, k1 = math.floor(math.log10(bottom)), math.ceil(math.log10(top))
    plain = math.log10(top / bottom) <= 3.5  # few decades: 1-2-5 ticks in plain numbers
    mult = (1.0, 2.0, 5.0) if plain else (1.0,)
    cand = [m * 10.0 ** k for k in range(k0, k1 + 1) for m in mult]
    ticks = [t for t in cand if bottom <= t <= top]
    if not plain:
        step = max(1, math.ceil(len(ticks) / 7))
        ticks = ticks[::step]
    if floor is not None:
        # the "0" tick, then the log scale starting a full decade above it (the spine break lies between)
        ticks = [floor] + [t for t in ticks if t > floor * 10 ** 0.99]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(LogLocator(subs="auto"))
    ax.yaxis.set_minor_formatter(NullFormatter())

    def fmt(v: float, _pos: Any) -> str:
        if floor is not None and math.isclose(v, floor, rel_tol=1e-9):
            return "0"
        k = math.log10(v)
        if plain or abs(k - round(k)) > 1e-9:
            return f"{v:.6g}"
        return f"$10^{{{int(round(k))}}}$"

    ax.yaxis.set_major_formatter(FuncFormatter(fmt))
    if floor is not None:
        _zero_line(ax, floor, spine_break=True)


def _zero_line(ax: Any, floor: float, spine_break: bool) -> None:
    """The dotted "0" line and, on the y spine, a break mark between it and the log scale."""
    ax.axhline(floor, color="grey", ls=":", lw=1, zorder=1)
    if spine_break:
        from matplotlib.transforms import blended_transform_factory

        tr = blended_transform_factory(ax.transAxes, ax.transData)
        y = floor * 10 ** 0.5
        for dy in (0.8, 1.25):
            ax.plot([-0.012, 0.012], [y * dy / 1.12, y * dy * 1.12], transform=tr, color="k", lw=1, clip_on=False,
                    label="_spine_break")


def _y_range(values: Any, errs: Any, floor: float | None) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    e = np.asarray(errs, dtype=float) if errs is not None else np.zeros_like(v)
    e = np.where(np.isfinite(e), e, 0.0)
    ok = np.isfinite(v) & (v > 0)
    if not ok.any():
        return (floor or 0.1), (floor or 0.1) * 10
    lo = float(np.min(v[ok]))
    if floor is None:
        lo = float(np.min(np.maximum(v[ok] - e[ok], 0.001 * v[ok])))
    return lo, float(np.max(v[ok] + e[ok]))


def _finish(ax: Any, xlabel: str, ylabel: str, logx: bool, xs: list[float]) -> None:
    if logx:
        from matplotlib.ticker import NullLocator

        ax.set_xscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{v:g}" for v in xs])
        ax.xaxis.set_minor_locator(NullLocator())
        if len(xs) == 1:  # a single x: centre it with half a decade on each side
            ax.set_xlim(xs[0] / 10 ** 0.5, xs[0] * 10 ** 0.5)
        else:  # room for zeros drawn side by side at the ends
            pad = 0.08 * math.log10(max(xs) / min(xs))
            ax.set_xlim(min(xs) / 10 ** pad, max(xs) * 10 ** pad)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)


def _legend_extras(floor: float | None, has_zero: bool, paper: bool) -> list[tuple[Any, str]]:
    from matplotlib.lines import Line2D

    out = []
    if paper:
        out.append((Line2D([], [], color="grey", **REF_STYLE), "paper (published), just right of ours"))
    if floor is not None and has_zero:
        out.append((Line2D([], [], ls=":", marker=ZERO_MARKER, ms=9, mfc="white", mew=1.5, color="grey"), ZERO_LABEL))
    return out


def _save(fig: Any, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


def line_plot(table: pd.DataFrame, *, x: str, y: str, err: str | None, series: str, ref: str | None,
              xlabel: str, ylabel: str, title: str, path: Path, logx: bool = False, logy: bool = False) -> Path:
    """One line per ``series`` value of ``y`` against ``x`` with ±``err`` bars; ``ref`` values
    (e.g. a paper's) as hollow diamonds in the same colour, just right of ours. On a log ``y`` axis
    exact zeros are drawn at :func:`zero_floor` (module docstring). Points of different series that
    would coincide are drawn side by side (:func:`_collision_dodge`; the figure is laid out once,
    measured, and drawn again). Saves a PNG and returns its path."""
    args = (table, x, y, err, series, ref, xlabel, ylabel, title, logx, logy)
    fig = _line_figure(*args, dodge=None)
    dodge = _collision_dodge(fig.axes[0], table, x, y, err, series, logy, zero_floor(table[y]) if logy else None)
    if dodge:
        fig = _line_figure(*args, dodge=dodge)
    return _save(fig, path)


def _line_figure(table: pd.DataFrame, x: str, y: str, err: str | None, series: str, ref: str | None, xlabel: str,
                 ylabel: str, title: str, logx: bool, logy: bool, dodge: dict | None) -> Any:
    import matplotlib as mpl

    n_series = table[series].nunique()
    fig = _figure((7, 4.6 + 0.2 * math.ceil((n_series + 2) / 2)))
    ax = fig.add_subplot()
    colors = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    floor = zero_floor(table[y]) if logy else None
    for i, (lab, sub) in enumerate(table.groupby(series, sort=False)):
        _series(ax, sub, x, y, err, ref, str(lab), colors[i % len(colors)], logy, floor, dodge)
    _finish(ax, xlabel + (f"   ({DODGE_NOTE})" if dodge else ""), ylabel, logx,
            sorted(table[x].astype(float).unique()))
    if logy:
        vals = table[y].to_numpy(float)
        errs = table[err].to_numpy(float) if err and err in table else np.zeros(len(table))
        if ref and ref in table:  # the paper's markers must fit too (no error bars)
            vals = np.concatenate([vals, table[ref].to_numpy(float)])
            errs = np.concatenate([errs, np.zeros(len(table))])
        _log_y(ax, *_y_range(vals, errs, floor), floor)
    ax.set_title(_wrap(title), fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    paper = bool(ref and ref in table and table[ref].notna().any())
    for h, lab in _legend_extras(floor, floor is not None, paper):
        handles.append(h)
        labels.append(lab)
    _legend_below(fig, handles, labels, ncol=2)
    return fig


def _legend_below(fig: Any, handles: list, labels: list[str], ncol: int) -> None:
    """The legend under the axes (it never hides a point), then a layout that leaves it room."""
    ncol = max(1, min(len(labels), ncol))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    rows = math.ceil(len(labels) / ncol)
    height = fig.get_figheight()
    fig.tight_layout(rect=(0, min(0.45, (0.2 * rows + 0.1) / height), 1, 1))


def panel_plot(table: pd.DataFrame, *, x: str, y: str, err: str | None, series: str, panel: str, xlabel: str,
               ylabel: str, title: str, path: Path, logx: bool = False, logy: bool = False,
               panel_label: str | None = None) -> Path:
    """Like :func:`line_plot` with one panel per value of ``panel`` (shared y axis); the legend
    goes below the panels so that it hides no point."""
    args = (table, x, y, err, series, panel, xlabel, ylabel, title, logx, logy, panel_label)
    fig = _panel_figure(*args, dodges=None)
    floor = zero_floor(table[y]) if logy else None
    panels = list(dict.fromkeys(table[panel]))
    dodges = [_collision_dodge(ax, table[table[panel] == pv], x, y, err, series, logy, floor)
              for ax, pv in zip(fig.axes, panels)]
    if any(dodges):
        fig = _panel_figure(*args, dodges=dodges)
    return _save(fig, path)


def _panel_figure(table: pd.DataFrame, x: str, y: str, err: str | None, series: str, panel: str, xlabel: str,
                  ylabel: str, title: str, logx: bool, logy: bool, panel_label: str | None,
                  dodges: list[dict] | None) -> Any:
    import matplotlib as mpl

    panels = list(dict.fromkeys(table[panel]))
    labels = list(dict.fromkeys(table[series]))
    fig = _figure((4.2 * len(panels) + 1, 4.4 + 0.2 * math.ceil((len(labels) + 1) / 3)))
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)
    colors = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    floor = zero_floor(table[y]) if logy else None
    name = panel_label or panel
    for j, (ax, pv) in enumerate(zip(axes[0], panels)):
        sub = table[table[panel] == pv]
        dodge = dodges[j] if dodges else None
        for lab, s in sub.groupby(series, sort=False):
            _series(ax, s, x, y, err, None, str(lab), colors[labels.index(lab) % len(colors)], logy, floor, dodge)
        # the note under every panel when any moved a point, so that the panels stay aligned
        _finish(ax, xlabel + (f"\n({DODGE_NOTE})" if dodges and any(dodges) else ""), ylabel if ax is axes[0][0] else "", logx,
                sorted(sub[x].astype(float).unique()))
        ax.set_title(f"{name} = {pv:g}" if isinstance(pv, (float, int, np.floating, np.integer)) else f"{name} = {pv}")
    if logy:
        _log_y(axes[0][0], *_y_range(table[y], table[err] if err and err in table else None, floor), floor)
        for ax in axes[0][1:]:
            if floor is not None:
                _zero_line(ax, floor, spine_break=False)
    handles, labs = axes[0][0].get_legend_handles_labels()
    seen = set(labs)
    for ax in axes[0][1:]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in seen:
                seen.add(lab)
                handles.append(h)
                labs.append(lab)
    for h, lab in _legend_extras(floor, floor is not None, False):
        handles.append(h)
        labs.append(lab)
    fig.suptitle(_wrap(title, int(30 * len(panels)) + 20), fontsize=11)
    _legend_below(fig, handles, labs, ncol=min(6, 2 * len(panels)))
    return fig


# -- dpharness plot ------------------------------------------------------------------------------


def is_baseline(run_dir: Path) -> bool:
    """True for a committed regression baseline: a folder inside ``results/baselines/``."""
    parts = Path(run_dir).resolve().parts
    return any(a == "results" and b == "baselines" for a, b in zip(parts, parts[1:]))


def _read_manifest(run_dir: Path) -> dict:
    path = run_dir / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise PlotInputError(f"{path}: is not UTF-8 text; the run folder is damaged") from None
    except ValueError as exc:
        raise PlotInputError(f"{path}: is not valid JSON ({exc}); the run folder is damaged") from None
    except OSError as exc:
        raise PlotInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise PlotInputError(f"{path}: must hold a JSON object, got {type(data).__name__}; the run folder is damaged")
    return data


def check_run_folder(run_dir: Path) -> tuple[Any, pd.DataFrame, dict]:
    """Load a finished run folder for plotting: ``(config, results, manifest)``.

    Raises :class:`PlotInputError` when it is not a run folder, when ``manifest.json`` is damaged,
    or when ``results.csv`` does not hold every task of the config (a truncated or edited file);
    ``ConfigError`` when its ``config.yaml`` no longer parses.
    """
    from dpharness.bench.run.folders import load_run_config

    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise PlotInputError(f"RUN_DIR {run_dir}: no such folder")
    if not run_dir.is_dir():
        raise PlotInputError(f"RUN_DIR {run_dir}: is a file, not a run folder (give the folder that holds results.csv)")
    missing = [n for n in ("config.yaml", "results.csv", "manifest.json") if not (run_dir / n).is_file()]
    if missing:
        raise PlotInputError(f"RUN_DIR {run_dir}: no {' or '.join(missing)}; is this a finished run folder? "
                             "(expected results/<config name>/<UTC timestamp>_<hash>/)")
    manifest = _read_manifest(run_dir)
    cfg = load_run_config(run_dir)
    csv = run_dir / "results.csv"
    raw = csv.read_bytes()
    if raw and not raw.endswith(b"\n"):
        raise PlotInputError(f"{csv}: ends in the middle of a line, so it is truncated; refusing to draw a partial "
                             "figure (re-run the config to rebuild the run)")
    try:
        results = pd.read_csv(csv, keep_default_na=False, na_values=[""])
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError/EmptyDataError are ValueErrors
        raise PlotInputError(f"{csv}: cannot be read as CSV ({str(exc).strip() or type(exc).__name__})") from None
    if "task" not in results.columns:
        raise PlotInputError(f"{csv}: has no 'task' column; it was not written by dpharness run")
    expected = [t.key for t in cfg.module.tasks(cfg.spec)]
    have = set(results["task"].astype(str))
    absent = [k for k in expected if k not in have]
    total = (manifest.get("tasks") or {}).get("total") if isinstance(manifest.get("tasks"), dict) else None
    if absent:
        raise PlotInputError(
            f"{csv}: holds {len(expected) - len(absent)} of the {len(expected)} tasks of this run's config"
            + (f" (manifest.json: {total})" if total is not None else "")
            + f"; first missing: {absent[0]!r}. The file is truncated or was edited; refusing to draw a partial "
            "figure (re-run the config to rebuild the run)")
    if total is not None and total != len(expected):
        raise PlotInputError(f"{run_dir}: manifest.json counts {total} tasks but config.yaml defines {len(expected)}; "
                             "the folder mixes two runs")
    return cfg, results, manifest


class NothingToDraw(PlotInputError):
    """The run folder is sound but no figure applies to its results (``dpharness plot`` exits 2)."""


def _failed_tasks_text(results: pd.DataFrame) -> str:
    """'all 3 tasks failed (first error: ...)' from the status and message columns."""
    n = len(results)
    msg = ""
    if "message" in results.columns:
        first = results["message"].dropna().astype(str)
        first = first[first.str.strip() != ""]
        if len(first):
            msg = f" (first error: {first.iloc[0].strip().splitlines()[0][:200]})"
    return (f"all {n} tasks of the run failed" if n > 1 else "the run's only task failed") + msg


def draw_figures(cfg: Any, results: pd.DataFrame, fig_dir: Path) -> list[Path]:
    """Summarize ``results`` with the run's kind and draw its figures into ``fig_dir`` (created).

    Raises :class:`NothingToDraw`, writing nothing, when no task finished, and when the kind draws
    no figure from these results (a folder created for them is removed again)."""
    fig_dir = Path(fig_dir)
    ok = results[results["status"] == "ok"] if "status" in results.columns else results
    if not len(ok):
        raise NothingToDraw(f"nothing to draw: {_failed_tasks_text(results)}; results.csv holds no result to plot "
                            "(fix the failure and re-run the config)")
    summary = cfg.module.summarize(cfg.spec, results)
    existed = fig_dir.exists()
    fig_dir.mkdir(parents=True, exist_ok=True)
    paths = list(cfg.module.plot(cfg.spec, results, summary.table, fig_dir))
    if not paths:
        if not existed:
            try:
                fig_dir.rmdir()
            except OSError:
                pass
        raise NothingToDraw(f"nothing to draw: no figure of kind {cfg.experiment!r} applies to these results "
                            f"({len(ok)} finished task(s) of {len(results)})")
    return paths


def rebuild_figures(run_dir: Path, out: Path | None = None) -> list[Path]:
    """Recompute the summary from ``results.csv`` and redraw the figures into ``out`` (default
    ``run_dir/figures``), after :func:`check_run_folder`."""
    cfg, results, _ = check_run_folder(Path(run_dir))
    return draw_figures(cfg, results, Path(out) if out is not None else Path(run_dir) / "figures")
