"""Accuracy of private medians and quantiles: ``experiment: median_accuracy`` (the default kind).

Protocol: for every data spec, ``datasets`` datasets are drawn (dataset i is shared by every
mechanism, epsilon and q: it comes from a stream keyed by the data identity); for every mechanism,
epsilon (and q) one task takes ``draws`` samples ``mech.sample(x, size=draws, rng)`` and reports
that dataset's mean error (``metric``) against the truth. The truth is the order statistic of the
data *clipped to [lower, upper]* (the Duff convention); outputs are clipped to the same range when
``clip_output`` (default true). Each results row counts the data points that were clipped
(column ``clipped``); data lying entirely outside the range is refused as a config error (see
:meth:`bench.data.DataSpec.outside`). The table has one row per cell (data, n, q, mechanism, epsilon):
``mean`` = mean over datasets of the per-dataset mean error, ``std`` = their standard deviation
across datasets, ``se = std / sqrt(datasets)``, all multiplied by ``scale`` (column suffix
``_x100`` for the default scale 100).

Config keys (``configs/duff_table1.yaml`` is the annotated example)::

    data:         see bench.data (generator / dataset+column / csv; lists expand into grids)
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

import itertools
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ... import mechanisms
from ..config import REQUIRED, Ctx, did_you_mean
from ..data import DataSpec, parse_data
from ..tasks import Summary, Task, data_rng, format_value, make_key

__all__ = ["MechSpec", "RefRow", "Reference", "Spec", "parse", "tasks", "run_task", "summarize", "plot", "describe_results"]

_KEYS = (
    "data", "statistic", "q", "truth", "lower", "upper", "clip_output", "epsilon", "datasets", "draws",
    "metric", "scale", "title", "mechanisms", "reference",
)
# Set by the experiment, not per mechanism.
_RESERVED = {
    "epsilon": "comes from the top-level epsilon grid",
    "lower": "comes from the top-level lower/upper output range",
    "upper": "comes from the top-level lower/upper output range",
    "q": "comes from the top-level q (statistic: quantile)",
}
_TASK_FIELDS = ("data", "n", "q", "mechanism", "epsilon", "dataset", "name")
METRICS = {"abs_error": "mean_abs_error", "sq_error": "mean_sq_error"}
_METRIC_TEXT = {"abs_error": "mean |error|", "sq_error": "mean squared error"}


@dataclass(frozen=True)
class MechSpec:
    """One mechanism row: display ``label``, registry ``name`` and its fixed parameters."""

    label: str
    name: str
    params: tuple[tuple[str, Any], ...]

    def kwargs(self, spec: "Spec", epsilon: float, q: float, bounds: tuple[float, float]) -> dict[str, Any]:
        """Constructor arguments: the fixed parameters plus epsilon, range, q, clip_output."""
        accepted = mechanisms.registry.parameters(self.name)
        kw: dict[str, Any] = dict(self.params)
        kw["epsilon"] = float(epsilon)
        for k, v in (("lower", bounds[0]), ("upper", bounds[1])):
            if k in accepted:
                kw[k] = float(v)
        if "q" in accepted:
            kw["q"] = float(q)
        if "clip_output" in accepted and "clip_output" not in kw:
            kw["clip_output"] = spec.clip_output
        return kw

    def build(self, spec: "Spec", epsilon: float, q: float, bounds: tuple[float, float]) -> Any:
        return mechanisms.make(self.name, **self.kwargs(spec, epsilon, q, bounds))


@dataclass(frozen=True)
class RefRow:
    """Published values for one mechanism: epsilon -> mean (and std), with its tolerance rule."""

    mechanism: str
    mean: tuple[tuple[float, float], ...]
    std: tuple[tuple[float, float], ...]
    abs_tol: float
    se_mult: float
    rel: float
    note: str


@dataclass(frozen=True)
class Reference:
    source: str
    note: str
    abs_tol: float
    se_mult: float
    rel: float
    rows: tuple[RefRow, ...]


@dataclass(frozen=True)
class Spec:
    data: tuple[DataSpec, ...]
    statistic: str
    q: tuple[float, ...]
    truth: str
    lower: float | None
    upper: float | None
    clip_output: bool
    epsilon: tuple[float, ...]
    datasets: int
    draws: int
    metric: str
    scale: float
    title: str
    mechanisms: tuple[MechSpec, ...]
    reference: Reference | None
    seed: int

    @property
    def suffix(self) -> str:
        return f"_x{format_value(self.scale)}" if self.scale != 1 else ""

    def bounds(self, d: DataSpec) -> tuple[float, float]:
        """The output range for data ``d``: its own ``lower``/``upper`` if declared, else the top-level one."""
        if d.bounds is not None:
            return d.bounds
        assert self.lower is not None and self.upper is not None
        return (self.lower, self.upper)

    def data_spec(self, label: str, n: int) -> DataSpec:
        for d in self.data:
            if d.label == label and d.size() == n:
                return d
        raise KeyError(f"no data {label!r} with n={n}")

    def mech(self, label: str) -> MechSpec:
        for m in self.mechanisms:
            if m.label == label:
                return m
        raise KeyError(f"no mechanism {label!r}")


# -- parsing ------------------------------------------------------------------------------------


def parse(raw: dict, ctx: Ctx) -> Spec:
    """Validate a median_accuracy config and build every mechanism once per epsilon (and q)."""
    ctx.reject_unknown(raw, _KEYS)
    if raw.get("data") is None:
        ctx.report("data", "is required (a generator, a statsmodels dataset+column, or a csv+column)")
    data = parse_data(raw["data"], ctx.at("data")) if raw.get("data") is not None else ()
    statistic = ctx.choice(raw, "statistic", ("median", "quantile"), "median")
    if statistic == "quantile":
        qs = ctx.grid(raw, "q", float, lo=0, hi=1, lo_open=True, hi_open=True)
    else:
        if raw.get("q") is not None:
            ctx.report("q", "only with statistic: quantile (the median is q = 0.5)")
        qs = (0.5,)
    truth = ctx.choice(raw, "truth", ("lower", "upper", "average"), "lower")
    need_range = any(d.bounds is None for d in data)
    lower = ctx.number(raw, "lower", None if not need_range else REQUIRED)
    upper = ctx.number(raw, "upper", None if not need_range else REQUIRED)
    if (lower is None) != (upper is None):
        ctx.report("upper" if upper is None else "lower", "give both lower and upper, or neither")
        lower = upper = None
    if lower is not None and not lower < upper:
        if not ctx.failed("lower", "upper"):
            ctx.report("upper", f"must be > lower ({format_value(lower)}), got {format_value(upper)}")
        lower, upper = (None, None) if not need_range else (0.0, 1.0)  # placeholder: mistake recorded
    clip_output = ctx.get(raw, "clip_output", bool, True)
    eps = ctx.grid(raw, "epsilon", float, lo=0, lo_open=True)
    datasets = ctx.number(raw, "datasets", lo=1, integer=True)
    draws = ctx.number(raw, "draws", lo=1, integer=True)
    metric = ctx.choice(raw, "metric", tuple(METRICS), "abs_error")
    scale = ctx.number(raw, "scale", 100.0, lo=0, lo_open=True)
    title = ctx.get(raw, "title", str, "")
    spec0 = Spec(data, statistic, qs, truth, None if lower is None else float(lower),
                 None if upper is None else float(upper), clip_output, eps, int(datasets), int(draws),
                 metric, float(scale), title, (), None, int(ctx.seed))
    for d in data:  # data entirely outside its declared range is a mistake, not a result
        outside = d.outside(spec0.bounds(d)) if not ctx.failed("data", "lower", "upper") else None
        if outside:
            ctx.report(d.where or "data", outside + ("" if d.bounds else " (the top-level lower/upper)"))
    mechs = _parse_mechanisms(raw, ctx, spec0)
    spec1 = _replace(spec0, mechanisms=mechs)
    reference = _parse_reference(raw.get("reference"), ctx.at("reference"), spec1) if raw.get("reference") is not None else None
    return _replace(spec1, reference=reference)


def _replace(spec: Spec, **kw: Any) -> Spec:
    from dataclasses import replace

    return replace(spec, **kw)


def _parse_mechanisms(raw: dict, ctx: Ctx, spec: Spec) -> tuple[MechSpec, ...]:
    entries = ctx.get(raw, "mechanisms", list)
    if not entries and not ctx.failed("mechanisms"):
        ctx.report("mechanisms", "must list at least one mechanism")
    out: list[MechSpec] = []
    where: dict[str, str] = {}
    for i, entry in enumerate(entries):
        c = ctx.at("mechanisms", i)
        entry = c.require_mapping(entry)
        name = c.get(entry, "name", str)
        if name not in mechanisms.available():
            avail = mechanisms.available()
            c.report("name", f"unknown mechanism {name!r}{did_you_mean(name, avail)}; accepted: {', '.join(avail) or '(none registered)'}")
            continue
        accepted = mechanisms.registry.parameters(name)
        label = c.get(entry, "label", str, name)
        axes: dict[str, tuple] = {}
        for k, v in entry.items():
            if k in ("label", "name"):
                continue
            if k in _RESERVED:
                c.report(k, f"is not set per mechanism: it {_RESERVED[k]}")
                continue
            if k not in accepted or k in _TASK_FIELDS:
                ok = [p for p in accepted if p not in _RESERVED and p not in _TASK_FIELDS]
                c.report(k, f"unknown parameter of {name}{did_you_mean(k, ok)}; accepted: label, name, {', '.join(ok)}")
                continue
            axes[k] = c.grid(entry, k, object)
            for j, val in enumerate(axes[k]):
                if isinstance(val, (dict, list)) or val is None:
                    c.report(f"{k}[{j}]" if isinstance(v, list) else k, f"must be a scalar (number, string or true/false), got {val!r}")
        if c.failed(""):
            continue  # building it would only repeat the mistakes above
        if spec.statistic == "quantile" and "q" not in accepted and any(q != 0.5 for q in spec.q):
            c.report("name", f"{name} has no q parameter, so it cannot estimate quantiles q={', '.join(map(format_value, spec.q))}")
            continue
        varying = [k for k, v in axes.items() if len(v) > 1]
        for combo in itertools.product(*axes.values()):
            params = dict(zip(axes, combo))
            lab = label
            if "{" in label:
                try:
                    lab = label.format(**params)
                except (KeyError, IndexError, ValueError) as exc:
                    c.report("label", f"placeholder {exc} is not one of this mechanism's parameters ({', '.join(axes)})")
                    break
            elif varying:
                lab += " (" + ", ".join(f"{k}={format_value(params[k])}" for k in varying) + ")"
            if lab in where:
                c.report("label", f"duplicate label {lab!r} (also {where[lab]}); labels name table rows and must be unique")
                break
            where[lab] = c.prefix
            ms = MechSpec(lab, name, tuple(params.items()))
            if not _check_build(ms, spec, c, entry):
                break
            out.append(ms)
    return tuple(out)


def _check_build(ms: MechSpec, spec: Spec, c: Ctx, entry: dict) -> bool:
    """Build the mechanism for every epsilon, q and data range; map its ValueError to the config
    field (recorded; False after the first failure)."""
    ranges = list(dict.fromkeys(spec.bounds(d) for d in spec.data))
    if not spec.data and spec.lower is not None:  # the data has a mistake: check with the top-level range
        ranges = [(spec.lower, spec.upper)]
    for eps, q, bounds in itertools.product(spec.epsilon, spec.q, ranges):
        try:
            ms.build(spec, eps, q, bounds)
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            m = re.match(r"^(?:[\w.]+: )?(\w+) (.*)$", msg, re.S)
            word, rest = (m.group(1), m.group(2)) if m else ("", msg)
            if word in entry and word not in ("label", "name"):
                v = entry[word]
                path = word
                if isinstance(v, list):
                    val = dict(ms.params).get(word)
                    path = f"{word}[{v.index(val)}]" if val in v else word
                c.report(path, rest)
            elif word == "epsilon":
                c.report("epsilon", f"{msg} (from the epsilon grid, epsilon={format_value(eps)})")
            elif word in ("lower", "upper"):
                c.report("name", f"{ms.name} rejects the output range: {msg}")
            else:
                c.report("", f"{ms.name}: {msg}")
            return False
    return True


def _parse_tol(raw: Any, ctx: Ctx, base: tuple[float, float, float]) -> tuple[float, float, float]:
    if raw is None:
        return base
    ctx.reject_unknown(raw, ("abs", "se", "rel"))
    return (
        float(ctx.number(raw, "abs", base[0], lo=0)),
        float(ctx.number(raw, "se", base[1], lo=0)),
        float(ctx.number(raw, "rel", base[2], lo=0)),
    )


def _parse_eps_map(raw: Any, ctx: Ctx, key: str, spec: Spec) -> tuple[tuple[float, float], ...]:
    m = ctx.get(raw, key, dict, {})
    out = []
    for e, v in m.items():
        ok_e = isinstance(e, (int, float)) and not isinstance(e, bool)
        if not ok_e or float(e) not in spec.epsilon:
            ctx.report(f"{key}.{e}", f"keys are epsilon values of the grid ({', '.join(map(format_value, spec.epsilon))}), got {e!r}")
            continue
        val = ctx.check_number(v, f"{key}.{e}", lo=0)
        out.append((float(e), float(val)))
    return tuple(out)


def _parse_reference(raw: Any, ctx: Ctx, spec: Spec) -> Reference:
    ctx.reject_unknown(raw, ("source", "note", "tolerance", "rows"))
    source = ctx.get(raw, "source", str, "")
    note = ctx.get(raw, "note", str, "")
    base = _parse_tol(ctx.get(raw, "tolerance", dict, None), ctx.at("tolerance"), (0.0, 3.0, 0.0))
    rows_raw = ctx.get(raw, "rows", list)
    labels = [m.label for m in spec.mechanisms]
    rows = []
    for i, r in enumerate(rows_raw):
        c = ctx.at("rows", i)
        c.reject_unknown(r, ("mechanism", "mean", "std", "tolerance", "note"))
        lab = c.get(r, "mechanism", str)
        if lab not in labels and not ctx.failed():  # (a mechanism with a mistake has no label yet)
            c.report("mechanism", f"no mechanism labelled {lab!r}{did_you_mean(lab, labels)}; labels: {', '.join(labels)}")
        mean = _parse_eps_map(r, c, "mean", spec)
        if not mean and not c.failed("mean"):
            c.report("mean", "is required: a mapping epsilon -> published mean")
        std = _parse_eps_map(r, c, "std", spec)
        tol = _parse_tol(c.get(r, "tolerance", dict, None), c.at("tolerance"), base)
        rows.append(RefRow(lab, mean, std, *tol, c.get(r, "note", str, "")))
    return Reference(source, note, *base, tuple(rows))


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


def _facets(spec: Spec) -> list[str]:
    """Cell columns other than mechanism/epsilon that take more than one value (table columns)."""
    out = []
    if len({d.label for d in spec.data}) > 1:
        out.append("data")
    if len({d.size() for d in spec.data}) > 1:
        out.append("n")
    if len(spec.q) > 1:
        out.append("q")
    return out


def _n_is_axis(spec: Spec) -> bool:
    """n is a swept axis (not just each real column's own size) when one data label has several n."""
    sizes: dict[str, set] = {}
    for d in spec.data:
        sizes.setdefault(d.label, set()).add(d.size())
    return any(len(v) > 1 for v in sizes.values())


def _tolerance(row: RefRow, se: float, paper: float) -> float:
    return max(row.abs_tol, row.se_mult * se + row.rel * abs(paper))


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
    ok = True
    ref = spec.reference
    if ref is not None:
        pm, ps, wt, tols = [], [], [], []
        rows = {r.mechanism: r for r in ref.rows}
        for _, r in table.iterrows():
            rr = rows.get(r["mechanism"])
            paper = dict(rr.mean).get(float(r["epsilon"])) if rr else None
            pstd = dict(rr.std).get(float(r["epsilon"])) if rr else None
            pm.append(paper if paper is not None else math.nan)
            ps.append(pstd if pstd is not None else math.nan)
            if paper is None or rr is None:
                wt.append(None)
                tols.append(math.nan)
                continue
            se = r["se" + sfx] if math.isfinite(r["se" + sfx]) else 0.0
            tol = _tolerance(rr, se, paper)
            inside = bool(math.isfinite(r["mean" + sfx]) and abs(r["mean" + sfx] - paper) <= tol)
            wt.append(inside)
            tols.append(tol)
            ok = ok and inside
        table["paper_mean" + sfx] = pm
        table["paper_std" + sfx] = ps
        table["within_tolerance"] = pd.array(wt, dtype="boolean")
        table["_tol"] = tols
    text = _text(spec, table)
    public = table[[c for c in table.columns if not c.startswith("_") and c not in _hidden(spec)]]
    return Summary(public.reset_index(drop=True), text, ok)


def _hidden(spec: Spec) -> set[str]:
    return {"data", "n", "q"} - set(_facets(spec))


def _f(x: float, nd: int = 2) -> str:
    """Two decimals, or two significant digits for small non-zero values (0.0042, not 0.00)."""
    if x is None or not math.isfinite(x):
        return "—"
    if x != 0 and abs(x) < 0.5 * 10 ** -(nd - 1):
        return f"{x:.2g}"
    return f"{x:.{nd}f}"


def _heading(spec: Spec) -> str:
    what = _METRIC_TEXT[spec.metric]
    stat = "lower median" if spec.statistic == "median" and spec.truth == "lower" else (
        f"{spec.truth} {'median' if spec.statistic == 'median' else 'quantile'}")
    sc = f" x {format_value(spec.scale)}" if spec.scale != 1 else ""
    head = spec.title or "median accuracy"
    ds = spec.data[0]
    data_txt = ds.label + (f", n={ds.size()}" if len(spec.data) == 1 else f" and {len(spec.data) - 1} more")
    ranges = list(dict.fromkeys(spec.bounds(d) for d in spec.data))
    rng_txt = (f"range [{format_value(ranges[0][0])}, {format_value(ranges[0][1])}]" if len(ranges) == 1
               else "ranges " + ", ".join(f"{d.label} [{format_value(spec.bounds(d)[0])}, {format_value(spec.bounds(d)[1])}]" for d in spec.data))
    return (f"{head}\n{what}{sc} of the {stat}; data {data_txt}; {rng_txt}{', outputs clipped' if spec.clip_output else ''}; "
            f"{spec.datasets} datasets x {spec.draws} draws")


def _ratio_text(spec: Spec, table: pd.DataFrame, mechanism: str) -> str:
    """"ours/paper ± 1 SE (n datasets per cell): ε=..: r ± s, ..." for one reference row, computed
    from this run (the SE of the ratio is our SE / paper: the paper's value is a fixed number)."""
    sfx = spec.suffix
    sub = table[table["mechanism"] == mechanism]
    parts = []
    for _, r in sub.iterrows():
        paper = r["paper_mean" + sfx]
        if math.isfinite(paper) and paper > 0:
            se = r["se" + sfx]
            parts.append(f"ε={format_value(r['epsilon'])}: {r['mean' + sfx] / paper:.2f}"
                         + (f" ± {se / paper:.2f}" if math.isfinite(se) else ""))
    k = sorted({int(v) for v in sub["_k"]}) if len(sub) else [spec.datasets]
    per_cell = f"{k[0]}" if len(k) == 1 else f"{k[0]}–{k[-1]}"
    return f"ours/paper ± 1 SE of ours, {per_cell} datasets per cell: {', '.join(parts) or '—'}"


def _text(spec: Spec, table: pd.DataFrame) -> str:
    from ..tables import format_text_table

    sfx = spec.suffix
    lines = [_heading(spec), ""]
    facets = _facets(spec)
    incomplete = table[table["_k"] < spec.datasets]
    if spec.reference is None:
        # Wide: one row per (facets, mechanism), one column per epsilon: "mean ± SE".
        rows = []
        for key, g in table.groupby(facets + ["mechanism"], sort=False):
            key = key if isinstance(key, tuple) else (key,)
            rec = dict(zip(facets + ["mechanism"], key))
            for _, r in g.iterrows():
                rec[f"ε={format_value(r['epsilon'])}"] = f"{_f(r['mean' + sfx])} ± {_f(r['se' + sfx])}"
            rows.append(rec)
        lines.append(f"mean{sfx.replace('_', ' ')} ± SE (SE = std across datasets / sqrt(datasets))")
        lines.append(format_text_table(pd.DataFrame.from_records(rows)))
    else:
        ref = spec.reference
        rows = []
        for _, r in table.iterrows():
            rec = {c: r[c] for c in facets}
            inside = r["within_tolerance"]
            rec.update({
                "mechanism": r["mechanism"],
                "ε": format_value(r["epsilon"]),
                "ours (±std)": f"{_f(r['mean' + sfx])} (±{_f(r['std' + sfx])})",
                "SE": _f(r["se" + sfx]),
                "paper (±std)": "—" if not math.isfinite(r["paper_mean" + sfx]) else
                f"{r['paper_mean' + sfx]:g}" + ("" if not math.isfinite(r["paper_std" + sfx]) else f" (±{r['paper_std' + sfx]:g})"),
                "ours−paper": _f(r["mean" + sfx] - r["paper_mean" + sfx]),
                "tolerance": _f(r["_tol"]),
                "verdict": "—" if pd.isna(inside) else ("ok" if inside else "OUTSIDE"),
            })
            rows.append(rec)
        lines.append(format_text_table(pd.DataFrame.from_records(rows)))
        lines.append("")
        if ref.source:
            lines.append(f"paper: {ref.source}")
        rules = sorted({(r.abs_tol, r.se_mult, r.rel) for r in ref.rows})
        lines.append("tolerance: |ours − paper| ≤ max(abs, se·SE + rel·|paper|) with "
                     + "; ".join(f"abs={format_value(a)}, se={format_value(s)}, rel={format_value(q)}"
                                 f" ({', '.join(r.mechanism for r in ref.rows if (r.abs_tol, r.se_mult, r.rel) == (a, s, q))})"
                                 for a, s, q in rules))
        bad = table[table["within_tolerance"].fillna(True) == False]  # noqa: E712 - pandas boolean mask
        if len(bad):
            lines.append("OUTSIDE tolerance: " + "; ".join(
                f"{r['mechanism']} ε={format_value(r['epsilon'])}: ours {_f(r['mean' + sfx])} vs paper {r['paper_mean' + sfx]:g}"
                f" (|diff| {_f(abs(r['mean' + sfx] - r['paper_mean' + sfx]))} > {_f(r['_tol'])})" for _, r in bad.iterrows()))
        else:
            lines.append("every cell with a published value is within tolerance")
        lines.append("verdict: ok = |ours − paper| ≤ tolerance; OUTSIDE = beyond it; — = no published value")
        for rr in ref.rows:
            if rr.note:
                lines.append(f"note on {rr.mechanism} ({_ratio_text(spec, table, rr.mechanism)}): {rr.note}")
        if ref.note:
            lines.append(ref.note)
    if len(incomplete):
        lines.append(f"WARNING: {len(incomplete)} cell(s) have fewer than {spec.datasets} datasets because tasks failed; see results.csv")
    return "\n".join(lines)


# -- figures ------------------------------------------------------------------------------------


def plot(spec: Spec, results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    """error vs epsilon (log y, ±SE bars, paper values as hollow markers), one figure per facet
    combination; plus error vs n when n varies and error vs q when q varies."""
    from .. import plots

    sfx = spec.suffix
    facets = [f for f in ("data", "n", "q") if f in table.columns and (f != "n" or _n_is_axis(spec))]
    ylabel = f"{_METRIC_TEXT[spec.metric]}{' × ' + format_value(spec.scale) if spec.scale != 1 else ''} (bars: ±1 SE)"
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
