"""Experiment kind ``randomized_response``: randomized response as an exponential mechanism.

Output set R = {0, 1}, utility u(x, r) = 1[r = x], Delta_u = 1 (docs/mechanisms.md,
"randomized_response"). The exponential mechanism at parameter eps reports the truth with probability
e^{eps/2} / (1 + e^{eps/2}); classic eps-randomized response (Warner 1965; Dwork & Roth §3.2)
reports it with probability e^eps / (1 + e^eps), which is the EM at 2 eps. So the EM analysis
(which certifies eps for the first) is loose by a factor 2 on one bit: its exact privacy loss
under a bit flip is eps / 2.

For every eps in ``epsilons`` and each mechanism (``randomized_response`` and ``exponential`` on the
scores 1[r = x]) the run reads P[output = truth] exactly from ``log_prob``, estimates it from
``draws`` samples (Clopper-Pearson interval), and computes the exact privacy loss
max_o |log P[o | x] - log P[o | 1 - x]| from the two exact laws.

Optional ``notebook:`` section: a published exponential-mechanism example on one bit, run beside
ours with its own scores -- the randomized-response example of Sherpa.ai's shfl notebook "the
exponential mechanism" uses the scores u(x, r) = (0, 1/4) for r = (0, 1) at the true bit x = 1,
Delta_u = 1, and prints P[r = 1] = 0.777 at eps = 10. We compute P[output = 1] exactly
(e^{eps u_1 / (2 Delta_u)} / (e^{eps u_0 / (2 Delta_u)} + e^{eps u_1 / (2 Delta_u)})), estimate it from
``draws`` samples, and compare with the published value to its printed precision (half a unit of
its last decimal). Keys: ``source``, ``scores`` (two numbers, for r = 0 and r = 1), ``sensitivity``,
``epsilon``, ``published``, ``draws``.

Config keys: ``epsilons``, ``truth`` (0 or 1), ``draws``, ``level``, ``alpha``, ``notebook``.
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

__all__ = ["RRSpec", "parse", "tasks", "run_task", "summarize", "plot"]

CELL_COLUMNS = ["mechanism", "epsilon"]
METRIC = "mc_p_truth"

MECHANISMS = {
    "randomized_response": "randomized response (classic, ε-DP)",
    "exponential": "exponential mechanism, u = 1[r = x], Δu = 1",
}
_KEYS = ("epsilons", "truth", "draws", "level", "alpha", "notebook")
_NOTEBOOK_KEYS = ("source", "scores", "sensitivity", "epsilon", "published", "draws")
#: ``mechanism`` value of the notebook's row in results.csv and the table.
NOTEBOOK = "shfl_notebook"


@dataclass(frozen=True)
class Notebook:
    """A published one-bit exponential-mechanism example: scores for r = 0, 1 (the true bit is
    1), its Delta_u and epsilon, and the P[output = 1] it prints (with its printed decimals)."""

    source: str
    scores: tuple[float, float]
    sensitivity: float
    epsilon: float
    published: float
    decimals: int
    draws: int

    def mechanism(self) -> Any:
        return mechanisms.make("exponential", epsilon=self.epsilon, sensitivity=self.sensitivity, utility="scores")

    def exact_p1(self) -> float:
        """P[output = 1] from the mechanism's exact law."""
        mech = self.mechanism()
        data = np.asarray(self.scores, dtype=float)
        sup = np.asarray(mech.support(data))
        return float(np.exp(mech.log_prob(data))[sup == 1][0])

    @property
    def rounding(self) -> float:
        """Half a unit of the published value's last printed decimal."""
        return 0.5 * 10.0 ** -self.decimals


@dataclass(frozen=True)
class RRSpec:
    epsilons: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)
    truth: int = 1
    draws: int = 10_000
    level: float = 0.95
    alpha: float = 1e-6
    notebook: Notebook | None = None

    @property
    def n_checks(self) -> int:
        return len(self.epsilons) * len(MECHANISMS) + (self.notebook is not None)


