"""Experiment kind ``many_quantiles``: m private quantiles at once, error in misclassified points.

The synthetic experiments of Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles"
(ICML 2021; their code: google-research ``dp_multiq/experiment.py``), and a real-data variant.

Protocol. For every data spec, every number of quantiles m of the grid ``m`` and every mechanism,
one task runs ``trials`` trials. Trial i draws dataset i *fresh* (from a stream keyed by the data
identity and i only, so trial i uses the same dataset for every mechanism and every m: common
random numbers, as the paper's loop gives every method the same dataset within a trial), takes the
levels q_j = j / (m + 1), j = 1..m, and one private release ``mech.sample(x, size=draws, rng)`` of
shape (draws, m) from the task's generator. The truth is the lower empirical quantile
x_(ceil(q_j n)) of the data clipped to [lower, upper]. The error of one release is

    err = (1/m) sum_j #{ i : min(t_j, o_j) < x_i < max(t_j, o_j) },

the number of data points strictly between the true and the estimated quantile, averaged over the
m quantiles (and over the ``draws`` releases; the paper uses one). Each trial is one results row;
the table gives, per (data, epsilon, m, mechanism), the mean over trials, its standard deviation
and standard error (std / sqrt(trials)), and the mean *seconds per trial* -- read from the runner's
``seconds`` column (task wall time / trials: the releases plus generating the data, which costs
microseconds), so results.csv stays bit-identical for any ``--jobs`` (timing aside, as for every
kind). Timing is reported, never checked.

Mechanisms get ``epsilon`` (top-level grid), ``lower``/``upper`` (the data's range),
``quantiles`` (from m), ``neighbours`` (top-level; the paper's default is swap = ``replace_one``)
and -- for ``composition: optimal`` (AppIndExp) -- the top-level ``delta``. Any registered
mechanism with a ``quantiles`` parameter can be listed.

Config keys::

    data:        see bench.config.data (a generator, a statsmodels dataset+column, a csv+column; real data
                 usually with sample: subsample and n, as the paper subsamples its real columns)
    lower, upper: output range (data clipped to it) unless the data declares its own
    epsilon:     number or list;  delta: for mechanisms that need it (default 1e-6)
    neighbours:  replace_one (default, the paper's swap) | add_remove
    m:           list of quantile counts, or {from: a, to: b} for every integer in [a, b]
    trials:      trials (fresh datasets) per cell;  draws: releases per trial (default 1)
    print_m:     the m shown in the printed table (default 1, 5, 10, 20, 29, those in the grid)
    title:       heading of the table and the figures
    mechanisms:  list of {label, name, <fixed parameters>}
    reference:   {source, note, checks: [...]} -- statements of the paper checked on the measured
                 table (no published numbers); each check is one of
                   {check: lower, mechanism: A, than: B, m_min: k}     A's mean < B's at every m >= k
                   {check: growth, mechanism: A, from_m: a, to_m: b, min: r, max: s}
                                                                       mean(b) / mean(a) in [r, s]
                   {check: grows_slower, mechanism: A, than: B, from_m: a, to_m: b}
                                                                       A's growth ratio < B's
                 each on every data spec and epsilon; optional ``note`` per check.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpharness import mechanisms
from dpharness.mechanisms.base import ParamError
from dpharness.bench.config import REQUIRED, Ctx, did_you_mean
from dpharness.bench.config.data import DataSpec, parse_data
from dpharness.bench.run.tasks import Summary, Task, data_rng, format_value, make_key

__all__ = ["MechSpec", "Check", "Spec", "parse", "tasks", "run_task", "summarize", "plot", "describe_results",
           "misclassified", "levels", "lower_quantiles"]

_KEYS = ("data", "lower", "upper", "epsilon", "delta", "neighbours", "m", "trials", "draws", "print_m", "title",
         "mechanisms", "reference")
_RESERVED = {
    "epsilon": "comes from the top-level epsilon grid",
    "lower": "comes from the data's range (top-level lower/upper or the data's own)",
    "upper": "comes from the data's range (top-level lower/upper or the data's own)",
    "quantiles": "comes from m: the levels j/(m+1), j = 1..m",
    "neighbours": "comes from the top-level neighbours",
}
CHECKS = ("lower", "growth", "grows_slower")
NEIGHBOURS = ("replace_one", "add_remove")
_CHECK_KEYS = {
    "lower": ("check", "mechanism", "than", "m_min", "note"),
    "growth": ("check", "mechanism", "from_m", "to_m", "min", "max", "note"),
    "grows_slower": ("check", "mechanism", "than", "from_m", "to_m", "note"),
}
_MAX_M = 1000


@dataclass(frozen=True)
class MechSpec:
    label: str
    name: str
    params: tuple[tuple[str, Any], ...]

    def kwargs(self, spec: "Spec", epsilon: float, m: int, bounds: tuple[float, float]) -> dict[str, Any]:
        accepted = mechanisms.registry.parameters(self.name)
        kw: dict[str, Any] = dict(self.params)
        kw.update(epsilon=float(epsilon), lower=float(bounds[0]), upper=float(bounds[1]), quantiles=levels(m))
        if "neighbours" in accepted:
            kw["neighbours"] = spec.neighbours
        if "delta" in accepted and "delta" not in kw and kw.get("composition") == "optimal":
            kw["delta"] = spec.delta
        return kw

    def build(self, spec: "Spec", epsilon: float, m: int, bounds: tuple[float, float]) -> Any:
        return mechanisms.make(self.name, **self.kwargs(spec, epsilon, m, bounds))


@dataclass(frozen=True)
class Check:
    check: str
    mechanism: str
    than: str = ""
    m_min: int = 1
    from_m: int = 1
    to_m: int = 1
    min: float = -math.inf
    max: float = math.inf
    note: str = ""

    def describe(self) -> str:
        if self.check == "lower":
            return f"{self.mechanism} < {self.than} at every m ≥ {self.m_min}"
        if self.check == "growth":
            rng = [f"≥ {self.min:g}" if math.isfinite(self.min) else "", f"≤ {self.max:g}" if math.isfinite(self.max) else ""]
            return f"{self.mechanism}(m={self.to_m}) / {self.mechanism}(m={self.from_m}) {' and '.join(r for r in rng if r)}"
        return (f"{self.mechanism} grows more slowly than {self.than} from m={self.from_m} to m={self.to_m} "
                f"(ratio of means)")


@dataclass(frozen=True)
class Spec:
    data: tuple[DataSpec, ...]
    lower: float | None
    upper: float | None
    epsilon: tuple[float, ...]
    delta: float
    neighbours: str
    m: tuple[int, ...]
    trials: int
    draws: int
    print_m: tuple[int, ...]
    title: str
    mechanisms: tuple[MechSpec, ...]
    source: str
    note: str
    checks: tuple[Check, ...]
    seed: int

    def bounds(self, d: DataSpec) -> tuple[float, float]:
        if d.bounds is not None:
            return d.bounds
        assert self.lower is not None and self.upper is not None
        return (self.lower, self.upper)

    def data_by_label(self, label: str) -> DataSpec:
        for d in self.data:
            if d.label == label:
                return d
        raise KeyError(f"no data {label!r}")

    def mech(self, label: str) -> MechSpec:
        for m in self.mechanisms:
            if m.label == label:
                return m
        raise KeyError(f"no mechanism {label!r}")


# -- the measured quantities ---------------------------------------------------------------------


def levels(m: int) -> tuple[float, ...]:
    """The m evenly spaced levels j / (m + 1), j = 1..m."""
    return tuple(j / (m + 1) for j in range(1, m + 1))


def lower_quantiles(sorted_x: np.ndarray, qs: Any) -> np.ndarray:
    """x_(ceil(q n)) (1-based, clamped to [1, n]) of sorted data for every level q (q n rounded
    down by 1e-9 first, so that j/(m+1) * n computed in floating point does not overshoot)."""
    n = sorted_x.size
    r = np.clip(np.ceil(np.asarray(qs, dtype=np.float64) * n - 1e-9).astype(np.int64), 1, n)
    return sorted_x[r - 1]


def misclassified(sorted_x: np.ndarray, truth: np.ndarray, est: np.ndarray) -> np.ndarray:
    """Points strictly between truth[j] and est[..., j], averaged over j: shape est.shape[:-1].

    #{lo < x < hi} = #{x < hi} - #{x <= lo}, which is <= 0 when lo == hi (clipped at 0)."""
    est = np.asarray(est, dtype=np.float64)
    t = np.broadcast_to(np.asarray(truth, dtype=np.float64), est.shape)
    lo, hi = np.minimum(t, est), np.maximum(t, est)
    cnt = np.searchsorted(sorted_x, hi, side="left") - np.searchsorted(sorted_x, lo, side="right")
    return np.mean(np.maximum(cnt, 0), axis=-1)


