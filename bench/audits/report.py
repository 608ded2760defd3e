"""Audit run outputs: the summary table, the pass/fail judgement, the targets, report.md.

Every function is a plain function of ``results.csv`` (and the parsed config), so a run folder's
tables can be rebuilt from it. Tables are formatted by the one table writer, :mod:`bench.report.tables`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
from scipy import stats

from dpharness.bench.report.tables import format_text_table, to_markdown

from dpharness.bench.audits.spec import AuditSet, TargetSpec
from dpharness.bench.audits.task import ALLPAIRS_COLUMNS

__all__ = ["summarize", "judge", "evaluate_targets", "exact_table", "compact", "console_text", "report_markdown",
           "calibration_limit", "SUMMARY_COLUMNS", "CHECK_FALSE_ALARM"]

#: False-alarm rate of the benchmark's own checks (calibration counts).
CHECK_FALSE_ALARM = 1e-6

#: Columns of :func:`summarize` (also when no task succeeded: the table is then empty, not columnless).
SUMMARY_COLUMNS = ["audit", "mechanism", "expect", "samples", "repeats", "violations", "epsilon_claimed",
                   "delta_claimed", "true_epsilon", "exact_epsilon", "exact_delta", "epsilon_lower_median",
                   "epsilon_lower_min", "epsilon_lower_max", "epsilon_estimate_median", "delta_lower_median",
                   "support_violations", "calls_max", "draws_per_dataset_max", "seconds", "peer_lower",
                   "vs_peer"]


def calibration_limit(repeat: int, alpha: float) -> int:
    """Largest false-violation count over ``repeat`` seeds still consistent with a sound verifier:
    the (1 - 1e-6) quantile of Bin(repeat, alpha) (a sound audit violates a correct claim with
    probability <= alpha per seed, so exceeding it has probability <= 1e-6)."""
    return int(stats.binom.isf(CHECK_FALSE_ALARM, repeat, alpha))


def _ok(results: pd.DataFrame) -> pd.DataFrame:
    return results[results["status"] == "ok"] if "status" in results else results


def _truthy(v: Any) -> bool:
    """A flag from results (bool, or text read back from CSV); missing (NaN, None) is False."""
    return v is True or (not isinstance(v, bool) and str(v).strip().lower() in ("true", "1", "1.0", "yes"))


def _flag(col: pd.Series) -> pd.Series:
    """A boolean column of results as bool (missing values of failed tasks are False)."""
    return col if col.dtype == bool else col.map(_truthy)


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (audit, samples): repeats, violations, epsilon_lower stats, exact, truth."""
    ok = _ok(results)
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
            "violations": int(_flag(g["violated"]).sum()),
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
            "support_violations": int(_flag(g["support_violation"]).sum()),
            "calls_max": int(g["calls"].max()),
            "draws_per_dataset_max": int(g["draws_per_dataset"].max()) if "draws_per_dataset" in g
            and g["draws_per_dataset"].notna().any() else 0,
            "seconds": float(g["seconds"].sum()) if "seconds" in g else math.nan,
            # a peer suite's published lower bound (e.g. DP-Sniper's) beside ours, and our share of it
            "peer_lower": float(first["peer_lower"]) if "peer_lower" in g and pd.notna(first.get("peer_lower"))
            else math.nan,
        })
        r = rows[-1]
        r["vs_peer"] = (r["epsilon_lower_median"] / r["peer_lower"]
                        if r["peer_lower"] == r["peer_lower"] and r["peer_lower"] > 0 else math.nan)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def exact_table(results: pd.DataFrame) -> pd.DataFrame:
    """exact.csv: the exact loss over every generated pair of each search audit with exact mode."""
    ok = _ok(results)
    if "allpairs_exact_pairs" not in ok.columns:
        return pd.DataFrame()
    r = ok[ok["allpairs_exact_pairs"].notna()]
    rows = []
    for _, x in r.iterrows():
        row = {"audit": x["audit"], "mechanism": x.get("mechanism", ""), "status": "ok",
               "exact_pairs": int(x["allpairs_exact_pairs"])}
        for c in ALLPAIRS_COLUMNS[1:]:
            if c in r.columns and pd.notna(x.get(c)) and x.get(c) != "":
                row[c.replace("allpairs_exact_", "exact_max_" if c.endswith(("epsilon", "delta")) else "exact_")] = x[c]
        row.update({"epsilon_claimed": x["epsilon_claimed"], "delta_claimed": x["delta_claimed"], "expect": x["expect"]})
        rows.append(row)
    return pd.DataFrame(rows)