def _mechanism(name: str, eps: float) -> Any:
    if name == "randomized_response":
        return mechanisms.make("randomized_response", epsilon=float(eps))
    return mechanisms.make("exponential", epsilon=float(eps), sensitivity=1.0, utility="scores")


def _data(name: str, bit: int) -> Any:
    """The mechanism's input for private bit ``bit``: the bit itself, or the scores 1[r = bit]."""
    if name == "randomized_response":
        return bit
    return np.array([1.0 - bit, float(bit)])


def exact_p_truth(name: str, eps: float, bit: int) -> float:
    mech = _mechanism(name, eps)
    data = _data(name, bit)
    sup = np.asarray(mech.support(data))
    return float(np.exp(mech.log_prob(data))[sup == bit][0])


def exact_loss(name: str, eps: float) -> float:
    """max over outputs of |log P[o | x = 1] - log P[o | x = 0]|, from the exact laws."""
    mech = _mechanism(name, eps)
    return float(np.max(np.abs(mech.log_prob(_data(name, 1)) - mech.log_prob(_data(name, 0)))))


def parse(raw: dict, ctx: Ctx) -> RRSpec:
    ctx.reject_unknown(raw, _KEYS)
    d = RRSpec()
    return RRSpec(
        epsilons=ctx.grid(raw, "epsilons", float, d.epsilons, lo=0, lo_open=True),
        truth=int(ctx.choice(raw, "truth", (0, 1), d.truth)),
        draws=int(ctx.number(raw, "draws", d.draws, lo=1, integer=True)),
        level=float(ctx.number(raw, "level", d.level, lo=0, hi=1, lo_open=True, hi_open=True)),
        alpha=float(ctx.number(raw, "alpha", d.alpha, lo=0, hi=1, lo_open=True, hi_open=True)),
        notebook=_parse_notebook(raw["notebook"], ctx.at("notebook")) if raw.get("notebook") is not None else None,
    )


def _decimals(value: Any) -> int:
    """Decimals printed in a published number as written in the config (0.777 -> 3)."""
    text = repr(float(value)) if not isinstance(value, str) else value.strip()
    if "e" in text.lower():
        return max(0, -int(text.lower().split("e")[1]))
    return len(text.split(".")[1]) if "." in text else 0


def _parse_notebook(raw: Any, ctx: Ctx) -> Notebook | None:
    raw = ctx.require_mapping(raw)
    ctx.reject_unknown(raw, _NOTEBOOK_KEYS)
    scores = ctx.grid(raw, "scores", float, unique=False)
    if len(scores) != 2 and not ctx.failed("scores"):
        ctx.report("scores", f"must be two numbers, the utilities of r = 0 and r = 1, got {len(scores)}")
    pub = ctx.number(raw, "published", lo=0, hi=1)
    nb = Notebook(
        source=ctx.get(raw, "source", str),
        scores=(float(scores[0]), float(scores[-1])) if scores else (0.0, 0.0),
        sensitivity=float(ctx.number(raw, "sensitivity", lo=0, lo_open=True)),
        epsilon=float(ctx.number(raw, "epsilon", lo=0, lo_open=True)),
        published=float(pub),
        decimals=_decimals(raw.get("published", 0)) if not ctx.failed("published") else 0,
        draws=int(ctx.number(raw, "draws", 10_000, lo=1, integer=True)),
    )
    return nb


def tasks(spec: RRSpec) -> list[Task]:
    out = [
        Task(make_key(mechanism=m, epsilon=e), {"mechanism": m, "epsilon": e})
        for m in MECHANISMS
        for e in spec.epsilons
    ]
    if spec.notebook is not None:
        e = spec.notebook.epsilon
        out.append(Task(make_key(mechanism=NOTEBOOK, epsilon=e), {"mechanism": NOTEBOOK, "epsilon": e}))
    return out


