"""Experiment kind ``private_mode``: the most common category of a real categorical column.

The "most common marital status" example of Near & Abuah (*Programming Differential Privacy*,
ch. "The Exponential Mechanism", on the Adult data; the mechanisms: Dwork & Roth §3.3-3.4) on data
we can ship: a categorical column of a ``statsmodels.datasets`` survey (default ``anes96`` party identification,
944 respondents, seven categories; docs/experiments.md, "private_mode"). The utility of category c is its count, which
changes by at most 1 when one respondent is added or removed (``add_remove``, sensitivity 1).

Mechanisms (from :mod:`mechanisms.finite`, all with ``utility="count"`` over the *declared*
category codes -- the candidate set must not depend on the data): the exponential mechanism,
report noisy max with Laplace, one-sided exponential and Gumbel noise, and permute-and-flip. The
default list uses the general calibration (rate eps / (2 Delta)) for every mechanism, so that
EM = RNM-Gumbel and PF = RNM-exponential in law; ``monotone: true`` in a mechanism's ``params``
gives the counting-query calibration (rate eps / Delta, Dwork & Roth Claim 3.9).

The run reports, per mechanism,

* for each eps in ``frequency_epsilons`` and each n in ``frequency_draws`` (default 200 and
  100,000): the frequency of every category next to its exact probability (``log_prob``), with
  Clopper-Pearson intervals; pass/fail at false-alarm ``alpha`` (Bonferroni over all
  categories and cells);
* for each eps in ``epsilons``: the exact expected utility loss E[max count - count(selected)]
  and P[selected = true mode], and their Monte Carlo estimates from ``loss_draws`` draws (CLT
  interval in the figure, Hoeffding bound for pass/fail).

For ``dpharness regress`` (bench/regress/) the two loss rows of a (mechanism, eps) also carry a
lower-is-better error and its Monte Carlo standard error: ``mc_error`` = the utility loss, or
1 - P[selected = mode] on the ``p_mode`` row, and ``mc_error_se`` (sample sd / sqrt(draws)). A cell
is (what, mechanism, epsilon, draws, category, metric), one row each, compared by a z-test on the
two means (:func:`describe_results`); frequency rows carry no ``mc_error`` and are not compared.
The z-test needs many draws *off* the degenerate value: cells whose every draw selects the mode
(large eps) have SE 0, and then any miss in a re-run with another seed is a regression, so a
regression config uses epsilons where the mode is missed often (configs/regress_private_mode.yaml).

Config keys: ``dataset``, ``column``, ``categories`` (codes; defaults known for anes96 PID/educ and
fair religious/occupation), ``labels`` (display names, optional), ``mechanisms`` (list of
``{label, name, params}``), ``epsilons``, ``frequency_epsilons``, ``frequency_draws``,
``loss_draws``, ``level``, ``alpha``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpharness import mechanisms
from dpharness.bench.config import Ctx
from dpharness.bench.config.data import statsmodels_column
from dpharness.bench.run.tasks import Summary, Task, make_key

from dpharness.bench.experiments._textbook import clopper_pearson, hoeffding_radius, md_table, mean_interval, new_figure, ok_rows, save

__all__ = ["ModeSpec", "parse", "tasks", "run_task", "summarize", "plot", "describe_results", "KNOWN_COLUMNS"]

#: Cells for the regression checker: ``metric`` tells a loss row's utility_loss from its p_mode.
CELL_COLUMNS = ["what", "mechanism", "epsilon", "draws", "category", "metric"]
#: Lower-is-better Monte Carlo error of a loss row (utility loss; 1 - P[mode]) and its standard error.
METRIC = "mc_error"
SE_COLUMN = "mc_error_se"
LOWER_IS_BETTER = True

#: Declared category codes (from the datasets' documentation) and their names.
KNOWN_COLUMNS: dict[tuple[str, str], dict[float, str]] = {
    ("anes96", "PID"): {
        0: "Strong Dem.", 1: "Weak Dem.", 2: "Indep.-Dem.", 3: "Indep.-Indep.",
        4: "Indep.-Rep.", 5: "Weak Rep.", 6: "Strong Rep.",
    },
    ("anes96", "educ"): {
        1: "1-8 grades", 2: "some high school", 3: "high school grad.", 4: "some college",
        5: "college degree", 6: "master's degree", 7: "PhD",
    },
    ("fair", "religious"): {1: "not", 2: "mildly", 3: "fairly", 4: "strongly"},
    ("fair", "occupation"): {
        1: "student", 2: "farming/semi-/unskilled", 3: "white collar",
        4: "teacher/nurse/skilled", 5: "managerial/business", 6: "professional (adv. degree)",
    },
}

DEFAULT_MECHANISMS: tuple[tuple[str, str, tuple[tuple[str, Any], ...]], ...] = (
    ("EM", "exponential", ()),
    ("RNM-Laplace", "report_noisy_max", (("noise", "laplace"),)),
    ("RNM-exponential", "report_noisy_max", (("noise", "exponential"),)),
    ("RNM-Gumbel", "report_noisy_max", (("noise", "gumbel"),)),
    ("PF", "permute_and_flip", ()),
)
_KEYS = ("dataset", "column", "categories", "labels", "mechanisms", "epsilons", "frequency_epsilons",
         "frequency_draws", "loss_draws", "level", "alpha")


@dataclass(frozen=True)
class ModeSpec:
    dataset: str = "anes96"
    column: str = "PID"
    categories: tuple[float, ...] = (0, 1, 2, 3, 4, 5, 6)
    labels: tuple[str, ...] = ()
    mechanisms: tuple[tuple[str, str, tuple[tuple[str, Any], ...]], ...] = DEFAULT_MECHANISMS
    epsilons: tuple[float, ...] = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
    frequency_epsilons: tuple[float, ...] = (0.05,)
    frequency_draws: tuple[int, ...] = (200, 100_000)
    loss_draws: int = 4_000
    level: float = 0.95
    alpha: float = 1e-6

    def records(self) -> np.ndarray:
        return np.asarray(statsmodels_column(self.dataset, self.column))

    def counts(self) -> np.ndarray:
        x = self.records()
        return np.array([np.sum(x == c) for c in self.categories], dtype=np.float64)

    def mechanism(self, label: str, epsilon: float) -> Any:
        for lab, name, params in self.mechanisms:
            if lab == label:
                return mechanisms.make(name, epsilon=float(epsilon), utility="count",
                                       candidates=tuple(float(c) for c in self.categories), **dict(params))
        raise ValueError(f"unknown mechanism label {label!r}")

    @property
    def n_frequency_checks(self) -> int:
        return len(self.mechanisms) * len(self.frequency_epsilons) * len(self.frequency_draws) * len(self.categories)

    @property
    def n_checks(self) -> int:
        return self.n_frequency_checks + 2 * len(self.mechanisms) * len(self.epsilons)

    def label_of(self, code: float) -> str:
        if self.labels:
            return self.labels[self.categories.index(code)]
        return f"{code:g}"


def parse(raw: dict, ctx: Ctx) -> ModeSpec:
    ctx.reject_unknown(raw, _KEYS)
    d = ModeSpec()
    dataset = ctx.get(raw, "dataset", str, d.dataset)
    column = ctx.get(raw, "column", str, d.column)
    x = None
    try:
        x = statsmodels_column(dataset, column)
    except (ImportError, KeyError) as exc:
        ctx.report("column" if isinstance(exc, KeyError) else "dataset",
                   f"cannot read {dataset}.{column} from statsmodels.datasets: {exc}")
    known = KNOWN_COLUMNS.get((dataset, column))
    if "categories" in raw and raw["categories"] is not None:
        cats = ctx.grid(raw, "categories", float)
    elif known is not None:
        cats = tuple(float(c) for c in known)
    else:
        cats = ()
        ctx.report("categories", f"is required for {dataset}.{column}: the candidate categories must be declared, "
                                 f"not read from the data (known defaults: {', '.join(f'{a}.{b}' for a, b in KNOWN_COLUMNS)})")
    outside = sorted(set(np.unique(x).tolist()) - set(cats)) if x is not None and not ctx.failed("categories") else []
    if outside:
        ctx.report("categories", f"{dataset}.{column} has values {outside[:5]} outside the declared categories {list(cats)}")
    if "labels" in raw and raw["labels"] is not None:
        labels = tuple(ctx.grid(raw, "labels", str, unique=False))
        if len(labels) != len(cats) and not ctx.failed("labels", "categories"):
            ctx.report("labels", f"must have one name per category ({len(cats)}), got {len(labels)}")
    elif known is not None and "categories" not in raw:
        labels = tuple(known.values())
    else:
        labels = ()
    mechs = d.mechanisms
    if "mechanisms" in raw and raw["mechanisms"] is not None:
        items = ctx.get(raw, "mechanisms", list)
        if not items and not ctx.failed("mechanisms"):
            ctx.report("mechanisms", "must not be an empty list")
        out = []
        for i, item in enumerate(items):
            c = ctx.at("mechanisms", i)
            c.reject_unknown(item, ("label", "name", "params"))
            name = c.choice(item, "name", ("exponential", "report_noisy_max", "permute_and_flip"))
            label = c.get(item, "label", str, name)
            params = c.get(item, "params", dict, {})
            for k in ("epsilon", "utility", "candidates"):
                if k in params:
                    c.report(f"params.{k}", "is set by the experiment (epsilons grid, utility='count', declared categories)")
            if any(label == o[0] for o in out):
                c.report("label", f"duplicate label {label!r}")
            out.append((label, name, tuple(sorted(params.items()))))
        mechs = tuple(out)
    spec = ModeSpec(
        dataset=dataset,
        column=column,
        categories=cats,
        labels=labels,
        mechanisms=mechs,
        epsilons=ctx.grid(raw, "epsilons", float, d.epsilons, lo=0, lo_open=True),
        frequency_epsilons=ctx.grid(raw, "frequency_epsilons", float, d.frequency_epsilons, lo=0, lo_open=True),
        frequency_draws=ctx.grid(raw, "frequency_draws", int, d.frequency_draws, lo=1),
        loss_draws=int(ctx.number(raw, "loss_draws", d.loss_draws, lo=2, integer=True)),
        level=float(ctx.number(raw, "level", d.level, lo=0, hi=1, lo_open=True, hi_open=True)),
        alpha=float(ctx.number(raw, "alpha", d.alpha, lo=0, hi=1, lo_open=True, hi_open=True)),
    )
    for i, (label, _, _) in enumerate(spec.mechanisms if not ctx.failed() else ()):  # (not with placeholders)
        try:
            spec.mechanism(label, 1.0)
        except ValueError as exc:
            ctx.report(f"mechanisms[{i}].params" if "mechanisms" in raw else "mechanisms", str(exc))
    return spec


def tasks(spec: ModeSpec) -> list[Task]:
    out = []
    for label, _, _ in spec.mechanisms:
        for e in spec.frequency_epsilons:
            for n in spec.frequency_draws:
                out.append(Task(make_key(part="frequency", mechanism=label, epsilon=e, draws=n),
                                {"part": "frequency", "mechanism": label, "epsilon": e, "draws": n}))
        for e in spec.epsilons:
            out.append(Task(make_key(part="loss", mechanism=label, epsilon=e),
                            {"part": "loss", "mechanism": label, "epsilon": e}))
    return out


def exact_metrics(spec: ModeSpec, label: str, eps: float, counts: np.ndarray | None = None) -> tuple[float, float]:
    """(E[max count - count(selected)], P[selected is a mode]) from the exact law."""
    c = spec.counts() if counts is None else counts
    mech = spec.mechanism(label, eps)
    p = np.exp(mech.log_prob(spec.records()))
    gap = c.max() - c
    return float(np.sum(p * gap)), float(np.sum(p[gap == 0]))


def run_task(spec: ModeSpec, task: Task, rng: np.random.Generator) -> list[dict]:
    label, eps = task.params["mechanism"], float(task.params["epsilon"])
    mech = spec.mechanism(label, eps)
    data = spec.records()
    counts = spec.counts()
    cats = np.asarray(spec.categories, dtype=np.float64)
    if task.params["part"] == "frequency":
        n = int(task.params["draws"])
        x = np.asarray(mech.sample(data, size=n, rng=rng), dtype=np.float64)
        k = np.array([np.sum(x == c) for c in cats])
        p = np.exp(mech.log_prob(data))
        lo, hi = clopper_pearson(k, n, spec.level)
        clo, chi = clopper_pearson(k, n, 1 - spec.alpha / spec.n_checks)
        return [
            {"what": "frequency", "mechanism": label, "epsilon": eps, "draws": n, "category": float(c),
             "category_label": spec.label_of(float(c)), "data_count": float(counts[i]), "hits": int(k[i]),
             "mc_value": float(k[i] / n), "mc_lo": float(lo[i]), "mc_hi": float(hi[i]), "exact": float(p[i]),
             "consistent": bool(clo[i] <= p[i] <= chi[i])}
            for i, c in enumerate(cats)
        ]
    x = np.asarray(mech.sample(data, size=spec.loss_draws, rng=rng), dtype=np.float64)
    idx = np.searchsorted(cats, x) if np.all(np.diff(cats) > 0) else np.array([spec.categories.index(v) for v in x])
    gap = (counts.max() - counts)[idx]
    e_loss, e_mode = exact_metrics(spec, label, eps, counts)
    m, se, lo, hi = mean_interval(gap, spec.level, support=(0.0, float(counts.max() - counts.min())))
    hits = int(np.sum(gap == 0))
    plo, phi = clopper_pearson(hits, spec.loss_draws, spec.level)
    clo, chi = clopper_pearson(hits, spec.loss_draws, 1 - spec.alpha / spec.n_checks)
    radius = hoeffding_radius(float(counts.max() - counts.min()), spec.loss_draws, spec.alpha / spec.n_checks)
    base = {"what": "loss", "mechanism": label, "epsilon": eps, "draws": spec.loss_draws}
    p_hat = hits / spec.loss_draws
    # the regression checker's columns (appended, so the columns above keep their order): the SE is
    # the sample sd / sqrt(draws), of the loss and of the indicator "selected a mode"
    p_se = math.sqrt(p_hat * (1.0 - p_hat) / (spec.loss_draws - 1))
    return [
        {**base, "metric": "utility_loss", "mc_value": m, "mc_lo": lo, "mc_hi": hi, "exact": e_loss,
         "consistent": bool(abs(m - e_loss) <= radius), "mc_error": m, "mc_error_se": se},
        {**base, "metric": "p_mode", "mc_value": p_hat, "mc_lo": float(plo), "mc_hi": float(phi),
         "exact": e_mode, "consistent": bool(clo <= e_mode <= chi), "mc_error": 1.0 - p_hat, "mc_error_se": p_se},
    ]


def describe_results(spec: ModeSpec) -> dict[str, Any]:
    """For manifest.json and the regression checker: one row per cell (a Monte Carlo mean over
    ``loss_draws`` independent draws) with its standard error, lower is better."""
    return {"cell_columns": list(CELL_COLUMNS), "metric": METRIC, "se_column": SE_COLUMN,
            "lower_is_better": LOWER_IS_BETTER}


def summarize(spec: ModeSpec, results: pd.DataFrame) -> Summary:
    loss = ok_rows(results, "loss")
    freq = ok_rows(results, "frequency")
    counts = spec.counts()
    order = [m[0] for m in spec.mechanisms]
    rows = []
    for label in order:
        for e in spec.epsilons:
            sel = loss[(loss["mechanism"] == label) & (loss["epsilon"] == e)]
            if not len(sel):
                continue
            ul = sel[sel["metric"] == "utility_loss"].iloc[0]
            pm = sel[sel["metric"] == "p_mode"].iloc[0]
            rows.append({"mechanism": label, "epsilon": e, "exact_loss": ul["exact"], "mc_loss": ul["mc_value"],
                         "mc_loss_lo": ul["mc_lo"], "mc_loss_hi": ul["mc_hi"], "exact_p_mode": pm["exact"],
                         "mc_p_mode": pm["mc_value"], "consistent": bool(ul["consistent"]) and bool(pm["consistent"])})
    table = pd.DataFrame(rows)
    ok = len(rows) == len(order) * len(spec.epsilons) and bool(table["consistent"].all())
    fc = bool(freq["consistent"].astype(bool).all()) if len(freq) else False
    ok = ok and fc and len(freq) == spec.n_frequency_checks
    mode = int(np.argmax(counts))
    lines = [
        f"private mode of {spec.dataset}.{spec.column} (n = {int(counts.sum())}; the 'most common marital status' "
        "example of Near & Abuah, Programming Differential Privacy, on shipped data): counts "
        + ", ".join(f"{spec.label_of(c)}={int(k)}" for c, k in zip(spec.categories, counts)),
        f"true mode: {spec.label_of(spec.categories[mode])} ({int(counts[mode])}); utility = count, sensitivity 1, "
        "add/remove neighbours",
        md_table(table),
        f"frequencies ({', '.join(map(str, spec.frequency_draws))} draws at ε = "
        f"{', '.join(f'{e:g}' for e in spec.frequency_epsilons)}) within exact Clopper–Pearson bounds: {fc}",
        f"Monte Carlo vs exact at false-alarm {spec.alpha:g} (Bonferroni over {spec.n_checks} checks): "
        f"{'all consistent' if ok else 'INCONSISTENT'}",
    ]
    return Summary(table=table, text="\n".join(lines), ok=ok)


def plot(spec: ModeSpec, results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    out: list[Path] = []
    counts = spec.counts()
    names = [spec.label_of(float(c)) for c in spec.categories]
    order = [m[0] for m in spec.mechanisms]
    pos = np.arange(len(names))

    fig, ax = new_figure()
    ax.bar(pos, counts, color="C7")
    ax.set_xticks(pos, names, rotation=30, ha="right")
    ax.set_xlabel(f"{spec.dataset}.{spec.column} category")
    ax.set_ylabel("respondents (count)")
    ax.set_title(f"Category counts of {spec.dataset}.{spec.column} (the utilities)")
    ax.grid(alpha=0.3, axis="y")
    out.append(save(fig, fig_dir, "category_counts.png"))

    freq = ok_rows(results, "frequency")
    for e in spec.frequency_epsilons:
        sub = freq[freq["epsilon"] == e]
        if not len(sub):
            continue
        fig, axes = new_figure(width=3.3 * len(order), height=4.2, ncols=len(order))
        axes = np.atleast_1d(axes)
        draws = sorted(sub["draws"].unique())
        for ax, label in zip(axes, order):
            s = sub[sub["mechanism"] == label]
            if not len(s):
                continue
            first = s[s["draws"] == draws[0]].sort_values("category")
            ax.plot(pos, first["exact"], "-", color="k", lw=1.2, marker="_", ms=14, label="exact probability")
            for j, n in enumerate(draws):
                d = s[s["draws"] == n].sort_values("category")
                v = d["mc_value"].to_numpy(float)
                off = (j - (len(draws) - 1) / 2) * 0.25
                ax.errorbar(pos + off, v, yerr=[v - d["mc_lo"], d["mc_hi"] - v], fmt="o", ms=3, capsize=2,
                            color=f"C{j}", label=f"{int(n):,} draws, {spec.level:.0%} CI")
            ax.set_title(label)
            ax.set_xlabel("category")
            ax.set_xticks(pos, names, rotation=45, ha="right", fontsize=7)
            ax.set_ylim(0, min(1.0, 1.15 * float(sub["mc_hi"].max())))  # same scale in every panel
            ax.grid(alpha=0.3, axis="y")
        axes[0].set_ylabel("P[selected category] (probability)")
        axes[0].legend(fontsize=7, loc="upper right")
        fig.suptitle(f"Private mode of {spec.dataset}.{spec.column} at ε = {e:g}: sampled frequencies vs exact "
                     "probabilities (line joins categories for readability)")
        out.append(save(fig, fig_dir, f"frequencies_eps{e:g}.png"))

    loss = ok_rows(results, "loss")
    if len(loss):
        grid = np.geomspace(min(spec.epsilons), max(spec.epsilons), 60)
        for metric, ylabel, fname, title in (
            ("utility_loss", "mean loss: max count − count(selected)\n(respondents)", "utility_loss.png",
             "Private mode: expected utility loss vs ε"),
            ("p_mode", "P[selected = true mode] (probability)", "p_mode.png",
             "Private mode: probability of selecting the true mode vs ε"),
        ):
            fig, ax = new_figure()
            drawn: list[tuple[str, np.ndarray]] = []
            for i, label in enumerate(order):
                ex = np.array([exact_metrics(spec, label, e, counts)[0 if metric == "utility_loss" else 1] for e in grid])
                # EM = RNM-Gumbel and PF = RNM-exponential in law: say so instead of hiding a curve
                same = next((lab for lab, y in drawn if np.allclose(y, ex, rtol=1e-9, atol=1e-12)), None)
                drawn.append((label, ex))
                ax.plot(grid, ex, "--" if same else "-", color=f"C{i}", lw=1.8,
                        label=f"{label}: exact" + (f" (same law as {same})" if same else ""))
                d = loss[(loss["mechanism"] == label) & (loss["metric"] == metric)].sort_values("epsilon")
                v = d["mc_value"].to_numpy(float)
                ax.errorbar(d["epsilon"] * (1 + 0.03 * (i - 2)), v, yerr=[v - d["mc_lo"], d["mc_hi"] - v], fmt="o",
                            ms=3, capsize=2, color=f"C{i}")
            ax.plot([], [], "o", color="gray", label=f"Monte Carlo, {spec.loss_draws:,} draws, {spec.level:.0%} CI")
            ax.set_xscale("log")
            ax.set_xlabel("privacy parameter ε (log scale; points slightly offset)")
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            ax.legend(fontsize=7)
            ax.grid(alpha=0.3, which="both")
            out.append(save(fig, fig_dir, fname))
    return out