def judge(aset: AuditSet, results: pd.DataFrame, table: pd.DataFrame) -> list[str]:
    """Failures of the run (empty list = pass): task errors, false violations of correct claims,
    calibration counts above the binomial bound, positive controls not flagged at their largest
    budget, exact-mode violations of correct claims."""
    problems: list[str] = []
    if "status" in results:
        for _, r in results[results["status"] != "ok"].iterrows():
            problems.append(f"{r.get('audit', r.get('task'))} (samples {r.get('samples')}, repeat {r.get('repeat')}): "
                            f"task error: {r['message']}")
    ok = _ok(results)
    # audits whose full budget was cut by --quick caps (a `registry: all` entry expands into
    # `<id>.<name>` audits, which share their entry's caps)
    capped = {a.id for aid, gone in aset.dropped for a in aset.audits
              if gone and (a.id == aid or a.id.startswith(aid + ".")) and max(gone) > max(a.samples)}
    for a in aset.audits:
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
        elif a.id not in capped:  # a positive control is judged at its full budget only, not under --quick caps
            top = t[t["samples"] == t["samples"].max()].iloc[0]
            if top["violations"] < top["repeats"]:
                problems.append(f"{a.id}: broken mechanism NOT flagged at its largest budget "
                                f"({top['violations']}/{top['repeats']} at {top['samples']} samples)")
        if a.expect in ("correct", "calibration") and "exact_violated" in ok.columns:
            ex = ok[(ok["audit"] == a.id) & ok["exact_violated"].notna()]
            if not ex.empty and bool(_flag(ex["exact_violated"]).any()):
                problems.append(f"{a.id}: exact mode says the claim is violated on the witness pair")
    if "pairs_crashed" in ok.columns:
        # a search that lost most of its pairs to the mechanism's own exceptions did not audit what
        # it was asked to: "behaved as expected" would hide it
        for _, r in ok[ok["pairs_crashed"].notna()].iterrows():
            crashed, tried = int(r["pairs_crashed"]), int(r.get("pairs_generated", 0) or 0)
            if tried and crashed * 2 > tried:
                problems.append(f"{r['audit']} (samples {r['samples']}): the mechanism raised on {crashed} of the "
                                f"{tried} generated pairs, which were not audited (first: {r['pairs_crashed_first']})")
    if "all_nan" in ok.columns:
        for _, r in ok[ok["all_nan"].fillna(False).astype(bool)].iterrows():
            problems.append(f"{r['audit']} (samples {r['samples']}): the mechanism released only NaN on both "
                            f"datasets of the certified pair ({r.get('pair', '')}): nothing was audited")
    ex = exact_table(results)
    for _, e in ex.iterrows():
        if _truthy(e.get("exact_violated", False)) and e["expect"] in ("correct", "calibration"):
            problems.append(f"{e['audit']}: exact mode finds a violation on {e.get('exact_pair')} "
                            f"(epsilon {float(e.get('exact_max_epsilon')):.4g}, delta {float(e.get('exact_max_delta')):.3g})")
    return problems


def unjudged(aset: AuditSet, table: pd.DataFrame) -> list[str]:
    """Positive controls (``expect: broken``) whose full budget was cut by ``--quick`` caps and that
    went unflagged at the budget they ran: not judged (a capped run cannot say they are missed),
    but never to be hidden behind "every audit behaved as expected"."""
    capped = {a.id for aid, gone in aset.dropped for a in aset.audits
              if gone and (a.id == aid or a.id.startswith(aid + ".")) and max(gone) > max(a.samples)}
    out = []
    for a in aset.audits:
        if a.expect != "broken" or a.id not in capped:
            continue
        t = table[table["audit"] == a.id]
        if t.empty:
            continue
        top = t[t["samples"] == t["samples"].max()].iloc[0]
        if top["violations"] < top["repeats"]:
            out.append(f"{a.id} ({top['violations']}/{top['repeats']} at {top['samples']} samples)")
    return out


def status_line(problems: list[str], not_judged: list[str]) -> str:
    """The closing line: never "every audit behaved as expected" while capped controls went unflagged."""
    if problems:
        return ""
    if not_judged:
        return (f"every judged audit behaved as expected; NOT JUDGED: {len(not_judged)} broken "
                f"entr{'y' if len(not_judged) == 1 else 'ies'} unflagged under the --quick caps (judged only at "
                f"their full budget): {', '.join(not_judged)}")
    return "every audit behaved as expected"


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "inf" if math.isinf(x) else f"{x:.3g}"
    return str(x)