def _notebook_row(spec: RRSpec, nb: Notebook, rng: np.random.Generator) -> dict:
    """The notebook's example: P[output = 1] with its scores, exact and from nb.draws samples."""
    mech = nb.mechanism()
    x = np.asarray(mech.sample(np.asarray(nb.scores, dtype=float), size=nb.draws, rng=rng))
    hits = int(np.sum(x == 1))
    exact = nb.exact_p1()
    lo, hi = clopper_pearson(hits, nb.draws, spec.level)
    clo, chi = clopper_pearson(hits, nb.draws, 1 - spec.alpha / spec.n_checks)
    return {
        "mechanism": NOTEBOOK,
        "epsilon": nb.epsilon,
        "truth": 1,
        "n": nb.draws,
        "hits": hits,
        "mc_p_truth": hits / nb.draws,
        "mc_lo": float(lo),
        "mc_hi": float(hi),
        "exact_p_truth": exact,
        "reference_rr": float("nan"),
        "claim_epsilon": float(mech.claim.epsilon),
        "exact_privacy_loss": float("nan"),
        "consistent": bool(clo <= exact <= chi),
        "published_p_truth": nb.published,
    }


def run_task(spec: RRSpec, task: Task, rng: np.random.Generator) -> list[dict]:
    name, eps = task.params["mechanism"], float(task.params["epsilon"])
    if name == NOTEBOOK and spec.notebook is not None:
        return [_notebook_row(spec, spec.notebook, rng)]
    mech = _mechanism(name, eps)
    x = np.asarray(mech.sample(_data(name, spec.truth), size=spec.draws, rng=rng))
    hits = int(np.sum(x == spec.truth))
    exact = exact_p_truth(name, eps, spec.truth)
    lo, hi = clopper_pearson(hits, spec.draws, spec.level)
    # pass/fail: exact value inside the Clopper-Pearson interval at level 1 - alpha / n_checks
    clo, chi = clopper_pearson(hits, spec.draws, 1 - spec.alpha / spec.n_checks)
    return [
        {
            "mechanism": name,
            "epsilon": eps,
            "truth": spec.truth,
            "n": spec.draws,
            "hits": hits,
            "mc_p_truth": hits / spec.draws,
            "mc_lo": float(lo),
            "mc_hi": float(hi),
            "exact_p_truth": exact,
            "reference_rr": float(np.exp(eps) / (1 + np.exp(eps))),
            "claim_epsilon": float(mech.claim.epsilon),
            "exact_privacy_loss": exact_loss(name, eps),
            "consistent": bool(clo <= exact <= chi),
        }
    ]


def summarize(spec: RRSpec, results: pd.DataFrame) -> Summary:
    df = ok_rows(results)
    cols = ["mechanism", "epsilon", "exact_p_truth", "mc_p_truth", "mc_lo", "mc_hi", "reference_rr",
            "claim_epsilon", "exact_privacy_loss", "consistent"]
    if spec.notebook is not None:
        cols.append("published_p_truth")
    for c in cols:  # e.g. published_p_truth is only on the notebook's row
        if len(df) and c not in df:
            df[c] = np.nan
    table = df[cols].sort_values(["mechanism", "epsilon"]).reset_index(drop=True) if len(df) else pd.DataFrame(columns=cols)
    ok = bool(len(df) == spec.n_checks) and bool(table["consistent"].astype(bool).all())
    ours = table[table["mechanism"] != NOTEBOOK]
    lines = [
        f"P[output = truth] for truth = {spec.truth}, {spec.draws:,} draws per cell; "
        "reference e^ε/(1+e^ε) = classic randomized response",
        md_table(ours[[c for c in cols if c != "published_p_truth"]]),
    ]
    if len(df):
        em = table[table["mechanism"] == "exponential"]
        rr = table[table["mechanism"] == "randomized_response"]
        if len(em):
            lines.append(
                "exponential mechanism: exact loss / claim = "
                f"{(em['exact_privacy_loss'] / em['claim_epsilon']).min():.12g} .. "
                f"{(em['exact_privacy_loss'] / em['claim_epsilon']).max():.12g} (the EM analysis is loose by 2)"
            )
        if len(rr):
            dev = float(np.max(np.abs(rr["exact_p_truth"] - rr["reference_rr"])))
            lines.append(f"randomized_response exact vs e^ε/(1+e^ε): max abs difference {dev:.2g}")
            ok = ok and dev < 1e-12
    if spec.notebook is not None:
        nb_lines, nb_ok = _notebook_text(spec.notebook, table[table["mechanism"] == NOTEBOOK])
        lines += nb_lines
        ok = ok and nb_ok
    lines.append(f"Monte Carlo vs exact (Clopper–Pearson at false-alarm {spec.alpha:g}, Bonferroni over "
                 f"{spec.n_checks}): {'all consistent' if ok else 'INCONSISTENT'}")
    return Summary(table=table, text="\n".join(lines), ok=ok)


