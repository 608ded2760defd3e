"""What a sweep reports: one row per public name of the library (sweep.csv / sweep.json /
report.md) -- audited (both passes' verdicts, bounds, the witness), no verdict (why), skipped by the
catalogue (why) or not in the catalogue -- and the figure of claimed ε against certified bound."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpharness.bench.sweep.plan import SweepSpec

__all__ = ["COLUMNS", "table", "missing_api", "problems", "markdown", "write_json", "figure"]

#: sweep.csv, in order.
COLUMNS = ("function", "id", "status", "epsilon", "delta", "relation", "relation_used", "real", "real_bound",
           "floats", "floats_bound", "witness_pass", "pair", "d1", "d2", "event", "calls", "seconds", "reason",
           "states")


def missing_api(spec: SweepSpec) -> tuple[list[str], str]:
    """Public ε-claiming names of the installed release that the catalogue does not cover, and a
    note when the release cannot be enumerated (library missing, or no enumerator)."""
    from dpharness import adapters

    lib = next((lib for lib in adapters.LIBRARIES if lib.root == spec.catalogue.library), None)
    if lib is None:
        return [], f"no adapter library named {spec.catalogue.library!r}: the release was not enumerated"
    try:
        names = list(lib.api())
    except adapters.MissingLibrary as exc:
        return [], f"the release was not enumerated: {str(exc).splitlines()[0]}"
    if not names:
        return [], f"the {lib.dist} adapter does not enumerate the release's API"
    covered = spec.catalogue.covers()
    return sorted(n for n in names if n not in covered and not spec.only), ""


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def _pass_result(r: pd.Series | None) -> tuple[str, float]:
    if r is None:
        return "not run", math.nan
    if str(r.get("status", "ok")) == "error":
        return "error", math.nan
    if str(r.get("outcome", "") or "") == "no verdict":
        return "no verdict", math.nan
    violated = bool(r.get("violated")) if not pd.isna(r.get("violated")) else False
    violated = violated or (bool(r.get("support_violation")) if not pd.isna(r.get("support_violation")) else False)
    return ("VIOLATED" if violated else "ok"), _num(r.get("epsilon_lower"))


def _text(v: Any) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def table(spec: SweepSpec, results: pd.DataFrame) -> pd.DataFrame:
    """One row per entry the sweep selects, then one per public name missing from the catalogue."""
    by_audit: dict[str, pd.Series] = {}
    if len(results) and "audit" in results:
        for _, r in results.iterrows():
            by_audit[str(r["audit"])] = r
    rows = []
    for e in spec.selected():
        row: dict[str, Any] = {"function": e.api, "id": e.id, "relation": e.relation, "states": e.states}
        if e.skip:
            rows.append({**row, "status": "skipped", "reason": e.skip})
            continue
        passes = {p: by_audit.get(f"{e.id}.{p}") for p in spec.passes}
        verdicts = {p: _pass_result(r) for p, r in passes.items()}
        for p, (v, b) in verdicts.items():
            row[p], row[f"{p}_bound"] = v, b
        got = [r for r in passes.values() if r is not None]
        first = got[0] if got else None
        if first is not None:
            row.update(epsilon=_num(first.get("epsilon_claimed")), delta=_num(first.get("delta_claimed")),
                       relation_used=_text(first.get("relation_used")))
        flagged = [p for p, (v, _) in verdicts.items() if v == "VIOLATED"]
        reasons = sorted({_text(r.get("reason")) or _text(r.get("message")) for r in got
                          if _pass_result(r)[0] in ("error", "no verdict")} - {""})
        if flagged:
            row["status"] = "flagged" if "real" in flagged or len(spec.passes) == 1 else "flagged (floats only)"
            w = passes[flagged[0]]
            row.update(witness_pass=flagged[0], pair=_text(w.get("pair")), d1=_text(w.get("d1")),
                       d2=_text(w.get("d2")), event=_text(w.get("event")))
        elif any(v == "ok" for v, _ in verdicts.values()):
            row["status"] = "not flagged"
        elif not got:
            row["status"] = "not run"
        else:
            row["status"] = "no verdict"
        crashed = [f"{p}: raised on {int(_num(r.get('pairs_crashed')))} of {int(_num(r.get('pairs_generated')))} pairs "
                   f"({_text(r.get('pairs_crashed_first'))[:120]})" for p, r in passes.items()
                   if r is not None and not math.isnan(_num(r.get("pairs_crashed")))]
        row["reason"] = "; ".join(reasons + crashed)
        row["calls"] = int(sum(_num(r.get("calls")) for r in got if not math.isnan(_num(r.get("calls"))))) if got else 0
        row["seconds"] = float(sum(_num(r.get("seconds")) for r in got if not math.isnan(_num(r.get("seconds")))))
        if row.get("relation_used") and row["relation_used"] != e.relation:
            row["reason"] = (row["reason"] + "; " if row["reason"] else "") + (
                f"the catalogue states {e.relation} but the adapter audits {row['relation_used']}")
        rows.append(row)
    missing, _ = missing_api(spec)
    rows += [{"function": n, "id": "", "status": "not in catalogue",
              "reason": "a public ε-claiming name of the installed release with no catalogue entry"} for n in missing]
    t = pd.DataFrame(rows, columns=list(COLUMNS))
    return t


def problems(t: pd.DataFrame) -> list[str]:
    """What makes the sweep's exit status 1: a flagged function, a task that failed, a relation
    the catalogue states differently from the adapter."""
    def who(r: Any) -> str:
        return f"{r.function} [{r.id}]" if r.id and str(r.id) != str(r.function).replace(":", ".") else str(r.function)

    out = [f"{who(r)}: FLAGGED ({r.witness_pass} pass, ε ≥ {r[r.witness_pass + '_bound']:.3g} against a claim of "
           f"{r.epsilon:g}{'' if not r.delta else f', δ {r.delta:.3g}'})" for _, r in t.iterrows()
           if str(r.status).startswith("flagged")]
    out += [f"{who(r)}: a task failed ({r.reason})" for _, r in t.iterrows()
            if "error" in (str(r.get("real")), str(r.get("floats")))]
    out += [f"{who(r)}: {r.reason}" for _, r in t.iterrows() if "but the adapter audits" in str(r.reason)]
    return out


def counts(t: pd.DataFrame) -> dict[str, int]:
    """Rows by status, and how many public names got a verdict (flagged or not)."""
    c = {str(k): int(v) for k, v in t["status"].value_counts().items()}
    judged = t["status"].isin(["flagged", "flagged (floats only)", "not flagged"])
    c["verdict"] = int(t.loc[judged, "function"].nunique())  # public names with a verdict (from any entry)
    c["entries"] = int((t["status"] != "not in catalogue").sum())
    c["names"] = int(t["function"].nunique())
    return c


def _fmt(v: Any, nd: int = 3) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.{nd}g}"
    return _text(v).replace("|", "\\|").replace("\n", " ")


def markdown(spec: SweepSpec, t: pd.DataFrame, *, note: str = "", figures: list[str] | None = None,
             wall: float | None = None) -> str:
    """report.md: the counts, every problem, then the table of every public name."""
    c = counts(t)
    lines = [f"# Sweep of {spec.catalogue.library} {spec.release}".rstrip(), "",
             f"Catalogue `{Path(spec.catalogue.path).name}` (written for {spec.catalogue.written_for or '?'}); "
             f"{c['names']} public names, {c['verdict']} of them with a verdict; {c['entries']} entries: "
             + ", ".join(f"{k}: {v}" for k, v in sorted(c.items()) if k not in ("verdict", "names", "entries"))
             + f". Budget {spec.budget} calls per search unless the entry says otherwise; passes: "
             + ", ".join(spec.passes) + f"; family-wise α {spec.audits.family_alpha or spec.audits.alpha:g} over "
             f"{len(spec.audits.audits)} audits" + (f"; wall {wall:.0f} s" if wall else "") + ".", ""]
    if note:
        lines += [note, ""]
    probs = problems(t)
    lines += ["## Findings", ""] + ([f"- {p}" for p in probs] or ["- none"]) + [""]
    lines += ["## Every public name", "",
              "| function | status | ε | δ | relation | real | bound | floats | bound | witness (pair; event) | calls "
              "| s | reason |", "|" + "---|" * 13]
    for _, r in t.iterrows():
        wit = "; ".join(x for x in (_fmt(r.pair), _fmt(r.event)[:120]) if x)
        lines.append("| " + " | ".join([f"`{r.function}`", _fmt(r.status), _fmt(r.epsilon), _fmt(r.delta),
                                        _fmt(r.relation), _fmt(r.real), _fmt(r.real_bound), _fmt(r.floats),
                                        _fmt(r.floats_bound), wit, _fmt(r.calls), _fmt(r.seconds, 2),
                                        _fmt(r.reason)[:200]]) + " |")
    lines += ["", "## Where each claim is stated", ""]
    lines += [f"- `{r.function}` ({r.relation}): {r.states}" for _, r in t.iterrows() if _text(r.states)]
    for f in figures or []:
        lines += ["", f"![claimed vs certified]({f})"]
    return "\n".join(lines) + "\n"


def write_json(spec: SweepSpec, t: pd.DataFrame, path: Path) -> None:
    """sweep.json: the counts and every row (NaN as null)."""
    from dpharness.bench.run.folders import atomic_write_text

    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else (v.item() if isinstance(v, np.generic) else v))
             for k, v in r.items()} for r in t.to_dict(orient="records")]
    doc = {"schema": "dpharness.sweep/1", "library": spec.catalogue.library, "release": spec.release,
           "catalogue": Path(spec.catalogue.path).name, "budget": spec.budget, "passes": list(spec.passes),
           "counts": counts(t), "problems": problems(t), "rows": rows}
    atomic_write_text(Path(path), json.dumps(doc, indent=1, allow_nan=False) + "\n")


def figure(t: pd.DataFrame, path: Path) -> Path | None:
    """Claimed ε (x) against the certified lower bound of each pass (y); a point above the diagonal
    is a violation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = []
    for pass_, marker in (("real", "o"), ("floats", "x")):
        if f"{pass_}_bound" not in t:
            continue
        sub = t[pd.to_numeric(t[f"{pass_}_bound"], errors="coerce").notna() & pd.to_numeric(t["epsilon"], errors="coerce").notna()]
        if len(sub):
            pts.append((pass_, marker, sub))
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(6, 5))
    hi = 0.0
    for pass_, marker, sub in pts:
        x, y = sub["epsilon"].astype(float), np.minimum(sub[f"{pass_}_bound"].astype(float), 50.0)
        ax.scatter(x, y, marker=marker, label=f"{pass_} pass", alpha=0.8)
        hi = max(hi, float(x.max()), float(y.max()))
        for _, r in sub[sub[pass_] == "VIOLATED"].iterrows():
            ax.annotate(str(r.function).split(":")[-1], (float(r.epsilon), min(float(r[f"{pass_}_bound"]), 50.0)),
                        fontsize=7)
    ax.plot([0, hi * 1.05 or 1], [0, hi * 1.05 or 1], "k--", lw=0.8, label="claim")
    ax.set_xlabel("claimed ε")
    ax.set_ylabel("certified lower bound on ε")
    ax.set_title("claimed vs certified (above the line: violated)")
    ax.legend(loc="upper left")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
