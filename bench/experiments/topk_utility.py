"""Experiment kind ``topk_utility``: utility and recall of the top-k selection mechanisms at equal privacy.

The four registered top-k mechanisms of :mod:`mechanisms.topk` -- ``peeling_exponential``,
``gumbel_top_k`` (the same Plackett--Luce law, Durfee & Rogers, NeurIPS 2019),
``laplace_top_k`` (one-shot Laplace noise of scale 2k Delta/eps, Ding, Wang, Zhang & Kifer 2019)
and ``peeling_permute_and_flip`` (k rounds of McKenna & Sheldon's permute-and-flip at eps/k) --
all eps-DP with the same eps, select k of n candidates from a vector of counts (sensitivity 1 under
adding or removing one record; ``monotone: true`` uses the counting-query calibration, valid for
counts). For each (dataset, mechanism, k, eps) cell the run draws ``draws`` selections from the
runner's task generator (bit-identical for any ``--jobs``) and reports, with standard errors
(sample sd / sqrt(draws)):

* **utility** = sum of the selected candidates' counts / sum of the k largest counts (1 = the
  true top k; the normalised form of "sum of the selected scores");
* **recall@k** = share of the k selected candidates whose count is >= the k-th largest count
  (= |selected ∩ true top k| / k when the k-th and (k+1)-th counts differ; with ties at the
  boundary every tied candidate counts as a true top-k member).

Exact values where the law is cheap: at k = 1 the expected utility and recall are computed from the
exact selection laws -- Plackett--Luce at k = 1 is the exponential mechanism
(:func:`mechanisms.selection_laws.em_log_prob`), one-shot Laplace at k = 1 is report noisy max with
Laplace noise (``laplace_rnm_log_prob``), peeling PF at k = 1 is permute-and-flip (``pf_log_prob``)
-- and each Monte Carlo mean is checked against them with a Hoeffding bound (both quantities lie in
[0, 1]); and since peeling EM and Gumbel top-k have the same law, their Monte Carlo means are
compared cell by cell with the two-sample Hoeffding bound |mean_1 - mean_2 - 0| <=
sqrt(log(2/a) / draws) (2 draws-sized samples of [0, 1] values). All checks together have false-alarm
probability ``alpha`` (Bonferroni). For k > 1 the exact Plackett--Luce inclusion probabilities
cost a sum over ordered k-tuples, so only Monte Carlo is reported.

Datasets (``datasets``, each ``{label, source, ...}``):

* ``zipf``      -- n candidates with counts floor(total i^-s / sum_j j^-s), i = 1..n (deterministic);
* ``geometric`` -- counts floor(top * ratio^(i-1)), i = 1..n (deterministic);
* ``statsmodels_counts``    -- a ``statsmodels.datasets`` column that holds one count per
  candidate (default: ``cancer``, breast-cancer counts of 301 US counties, Rice 2007);
* ``statsmodels_histogram`` -- the number of records of a column equal to each integer of a
  *declared* range ``[lo, hi]`` (the candidates must not depend on the data; records outside the
  range are an error).

Config keys: ``datasets``, ``methods`` (registry names; default the four), ``ks``, ``epsilons``,
``draws``, ``monotone``, ``level``, ``alpha``, ``table_epsilon`` (the eps of the compact table
printed in the summary).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpharness import mechanisms
from dpharness.mechanisms.selection_laws import em_log_prob, laplace_rnm_log_prob, pf_log_prob
from dpharness.bench.config import Ctx
from dpharness.bench.config.data import statsmodels_column
from dpharness.bench.run.tasks import Summary, Task, make_key

from dpharness.bench.experiments._textbook import hoeffding_radius, md_table, ok_rows, save

__all__ = ["TopKSpec", "Dataset", "parse", "tasks", "run_task", "summarize", "plot", "exact_k1", "metrics",
           "METHODS", "SOURCES"]

METHODS = ("peeling_exponential", "gumbel_top_k", "laplace_top_k", "peeling_permute_and_flip")
SOURCES = ("zipf", "geometric", "statsmodels_counts", "statsmodels_histogram")
_SAME_LAW = ("peeling_exponential", "gumbel_top_k")
_KEYS = ("datasets", "methods", "ks", "epsilons", "draws", "monotone", "level", "alpha", "table_epsilon")
_DS_KEYS = {"zipf": ("n", "exponent", "total"), "geometric": ("n", "ratio", "top"),
            "statsmodels_counts": ("dataset", "column"), "statsmodels_histogram": ("dataset", "column", "lo", "hi")}


@dataclass(frozen=True)
class Dataset:
    label: str
    source: str
    params: tuple[tuple[str, Any], ...]

    def counts(self) -> np.ndarray:
        """The count vector (a read-only array, computed once per process)."""
        return _counts(self)

    def _build(self) -> np.ndarray:
        p = dict(self.params)
        if self.source == "zipf":
            i = np.arange(1, int(p["n"]) + 1, dtype=np.float64)
            w = i ** -float(p["exponent"])
            return np.floor(float(p["total"]) * w / w.sum())
        if self.source == "geometric":
            return np.floor(float(p["top"]) * float(p["ratio"]) ** np.arange(int(p["n"]), dtype=np.float64))
        x = statsmodels_column(str(p["dataset"]), str(p["column"]))
        if self.source == "statsmodels_counts":
            return np.asarray(x, dtype=np.float64)
        lo, hi = int(p["lo"]), int(p["hi"])
        if np.any((x < lo) | (x > hi) | (x != np.round(x))):
            raise ValueError(f"{p['dataset']}.{p['column']} has values outside the integers of the declared range "
                             f"[{lo}, {hi}]")
        return np.bincount((x - lo).astype(np.int64), minlength=hi - lo + 1).astype(np.float64)

    def describe(self) -> str:
        p = dict(self.params)
        if self.source == "zipf":
            return f"Zipf counts, n = {p['n']}, exponent {p['exponent']:g}, total {p['total']:g}"
        if self.source == "geometric":
            return f"geometric counts, n = {p['n']}, top {p['top']:g}, ratio {p['ratio']:g}"
        if self.source == "statsmodels_counts":
            return f"statsmodels {p['dataset']}.{p['column']} (one count per candidate)"
        return f"statsmodels {p['dataset']}.{p['column']}: records per value {p['lo']}..{p['hi']}"


@functools.lru_cache(maxsize=64)
def _counts(ds: Dataset) -> np.ndarray:
    c = np.asarray(ds._build(), dtype=np.float64)
    c.setflags(write=False)
    return c


DEFAULT_DATASETS = (
    Dataset("zipf", "zipf", (("n", 1000), ("exponent", 1.0), ("total", 100_000.0))),
    Dataset("cancer", "statsmodels_counts", (("dataset", "cancer"), ("column", "cancer"))),
)


@dataclass(frozen=True)
class TopKSpec:
    datasets: tuple[Dataset, ...] = DEFAULT_DATASETS
    methods: tuple[str, ...] = METHODS
    ks: tuple[int, ...] = (1, 5, 10, 20)
    epsilons: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0)
    draws: int = 2000
    monotone: bool = False
    level: float = 0.95
    alpha: float = 1e-6
    table_epsilon: float = 1.0

    def dataset(self, label: str) -> Dataset:
        return next(d for d in self.datasets if d.label == label)

    def mechanism(self, name: str, epsilon: float, k: int) -> Any:
        return mechanisms.make(name, epsilon=float(epsilon), k=int(k), monotone=self.monotone)

    def cells(self) -> list[tuple[str, str, int, float]]:
        out = []
        for d in self.datasets:
            n = d.counts().size
            for name in self.methods:
                for k in self.ks:
                    if k <= n:
                        out.extend((d.label, name, k, e) for e in self.epsilons)
        return out

    @property
    def n_checks(self) -> int:
        cells = self.cells()
        exact = 2 * sum(1 for c in cells if c[2] == 1)
        pairs = 2 * sum(1 for c in cells if c[1] == _SAME_LAW[0]) if all(m in self.methods for m in _SAME_LAW) else 0
        return max(1, exact + pairs)


def _parse_dataset(item: Any, c: Ctx) -> Dataset | None:
    item = c.require_mapping(item)
    source = c.choice(item, "source", SOURCES)
    allowed = ("label", "source") + _DS_KEYS.get(source, ())
    c.reject_unknown(item, allowed)
    label = c.get(item, "label", str, source)
    if source == "zipf":
        params = (("n", int(c.number(item, "n", 1000, lo=1, hi=10**6, integer=True))),
                  ("exponent", float(c.number(item, "exponent", 1.0, lo=0))),
                  ("total", float(c.number(item, "total", 100_000.0, lo=0, lo_open=True))))
    elif source == "geometric":
        params = (("n", int(c.number(item, "n", 1000, lo=1, hi=10**6, integer=True))),
                  ("ratio", float(c.number(item, "ratio", 0.99, lo=0, hi=1, lo_open=True))),
                  ("top", float(c.number(item, "top", 10_000.0, lo=0, lo_open=True))))
    else:
        params = (("dataset", c.get(item, "dataset", str, "cancer")), ("column", c.get(item, "column", str, "cancer")))
        if source == "statsmodels_histogram":
            lo = int(c.number(item, "lo", 0, integer=True))
            hi = int(c.number(item, "hi", integer=True))  # required: the declared upper end (candidates lo..hi)
            if hi < lo and not c.failed("hi", "lo"):
                c.report("hi", f"must be >= lo ({lo}), got {hi}")
            params = params + (("lo", lo), ("hi", hi))
    ds = Dataset(label, source, params)
    if c.failed():
        return ds
    try:
        cnt = ds.counts()
    except (ImportError, KeyError, ValueError) as exc:
        c.report("column" if source.startswith("statsmodels") else "source", f"cannot build the counts: {exc}")
        return ds
    if cnt.size < 1 or not np.all(np.isfinite(cnt)) or np.any(cnt < 0):
        c.report("source", "the counts must be finite and >= 0")
    return ds


def parse(raw: dict, ctx: Ctx) -> TopKSpec:
    ctx.reject_unknown(raw, _KEYS)
    d = TopKSpec()
    datasets = d.datasets
    if raw.get("datasets") is not None:
        items = ctx.get(raw, "datasets", list)
        if not items and not ctx.failed("datasets"):
            ctx.report("datasets", "must not be an empty list")
        out: list[Dataset] = []
        for i, item in enumerate(items):
            ds = _parse_dataset(item, ctx.at("datasets", i))
            if ds is not None:
                if any(o.label == ds.label for o in out):
                    ctx.report(f"datasets[{i}].label", f"duplicate label {ds.label!r}")
                out.append(ds)
        datasets = tuple(out)
    spec = TopKSpec(
        datasets=datasets,
        methods=ctx.grid(raw, "methods", str, d.methods, accepted=METHODS),
        ks=ctx.grid(raw, "ks", int, d.ks, lo=1),
        epsilons=ctx.grid(raw, "epsilons", float, d.epsilons, lo=0, lo_open=True),
        draws=int(ctx.number(raw, "draws", d.draws, lo=2, integer=True)),
        monotone=bool(ctx.get(raw, "monotone", bool, d.monotone)),
        level=float(ctx.number(raw, "level", d.level, lo=0, hi=1, lo_open=True, hi_open=True)),
        alpha=float(ctx.number(raw, "alpha", d.alpha, lo=0, hi=1, lo_open=True, hi_open=True)),
        table_epsilon=float(ctx.number(raw, "table_epsilon", d.table_epsilon, lo=0, lo_open=True)),
    )
    if not ctx.failed("epsilons", "table_epsilon") and spec.table_epsilon not in spec.epsilons:
        ctx.report("table_epsilon", f"must be one of the epsilons {list(spec.epsilons)}, got {spec.table_epsilon:g}")
    if not ctx.failed("draws", "ks"):
        # one cell draws `draws` selections of k indices at once: refuse what no sampler call can hold
        from dpharness.mechanisms.base import MAX_DRAWS

        k_max = max(spec.ks)
        if spec.draws * k_max > MAX_DRAWS:
            ctx.report("draws", f"{spec.draws:,} draws of k = {k_max} indices need {spec.draws * k_max:,} values in one "
                       f"sampler call (at most {MAX_DRAWS:,}: about {8 * spec.draws * k_max / 2**30:.3g} GiB); use at most "
                       f"{MAX_DRAWS // k_max:,} draws")
    if not ctx.failed("datasets", "ks"):
        # a k above a dataset's number of candidates has no cell: say so instead of dropping it
        for d in spec.datasets:
            try:
                n = d.counts().size
            except (ImportError, KeyError, ValueError):
                continue
            for i, k in enumerate(spec.ks):
                if k > n:
                    ctx.report(f"ks[{i}]", f"k = {k} exceeds the {n} candidates of dataset {d.label!r} (a top-k "
                               f"selects k distinct candidates); use k <= {n} or a larger dataset")
    return spec


def tasks(spec: TopKSpec) -> list[Task]:
    return [Task(make_key(dataset=ds, method=m, k=k, epsilon=e), {"dataset": ds, "method": m, "k": k, "epsilon": e})
            for ds, m, k, e in spec.cells()]


def metrics(counts: np.ndarray, sel: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per draw (rows of ``sel``, shape (draws, k)): (utility, recall) as defined in the module doc."""
    top = np.sort(counts)[::-1][:k]
    best = float(top.sum())
    got = counts[sel]
    util = got.sum(axis=1) / best if best > 0 else np.ones(sel.shape[0])
    recall = np.mean(got >= top[-1], axis=1)
    return util, recall