# -- config --------------------------------------------------------------------------------------


def _parse_m(raw: dict, ctx: Ctx) -> tuple[int, ...]:
    v = raw.get("m")
    if isinstance(v, dict):
        c = ctx.at("m")
        c.reject_unknown(v, ("from", "to"))
        a = int(c.number(v, "from", lo=1, hi=_MAX_M, integer=True))
        b = int(c.number(v, "to", lo=1, hi=_MAX_M, integer=True))
        if b < a and not c.failed("from", "to"):
            c.report("to", f"must be >= from ({a}), got {b}")
            return (a,)
        return tuple(range(a, b + 1))
    ms = ctx.grid(raw, "m", int, lo=1, hi=_MAX_M)
    return tuple(sorted(int(x) for x in ms))


def parse(raw: dict, ctx: Ctx) -> Spec:
    ctx.reject_unknown(raw, _KEYS)
    if raw.get("data") is None:
        ctx.report("data", "is required (a generator, a statsmodels dataset+column, or a csv+column)")
    data = parse_data(raw["data"], ctx.at("data")) if raw.get("data") is not None else ()
    need_range = any(d.bounds is None for d in data)
    lower = ctx.number(raw, "lower", None if not need_range else REQUIRED)
    upper = ctx.number(raw, "upper", None if not need_range else REQUIRED)
    if lower is not None and upper is not None and not lower < upper and not ctx.failed("lower", "upper"):
        ctx.report("upper", f"must be > lower ({format_value(lower)}), got {format_value(upper)}")
        lower, upper = 0.0, 1.0
    eps = ctx.grid(raw, "epsilon", float, lo=0, lo_open=True)
    delta = float(ctx.number(raw, "delta", 1e-6, lo=0, hi=1, lo_open=True, hi_open=True))
    neighbours = ctx.choice(raw, "neighbours", NEIGHBOURS, "replace_one")
    ms = _parse_m(raw, ctx)
    trials = int(ctx.number(raw, "trials", lo=1, integer=True))
    draws = int(ctx.number(raw, "draws", 1, lo=1, integer=True))
    pm_default = tuple(k for k in (1, 5, 10, 20, 29) if k in ms) or ms
    print_m = tuple(int(k) for k in ctx.grid(raw, "print_m", int, pm_default, lo=1, hi=_MAX_M))
    for i, k in enumerate(print_m):
        if k not in ms and not ctx.failed("m"):
            ctx.report(f"print_m[{i}]" if isinstance(raw.get("print_m"), list) else "print_m",
                       f"must be one of the m grid ({', '.join(map(str, ms))}), got {k}")
    title = ctx.get(raw, "title", str, "")
    spec = Spec(data, None if lower is None else float(lower), None if upper is None else float(upper), eps, delta,
                neighbours, ms, trials, draws, print_m, title, (), "", "", (), int(ctx.seed))
    for d in data:
        if not ctx.failed("data", "lower", "upper"):
            outside = d.outside(spec.bounds(d))
            if outside:
                ctx.report(d.where or "data", outside)
    spec = replace(spec, mechanisms=_parse_mechanisms(raw, ctx, spec))
    if raw.get("reference") is not None:
        spec = _parse_reference(raw["reference"], ctx.at("reference"), spec)
    return spec


