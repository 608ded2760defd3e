"""Audit run outputs: summary table, pass/fail judgement, targets (T1-T9), figures, report.md.

Plots are plain functions of the results table (Agg backend), as the runner's are.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .config import AuditConfig, TargetSpec

__all__ = ["summarize", "judge", "evaluate_targets", "plot_all", "calibration_limit"]

#: False-alarm rate of the benchmark's own checks (calibration counts).
CHECK_FALSE_ALARM = 1e-6


def calibration_limit(repeat: int, alpha: float) -> int:
    """Largest false-violation count over ``repeat`` seeds still consistent with a sound verifier:
    the (1 - 1e-6) quantile of Bin(repeat, alpha) (a sound audit violates a correct claim with
    probability <= alpha per seed, so exceeding it has probability <= 1e-6)."""
    return int(stats.binom.isf(CHECK_FALSE_ALARM, repeat, alpha))


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (audit, samples): repeats, violations, epsilon_lower stats, exact, truth."""
    ok = results[results["status"] == "ok"].copy()
    rows = []
    for (aid, n), g in ok.groupby(["audit", "samples"], sort=False):
        first = g.iloc[0]
        lb = g["epsilon_lower"].astype(float)
        exg = g[g["exact_epsilon"].notna()] if "exact_epsilon" in g else g.iloc[:0]
        exr = exg.iloc[0] if len(exg) else None
        rows.append({
            "audit": aid,
            "mechanism": first.get("mechanism", ""),
            "expect": first["expect"],
            "samples": int(n),
            "repeats": int(len(g)),
            "violations": int(g["violated"].astype(bool).sum()),
            "epsilon_claimed": float(first["epsilon_claimed"]),
            "delta_claimed": float(first["delta_claimed"]),
            "true_epsilon": float(first.get("true_epsilon", math.nan)),
            "exact_epsilon": float(exr["exact_epsilon"]) if exr is not None else math.nan,
            "exact_delta": float(exr["exact_delta"]) if exr is not None and pd.notna(exr.get("exact_delta")) else math.nan,
            "epsilon_lower_median": float(lb.median()),
            "epsilon_lower_min": float(lb.min()),
            "epsilon_lower_max": float(lb.max()),
            "epsilon_estimate_median": float(g["epsilon_estimate"].astype(float).median()),
            "delta_lower_median": float(g["delta_lower"].astype(float).median()),
            "support_violations": int(g["support_violation"].astype(bool).sum()),
            "calls_max": int(g["calls"].max()),
            "draws_per_dataset_max": int(g["draws_per_dataset"].max()) if "draws_per_dataset" in g else 0,
            "seconds": float(g["seconds"].sum()),
        })
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


#: Columns of :func:`summarize` (also when no task succeeded: the table is then empty, not columnless).
SUMMARY_COLUMNS = ["audit", "mechanism", "expect", "samples", "repeats", "violations", "epsilon_claimed",
                   "delta_claimed", "true_epsilon", "exact_epsilon", "exact_delta", "epsilon_lower_median",
                   "epsilon_lower_min", "epsilon_lower_max", "epsilon_estimate_median", "delta_lower_median",
                   "support_violations", "calls_max", "draws_per_dataset_max", "seconds"]


