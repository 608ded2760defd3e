"""Experiment kind ``pumpkin``: the pumpkin auction (Dwork & Roth, Example 3.5), sampled exactly.

Bids x (default (1, 1, 1, 3.01)), a price r in [r_min, r_max], revenue u(x, r) = r * |{i : x_i >= r}|
and the exponential mechanism ``revenue_price`` with Delta_u = r_max (docs/experiments.md, "pumpkin"). The run

* draws the revenue curve and the exact price density for ``density_epsilons`` (figures only:
  both are exact functions of the config);
* samples ``hist_draws`` prices at ``hist_epsilon`` and compares their histogram with the exact
  density (bin counts vs exact bin probabilities, KS test on the raw draws);
* for each epsilon in ``loss_epsilons``, computes the mean revenue loss E[OPT - u(x, R)] exactly
  (closed form per piece, :meth:`mechanisms.continuous.RevenuePrice.expected_loss`) and by Monte
  Carlo over ``loss_draws`` prices, with a CLT 95 % interval for the figure and a Hoeffding bound
  at false-alarm ``alpha`` (Bonferroni over the checks) for the pass/fail verdict.

Config keys (besides the common ones): ``bids``, ``r_min``, ``r_max``, ``density_epsilons``,
``hist_epsilon``, ``hist_draws``, ``hist_bins``, ``loss_epsilons``, ``loss_draws``, ``level``,
``alpha``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpharness import mechanisms
from dpharness.bench.config import Ctx
from dpharness.bench.run.tasks import Summary, Task, make_key

from dpharness.bench.experiments._textbook import (
    clopper_pearson,
    density_curve,
    hoeffding_radius,
    md_table,
    mean_interval,
    new_figure,
    ok_rows,
    save,
)

__all__ = ["PumpkinSpec", "parse", "tasks", "run_task", "summarize", "plot"]

CELL_COLUMNS = ["what", "epsilon"]
METRIC = "mc_mean"

_KEYS = (
    "bids",
    "r_min",
    "r_max",
    "density_epsilons",
    "hist_epsilon",
    "hist_draws",
    "hist_bins",
    "loss_epsilons",
    "loss_draws",
    "level",
    "alpha",
)


@dataclass(frozen=True)
class PumpkinSpec:
    bids: tuple[float, ...] = (1.0, 1.0, 1.0, 3.01)
    r_min: float = 0.0
    r_max: float = 3.5
    density_epsilons: tuple[float, ...] = (0.01, 1.0, 5.0)
    hist_epsilon: float = 5.0
    hist_draws: int = 10_000
    hist_bins: int = 70
    loss_epsilons: tuple[float, ...] = (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
    loss_draws: int = 4_000
    level: float = 0.95
    alpha: float = 1e-6

    def mechanism(self, epsilon: float) -> Any:
        return mechanisms.make("revenue_price", epsilon=float(epsilon), r_min=self.r_min, r_max=self.r_max)

    @property
    def n_checks(self) -> int:
        """Pass/fail checks sharing the false-alarm budget ``alpha`` (Bonferroni)."""
        return len(self.loss_epsilons) + 1


def parse(raw: dict, ctx: Ctx) -> PumpkinSpec:
    ctx.reject_unknown(raw, _KEYS)
    d = PumpkinSpec()
    bids_raw = ctx.get(raw, "bids", list, list(d.bids))
    bids = tuple(float(ctx.check_number(b, f"bids[{i}]", lo=0.0)) for i, b in enumerate(bids_raw))
    r_min = float(ctx.number(raw, "r_min", d.r_min, lo=0.0))
    r_max = float(ctx.number(raw, "r_max", d.r_max, lo=0.0, lo_open=True))
    if r_min >= r_max and not ctx.failed("r_min", "r_max"):
        ctx.report("r_max", f"must be > r_min = {r_min:g}, got {r_max:g}")
    spec = PumpkinSpec(
        bids=bids,
        r_min=r_min,
        r_max=r_max,
        density_epsilons=ctx.grid(raw, "density_epsilons", float, d.density_epsilons, lo=0, lo_open=True),
        hist_epsilon=float(ctx.number(raw, "hist_epsilon", d.hist_epsilon, lo=0, lo_open=True)),
        hist_draws=int(ctx.number(raw, "hist_draws", d.hist_draws, lo=10, integer=True)),
        hist_bins=int(ctx.number(raw, "hist_bins", d.hist_bins, lo=2, hi=10_000, integer=True)),
        loss_epsilons=ctx.grid(raw, "loss_epsilons", float, d.loss_epsilons, lo=0, lo_open=True),
        loss_draws=int(ctx.number(raw, "loss_draws", d.loss_draws, lo=2, integer=True)),
        level=float(ctx.number(raw, "level", d.level, lo=0, hi=1, lo_open=True, hi_open=True)),
        alpha=float(ctx.number(raw, "alpha", d.alpha, lo=0, hi=1, lo_open=True, hi_open=True)),
    )
    try:  # build once so mechanism-level mistakes surface at validation time
        if not ctx.failed():  # (not with the placeholders of mistakes already reported)
            spec.mechanism(spec.hist_epsilon).distribution(np.asarray(spec.bids))
    except ValueError as exc:
        ctx.report("bids", str(exc))
    return spec


def tasks(spec: PumpkinSpec) -> list[Task]:
    out = [Task(make_key(part="histogram", epsilon=spec.hist_epsilon), {"part": "histogram", "epsilon": spec.hist_epsilon})]
    out += [Task(make_key(part="loss", epsilon=e), {"part": "loss", "epsilon": e}) for e in spec.loss_epsilons]
    return out


def run_task(spec: PumpkinSpec, task: Task, rng: np.random.Generator) -> list[dict]:
    eps = float(task.params["epsilon"])
    mech = spec.mechanism(eps)
    bids = np.asarray(spec.bids)
    if task.params["part"] == "histogram":
        law = mech.distribution(bids)
        x = mech.sample(bids, size=spec.hist_draws, rng=rng)
        edges = np.linspace(spec.r_min, spec.r_max, spec.hist_bins + 1)
        counts, _ = np.histogram(x, edges)
        exact = np.diff(law.cdf(edges))
        from scipy import stats  # here, not at the top: a config error must not wait for it

        ks = float(stats.kstest(x, law.cdf).pvalue)
        return [
            {
                "what": "histogram",
                "epsilon": eps,
                "bin": i,
                "bin_lo": float(edges[i]),
                "bin_hi": float(edges[i + 1]),
                "count": int(counts[i]),
                "n": int(spec.hist_draws),
                "exact_prob": float(exact[i]),
                "ks_pvalue": ks,
            }
            for i in range(spec.hist_bins)
        ]
    # part == "loss"
    opt, _ = mech.optimum(bids)
    x = mech.sample(bids, size=spec.loss_draws, rng=rng)
    loss = opt - mech.revenue(bids, x)
    m, se, lo, hi = mean_interval(loss, spec.level, support=(0.0, opt))
    exact = mech.expected_loss(bids)
    radius = hoeffding_radius(opt, spec.loss_draws, spec.alpha / spec.n_checks)
    return [
        {
            "what": "loss",
            "epsilon": eps,
            "n": int(spec.loss_draws),
            "opt": opt,
            "exact": exact,
            "mc_mean": m,
            "mc_se": se,
            "mc_lo": lo,
            "mc_hi": hi,
            "hoeffding_radius": radius,
            "consistent": bool(abs(m - exact) <= radius),
            "mean_price": float(np.mean(x)),
        }
    ]


def summarize(spec: PumpkinSpec, results: pd.DataFrame) -> Summary:
    loss = ok_rows(results, "loss").sort_values("epsilon")
    hist = ok_rows(results, "histogram")
    table = pd.DataFrame(
        {
            "epsilon": loss["epsilon"].to_numpy(float),
            "exact_mean_loss": loss["exact"].to_numpy(float),
            "mc_mean_loss": loss["mc_mean"].to_numpy(float),
            "mc_ci_lo": loss["mc_lo"].to_numpy(float),
            "mc_ci_hi": loss["mc_hi"].to_numpy(float),
            "draws": loss["n"].to_numpy(int),
            "consistent": loss["consistent"].astype(bool).to_numpy(),
        }
    )
    bids = np.asarray(spec.bids)
    mech = spec.mechanism(1.0)
    opt, arg = mech.optimum(bids)
    lines = [
        f"pumpkin auction: bids {tuple(spec.bids)}, price range [{spec.r_min:g}, {spec.r_max:g}], "
        f"Delta_u = r_max = {spec.r_max:g}",
        f"OPT = {opt:g} at r = {arg:g}; revenue at r = 3, 3.01, 3.02: "
        + ", ".join(f"{v:g}" for v in mech.revenue(bids, [3.0, 3.01, 3.02])),
        "exact mean revenue loss E[OPT - u(R)]: "
        + ", ".join(f"eps={e:g}: {spec.mechanism(e).expected_loss(bids):.6f}" for e in spec.density_epsilons),
    ]
    ok = bool(table["consistent"].all()) if len(table) else False
    lines.append(md_table(table))
    if len(hist):
        p = float(hist["ks_pvalue"].iloc[0])
        thr = spec.alpha / spec.n_checks
        lines.append(
            f"histogram at eps={spec.hist_epsilon:g} ({int(hist['n'].iloc[0])} draws): KS p-value {p:.3g} "
            f"(fail below {thr:.2g})"
        )
        ok = ok and p >= thr
    else:
        ok = False
    lines.append(
        "Monte Carlo vs exact: Hoeffding bound at false-alarm "
        f"{spec.alpha:g} (Bonferroni over {spec.n_checks} checks): {'all consistent' if ok else 'INCONSISTENT'}"
    )
    return Summary(table=table, text="\n".join(lines), ok=ok)


def plot(spec: PumpkinSpec, results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    bids = np.asarray(spec.bids)
    bid_txt = ", ".join(f"{b:g}" for b in spec.bids)
    out: list[Path] = []

    # 1. revenue curve (exact): linear between bids, left-continuous jumps at the bids
    mech = spec.mechanism(1.0)
    edges, buyers = mech.pieces(bids)
    fig, ax = new_figure()
    for j in range(buyers.size):
        a, b = edges[j], edges[j + 1]
        ax.plot([a, b], [a * buyers[j], b * buyers[j]], color="C0", lw=2, label="revenue u(x, r)" if j == 0 else None)
    opt, arg = mech.optimum(bids)
    ax.plot([arg], [opt], "o", color="C3", label=f"OPT = {opt:g} at r = {arg:g}")
    ax.set_xlabel("price r (currency units)")
    ax.set_ylabel("revenue r·|{bids ≥ r}| (currency units)")
    ax.set_title(f"Pumpkin auction revenue curve, bids ({bid_txt})")
    ax.legend()
    ax.grid(alpha=0.3)
    out.append(save(fig, fig_dir, "revenue_curve.png"))

    # 2. exact densities
    fig, ax = new_figure()
    for i, e in enumerate(spec.density_epsilons):
        x, y = density_curve(spec.mechanism(e).distribution(bids))
        ax.plot(x, y, color=f"C{i}", lw=2, label=f"ε = {e:g} (exact)")
    ax.set_xlabel("price r (currency units)")
    ax.set_ylabel("density of the price (1 / currency unit)")
    ax.set_title("Exponential-mechanism price density, exact, for several ε")
    ax.legend()
    ax.grid(alpha=0.3)
    out.append(save(fig, fig_dir, "price_density.png"))

    # 3. histogram of draws over the exact density
    hist = ok_rows(results, "histogram").sort_values("bin")
    if len(hist):
        n = int(hist["n"].iloc[0])
        w = (hist["bin_hi"] - hist["bin_lo"]).to_numpy(float)
        mid = 0.5 * (hist["bin_lo"] + hist["bin_hi"]).to_numpy(float)
        k = hist["count"].to_numpy(float)
        lo, hi = clopper_pearson(k, n, spec.level)
        dens = k / (n * w)
        fig, ax = new_figure()
        x, y = density_curve(spec.mechanism(spec.hist_epsilon).distribution(bids))
        ax.plot(x, y, color="C0", lw=2, label="exact density")
        ax.errorbar(mid, dens, yerr=[dens - lo / w, hi / w - dens], fmt="o", ms=3, color="C1", elinewidth=1,
                    label=f"{n:,} draws: bin frequency / width, {spec.level:.0%} Clopper–Pearson")
        ax.set_xlabel("price r (currency units)")
        ax.set_ylabel("density (1 / currency unit)")
        ax.set_title(f"Sampled prices vs exact density, ε = {spec.hist_epsilon:g}")
        ax.set_ylim(0, 1.35 * max(float(np.max(y)), float(np.max(hi / w))))  # room for the legend
        ax.legend(loc="upper right")
        ax.grid(alpha=0.3)
        out.append(save(fig, fig_dir, "price_histogram.png"))

    # 4. mean revenue loss vs epsilon: exact line, Monte Carlo points with intervals
    loss = ok_rows(results, "loss").sort_values("epsilon")
    if len(loss):
        e_lo, e_hi = float(min(spec.loss_epsilons)), float(max(spec.loss_epsilons))
        grid = np.geomspace(e_lo, e_hi, 200)
        exact = [spec.mechanism(e).expected_loss(bids) for e in grid]
        fig, ax = new_figure()
        ax.plot(grid, exact, color="C0", lw=2, label="exact E[OPT − u(x, R)]")
        m = loss["mc_mean"].to_numpy(float)
        ax.errorbar(loss["epsilon"], m, yerr=[m - loss["mc_lo"], loss["mc_hi"] - m], fmt="o", color="C1",
                    capsize=3, label=f"Monte Carlo ({int(loss['n'].iloc[0]):,} draws), {spec.level:.0%} CI")
        ax.set_xscale("log")
        ax.set_xlabel("privacy parameter ε (log scale)")
        ax.set_ylabel("mean revenue loss (currency units)")
        ax.set_title("Pumpkin auction: mean revenue loss |OPT − u(sampled price)| vs ε")
        ax.legend()
        ax.grid(alpha=0.3, which="both")
        out.append(save(fig, fig_dir, "revenue_loss.png"))
    return out