def _parse_mechanisms(raw: dict, ctx: Ctx, spec: Spec) -> tuple[MechSpec, ...]:
    entries = ctx.get(raw, "mechanisms", list)
    if not entries and not ctx.failed("mechanisms"):
        ctx.report("mechanisms", "must list at least one mechanism")
    out: list[MechSpec] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        c = ctx.at("mechanisms", i)
        entry = c.require_mapping(entry)
        name = c.get(entry, "name", str)
        avail = mechanisms.available()
        if name not in avail:
            c.report("name", f"unknown mechanism {name!r}{did_you_mean(name, avail)}; accepted: {', '.join(avail)}")
            continue
        accepted = mechanisms.registry.parameters(name)
        if "quantiles" not in accepted:
            ok = [n for n in avail if "quantiles" in mechanisms.registry.parameters(n)]
            c.report("name", f"{name} has no quantiles parameter (it cannot release m quantiles); accepted: {', '.join(ok)}")
            continue
        label = c.get(entry, "label", str, name)
        params: dict[str, Any] = {}
        for k, v in entry.items():
            if k in ("label", "name"):
                continue
            if k in _RESERVED:
                c.report(k, f"is not set per mechanism: it {_RESERVED[k]}")
                continue
            ok = [p for p in accepted if p not in _RESERVED]
            if k not in accepted:
                c.report(k, f"unknown parameter of {name}{did_you_mean(k, ok)}; accepted: label, name, {', '.join(ok)}")
                continue
            if isinstance(v, (dict, list)) or v is None:
                c.report(k, f"must be a scalar (number, string or true/false), got {v!r}")
                continue
            params[k] = v
        if label in seen:
            c.report("label", f"duplicate label {label!r}; labels name table rows and must be unique")
            continue
        seen.add(label)
        if c.failed(""):
            continue
        ms = MechSpec(label, name, tuple(params.items()))
        ranges = list(dict.fromkeys(spec.bounds(d) for d in spec.data)) if not ctx.failed("data", "lower", "upper") else []
        try:
            for eps in spec.epsilon:
                for m in sorted({spec.m[0], spec.m[-1]}):
                    for b in ranges:
                        ms.build(spec, eps, m, b)
        except (ValueError, TypeError) as exc:
            field = exc.field if isinstance(exc, ParamError) else ""  # the parameter the builder refused
            c.report(field if field in entry else "", f"{name}: {exc}")
            continue
        out.append(ms)
    return tuple(out)