def _notebook_text(nb: Notebook, rows: pd.DataFrame) -> tuple[list[str], bool]:
    """The notebook's example beside its published probability; ok when the exact value rounds
    to it (|exact - published| <= half a unit of its last printed decimal)."""
    exact = nb.exact_p1()
    diff = abs(exact - nb.published)
    agrees = diff <= nb.rounding
    u0, u1 = nb.scores
    lines = [
        f"published example ({nb.source}): scores u = ({u0:g}, {u1:g}) for r = (0, 1) at the true bit 1, "
        f"Δu = {nb.sensitivity:g}, ε = {nb.epsilon:g}",
        f"  P[output = 1] exact {exact:.6f} (e^(ε·{u1:g}/(2Δu)) / (e^(ε·{u0:g}/(2Δu)) + e^(ε·{u1:g}/(2Δu)))) "
        f"vs published {nb.published:.{nb.decimals}f}: |difference| {diff:.2g} "
        + (f"≤ {nb.rounding:g} (agrees to the published precision)" if agrees else f"> {nb.rounding:g} (DISAGREES)"),
    ]
    if len(rows):
        r = rows.iloc[0]
        lines.append(f"  Monte Carlo {r['mc_p_truth']:.4f} [{r['mc_lo']:.4f}, {r['mc_hi']:.4f}] from {nb.draws:,} draws")
    else:
        lines.append("  Monte Carlo: missing (the task failed)")
    return lines, agrees


def plot(spec: RRSpec, results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    df = ok_rows(results)
    out: list[Path] = []
    if not len(df):
        return out
    grid = np.geomspace(min(spec.epsilons), max(spec.epsilons), 200)
    fig, ax = new_figure()
    # drawn on top: it coincides with the randomized-response curve
    ax.plot(grid, np.exp(grid) / (1 + np.exp(grid)), "k--", lw=1.2, zorder=5,
            label="formula e^ε/(1+e^ε) (on top of the RR curve)")
    for i, (name, label) in enumerate(MECHANISMS.items()):
        ax.plot(grid, [exact_p_truth(name, e, spec.truth) for e in grid], color=f"C{i}", lw=2, label=f"{label}: exact")
        d = df[df["mechanism"] == name].sort_values("epsilon")
        p = d["mc_p_truth"].to_numpy(float)
        ax.errorbar(d["epsilon"], p, yerr=[p - d["mc_lo"], d["mc_hi"] - p], fmt="o", color=f"C{i}", capsize=3,
                    mfc="white", label=f"{label}: {spec.draws:,} draws, {spec.level:.0%} CI")
    ax.set_xscale("log")
    ax.set_xlabel("privacy parameter ε (log scale)")
    ax.set_ylabel("P[output = true bit] (probability)")
    ax.set_title("Randomized response vs the exponential mechanism on one bit")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    out.append(save(fig, fig_dir, "p_truth.png"))

    fig, ax = new_figure()
    ax.plot(grid, grid, "k--", lw=1.2, zorder=5, label="claimed ε (both mechanisms)")
    for i, (name, label) in enumerate(MECHANISMS.items()):
        ax.plot(grid, [exact_loss(name, e) for e in grid], color=f"C{i}", lw=2, label=f"{label}: exact loss")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("privacy parameter ε (log scale)")
    ax.set_ylabel("privacy loss under a bit flip (nats)")
    ax.set_title("Exact privacy loss of one-bit mechanisms vs their claim")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    out.append(save(fig, fig_dir, "privacy_loss.png"))
    return out