def exact_k1(spec: TopKSpec, method: str, epsilon: float, counts: np.ndarray) -> tuple[float, float]:
    """Exact (E[utility], E[recall]) at k = 1 from the exact one-round law of ``method``."""
    mech = spec.mechanism(method, epsilon, 1)
    z = mech.rate * (counts - counts.max())
    law = {"peeling_exponential": em_log_prob, "gumbel_top_k": em_log_prob, "laplace_top_k": laplace_rnm_log_prob,
           "peeling_permute_and_flip": pf_log_prob}[method]
    p = np.exp(law(z))
    p = p / p.sum()
    best = counts.max()
    return float(p @ (counts / best)) if best > 0 else 1.0, float(p[counts >= best].sum())


def run_task(spec: TopKSpec, task: Task, rng: np.random.Generator) -> list[dict]:
    ds, name, k, eps = task.params["dataset"], task.params["method"], int(task.params["k"]), float(task.params["epsilon"])
    counts = spec.dataset(ds).counts()
    sel = np.asarray(spec.mechanism(name, eps, k).sample(counts, size=spec.draws, rng=rng)).reshape(spec.draws, k)
    util, rec = metrics(counts, sel, k)
    n = spec.draws
    row: dict[str, Any] = {"dataset": ds, "method": name, "k": k, "epsilon": eps, "draws": n, "n_candidates": counts.size,
                           "utility": float(util.mean()), "utility_se": float(util.std(ddof=1) / math.sqrt(n)),
                           "recall": float(rec.mean()), "recall_se": float(rec.std(ddof=1) / math.sqrt(n)),
                           "exact_utility": float("nan"), "exact_recall": float("nan"), "consistent": True}
    if k == 1:
        eu, er = exact_k1(spec, name, eps, counts)
        r = hoeffding_radius(1.0, n, spec.alpha / spec.n_checks)
        row.update(exact_utility=eu, exact_recall=er,
                   consistent=bool(abs(row["utility"] - eu) <= r and abs(row["recall"] - er) <= r))
    return [row]