def _parse_reference(raw: Any, ctx: Ctx, spec: Spec) -> Spec:
    raw = ctx.require_mapping(raw)
    ctx.reject_unknown(raw, ("source", "note", "checks"))
    labels = [m.label for m in spec.mechanisms]
    checks = []
    for i, r in enumerate(ctx.get(raw, "checks", list, [])):
        c = ctx.at("checks", i)
        r = c.require_mapping(r)
        kind = c.choice(r, "check", CHECKS)
        c.reject_unknown(r, _CHECK_KEYS.get(kind, ("check",)))
        kw: dict[str, Any] = {"check": kind, "note": c.get(r, "note", str, "")}
        for key in ("mechanism", "than") if kind != "growth" else ("mechanism",):
            lab = c.get(r, key, str)
            if lab not in labels and not ctx.failed() and not c.failed(key):
                c.report(key, f"no mechanism labelled {lab!r}{did_you_mean(lab, labels)}; labels: {', '.join(labels)}")
            kw[key] = lab
        ms_keys = ("m_min",) if kind == "lower" else ("from_m", "to_m")
        for key in ms_keys:
            v = int(c.number(r, key, lo=1, integer=True))
            if key != "m_min" and v not in spec.m and not c.failed(key):
                c.report(key, f"must be one of the m grid ({', '.join(map(str, spec.m))}), got {v}")
            kw[key] = v
        if kind == "growth":
            kw["min"] = float(c.number(r, "min", -math.inf))
            kw["max"] = float(c.number(r, "max", math.inf))
            if "min" not in r and "max" not in r:
                c.report("", "give min, max or both (bounds of the growth ratio)")
        checks.append(Check(**kw))
    return replace(spec, source=ctx.get(raw, "source", str, ""), note=ctx.get(raw, "note", str, ""), checks=tuple(checks))


# -- tasks ---------------------------------------------------------------------------------------


def tasks(spec: Spec) -> list[Task]:
    """One task per (data, epsilon, m, mechanism); it runs every trial of its cell."""
    out = []
    for d in spec.data:
        for eps in spec.epsilon:
            for m in spec.m:
                for mech in spec.mechanisms:
                    parts = dict(data=d.label, epsilon=eps, m=m, mechanism=mech.label)
                    out.append(Task(make_key(**parts), dict(parts, name=mech.name)))
    return out