def judge(cfg: AuditConfig, results: pd.DataFrame, table: pd.DataFrame, exact: list[dict]) -> list[str]:
    """Failures of the run (empty list = pass): false violations of correct claims, calibration
    counts above the binomial bound, positive controls not flagged, task errors, exact-mode
    disagreements with the expectation."""
    problems: list[str] = []
    for _, r in results[results["status"] != "ok"].iterrows():
        problems.append(f"{r['audit']} (samples {r['samples']}, repeat {r['repeat']}): task error: {r['message']}")
    for a in cfg.audits:
        t = table[table["audit"] == a.id]
        if t.empty:
            continue
        if a.expect == "correct":
            for _, r in t[t["violations"] > 0].iterrows():
                problems.append(f"{a.id}: a correct claim was flagged ({r['violations']}/{r['repeats']} at "
                                f"{r['samples']} samples, epsilon_lower up to {r['epsilon_lower_max']:.3g})")
        elif a.expect == "calibration":
            for _, r in t.iterrows():
                lim = calibration_limit(int(r["repeats"]), a.alpha)
                if r["violations"] > lim:
                    problems.append(f"{a.id}: {r['violations']}/{r['repeats']} false violations at {r['samples']} "
                                    f"samples exceed the binomial bound {lim} (alpha {a.alpha})")
        else:
            top = t[t["samples"] == t["samples"].max()].iloc[0]
            if top["violations"] < top["repeats"]:
                problems.append(f"{a.id}: broken mechanism NOT flagged at its largest budget "
                                f"({top['violations']}/{top['repeats']} at {top['samples']} samples)")
        if "exact_violated" in results.columns:
            ex = results[(results["audit"] == a.id) & results["exact_violated"].notna()]
            if not ex.empty:
                flagged = bool(ex["exact_violated"].astype(bool).any())
                if a.expect in ("correct", "calibration") and flagged:
                    problems.append(f"{a.id}: exact mode says the claim is violated on the witness pair")
    for e in exact:
        if e.get("status") != "ok":
            problems.append(f"{e['audit']}: exact mode error: {e.get('message', '')}")
        elif e.get("exact_violated") and e.get("expect") in ("correct", "calibration"):
            problems.append(f"{e['audit']}: exact mode finds a violation on {e.get('exact_pair')} "
                            f"(epsilon {e.get('exact_max_epsilon'):.4g}, delta {e.get('exact_max_delta'):.3g})")
    return problems


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "inf" if math.isinf(x) else f"{x:.3g}"
    return str(x)


def evaluate_targets(targets: tuple[TargetSpec, ...], results: pd.DataFrame, table: pd.DataFrame,
                     wall_seconds: float, alpha_of: dict[str, float]) -> pd.DataFrame:
    """One row per target: met (yes/no) and the measured number."""
    rows = []
    ok = results[results["status"] == "ok"]
    for t in targets:
        met, measured = False, "no data"
        if t.check == "wall_time_at_most":
            met, measured = wall_seconds <= float(t.value), f"{wall_seconds:.1f} s"
        elif t.check == "false_violation_rate":
            # A sound alpha-level audit may flag a *tight* correct claim with probability up to
            # alpha per seed, so the per-control counts are judged against the binomial bound of
            # a sound test (false alarm 1e-6) and the pooled rate against ``max``.
            parts, met, tot_v, tot_n = [], True, 0, 0
            for aid in t.audits:
                g = ok[ok["audit"] == aid]
                if g.empty:
                    met = False
                    parts.append(f"{aid}: no data")
                    continue
                v, n = int(g["violated"].astype(bool).sum()), len(g)
                lim = calibration_limit(n, alpha_of.get(aid, 0.05))
                met &= v <= lim
                tot_v, tot_n = tot_v + v, tot_n + n
                parts.append(f"{aid} {v}/{n}")
            pooled = tot_v / tot_n if tot_n else math.nan
            within = met
            rates = [(int(ok[ok["audit"] == a]["violated"].astype(bool).sum()) / max(len(ok[ok["audit"] == a]), 1), a)
                     for a in t.audits]
            worst = max(rates) if rates else (math.nan, "")
            # verifier.md T1 asks for <= max on *every* control, not only pooled.
            met &= bool(tot_n) and pooled <= float(t.max) and worst[0] <= float(t.max)
            measured = (f"pooled {tot_v}/{tot_n} = {pooled:.3f}; highest single control {worst[0]:.3f} ({worst[1]}); "
                        f"each control within the sound-test binomial bound: {'yes' if within else 'no'} "
                        f"({', '.join(parts)})")
        else:
            g = ok[ok["audit"] == t.audit]
            if t.samples is not None:
                g = g[g["samples"] == t.samples]
            if not g.empty:
                lb = g["epsilon_lower"].astype(float)
                if t.check == "violated":
                    met = float(g["violated"].astype(bool).mean()) >= t.min_rate
                    draws = int(g["draws_per_dataset"].max()) if "draws_per_dataset" in g else 0
                    if t.max_draws_per_dataset is not None:
                        met &= draws <= t.max_draws_per_dataset
                    measured = (f"{int(g['violated'].astype(bool).sum())}/{len(g)} flagged, epsilon_lower "
                                f"{_fmt(float(lb.median()))}, <= {draws} draws/dataset")
                elif t.check == "epsilon_lower_at_least":
                    med = float(lb.median())
                    met = med >= float(t.value)
                    measured = f"epsilon_lower {med:.3f}" + (f" (median of {len(g)})" if len(g) > 1 else "")
                elif t.check == "support_violation":
                    sv = bool(g["support_violation"].astype(bool).all())
                    met = sv and float(lb.min()) >= float(t.value)
                    measured = f"support violation: {'yes' if sv else 'no'}, epsilon_lower {float(lb.min()):.3f}"
                elif t.check == "calls_at_most":
                    calls = int(g["calls"].max())
                    rate = float(g["violated"].astype(bool).mean())
                    met = rate >= t.min_rate and calls <= float(t.value)
                    measured = (f"{int(g['violated'].astype(bool).sum())}/{len(g)} searches flagged, <= {calls} calls, "
                                f"epsilon_lower {float(lb.median()):.3f}")
        rows.append({"target": t.id, "text": t.text, "met": "met" if met else "NOT MET", "measured": measured})
    return pd.DataFrame(rows, columns=["target", "text", "met", "measured"])


