"""The ``median_accuracy`` summary beside the paper's numbers, and its terminal text (private helper).

:func:`compare_with_reference` adds the published values and the tolerance verdict
(``|ours - paper| <= max(abs, se*SE + rel*|paper|)``, docs/table1.md) to the summary table;
:func:`report_text` renders the table as printed by ``dpharness run``: wide "mean ± SE" per epsilon
without a reference, one row per cell with ours, paper, difference, tolerance and verdict with one.
"""

from __future__ import annotations

import math

import pandas as pd

from dpharness.bench.run.tasks import format_value
from dpharness.bench.experiments._median_spec import METRIC_TEXT, RefRow, Spec

__all__ = ["facets", "hidden_columns", "tolerance", "compare_with_reference", "report_text"]


def facets(spec: Spec) -> list[str]:
    """Cell columns other than mechanism/epsilon that take more than one value (table columns)."""
    out = []
    if len({d.label for d in spec.data}) > 1:
        out.append("data")
    if len({d.size() for d in spec.data}) > 1:
        out.append("n")
    if len(spec.q) > 1:
        out.append("q")
    return out


def tolerance(row: RefRow, se: float, paper: float) -> float:
    """The allowed |ours - paper|: max(abs, se * SE + rel * |paper|), SE in table units."""
    return max(row.abs_tol, row.se_mult * se + row.rel * abs(paper))


def compare_with_reference(spec: Spec, table: pd.DataFrame) -> bool:
    """Add ``paper_mean``/``paper_std`` (table units), ``within_tolerance`` and the private ``_tol``
    columns to ``table`` in place when the spec has a reference; True when every cell with a
    published value is within tolerance (or there is no reference)."""
    sfx = spec.suffix
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
            tol = tolerance(rr, se, paper)
            inside = bool(math.isfinite(r["mean" + sfx]) and abs(r["mean" + sfx] - paper) <= tol)
            wt.append(inside)
            tols.append(tol)
            ok = ok and inside
        table["paper_mean" + sfx] = pm
        table["paper_std" + sfx] = ps
        table["within_tolerance"] = pd.array(wt, dtype="boolean")
        table["_tol"] = tols
    return ok


def hidden_columns(spec: Spec) -> set[str]:
    """Facet columns that take one value only: left out of the public table."""
    return {"data", "n", "q"} - set(facets(spec))



def _f(x: float, nd: int = 2) -> str:
    """Two decimals, or two significant digits for small non-zero values (0.0042, not 0.00)."""
    if x is None or not math.isfinite(x):
        return "—"
    if x != 0 and abs(x) < 0.5 * 10 ** -(nd - 1):
        return f"{x:.2g}"
    return f"{x:.{nd}f}"


def _heading(spec: Spec) -> str:
    what = METRIC_TEXT[spec.metric]
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


def report_text(spec: Spec, table: pd.DataFrame) -> str:
    """The summary as printed: heading, table, and (with a reference) tolerance rule and verdicts."""
    from dpharness.bench.report.tables import format_text_table

    sfx = spec.suffix
    lines = [_heading(spec), ""]
    fac = facets(spec)
    incomplete = table[table["_k"] < spec.datasets]
    if spec.reference is None:
        # Wide: one row per (facets, mechanism), one column per epsilon: "mean ± SE".
        rows = []
        for key, g in table.groupby(fac + ["mechanism"], sort=False):
            key = key if isinstance(key, tuple) else (key,)
            rec = dict(zip(fac + ["mechanism"], key))
            for _, r in g.iterrows():
                rec[f"ε={format_value(r['epsilon'])}"] = f"{_f(r['mean' + sfx])} ± {_f(r['se' + sfx])}"
            rows.append(rec)
        lines.append(f"mean{sfx.replace('_', ' ')} ± SE (SE = std across datasets / sqrt(datasets))")
        lines.append(format_text_table(pd.DataFrame.from_records(rows)))
    else:
        ref = spec.reference
        rows = []
        for _, r in table.iterrows():
            rec = {c: r[c] for c in fac}
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