def _target_row(t: TargetSpec, ok: pd.DataFrame, wall_seconds: float | None, alpha_of: dict[str, float]
                ) -> tuple[bool, str, str]:
    """(met, measured, detail) of one target."""
    if t.check == "wall_time_at_most":
        if wall_seconds is None:
            return False, "no data", "wall time of the run is unknown (figures/tables rebuilt later)"
        return wall_seconds <= float(t.value), f"{wall_seconds:.1f} s", f"limit {t.value:g} s"
    if t.check == "false_violation_rate":
        # A sound alpha-level audit may flag a *tight* correct claim with probability up to alpha
        # per seed, so each control's count is judged against the binomial bound of a sound test
        # (false alarm 1e-6), and the pooled and the worst single rate against ``max``.
        parts, within, tot_v, tot_n, worst = [], True, 0, 0, (-1.0, "")
        for aid in t.audits:
            g = ok[ok["audit"] == aid]
            if g.empty:
                within = False
                parts.append(f"{aid}: no data")
                continue
            v, n = int(_flag(g["violated"]).sum()), len(g)
            within &= v <= calibration_limit(n, alpha_of.get(aid, 0.05))
            tot_v, tot_n = tot_v + v, tot_n + n
            worst = max(worst, (v / n, aid))
            parts.append(f"{aid} {v}/{n}")
        if not tot_n:
            return False, "no data", ""
        pooled = tot_v / tot_n
        met = within and pooled <= float(t.max) and worst[0] <= float(t.max)
        return (met, f"pooled {tot_v}/{tot_n} = {pooled:.3f}; worst {worst[0]:.3f} ({worst[1]}); "
                f"binomial bound: {'ok' if within else 'EXCEEDED'}", ", ".join(parts))
    g = ok[ok["audit"] == t.audit]
    if t.samples is not None:
        g = g[g["samples"] == t.samples]
    if g.empty:
        return False, "no data", ""
    lb = g["epsilon_lower"].astype(float)
    flagged = _flag(g["violated"])
    if t.check == "violated":
        met = float(flagged.mean()) >= t.min_rate
        draws = int(g["draws_per_dataset"].max()) if "draws_per_dataset" in g else 0
        if t.max_draws_per_dataset is not None:
            met &= draws <= t.max_draws_per_dataset
        return met, (f"{int(flagged.sum())}/{len(g)} flagged, epsilon_lower {_fmt(float(lb.median()))}, "
                     f"<= {draws} draws/dataset"), ""
    if t.check == "epsilon_lower_at_least":
        med = float(lb.median())
        return med >= float(t.value), f"epsilon_lower {med:.3f}" + (f" (median of {len(g)})" if len(g) > 1 else ""), ""
    if t.check == "support_violation":
        sv = bool(_flag(g["support_violation"]).all())
        return (sv and float(lb.min()) >= float(t.value),
                f"support violation: {'yes' if sv else 'no'}, epsilon_lower {float(lb.min()):.3f}", "")
    calls = int(g["calls"].max())  # calls_at_most
    rate = float(flagged.mean())
    return (rate >= t.min_rate and calls <= float(t.value),
            f"{int(flagged.sum())}/{len(g)} searches flagged, <= {calls} calls, epsilon_lower {float(lb.median()):.3f}", "")


def evaluate_targets(aset: AuditSet, results: pd.DataFrame, wall_seconds: float | None) -> pd.DataFrame:
    """One row per target: ``met`` is ``met``, ``NOT MET`` or ``not run`` (its sample size was
    dropped by the quick caps), with the measured numbers (``measured`` short, ``detail`` full)."""
    ok = _ok(results)
    alpha_of = {a.id: a.alpha for a in aset.audits}
    dropped = dict(aset.dropped)
    rows = []
    for t in aset.targets:
        if t.audit is not None and t.samples is not None and t.samples in dropped.get(t.audit, ()):
            rows.append({"target": t.id, "text": t.text, "met": "not run",
                         "measured": f"samples {t.samples} dropped by max_samples {aset.max_samples}", "detail": ""})
            continue
        met, measured, detail = _target_row(t, ok, wall_seconds, alpha_of)
        rows.append({"target": t.id, "text": t.text, "met": "met" if met else "NOT MET", "measured": measured,
                     "detail": detail})
    return pd.DataFrame(rows, columns=["target", "text", "met", "measured", "detail"])


#: Compact columns of the console / table.md view: (summary column, shown name).
_COMPACT = [("audit", "audit"), ("expect", "expect"), ("samples", "samples"), ("flagged", "flagged"),
            ("claim", "claim"), ("true_epsilon", "true"), ("exact_epsilon", "exact"),
            ("epsilon_lower_median", "eps_lb"), ("epsilon_estimate_median", "eps_est"),
            ("delta_lower_median", "delta_lb"), ("support_violations", "support"), ("peer_lower", "peer_lb"),
            ("vs_peer", "vs_peer")]