def _z(level: float) -> float:
    from scipy import stats  # here, not at the top: a config error must not wait for it

    return float(stats.norm.ppf(0.5 + level / 2))


def summarize(spec: TopKSpec, results: pd.DataFrame) -> Summary:
    df = ok_rows(results)
    cols = ["dataset", "k", "epsilon", "method", "utility", "utility_se", "recall", "recall_se", "exact_utility",
            "exact_recall", "consistent"]
    if not len(df):
        return Summary(table=pd.DataFrame(columns=cols), text="top-k utility: no results", ok=False)
    order = {m: i for i, m in enumerate(spec.methods)}
    table = df[cols].assign(_o=df["method"].map(order)).sort_values(["dataset", "k", "epsilon", "_o"]).drop(columns="_o")
    table = table.reset_index(drop=True)
    table["consistent"] = table["consistent"].astype(bool)
    # peeling EM and Gumbel top-k share one law: their Monte Carlo means must agree
    same_ok = True
    n_same = 0
    if all(m in spec.methods for m in _SAME_LAW):
        r2 = math.sqrt(math.log(2.0 * spec.n_checks / spec.alpha) / spec.draws)
        cell = ["dataset", "k", "epsilon"]
        a = table.loc[table["method"] == _SAME_LAW[0], cell + ["utility", "recall"]]
        b = table.loc[table["method"] == _SAME_LAW[1], cell + ["utility", "recall"]]
        j = a.merge(b, on=cell, how="inner", suffixes=("_a", "_b"))
        n_same = len(j)
        same_ok = bool(((j["utility_a"] - j["utility_b"]).abs() <= r2).all()
                       and ((j["recall_a"] - j["recall_b"]).abs() <= r2).all())
    exact_ok = bool(table["consistent"].all())
    complete = len(table) == len(spec.cells())
    lines = [f"Top-k selection at equal ε ({'monotone' if spec.monotone else 'general'} calibration, every mechanism "
             f"ε-DP): utility = Σ selected counts / Σ top-k counts, recall@k; {spec.draws:,} draws per cell, "
             f"mean ± standard error"]
    for d in spec.datasets:
        c = d.counts()
        lines.append(f"- {d.label}: {d.describe()}; n = {c.size}, top counts "
                     + ", ".join(f"{v:g}" for v in np.sort(c)[::-1][:5]) + ", ...")
    e0 = spec.table_epsilon
    t0 = table[table["epsilon"] == e0]
    for ds in t0["dataset"].unique():
        s = t0[t0["dataset"] == ds]
        wide = pd.DataFrame({f"k={k}": [f"{r.utility:.4f} ± {r.utility_se:.1g} / {r.recall:.3f} ± {r.recall_se:.1g}"
                                        for r in s[s["k"] == k].itertuples()]
                             for k in sorted(s["k"].unique())},
                            index=[m for m in s[s["k"] == s["k"].min()]["method"]])
        lines.append(f"{ds} at ε = {e0:g} (utility ± SE / recall@k ± SE):")
        lines.append(md_table(wide.rename_axis("method").reset_index()))
    lines += [
        f"exact k = 1 values (exact laws) vs Monte Carlo, Hoeffding at false-alarm {spec.alpha:g} (Bonferroni over "
        f"{spec.n_checks} checks): {'all consistent' if exact_ok else 'INCONSISTENT'}",
        f"peeling_exponential vs gumbel_top_k (same Plackett–Luce law), {n_same} cells, two-sample Hoeffding: "
        f"{'agree' if same_ok else 'DISAGREE'}",
    ]
    if not complete:
        lines.append(f"missing cells: {len(spec.cells()) - len(table)}")
    return Summary(table=table, text="\n".join(lines), ok=exact_ok and same_ok and complete)