def plot_all(results: pd.DataFrame, table: pd.DataFrame, fig_dir: Path) -> list[Path]:
    """eps_lower_vs_samples.png and exact_vs_estimated.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig_dir.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    multi = [a for a, g in table.groupby("audit", sort=False) if g["samples"].nunique() >= 2]
    if multi:
        k = len(multi)
        cols = min(3, k)
        rows = math.ceil(k / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
        for ax, aid in zip(axes.flat, multi):
            g = table[table["audit"] == aid].sort_values("samples")
            x = g["samples"].to_numpy(float)
            y = g["epsilon_lower_median"].to_numpy(float)
            lo = y - g["epsilon_lower_min"].to_numpy(float)
            hi = g["epsilon_lower_max"].to_numpy(float) - y
            ax.errorbar(x, y, yerr=[lo, hi], fmt="o-", capsize=3, label="certified lower bound (median, range)")
            ax.axhline(float(g["epsilon_claimed"].iloc[0]), color="k", ls="--", lw=1, label="claimed epsilon")
            te = float(g["true_epsilon"].iloc[0])
            if math.isfinite(te):
                ax.axhline(te, color="tab:red", ls=":", lw=1.5, label="true epsilon")
            ax.set_xscale("log")
            ax.set_xlabel("samples per dataset (or total budget for searches)")
            ax.set_ylabel("epsilon")
            ax.set_title(f"{aid} ({g['expect'].iloc[0]})", fontsize=9)
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[k:]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=7, loc="lower right")
        fig.suptitle("Certified epsilon lower bound vs sample size, with the claimed and the true epsilon")
        fig.tight_layout()
        p = fig_dir / "eps_lower_vs_samples.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        out.append(p)
    if "exact_epsilon" in results.columns:
        r = results[(results["status"] == "ok") & results["exact_epsilon"].notna()].copy()
        r = r[np.isfinite(r["exact_epsilon"].astype(float))]
        if not r.empty:
            fig, ax = plt.subplots(figsize=(6, 5))
            ex = r["exact_epsilon"].astype(float)
            ax.scatter(ex, r["epsilon_lower"].astype(float), s=14, label="certified lower bound", alpha=0.7)
            est = r["epsilon_estimate"].astype(float)
            fin = np.isfinite(est)
            ax.scatter(ex[fin], est[fin], s=14, marker="x", label="plug-in estimate", alpha=0.7)
            m = float(max(ex.max(), 1e-3)) * 1.1
            ax.plot([0, m], [0, m], "k--", lw=1, label="y = exact")
            ax.set_xlabel("exact privacy loss of the witness pair (epsilon)")
            ax.set_ylabel("statistical audit (epsilon)")
            ax.set_title("Exact vs estimated privacy loss (same pair)")
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
            fig.tight_layout()
            p = fig_dir / "exact_vs_estimated.png"
            fig.savefig(p, dpi=110)
            plt.close(fig)
            out.append(p)
    return out
