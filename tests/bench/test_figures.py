"""Every figure an experiment kind draws is readable: checked on the rendered matplotlib Figure.

The figures are captured where they are saved (``Figure.savefig`` is wrapped), after a quick run of
each shipped figure-producing config (in-process, small overrides for speed) and on synthetic
tables for the cases a run may not hit (exact zeros on a log axis, audit figures). For every figure:

* every plotted series lies inside its axes' limits, and not all of it on one spine (the old
  "Duff (integers)" line sat on the bottom spine of a symlog axis, invisible);
* no series is hidden: the legend's box does not cover all of its points, and its markers do not
  all sit exactly under another series' filled markers;
* every labelled series has exactly one legend entry, and every legend entry is a drawn series or
  a proxy for drawn unlabelled markers/lines (e.g. "paper (published)" diamonds);
* tick labels of an axis do not overlap each other (rendered boxes), and all titles, labels, tick
  labels and legend texts lie inside the canvas (a cut-off title fails);
* titles match what is drawn: "vs n"/"vs ε"/"vs samples" needs that x axis, no "vs X" twice,
  "true ε"/"peers"/"paper" in a title needs such a series.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from dpharness.bench import plots
from dpharness.bench.runner import run

ROOT = Path(__file__).resolve().parents[2]
TOL = 1.5  # pixels: what counts as "on" a spine / "the same" position

# -- capturing ---------------------------------------------------------------------------------


def _capture_run(config: Any, tmp: Path, **kw: Any) -> list[tuple[str, Figure]]:
    figs: list[tuple[str, Figure]] = []
    orig = Figure.savefig

    def spy(self: Figure, fname: Any, *a: Any, **k: Any) -> Any:
        figs.append((Path(str(fname)).name, self))
        return orig(self, fname, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", spy)
        res = run(config, out=tmp, progress=False, **kw)
    assert res.errors == 0
    assert figs, "the run drew no figure"
    return figs


def _raw(name: str, quick: bool = True, **override: Any) -> dict:
    """A shipped config as a mapping: its quick tier applied (unless ``quick=False``), then ``override``."""
    raw = yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text(encoding="utf-8"))
    tier = raw.pop("quick", {}) or {}
    if quick:
        raw.update(copy.deepcopy(tier))
    raw.update(override)
    return raw


# -- what is drawn -------------------------------------------------------------------------------


@dataclass
class Series:
    label: str  # "" when unlabelled
    ax: Any
    points: np.ndarray  # display coordinates of the data (finite rows)
    markers: np.ndarray  # display coordinates of drawn markers
    marker: str
    linestyle: str
    hollow: bool
    order: int


def _line_points(line: Line2D) -> tuple[np.ndarray, np.ndarray]:
    xy = np.asarray(line.get_xydata(), dtype=float)
    if xy.size == 0:
        return np.empty((0, 2)), np.empty((0, 2))
    ok = np.all(np.isfinite(xy), axis=1)
    disp = line.get_transform().transform(xy)
    pts = disp[ok]
    mk = np.empty((0, 2))
    if line.get_marker() not in (None, "None", "", " "):
        every = line.get_markevery()
        idx = np.arange(len(xy)) if every is None else np.asarray(every, dtype=int)
        mk = disp[idx][ok[idx]] if idx.size else np.empty((0, 2))
    return pts, mk


def _hollow(line: Line2D) -> bool:
    fc = line.get_markerfacecolor()
    return isinstance(fc, str) and fc.lower() in ("none",)


def series_of(fig: Figure) -> list[Series]:
    out: list[Series] = []
    order = 0
    for ax in fig.axes:
        in_container: set[int] = set()
        for c in ax.containers:
            label = c.get_label()
            label = "" if label is None or label.startswith("_") else label
            if isinstance(c, ErrorbarContainer):
                data_line = c.lines[0]
                for part in c.lines[1] or ():
                    in_container.add(id(part))
                if data_line is None:
                    continue
                in_container.add(id(data_line))
                pts, mk = _line_points(data_line)
                out.append(Series(label, ax, pts, mk, str(data_line.get_marker()), str(data_line.get_linestyle()),
                                  _hollow(data_line), order))
            elif isinstance(c, BarContainer):
                tops = np.array([[p.get_x() + p.get_width() / 2, p.get_y() + p.get_height()] for p in c.patches])
                pts = ax.transData.transform(tops) if len(tops) else np.empty((0, 2))
                out.append(Series(label, ax, pts, np.empty((0, 2)), "bar", "-", False, order))
            order += 1
        for line in ax.lines:
            if id(line) in in_container or not line.get_visible():
                continue
            label = line.get_label()
            label = "" if label is None or label.startswith("_") else label
            pts, mk = _line_points(line)
            if not line.get_clip_on():  # decorations outside the axes (e.g. a spine break mark)
                continue
            out.append(Series(label, ax, pts, mk, str(line.get_marker()), str(line.get_linestyle()), _hollow(line),
                              order))
            order += 1
        for coll in ax.collections:
            if type(coll).__name__ != "PathCollection":  # error-bar segments are LineCollections
                continue
            label = coll.get_label()
            label = "" if label is None or label.startswith("_") else label
            offs = np.asarray(coll.get_offsets(), dtype=float)
            offs = offs[np.all(np.isfinite(offs), axis=1)]
            pts = coll.get_offset_transform().transform(offs) if len(offs) else np.empty((0, 2))
            out.append(Series(label, ax, pts, pts, "o", "None", False, order))
            order += 1
    return out


def legends_of(fig: Figure) -> list[Any]:
    legs = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return legs + list(fig.legends)


# -- the checks ----------------------------------------------------------------------------------


def _inside(p: np.ndarray, bbox: Any, tol: float = TOL) -> np.ndarray:
    return ((p[:, 0] >= bbox.x0 - tol) & (p[:, 0] <= bbox.x1 + tol) & (p[:, 1] >= bbox.y0 - tol)
            & (p[:, 1] <= bbox.y1 + tol))


def _text_boxes(fig: Figure, renderer: Any) -> list[tuple[str, Any]]:
    texts = []
    if fig._suptitle is not None and fig._suptitle.get_text():
        texts.append(fig._suptitle)
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
    for leg in legends_of(fig):
        texts += list(leg.get_texts())
    return [(t.get_text(), t.get_window_extent(renderer)) for t in texts if t.get_visible() and t.get_text()]


@dataclass
class TickBox:
    text: str
    box: Any  # rendered (axis-aligned) window extent
    angle: float  # rotation in degrees
    height: float  # height of the unrotated text, pixels
    anchor: np.ndarray  # display position of the tick


def _tick_boxes(axis: Any, renderer: Any) -> list[TickBox]:
    """Rendered boxes of the tick labels the axis draws (ticks inside the view only)."""
    out = []
    for tick in axis._update_ticks():  # the ticks matplotlib draws: those inside the view interval
        for lab in (tick.label1, tick.label2):
            if lab.get_visible() and lab.get_text():
                angle = float(lab.get_rotation()) % 180
                lab.set_rotation(0)
                h = lab.get_window_extent(renderer).height
                lab.set_rotation(angle)
                out.append(TickBox(lab.get_text(), lab.get_window_extent(renderer), angle, h,
                                   np.asarray(lab.get_transform().transform(lab.get_position()), dtype=float)))
    return out


def _overlap(a: TickBox, b: TickBox) -> float:
    """Overlap of two tick labels in pixels^2 (axis-aligned), or, for labels rotated by the same
    angle, how far (pixels) their parallel text strips overlap: rotated labels side by side have
    overlapping axis-aligned boxes without touching each other."""
    if a.angle not in (0.0, 90.0) and a.angle == b.angle:
        th = np.deg2rad(a.angle)
        normal = np.array([-np.sin(th), np.cos(th)])  # perpendicular to the text direction
        gap = abs(float(np.dot(a.anchor - b.anchor, normal)))
        return max(0.0, min(a.height, b.height) - gap) * 10.0
    w = min(a.box.x1, b.box.x1) - max(a.box.x0, b.box.x0)
    h = min(a.box.y1, b.box.y1) - max(a.box.y0, b.box.y0)
    return max(w, 0.0) * max(h, 0.0)


AXIS_WORDS = {"n": ("n",), "q": ("q",), "ε": ("ε", "epsilon"), "epsilon": ("ε", "epsilon"), "samples": ("samples",)}


def figure_problems(name: str, fig: Figure) -> list[str]:
    """Every readability problem of one rendered figure (empty when it is fine)."""
    if not hasattr(fig.canvas, "get_renderer"):  # closed by pyplot: give it an Agg canvas again
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems: list[str] = []
    fbox = fig.bbox
    series = series_of(fig)
    legends = legends_of(fig)
    leg_boxes = [leg.get_window_extent(renderer) for leg in legends]

    # 1. text inside the canvas; tick labels do not overlap
    for text, ext in _text_boxes(fig, renderer):
        if ext.x0 < fbox.x0 - 2 or ext.x1 > fbox.x1 + 2 or ext.y0 < fbox.y0 - 2 or ext.y1 > fbox.y1 + 2:
            problems.append(f"text {text!r} is cut off by the canvas edge")
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        for axis in (ax.xaxis, ax.yaxis):
            boxes = _tick_boxes(axis, renderer)
            for i, a in enumerate(boxes):
                bi = a.box
                if bi.x0 < fbox.x0 - 2 or bi.x1 > fbox.x1 + 2 or bi.y0 < fbox.y0 - 2 or bi.y1 > fbox.y1 + 2:
                    problems.append(f"tick label {a.text!r} is cut off by the canvas edge")
                for b in boxes[i + 1:]:
                    if _overlap(a, b) > 1.0:
                        problems.append(f"tick labels {a.text!r} and {b.text!r} overlap ({ax.get_title() or 'axes'})")

    # 2. every series inside its axes, not on one spine, not under the legend, not under another series
    for s in series:
        if not len(s.points):
            continue
        bb = s.ax.get_window_extent(renderer)
        who = s.label or f"unlabelled {s.marker}/{s.linestyle} series"
        outside = ~_inside(s.points, bb)
        if outside.any():
            problems.append(f"{who}: {int(outside.sum())} of {len(s.points)} points outside the axes limits")
        for side, coord, edge in (("bottom", 1, bb.y0), ("top", 1, bb.y1), ("left", 0, bb.x0), ("right", 0, bb.x1)):
            if np.all(np.abs(s.points[:, coord] - edge) <= TOL):
                problems.append(f"{who}: every point lies on the {side} spine")
        for lb in leg_boxes:
            if np.all(_inside(s.points, lb, tol=0.0)):
                problems.append(f"{who}: hidden behind the legend")
    for a in series:
        if not len(a.markers) or "same" in a.label or "on top" in a.label:
            continue
        for b in series:
            if b is a or b.ax is not a.ax or b.order < a.order or not len(b.markers) or b.hollow:
                continue
            if "same" in b.label or "on top" in b.label:
                continue
            d = np.min(np.linalg.norm(a.markers[:, None, :] - b.markers[None, :, :], axis=2), axis=1)
            if np.all(d <= TOL):
                problems.append(f"{a.label or 'a series'}: every marker sits under {b.label or 'another series'}'s markers")

    # 3. legend entries <-> drawn series
    drawn_labels = {s.label for s in series if s.label and len(s.points)}
    proxies_ok = {(s.marker, s.linestyle) for s in series if not s.label and len(s.points)}
    markers_ok = {s.marker for s in series if len(s.markers)}
    styles_ok = {s.linestyle for s in series if len(s.points)}
    entries: list[str] = []
    for leg in legends:
        for text, handle in zip(leg.get_texts(), leg.legend_handles):
            t = text.get_text()
            entries.append(t)
            if t in drawn_labels:
                continue
            ok = isinstance(handle, Line2D) and (
                (handle.get_marker() not in ("None", "", " ", None) and handle.get_marker() in markers_ok)
                or (handle.get_marker() in ("None", "", " ", None) and handle.get_linestyle() in styles_ok)
                or (handle.get_marker(), handle.get_linestyle()) in proxies_ok)
            if not ok:
                problems.append(f"legend entry {t!r} names nothing drawn")
    dup = sorted({t for t in entries if entries.count(t) > 1})
    if dup:
        problems.append(f"legend entries repeated: {dup}")
    missing = sorted(drawn_labels - set(entries))
    if missing and (legends or len(drawn_labels) > 1):
        problems.append(f"series without a legend entry: {missing}")

    # 4. titles match what is drawn
    titles = [fig._suptitle.get_text()] if fig._suptitle is not None else []
    titles += [ax.get_title(loc) for ax in fig.axes for loc in ("center", "left", "right")]
    xlabels = " ".join(ax.get_xlabel() for ax in fig.axes)
    every_text = " ".join(entries + [t.get_text() for ax in fig.axes for t in ax.texts])
    for title in filter(None, titles):
        flat = " ".join(title.split())
        vs = [w.strip(",.:;()") for w in re.findall(r"\bvs\.?\s+(\S+)", flat)]
        if len(vs) != len(set(vs)):
            problems.append(f"title repeats 'vs {max(vs, key=vs.count)}': {flat!r}")
        for w in vs:
            if w in AXIS_WORDS and not any(k in xlabels for k in AXIS_WORDS[w]):
                problems.append(f"title says 'vs {w}' but no x axis is {w}: {flat!r} (x labels: {xlabels!r})")
        low = flat.lower()
        if ("true ε" in low or "true epsilon" in low) and "true" not in every_text.lower():
            problems.append(f"title mentions the true ε but nothing drawn is labelled so: {flat!r}")
        if "peer" in low and "peer" not in every_text.lower():
            problems.append(f"title mentions peers but no series is a peer: {flat!r}")
        if "paper" in low and "paper" not in every_text.lower():
            problems.append(f"title mentions the paper but no paper values are drawn: {flat!r}")
    return [f"{name}: {p}" for p in problems]


def assert_readable(figs: list[tuple[str, Figure]]) -> None:
    problems = [p for name, fig in figs for p in figure_problems(name, fig)]
    assert not problems, "\n".join(problems)


# -- the checks can fail (each on a deliberately bad figure) -------------------------------------


def _fig() -> tuple[Figure, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=(5, 3.5))
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def test_checks_catch_a_series_on_the_spine_and_overlapping_ticks():
    fig, ax = _fig()
    ax.plot([1, 2, 3], [1.0, 2.0, 3.0], label="a")
    ax.plot([1, 2, 3], [0.0, 0.0, 0.0], label="zeros")
    ax.set_yscale("symlog", linthresh=1e-9)  # what the old code did with a 1e-9 smallest value
    ax.set_ylim(0, 1e12)  # many decades in a small figure: the labels collide
    ax.legend()
    msgs = "\n".join(figure_problems("bad", fig))
    assert "zeros: every point lies on the bottom spine" in msgs
    assert "overlap" in msgs


def test_checks_catch_rotated_labels_that_collide_but_not_those_side_by_side():
    for n, collide in ((6, False), (40, True)):
        fig, ax = _fig()
        ax.bar(np.arange(n), np.arange(n) + 1.0)
        ax.set_xticks(np.arange(n), [f"category {i}" for i in range(n)], rotation=30, ha="right")
        fig.tight_layout()
        msgs = "\n".join(figure_problems("bars", fig))
        assert ("overlap" in msgs) == collide, msgs


def test_checks_catch_a_cut_title_a_missing_legend_entry_and_a_repeated_title():
    fig, ax = _fig()
    ax.plot([1, 2], [1, 2], label="a")
    ax.plot([1, 2], [2, 1], label="b")
    ax.legend(handles=ax.lines[:1])
    ax.set_xlabel("n")
    fig.suptitle("Private median error vs n (a long title that runs off the figure): error vs n " * 2)
    msgs = "\n".join(figure_problems("bad", fig))
    assert "cut off" in msgs and "series without a legend entry: ['b']" in msgs and "repeats 'vs n'" in msgs


def test_checks_catch_hidden_series():
    fig, ax = _fig()
    ax.plot([1, 2, 3], [1, 2, 3], "o", label="under")
    ax.plot([1, 2, 3], [1, 2, 3], "s", label="over")
    ax.plot([2.9], [0.2], "x", label="in the corner")
    ax.set_xlim(0, 3.2)
    ax.set_ylim(0, 3.2)
    ax.legend(loc="lower right")
    ax.set_title("true ε and peers")
    msgs = "\n".join(figure_problems("bad", fig))
    assert "under: every marker sits under over's markers" in msgs
    assert "in the corner: hidden behind the legend" in msgs
    assert "true ε" in msgs and "peers" in msgs


# -- shipped experiments -------------------------------------------------------------------------

QUICK_MEDIAN = {
    "duff_table1": {},
    "real_data_medians": {},  # has exact zeros (Duff on the integers hits the truth every time)
    "duff_n_sweep": {"data": {"generator": "normal", "n": [100, 1000]}, "datasets": 4, "draws": 10},
    "duff_quantiles": {"datasets": 3, "draws": 10},
}
TEXTBOOK = ["pumpkin", "randomized_response", "laplace_from_exponential", "private_mode"]


@pytest.mark.parametrize("name", sorted(QUICK_MEDIAN))
def test_median_accuracy_figures_are_readable(name, tmp_path):
    figs = _capture_run(_raw(name, **QUICK_MEDIAN[name]), tmp_path)
    assert_readable(figs)
    if name == "duff_n_sweep":
        assert {"error_vs_n.png", "error_vs_epsilon_100.png"} <= {n for n, _ in figs}
    if name == "real_data_medians":  # the case of the issue: exact zeros on a log axis are drawn
        entries = [t.get_text() for _, f in figs for leg in legends_of(f) for t in leg.get_texts()]
        assert any(e.startswith("exactly 0") for e in entries)


@pytest.mark.parametrize("name", TEXTBOOK)
def test_textbook_figures_are_readable(name, tmp_path):
    assert_readable(_capture_run(ROOT / "configs" / f"{name}.yaml", tmp_path, quick=True))


REPRODUCTIONS = ["pf_vs_em", "topk_utility"]  # McKenna & Sheldon 2020; top-k at equal privacy


@pytest.mark.parametrize("name", REPRODUCTIONS)
def test_reproduction_figures_are_readable(name, tmp_path):
    assert_readable(_capture_run(ROOT / "configs" / f"{name}.yaml", tmp_path, quick=True))


def test_laplace_histogram_title_fits_with_one_epsilon(tmp_path):
    raw = _raw("laplace_from_exponential", epsilons=[1], loss_epsilons=[1], draws=200, grid_points=201)
    figs = dict(_capture_run(raw, tmp_path))
    assert_readable([("laplace_histograms.png", figs["laplace_histograms.png"])])


def test_zeros_on_a_log_axis_are_drawn_at_a_labelled_floor(tmp_path):
    # one series exactly 0 everywhere, one with a zero and a 1e-9, one ordinary
    t = pd.DataFrame({
        "mechanism": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
        "epsilon": [0.1, 0.5, 1.0] * 3,
        "mean": [0.0, 0.0, 0.0, 1e-9, 0.0, 0.5, 40.0, 4.0, 1.0],
        "se": [0.0, 0.0, 0.0, 1e-10, 0.0, 0.6, 1.0, 0.1, 0.05],
    })
    figs: list[tuple[str, Figure]] = []
    orig = Figure.savefig

    def spy(self, fname, *a, **k):
        figs.append((Path(str(fname)).name, self))
        return orig(self, fname, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", spy)
        plots.line_plot(t, x="epsilon", y="mean", err="se", series="mechanism", ref=None, xlabel="ε",
                        ylabel="error", title="zeros vs ε", path=tmp_path / "z.png", logx=True, logy=True)
        t2 = pd.concat([t.assign(n=100), t.assign(n=1000, mean=t["mean"] * 0.5)])
        plots.panel_plot(t2, x="n", y="mean", err="se", series="mechanism", panel="epsilon", xlabel="n",
                         ylabel="error", title="zeros vs n", path=tmp_path / "p.png", logx=True, logy=True,
                         panel_label="ε")
    assert_readable(figs)
    fig = figs[0][1]
    ax = fig.axes[0]
    floor = plots.zero_floor(t["mean"])
    assert floor == 1e-10  # one decade below the smallest positive value, 1e-9
    assert "0" in [lab.get_text() for lab in ax.yaxis.get_ticklabels()]
    assert ax.get_ylim()[0] < floor  # the "0" line is above the bottom spine
    entries = [x.get_text() for x in ax.figure.legends[0].get_texts()]
    assert any(e.startswith("exactly 0") for e in entries)


def test_audit_figures_are_readable(tmp_path):
    from dpharness.bench.audits import plots as audit_plots

    rows = []
    for aid, claimed, true, sizes in (("good", 1.0, 1.0, (1000, 10000)), ("broken", 1.0, 2.0, (1000, 10000, 100000)),
                                       ("support", 0.5, float("inf"), (500, 5000))):
        for i, n in enumerate(sizes):
            med = min(true, claimed * 2) * (0.5 + 0.15 * i)
            rows.append({"audit": aid, "samples": n, "epsilon_lower_median": med, "epsilon_lower_min": med * 0.8,
                         "epsilon_lower_max": med * 1.1, "epsilon_claimed": claimed, "true_epsilon": true,
                         "expect": "pass" if aid == "good" else "broken"})
    table = pd.DataFrame(rows)
    results = pd.DataFrame({"status": ["ok"] * 4, "exact_epsilon": [0.5, 1.0, 2.0, 0.8],
                            "epsilon_lower": [0.3, 0.7, 1.5, 0.6], "epsilon_estimate": [0.5, 1.1, 2.1, np.nan]})
    figs: list[tuple[str, Figure]] = []
    orig = Figure.savefig

    def spy(self, fname, *a, **k):
        figs.append((Path(str(fname)).name, self))
        return orig(self, fname, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", spy)
        audit_plots.plot_all(results, table, tmp_path)
    assert len(figs) == 2
    assert_readable(figs)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["duff_n_sweep", "real_data_medians", "duff_heavy_tails", "duff_add_remove_ss"])
def test_full_size_median_figures_are_readable(name, tmp_path):
    assert_readable(_capture_run(_raw(name, quick=False), tmp_path, jobs=2))


@pytest.mark.slow
def test_audit_run_figures_are_readable(tmp_path):
    from dpharness.bench.audits.cli import cmd_audit  # noqa: F401 - the audit CLI path draws the same figures

    figs = _capture_run(ROOT / "configs" / "audit_mechanisms.yaml", tmp_path, quick=True)
    assert_readable(figs)