def _claim(eps: float, delta: float) -> str:
    return f"{eps:g}" + (f", {delta:g}" if delta else "")


def compact(table: pd.DataFrame) -> pd.DataFrame:
    """The summary table for reading (about 120 columns): ``flagged`` = violations / repeats,
    ``claim`` = epsilon (, delta), ``true`` / ``exact`` epsilon, the certified lower bound
    ``eps_lb`` and the plug-in estimate ``eps_est`` (medians over repeats), ``delta_lb`` and
    ``support`` (support violations); columns that are empty or all zero in this run are left out.
    The full table is table.csv."""
    t = table.copy()
    t["flagged"] = [f"{v}/{r}" for v, r in zip(t["violations"], t["repeats"])]
    t["claim"] = [_claim(float(e), float(d)) for e, d in zip(t["epsilon_claimed"], t["delta_claimed"])]
    keep = []
    for col, name in _COMPACT:
        s = t[col]
        nonzero = col in ("delta_lower_median", "support_violations") and bool((s.astype(float).fillna(0) != 0).any())
        if col == "delta_lower_median" and not (nonzero or (t["delta_claimed"].astype(float) > 0).any()):
            continue
        if col == "support_violations" and not nonzero:
            continue
        elif col in ("true_epsilon", "exact_epsilon", "peer_lower", "vs_peer") and not s.notna().any():
            continue
        keep.append((col, name))
    out = t[[c for c, _ in keep]].copy()
    out.columns = [n for _, n in keep]
    return out


def console_text(name: str, table: pd.DataFrame, targets: pd.DataFrame, problems: list[str],
                 quick_note: str = "", not_judged: list[str] | None = None) -> str:
    """What ``dpharness audit`` prints: the compact verdict table, the targets, the status."""
    lines = [format_text_table(compact(table), nd=3) if len(table) else "(no audit finished)"]
    if len(targets):
        lines += ["", "Targets:", format_text_table(targets[["target", "met", "measured"]])]
    if quick_note:
        lines += ["", quick_note]
    lines += [""] + ([f"FAIL: {p}" for p in problems] if problems else [status_line(problems, not_judged or [])])
    return "\n".join(lines)


def report_markdown(name: str, description: str, seed: int, aset: AuditSet, results: pd.DataFrame,
                    table: pd.DataFrame, targets: pd.DataFrame, problems: list[str], figures: list[str],
                    wall_seconds: float | None) -> str:
    """report.md: targets, verdicts, exact mode over generated pairs, status, witnesses, figures."""
    ok = _ok(results)
    caps = [f"{k} {v}" for k, v in (("max_samples", aset.max_samples), ("max_repeat", aset.max_repeat)) if v is not None]
    wall = f"; wall time {wall_seconds:.1f} s" if wall_seconds is not None else ""
    lines = [f"# Audit report: {name}", "", description.strip(), "",
             f"Root seed {seed}; {len(results)} tasks{wall}" + (f"; caps: {', '.join(caps)}" if caps else "") + ".", ""]
    if len(targets):
        lines += ["## Targets", "", to_markdown(targets), ""]
    lines += ["## Verdicts", "", "`flagged` = repeats with a certified violation / repeats; epsilon columns are "
              "medians over repeats.", "", to_markdown(compact(table), nd=3), ""]
    ex = exact_table(results)
    if len(ex):
        cols = [c for c in ("audit", "mechanism", "exact_pairs", "epsilon_claimed", "delta_claimed", "exact_max_epsilon",
                            "exact_max_delta", "exact_violated", "exact_pair", "exact_message") if c in ex.columns]
        lines += ["## Exact mode over every generated pair", "", to_markdown(ex[cols], nd=4), ""]
    lines += ["## Status", ""]
    lines += ([f"- FAIL: {p}" for p in problems] if problems else [f"- {status_line(problems, unjudged(aset, table))}"])
    lines += ["", "## Witnesses (largest budget, first repeat)", ""]
    for aid, g in ok.groupby("audit", sort=False):
        r = g[g["samples"] == g["samples"].max()].iloc[0]
        lines += [f"- **{aid}** ({r.get('mechanism', '')}, {r['expect']}): {r['summary']}", ""]
    if figures:
        lines += ["## Figures", ""] + [f"![{Path(p).stem}]({p})" for p in figures] + [""]
    return "\n".join(lines)
