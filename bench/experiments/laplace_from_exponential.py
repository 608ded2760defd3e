"""Experiment kind ``laplace_from_exponential``: the Laplace mechanism obtained from the
exponential mechanism with u(D, r) = -|f(D) - r| (docs/experiments.md, "laplace_from_exponential").

With Delta_u = Delta_f the exponential mechanism's density is proportional to
exp(-epsilon |r - f(D)| / (2 Delta_f)): Laplace with scale 2 Delta_f / epsilon. The general EM
analysis certifies epsilon; the exact privacy loss of the Laplace law is epsilon / 2, so the
analysis is loose by a factor 2. The run

* samples ``draws`` outputs of ``laplace_via_exponential`` on the interval [lower, upper] (sampled
  exactly through the piecewise log-linear law, i.e. by the exponential mechanism's own inverse
  CDF) for each epsilon in ``epsilons``, and compares the histogram with the Laplace density of
  scale 2 Delta_f / epsilon (KS tests against that law, against the exact truncated law, and
  against the scale Delta_f / epsilon a Laplace mechanism would use);
* computes the exact privacy loss sup_r |log p(r | f) - log p(r | f')| of the neighbouring pair
  f' = f + Delta_f directly from the two densities on a grid of outputs that contains every kink
  (and checks it against the closed form and the verifier's exact mode, :func:`verifiers.exact.exact`),
  on the real line, for a pair inside the interval and
  for the worst pair at the interval's end; the worst pair over all neighbours is
  ``tight_epsilon``.

Config keys: ``epsilons``, ``loss_epsilons``, ``sensitivity``, ``f_value``, ``lower``, ``upper``,
``draws``, ``bins``, ``half_width`` (histogram range, in Laplace scales), ``grid_points``,
``level``, ``alpha``.
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

from dpharness.bench.experiments._textbook import clopper_pearson, md_table, new_figure, ok_rows, save

__all__ = ["LaplaceSpec", "parse", "tasks", "run_task", "summarize", "plot"]

CELL_COLUMNS = ["what", "epsilon"]
METRIC = "loss_real_line"

_KEYS = (
    "epsilons",
    "loss_epsilons",
    "sensitivity",
    "f_value",
    "lower",
    "upper",
    "draws",
    "bins",
    "half_width",
    "grid_points",
    "level",
    "alpha",
)


@dataclass(frozen=True)
class LaplaceSpec:
    epsilons: tuple[float, ...] = (0.5, 1.0, 2.0)
    loss_epsilons: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0)
    sensitivity: float = 1.0
    f_value: float = 0.0
    lower: float = -50.0
    upper: float = 50.0
    draws: int = 10_000
    bins: int = 60
    half_width: float = 6.0
    grid_points: int = 20_001
    level: float = 0.95
    alpha: float = 1e-6

    def mechanism(self, epsilon: float, bounded: bool = True) -> Any:
        if bounded:
            return mechanisms.make(
                "laplace_via_exponential", epsilon=float(epsilon), sensitivity=self.sensitivity,
                lower=self.lower, upper=self.upper,
            )
        return mechanisms.make("laplace_via_exponential", epsilon=float(epsilon), sensitivity=self.sensitivity)

    @property
    def n_checks(self) -> int:
        return len(self.epsilons)


def parse(raw: dict, ctx: Ctx) -> LaplaceSpec:
    ctx.reject_unknown(raw, _KEYS)
    d = LaplaceSpec()
    lower = float(ctx.number(raw, "lower", d.lower))
    upper = float(ctx.number(raw, "upper", d.upper))
    if lower >= upper and not ctx.failed("lower", "upper"):
        ctx.report("upper", f"must be > lower = {lower:g}, got {upper:g}")
    sens = float(ctx.number(raw, "sensitivity", d.sensitivity, lo=0, lo_open=True))
    f = float(ctx.number(raw, "f_value", d.f_value))
    if not (lower <= f and f + sens <= upper) and not ctx.failed("lower", "upper", "sensitivity", "f_value"):
        ctx.report("f_value", f"f_value and f_value + sensitivity must lie in [lower, upper] = [{lower:g}, {upper:g}], got {f:g}")
    return LaplaceSpec(
        epsilons=ctx.grid(raw, "epsilons", float, d.epsilons, lo=0, lo_open=True),
        loss_epsilons=ctx.grid(raw, "loss_epsilons", float, d.loss_epsilons, lo=0, lo_open=True),
        sensitivity=sens,
        f_value=f,
        lower=lower,
        upper=upper,
        draws=int(ctx.number(raw, "draws", d.draws, lo=10, integer=True)),
        bins=int(ctx.number(raw, "bins", d.bins, lo=2, hi=10_000, integer=True)),
        half_width=float(ctx.number(raw, "half_width", d.half_width, lo=0, lo_open=True)),
        grid_points=int(ctx.number(raw, "grid_points", d.grid_points, lo=101, integer=True)),
        level=float(ctx.number(raw, "level", d.level, lo=0, hi=1, lo_open=True, hi_open=True)),
        alpha=float(ctx.number(raw, "alpha", d.alpha, lo=0, hi=1, lo_open=True, hi_open=True)),
    )


def tasks(spec: LaplaceSpec) -> list[Task]:
    out = [Task(make_key(part="histogram", epsilon=e), {"part": "histogram", "epsilon": e}) for e in spec.epsilons]
    out += [Task(make_key(part="privacy_loss", epsilon=e), {"part": "privacy_loss", "epsilon": e}) for e in spec.loss_epsilons]
    return out


def _grid_loss(law_a: Any, law_b: Any, lo: float, hi: float, kinks: list[float], n: int) -> float:
    """max over a grid of outputs of |log p_a(r) - log p_b(r)|, read directly from the two laws.

    The grid holds the kinks (f, f', and the interval ends), where the piecewise-linear log ratio
    attains its supremum; the densities come from the laws' own log_pdf.
    """
    r = np.unique(np.concatenate([np.linspace(lo, hi, n), [k for k in kinks if lo <= k <= hi]]))
    return float(np.max(np.abs(law_a.log_pdf(r) - law_b.log_pdf(r))))


def _histogram_rows(spec: LaplaceSpec, eps: float, rng: np.random.Generator) -> list[dict]:
    mech = spec.mechanism(eps)
    f = spec.f_value
    x = mech.sample(f, size=spec.draws, rng=rng)
    scale = mech.scale
    edges = np.linspace(f - spec.half_width * scale, f + spec.half_width * scale, spec.bins + 1)
    counts, _ = np.histogram(x, edges)
    from scipy import stats  # here, not at the top: a config error must not wait for it

    em_law = stats.laplace(loc=f, scale=scale)
    exact = np.diff(mech.cdf(f, edges))
    ks_em = float(stats.kstest(x, mech.distribution(f).cdf).pvalue)
    ks_lap = float(stats.kstest(x, em_law.cdf).pvalue)
    ks_half = float(stats.kstest(x, stats.laplace(loc=f, scale=spec.sensitivity / eps).cdf).pvalue)
    common = {
        "what": "histogram",
        "epsilon": eps,
        "n": int(spec.draws),
        "scale": scale,
        "outside": int(np.sum((x < edges[0]) | (x > edges[-1]))),
        "ks_pvalue_exact": ks_em,
        "ks_pvalue_laplace_2df_over_eps": ks_lap,
        "ks_pvalue_laplace_df_over_eps": ks_half,
    }
    return [
        {**common, "bin": i, "bin_lo": float(edges[i]), "bin_hi": float(edges[i + 1]), "count": int(counts[i]),
         "exact_prob": float(exact[i])}
        for i in range(spec.bins)
    ]


def _loss_row(spec: LaplaceSpec, eps: float) -> dict:
    f, fp = spec.f_value, spec.f_value + spec.sensitivity
    real = spec.mechanism(eps, bounded=False)
    box = spec.mechanism(eps)
    scale = real.scale
    n = spec.grid_points
    # real line: every kink lies in [f - 40 scale, f' + 40 scale]; outside, the log ratio is constant
    lr = _grid_loss(real.distribution(f), real.distribution(fp), f - 40 * scale, fp + 40 * scale, [f, fp], n)
    mid = 0.5 * (spec.lower + spec.upper) - 0.5 * spec.sensitivity
    pairs = {"interior": (mid, mid + spec.sensitivity), "boundary": (spec.lower, spec.lower + spec.sensitivity)}
    row: dict[str, Any] = {
        "what": "privacy_loss",
        "epsilon": eps,
        "claim_em_analysis": real.claim.epsilon,
        "loss_real_line": lr,
        "loss_real_line_closed_form": real.privacy_loss(f, fp),
        "tight_epsilon_real_line": real.tight_epsilon,
        "claim_over_loss": real.claim.epsilon / lr,
    }
    for name, (a, b) in pairs.items():
        g = _grid_loss(box.distribution(a), box.distribution(b), spec.lower, spec.upper, [a, b, spec.lower, spec.upper], n)
        row[f"loss_interval_{name}"] = g
        row[f"loss_interval_{name}_closed_form"] = box.privacy_loss(a, b)
    row["tight_epsilon_interval"] = box.tight_epsilon
    # third opinion: the verifier's exact mode (verifiers.exact, no grid: sup of the log ratio
    # at segment ends and critical points of the two canonical laws); imported here, so that a
    # config error does not wait for the verifier package
    from dpharness.verifiers.losses.exact import exact as exact_loss

    row["loss_real_line_verifier"] = exact_loss(real, f, fp).epsilon
    for name, (a, b) in pairs.items():
        row[f"loss_interval_{name}_verifier"] = exact_loss(box, a, b).epsilon
    # the grid and the closed form must agree: the grid contains every kink, so only rounding differs
    row["consistent"] = bool(
        abs(lr - row["loss_real_line_closed_form"]) <= 1e-9 * max(1.0, lr)
        and all(abs(row[f"loss_interval_{k}"] - row[f"loss_interval_{k}_closed_form"]) <= 1e-9 * max(1.0, eps) for k in pairs)
        and abs(row["loss_interval_boundary"] - row["tight_epsilon_interval"]) <= 1e-9 * max(1.0, eps)
        and abs(row["loss_real_line_verifier"] - lr) <= 1e-9 * max(1.0, eps)
        and all(abs(row[f"loss_interval_{k}_verifier"] - row[f"loss_interval_{k}"]) <= 1e-9 * max(1.0, eps) for k in pairs)
    )
    return row


def run_task(spec: LaplaceSpec, task: Task, rng: np.random.Generator) -> list[dict]:
    eps = float(task.params["epsilon"])
    if task.params["part"] == "histogram":
        return _histogram_rows(spec, eps, rng)
    return [_loss_row(spec, eps)]


def summarize(spec: LaplaceSpec, results: pd.DataFrame) -> Summary:
    loss = ok_rows(results, "privacy_loss").sort_values("epsilon")
    hist = ok_rows(results, "histogram")
    cols = [
        "epsilon",
        "claim_em_analysis",
        "loss_real_line",
        "claim_over_loss",
        "loss_interval_interior",
        "loss_interval_boundary",
        "tight_epsilon_interval",
        "consistent",
    ]
    table = loss[cols].reset_index(drop=True) if len(loss) else pd.DataFrame(columns=cols)
    thr = spec.alpha / spec.n_checks
    lines = [
        f"Laplace via the exponential mechanism: u = -|f - r|, Delta_f = {spec.sensitivity:g}, density ∝ "
        "exp(-eps |r - f| / (2 Delta_f)) = Laplace(scale 2 Delta_f / eps)",
        f"exact privacy loss of f = {spec.f_value:g} vs f' = f + Delta_f (grid of {spec.grid_points} outputs + kinks); "
        f"interval [{spec.lower:g}, {spec.upper:g}]:",
        md_table(table),
        "consistent = the grid maximum, the closed form and verifiers.exact agree to 1e-9",
    ]
    ok = bool(len(loss)) and bool(loss["consistent"].astype(bool).all())
    if len(loss):
        ratio = loss["claim_over_loss"].to_numpy(float)
        lines.append(f"claim / real loss on the real line: {ratio.min():.12g} .. {ratio.max():.12g} (the analysis is loose by 2)")
    hs = hist.drop_duplicates("epsilon").sort_values("epsilon") if len(hist) else hist
    for _, h in hs.iterrows():
        p = float(h["ks_pvalue_exact"])
        ok = ok and p >= thr
        lines.append(
            f"eps={h['epsilon']:g}: {int(h['n'])} draws; KS p-value vs exact law {p:.3g} (fail below {thr:.2g}), "
            f"vs Laplace(2Δf/ε) {h['ks_pvalue_laplace_2df_over_eps']:.3g}, vs Laplace(Δf/ε) {h['ks_pvalue_laplace_df_over_eps']:.3g}"
        )
    if not len(hist):
        ok = False
    return Summary(table=table, text="\n".join(lines), ok=ok)


def plot(spec: LaplaceSpec, results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    from scipy import stats

    out: list[Path] = []
    f = spec.f_value
    hist = ok_rows(results, "histogram")
    eps_list = sorted(hist["epsilon"].unique()) if len(hist) else []
    if eps_list:
        width = max(6.0, 4.2 * len(eps_list))  # one epsilon: wide enough for the title and legend
        fig, axes = new_figure(width=width, height=4.4, ncols=len(eps_list))
        axes = np.atleast_1d(axes)
        for ax, eps in zip(axes, eps_list):
            h = hist[hist["epsilon"] == eps].sort_values("bin")
            n = int(h["n"].iloc[0])
            w = (h["bin_hi"] - h["bin_lo"]).to_numpy(float)
            mid = 0.5 * (h["bin_lo"] + h["bin_hi"]).to_numpy(float)
            k = h["count"].to_numpy(float)
            lo, hi = clopper_pearson(k, n, spec.level)
            dens = k / (n * w)
            scale = 2 * spec.sensitivity / eps
            x = np.linspace(h["bin_lo"].min(), h["bin_hi"].max(), 801)
            ax.plot(x, stats.laplace(f, scale).pdf(x), color="C0", lw=2, label="Laplace, scale 2Δf/ε (exact)")
            ax.plot(x, stats.laplace(f, spec.sensitivity / eps).pdf(x), color="C2", lw=1.2, ls="--",
                    label="Laplace, scale Δf/ε (reference)")
            ax.errorbar(mid, dens, yerr=[dens - lo / w, hi / w - dens], fmt="o", ms=3, color="C1", elinewidth=1,
                        label=f"{n:,} EM draws, {spec.level:.0%} CI")
            ax.set_title(f"ε = {eps:g}")
            ax.set_xlabel("output r (units of f)")
            ax.set_ylabel("density (1 / unit of f)")
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        import textwrap

        fig.suptitle(textwrap.fill("Draws of the exponential mechanism with u = −|f − r| vs Laplace densities",
                                   int(width * 9)))
        out.append(save(fig, fig_dir, "laplace_histograms.png"))

    loss = ok_rows(results, "privacy_loss").sort_values("epsilon")
    if len(loss):
        e = loss["epsilon"].to_numpy(float)
        fig, ax = new_figure()
        ax.plot(e, loss["claim_em_analysis"], "k--", lw=1.5, label="claim of the EM analysis (ε)")
        ax.plot(e, loss["tight_epsilon_interval"], "-s", color="C3", ms=4,
                label=f"exact worst pair on [{spec.lower:g}, {spec.upper:g}] (at an end)")
        ax.plot(e, loss["loss_real_line"], "-o", color="C0", ms=4, label="exact, real line (= ε/2)")
        # a hollow ring wide enough to enclose the real-line dot it coincides with (both are ε/2):
        # its outline must not cut through the dot
        ax.plot(e, loss["loss_interval_interior"], "o", color="C2", ms=12, mfc="none", mew=1.5,
                label="exact, pair in the middle of the interval (ring)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("privacy parameter ε of the exponential mechanism (log scale)")
        ax.set_ylabel("privacy loss sup_r |log p(r|f)/p(r|f′)| (nats)")
        ax.set_title("Laplace via EM: exact privacy loss of a neighbouring pair\nvs the claim of the EM analysis")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, which="both")
        out.append(save(fig, fig_dir, "privacy_loss.png"))

        # the log ratio itself, for the first histogram epsilon (or 1): where the loss is attained
        eps = 1.0 if (1.0 in eps_list or not eps_list) else float(eps_list[0])
        real, box = spec.mechanism(eps, bounded=False), spec.mechanism(eps)
        fp = f + spec.sensitivity
        span = 4 * real.scale
        r = np.linspace(f - span, fp + span, 2001)
        a, b = spec.lower, spec.lower + spec.sensitivity
        rb = np.linspace(spec.lower, spec.lower + 2 * span, 2001)
        fig, ax = new_figure()
        ax.plot(r - f, real.distribution(f).log_pdf(r) - real.distribution(fp).log_pdf(r), color="C0", lw=2,
                label=f"real line, f = {f:g}, f′ = f + Δf")
        ax.plot(rb - a, box.distribution(a).log_pdf(rb) - box.distribution(b).log_pdf(rb), color="C3", lw=2,
                label=f"interval, f = lower = {a:g}, f′ = f + Δf")
        for y, style, lab in ((eps, "k--", "± ε (EM claim)"), (eps / 2, "k:", "± ε/2")):
            ax.axhline(y, color="k", ls=style[1:], lw=1, label=lab)
            ax.axhline(-y, color="k", ls=style[1:], lw=1)
        ax.set_xlabel("output r − f (units of f)")
        ax.set_ylabel("log p(r | f) − log p(r | f′) (nats)")
        ax.set_title(f"Privacy-loss random variable of Laplace via EM, ε = {eps:g}")
        ax.set_ylim(-1.75 * eps, 1.15 * eps)  # room below the -eps line for the legend
        ax.legend(fontsize=8, loc="lower center", ncols=2)
        ax.grid(alpha=0.3)
        out.append(save(fig, fig_dir, "log_ratio.png"))
    return out