def run_task(spec: Spec, task: Task, rng: np.random.Generator) -> list[dict]:
    p = task.params
    d = spec.data_by_label(p["data"])
    m = int(p["m"])
    lo, hi = spec.bounds(d)
    mech = spec.mech(p["mechanism"]).build(spec, p["epsilon"], m, (lo, hi))
    qs = levels(m)
    rows = []
    for i in range(spec.trials):
        raw = d.generate(data_rng(spec.seed, d.data_key(i)))
        clipped = int(np.count_nonzero((raw < lo) | (raw > hi)))
        x = np.sort(np.clip(raw, lo, hi))
        truth = lower_quantiles(x, qs)
        out = np.asarray(mech.sample(x, size=spec.draws, rng=rng), dtype=np.float64).reshape(spec.draws, m)
        err = misclassified(x, truth, out)
        rows.append({"data": p["data"], "epsilon": float(p["epsilon"]), "m": m, "mechanism": p["mechanism"],
                     "trial": i, "n": int(x.size), "error": float(np.mean(err)), "clipped": clipped})
    return rows


def cell_columns(spec: Spec) -> list[str]:
    return ["data", "epsilon", "m", "mechanism"]


def describe_results(spec: Spec) -> dict[str, Any]:
    return {"cell_columns": cell_columns(spec), "replicate_column": "trial", "metric": "error",
            "lower_is_better": True, "table_columns": {"mean": "mean", "std": "std", "se": "se"}}


# -- summary -------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"


def _check_rows(spec: Spec, table: pd.DataFrame) -> list[tuple[Check, str, str, bool]]:
    """(check, where, measured text, passed) for every check, data spec and epsilon."""
    out = []
    idx = {(r["data"], r["epsilon"], r["m"], r["mechanism"]): r for _, r in table.iterrows()}

    def val(dl: str, e: float, m: int, lab: str) -> tuple[float, float]:
        r = idx.get((dl, e, m, lab))
        return (float(r["mean"]), float(r["se"])) if r is not None else (math.nan, math.nan)

    for ch in spec.checks:
        for d in spec.data:
            for e in spec.epsilon:
                where = d.label + (f", ε={format_value(e)}" if len(spec.epsilon) > 1 else "")
                if ch.check == "lower":
                    bad, worst = [], math.inf
                    for m in (k for k in spec.m if k >= ch.m_min):
                        a, sa = val(d.label, e, m, ch.mechanism)
                        b, sb = val(d.label, e, m, ch.than)
                        z = (b - a) / math.sqrt(sa * sa + sb * sb) if sa * sa + sb * sb > 0 else math.inf
                        worst = min(worst, z) if math.isfinite(a - b) else worst
                        if not a < b:
                            bad.append(m)
                    ok = not bad
                    txt = ("holds; smallest gap " + (f"{worst:.1f} SE" if math.isfinite(worst) else "—")) if ok \
                        else f"fails at m = {', '.join(map(str, bad))}"
                    out.append((ch, where, txt, ok))
                    continue
                a0, _ = val(d.label, e, ch.from_m, ch.mechanism)
                a1, _ = val(d.label, e, ch.to_m, ch.mechanism)
                ra = a1 / a0 if a0 > 0 else math.nan
                if ch.check == "growth":
                    ok = bool(math.isfinite(ra) and ch.min <= ra <= ch.max)
                    out.append((ch, where, f"ratio {ra:.2f}", ok))
                else:
                    b0, _ = val(d.label, e, ch.from_m, ch.than)
                    b1, _ = val(d.label, e, ch.to_m, ch.than)
                    rb = b1 / b0 if b0 > 0 else math.nan
                    ok = bool(math.isfinite(ra) and math.isfinite(rb) and ra < rb)
                    out.append((ch, where, f"{ch.mechanism} ×{ra:.2f} vs {ch.than} ×{rb:.2f}", ok))
    return out