_LABELS = {"peeling_exponential": "peeling EM", "gumbel_top_k": "Gumbel top-k (same law as peeling EM)",
           "laplace_top_k": "Laplace top-k (one-shot)", "peeling_permute_and_flip": "peeling PF"}


#: A panel whose every value (Monte Carlo means with their intervals, exact k = 1 curves) lies within
#: this of one level is drawn as a note instead: at the figure's scale (y axis 1.09 tall on about
#: 250 px) 0.005 is about one pixel, so such a panel shows nothing but a flat line.
FLAT = 0.005
_METRICS = (("utility", "utility: Σ selected / Σ top-k counts"), ("recall", "recall@k (share of true top k)"))


def _exact_curves(spec: TopKSpec, counts: np.ndarray, eps: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """method -> metric -> exact k = 1 values on a log grid spanning the run's ε values (the exact laws
    are cheap, so the curve between the Monte Carlo points is drawn rather than a straight segment)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for m in spec.methods:
        vals = np.array([exact_k1(spec, m, float(e), counts) for e in eps])
        out[m] = {"utility": vals[:, 0], "recall": vals[:, 1]}
    return out


def _flat_note(sub: pd.DataFrame, k: int, metric: str, z: float, exact: list[np.ndarray], eps: list[float],
               counts: np.ndarray) -> str | None:
    """The note that replaces a flat panel (module constant FLAT), or None when the panel shows something."""
    means = sub[metric].to_numpy(float)
    half = z * sub[f"{metric}_se"].to_numpy(float)
    vals = np.concatenate([means - half, means + half] + exact)
    vals = vals[np.isfinite(vals)]
    if not vals.size or vals.max() - vals.min() > FLAT:
        return None
    rng = f"ε = {eps[0]:g}" if len(eps) == 1 else f"every ε in [{eps[0]:g}, {eps[-1]:g}]"
    name = "utility" if metric == "utility" else f"recall@{k}"
    if np.all(means == 1.0):
        top = np.sort(counts)[::-1]
        lead = ("" if top.size <= k else f"; the largest count leads the second by {top[0] - top[1]:g}" if k == 1
                else f"; the {k}th largest count leads the next by {top[k - 1] - top[k]:g}")
        miss = max((1 - float(np.min(c)) for c in exact), default=None)
        exact_txt = f" (exact law: > 1 − {max(miss, 1e-300):.0e})" if miss is not None and miss > 0 else (
            " (exact law: 1 to double precision)" if miss is not None else "")
        return (f"not drawn: {name} = 1 in every draw of every mechanism at {rng}{exact_txt}{lead}. "
                "Nothing to compare here: every mechanism always finds the true top k.")
    return (f"not drawn: every mechanism's {name} is {float(np.mean(vals)):.3f} ± {FLAT:g} at {rng}; "
            "nothing to compare here.")


def plot(spec: TopKSpec, results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    from matplotlib.figure import Figure

    """Per dataset, utility (top row) and recall@k (bottom row) against ε, one column per k, with
    CLT intervals. Monte Carlo points are joined by lines only when the run has three or more ε
    values (two points joined by a line would suggest a trend between them that was not measured);
    at k = 1 the exact laws are drawn as dotted curves over the ε range and the Monte Carlo points
    as markers on them. A panel in which nothing varies (every value within FLAT of one level) is
    replaced by a note saying why."""
    import textwrap

    df = ok_rows(results)
    out: list[Path] = []
    if not len(df):
        return out
    z = _z(spec.level)
    for d in spec.datasets:
        sub = df[df["dataset"] == d.label]
        ks = [k for k in spec.ks if (sub["k"] == k).any()]
        if not ks:
            continue
        counts = d.counts()
        eps = sorted(float(e) for e in sub["epsilon"].unique())
        joined = len(eps) >= 3
        grid = np.geomspace(eps[0], eps[-1], 25) if len(eps) > 1 else np.asarray(eps)
        exact = _exact_curves(spec, counts, grid) if 1 in ks else {}
        fig = Figure(figsize=(max(3.1 * len(ks), 7.0), 6.6), layout="constrained")
        axes = np.atleast_2d(fig.subplots(2, len(ks), squeeze=False))
        handles: dict[str, Any] = {}
        for col, k in enumerate(ks):
            for row, (metric, ylab) in enumerate(_METRICS):
                ax = axes[row, col]
                if row == 0:
                    ax.set_title(f"k = {k}", fontsize=9)
                if col == 0:
                    ax.set_ylabel(ylab, fontsize=8)
                cells = sub[sub["k"] == k]
                curves = [exact[m][metric] for m in spec.methods if m in exact] if k == 1 else []
                note = _flat_note(cells, k, metric, z, curves, eps, counts)
                if note is not None:
                    ax.set_xticks([])
                    ax.set_yticks([])
                    ax.text(0.5, 0.5, textwrap.fill(note, 34), transform=ax.transAxes, ha="center", va="center",
                            fontsize=8, color="0.25")
                    continue
                for i, m in enumerate(spec.methods):
                    s = cells[cells["method"] == m].sort_values("epsilon")
                    if not len(s):
                        continue
                    x = s["epsilon"].to_numpy(float) * (1 + 0.07 * (i - (len(spec.methods) - 1) / 2))
                    # at k = 1 the exact curve is the line; Monte Carlo points are checks on it
                    line = joined and not (k == 1 and m in exact and len(grid) > 1)
                    h = ax.errorbar(x, s[metric], yerr=z * s[f"{metric}_se"], fmt="-o" if line else "o", ms=3.5,
                                    capsize=2, lw=1.2, color=f"C{i}", label=_LABELS.get(m, m), zorder=3)
                    handles.setdefault(_LABELS.get(m, m), h)
                    if k == 1 and m in exact and len(grid) > 1:
                        ax.plot(grid, exact[m][metric], ":", color=f"C{i}", lw=1.4, zorder=2)
                        if "exact law (k = 1)" not in handles:  # one grey legend entry for the dotted curves
                            (p,) = ax.plot([], [], ":", color="0.3", lw=1.4, label="exact law (k = 1)")
                            handles[p.get_label()] = p
                ax.set_xscale("log")
                ax.set_ylim(-0.03, 1.06)
                ax.grid(alpha=0.3, which="both")
                if row == 1:
                    ax.set_xlabel("privacy parameter ε (log scale)")
        for col in range(len(ks)):  # an x label under every column, even when its lower panel is a note
            if not axes[1, col].get_xlabel():
                axes[1, col].set_xlabel(" ")
        fig.legend(list(handles.values()), list(handles.keys()), loc="outside lower center",
                   ncols=min(3, len(handles)), fontsize=8)
        how = "points slightly offset" + ("" if joined else f"; {len(eps)} ε value{'s' if len(eps) > 1 else ''}, so "
                                           "points are not joined")
        fig.suptitle(f"Top-k selection on {d.label} (n = {counts.size}): utility and recall vs ε at equal privacy\n"
                     f"({spec.draws:,} draws per point, {spec.level:.0%} CLT intervals; {how})", fontsize=10)
        out.append(save(fig, fig_dir, f"topk_{d.label}.png"))
    return out