def summarize(spec: Spec, results: pd.DataFrame) -> Summary:
    from dpharness.bench.report.tables import format_text_table

    ok_rows = results[results["status"] == "ok"] if "status" in results else results
    keys = cell_columns(spec)
    grouped = {k: g for k, g in ok_rows.groupby(keys, sort=False)} if len(ok_rows) else {}
    records = []
    for d in spec.data:
        for e in spec.epsilon:
            for m in spec.m:
                for mech in spec.mechanisms:
                    g = grouped.get((d.label, float(e), int(m), mech.label))
                    vals = np.asarray(g["error"], dtype=np.float64) if g is not None else np.empty(0)
                    k = vals.size
                    secs = math.nan
                    if g is not None and "seconds" in g and "task" in g:
                        per_task = g.groupby("task", sort=False)["seconds"].first()
                        secs = float(per_task.sum()) / k if k else math.nan
                    std = float(np.std(vals, ddof=1)) if k > 1 else math.nan
                    records.append({"data": d.label, "epsilon": float(e), "m": int(m), "mechanism": mech.label,
                                    "mean": float(np.mean(vals)) if k else math.nan, "std": std,
                                    "se": std / math.sqrt(k) if k > 1 else math.nan, "trials": int(k),
                                    "seconds_per_trial": secs})
    table = pd.DataFrame.from_records(records)
    checks = _check_rows(spec, table) if len(table) else []
    ok = all(c[3] for c in checks)

    lines = [spec.title or "many quantiles", ""]
    ranges = ", ".join(f"{d.label} [{format_value(spec.bounds(d)[0])}, {format_value(spec.bounds(d)[1])}]" for d in spec.data)
    lines.append(f"mean misclassified points per quantile ± SE over {spec.trials} trials (fresh data each), "
                 f"levels j/(m+1); ranges {ranges}; neighbours {spec.neighbours}; δ = {spec.delta:g} where needed")
    wide = []
    for (dl, e, lab), g in table.groupby(["data", "epsilon", "mechanism"], sort=False):
        rec: dict[str, Any] = {"data": dl}
        if len(spec.epsilon) > 1:
            rec["ε"] = format_value(e)
        rec["mechanism"] = lab
        for _, r in g[g["m"].isin(spec.print_m)].iterrows():
            rec[f"m={r['m']}"] = f"{_fmt(r['mean'])} ± {_fmt(r['se'])}"
        wide.append(rec)
    lines.append(format_text_table(pd.DataFrame.from_records(wide)))
    lines.append("")
    lines.append("mean seconds per trial (task wall time / trials: the release plus generating the data; not checked)")
    tw = []
    for (dl, e, lab), g in table.groupby(["data", "epsilon", "mechanism"], sort=False):
        rec = {"data": dl, "mechanism": lab}
        for _, r in g[g["m"].isin(spec.print_m)].iterrows():
            rec[f"m={r['m']}"] = f"{r['seconds_per_trial']:.4f}" if math.isfinite(r["seconds_per_trial"]) else "—"
        tw.append(rec)
    lines.append(format_text_table(pd.DataFrame.from_records(tw)))
    if checks:
        lines.append("")
        if spec.source:
            lines.append(f"paper: {spec.source}")
        for ch, where, txt, passed in checks:
            lines.append(f"[{'ok' if passed else 'FAILS'}] {ch.describe()} ({where}): {txt}")
        for ch in spec.checks:
            if ch.note:
                lines.append(f"note on '{ch.describe()}': {ch.note}")
        if spec.note:
            lines.append(spec.note)
    short = table[table["trials"] < spec.trials]
    if len(short):
        lines.append(f"WARNING: {len(short)} cell(s) have fewer than {spec.trials} trials because tasks failed; see results.csv")
    return Summary(table, "\n".join(lines), ok)


# -- figures -------------------------------------------------------------------------------------


def plot(spec: Spec, results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    """Error vs m, one line per mechanism, log y (±1 SE bars), one figure per data (and epsilon)."""
    from dpharness.bench.report import plots

    paths = []
    for (dl, e), sub in table.groupby(["data", "epsilon"], sort=False):
        sub = sub[np.isfinite(sub["mean"].to_numpy(float))]
        if not len(sub):
            continue
        head = spec.title or "many quantiles"
        # ε on the second line unless the config's title already states this very value
        eps = format_value(e)
        said = re.search(r"(?:ε|eps|epsilon)\s*=\s*" + re.escape(eps) + r"(?![\d.])", head)
        tag = dl + ("" if said else f", ε={eps}")
        name = "error_vs_m_" + plots.slug(dl + (f"_eps{eps}" if len(spec.epsilon) > 1 else ""))
        paths.append(plots.line_plot(
            sub, x="m", y="mean", err="se", series="mechanism", ref=None,
            xlabel="number of quantiles m", ylabel="misclassified points per quantile (bars: ±1 SE)",
            title=f"{head}\nerror vs number of quantiles m, {tag}", path=fig_dir / f"{name}.png", logy=True,
        ))
    return paths
