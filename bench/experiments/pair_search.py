"""Experiment kind ``pair_search``: the peers' suites searched with their own pairs and with none.

For every entry of DP-Sniper's and StatDP's suites (``verifiers.controls.suites``), ``verifiers.search``
runs twice at the same budget (total mechanism calls) and on the same seed: once over the suite's own
input pairs (mode ``given``) and once with no pair given (mode ``none``: the pair generator of the
entry's declared neighbour relation). The two bounds then differ only by the pairs searched, so
``none/given`` says how much of the suite's hand-picked pairs the generator recovers. Each of the
``repeats`` seeds (the config's seed + i) runs both modes.

A survey, not a pass/fail audit: the run is ``ok`` when every search ran. A correct entry flagged in
either mode is a false alarm; the summary lists them first. Outputs: ``pair_search.md`` (the table,
one line per entry, medians over the repeats, and a summary per suite) and ``pair_search.csv`` (one
row per search); ``table.csv`` holds the per-entry numbers of the markdown table.

Config keys: ``suites`` (default ``[dpsniper, statdp]``), ``entries`` (qualified names such as
``dpsniper/SparseVectorTechnique3``; default every entry of the suites), ``broken_only`` (default
false), ``budget`` (calls per search, default 10^6), ``alpha`` (family-wise error of each search,
default 0.05), ``repeats`` (seeds per entry and mode, default 1).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpharness import verifiers
from dpharness.bench.config import Ctx
from dpharness.bench.run.folders import atomic_write_text
from dpharness.bench.run.tasks import Summary, Task, make_key
from dpharness.verifiers.controls import suites as peer_suites  # the package registers every suite's entries

__all__ = ["PairSearchSpec", "parse", "tasks", "run_task", "summarize", "plot", "outputs", "describe_results",
           "entry_table", "table", "suite_summary", "MODES", "SUITES"]

CELL_COLUMNS = ["entry", "mode", "repeat"]
_KEYS = ("suites", "entries", "broken_only", "budget", "alpha", "repeats")
#: The suites this kind surveys (the ones whose papers give input pairs), in their default order.
SUITES = ("dpsniper", "statdp")
#: ``given``: the suite's own pairs; ``none``: no pair given (the generator of the declared relation).
MODES = ("given", "none")
DEFAULT_BUDGET = 1_000_000
DEFAULT_ALPHA = 0.05
#: A broken entry whose none/given ratio is below this is listed in the summary.
LOW_RATIO = 0.8
_EVENT_CHARS = 300


@dataclass(frozen=True)
class PairSearchSpec:
    """The entries surveyed (qualified names, table order), calls per search, level, seeds."""

    entries: tuple[str, ...]
    budget: int
    alpha: float
    repeats: int
    seed: int


def parse(raw: dict, ctx: Ctx) -> PairSearchSpec:
    ctx.reject_unknown(raw, _KEYS)
    suites = [str(s) for s in ctx.get(raw, "suites", list, list(SUITES)) or []]
    bad = [s for s in suites if s not in SUITES]
    if bad:
        ctx.report("suites", f"unknown suite(s) {', '.join(bad)}; accepted: {', '.join(SUITES)}")
    suites = list(dict.fromkeys(s for s in suites if s in SUITES))
    broken_only = bool(ctx.get(raw, "broken_only", bool, False))
    known = [e for s in suites for e in peer_suites.entries(s)]
    names = [e.qualified for e in known if e.broken or not broken_only]
    wanted = ctx.get(raw, "entries", list, None)
    if wanted is not None:
        wanted = [str(n) for n in wanted]
        accepted = [e.qualified for e in known]
        unknown = [n for n in wanted if n not in accepted]
        if unknown:
            ctx.report("entries", f"unknown entr{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} (of "
                                  f"suites {', '.join(suites) or '(none)'}); accepted: {', '.join(accepted)}")
        names = [n for n in names if n in set(wanted)]
    if not names and not ctx.failed("suites", "entries"):
        ctx.report("entries" if wanted is not None else "suites",
                   "selects no entry" + (" (broken_only: true keeps only broken ones)" if broken_only else ""))
    budget = int(ctx.number(raw, "budget", DEFAULT_BUDGET, lo=8, integer=True))
    alpha = float(ctx.number(raw, "alpha", DEFAULT_ALPHA, lo=0, hi=1, lo_open=True, hi_open=True))
    repeats = int(ctx.number(raw, "repeats", 1, lo=1, integer=True))
    return PairSearchSpec(tuple(names), budget, alpha, repeats, int(ctx.seed or 0))


def tasks(spec: PairSearchSpec) -> list[Task]:
    return [Task(make_key(entry=name, mode=mode, repeat=i), {"entry": name, "mode": mode, "repeat": i})
            for name in spec.entries for i in range(spec.repeats) for mode in MODES]


def run_task(spec: PairSearchSpec, task: Task, rng: np.random.Generator) -> list[dict]:
    """One search. The task's generator is not used: both modes of a repeat share the seed
    ``spec.seed + repeat``, so they differ only by the pairs searched."""
    name, mode, i = task.params["entry"], task.params["mode"], int(task.params["repeat"])
    entry = peer_suites.get(name)
    seed = spec.seed + i
    generator: Any = list(entry.pairs) if mode == "given" else "auto"
    t0 = time.perf_counter()
    v = verifiers.search(entry.mechanism, generator=generator, budget=spec.budget, alpha=spec.alpha, rng=seed)
    w = v.witness
    published = max(entry.published.values()) if entry.published else math.nan
    # the bound with the best suite pair: the pair the given-pairs search certified, searched alone
    # at the same budget and seed (the yardstick of none/best)
    best = math.nan
    if mode == "given" and w is not None:
        best = float(verifiers.search(entry.mechanism, generator=[(w.d1, w.d2)], budget=spec.budget,
                                      alpha=spec.alpha, rng=seed).epsilon_lower)
    return [{"entry": name, "suite": entry.suite, "mode": mode, "repeat": i, "seed": seed, "broken": bool(entry.broken),
             "claimed_epsilon": entry.claimed_epsilon,
             "true_epsilon": math.nan if entry.true_epsilon is None else float(entry.true_epsilon),
             "published": float(published), "epsilon_lower": float(v.epsilon_lower), "violated": bool(v.violated),
             "support": bool(v.support_violation), "pairs": int(v.pairs_tried), "calls": int(v.calls),
             "pair": "" if w is None else str(w.pair_label), "best_pair_epsilon_lower": best,
             "event": "" if w is None else str(w.event)[:_EVENT_CHARS],
             # not "seconds": the runner's own timing column of results.csv has that name
             "search_seconds": time.perf_counter() - t0}]


def _ok(results: pd.DataFrame) -> pd.DataFrame:
    return results[results["status"] == "ok"] if "status" in results else results


def _truth(x: Any) -> bool:
    """A flag read back from results.csv (a bool, or its text when error rows made the column object)."""
    return str(x).strip().lower() == "true" if isinstance(x, str) else bool(x)


def _ratio(num: float, den: float) -> float:
    return num / den if math.isfinite(den) and den > 0 and not math.isnan(num) else math.nan


def entry_table(results: pd.DataFrame, names: tuple[str, ...] | list[str]) -> pd.DataFrame:
    """One row per entry (``names`` order): medians over the repeats of each mode, their ratios, and
    the violations over the repeats (``flagged_<mode>`` of ``repeats_<mode>``)."""
    ok = _ok(results)
    rows = []
    for name in names:
        mine = ok[ok["entry"] == name]
        first = mine.iloc[0] if len(mine) else None
        row: dict[str, Any] = {
            "entry": name, "suite": name.partition("/")[0],
            "broken": None if first is None else _truth(first["broken"]),
            "claimed_epsilon": math.nan if first is None else float(first["claimed_epsilon"]),
            "true_epsilon": math.nan if first is None else float(first["true_epsilon"]),
            "published": math.nan if first is None else float(first["published"])}
        for mode in MODES:
            m = mine[mine["mode"] == mode]
            eps = pd.to_numeric(m["epsilon_lower"], errors="coerce")
            row[f"{mode}_epsilon_lower"] = float(eps.median()) if len(m) else math.nan
            row[f"flagged_{mode}"] = int(sum(_truth(x) for x in m["violated"]))
            row[f"repeats_{mode}"] = len(m)
        g = mine[mine["mode"] == "given"]
        bp = pd.to_numeric(g["best_pair_epsilon_lower"], errors="coerce") if "best_pair_epsilon_lower" in g else None
        row["best_epsilon_lower"] = float(bp.median()) if bp is not None and bp.notna().any() else math.nan
        row["none_over_given"] = _ratio(row["none_epsilon_lower"], row["given_epsilon_lower"])
        row["none_over_best"] = _ratio(row["none_epsilon_lower"], row["best_epsilon_lower"])
        row["none_over_peer"] = _ratio(row["none_epsilon_lower"], row["published"])
        rows.append(row)
    return pd.DataFrame(rows)


def _num(x: float, fmt: str = ".3g") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return "∞" if math.isinf(x) else format(x, fmt)


def table(results: pd.DataFrame, names: tuple[str, ...] | list[str]) -> str:
    """The markdown table: one line per entry, in ``names`` order (medians over the repeats)."""
    out = ["| entry | claimed ε | true ε | given pairs ε≥ | no pair ε≥ | none/given | peer published | none/peer | "
           "flagged given | flagged none | best given pair ε≥ | none/best |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in entry_table(results, names).iterrows():
        out.append(f"| `{r['entry']}`{' (broken)' if r['broken'] else ''} | {_num(r['claimed_epsilon'])} | "
                   f"{_num(r['true_epsilon'])} | {_num(r['given_epsilon_lower'])} | {_num(r['none_epsilon_lower'])} | "
                   f"{_num(r['none_over_given'], '.2f')} | {_num(r['published'])} | {_num(r['none_over_peer'], '.2f')} | "
                   f"{r['flagged_given']}/{r['repeats_given']} | {r['flagged_none']}/{r['repeats_none']} | "
                   f"{_num(r['best_epsilon_lower'])} | {_num(r['none_over_best'], '.2f')} |")
    return "\n".join(out)


def suite_summary(results: pd.DataFrame, names: tuple[str, ...] | list[str]) -> str:
    """Per suite: broken entries flagged by each mode (at least once / every repeat), broken entries
    whose none/given is below :data:`LOW_RATIO`, and correct entries flagged (false alarms, first)."""
    t = entry_table(results, names)
    alarms, lines = [], []
    for suite in dict.fromkeys(t["suite"]):
        s = t[t["suite"] == suite]
        # broken is None for an entry without result: neither broken nor correct
        broken = s[s["broken"].map(lambda b: pd.notna(b) and bool(b))]
        correct = s[s["broken"].map(lambda b: pd.notna(b) and not bool(b))]

        def flags(mode: str) -> str:
            once = int((broken[f"flagged_{mode}"] > 0).sum())
            every = int(((broken[f"flagged_{mode}"] == broken[f"repeats_{mode}"]) & (broken[f"repeats_{mode}"] > 0)).sum())
            return f"{once}/{len(broken)} broken entries (every repeat: {every}/{len(broken)})"

        if len(broken):
            lines.append(f"- {suite}: no pair given flags {flags('none')}; given pairs flag {flags('given')}")
            for col, what in (("none_over_given", "none/given"), ("none_over_best", "none/best")):
                low = broken[broken[col] < LOW_RATIO]
                lines.append(f"- {suite}: broken entries with {what} < {LOW_RATIO}: "
                             + (", ".join(f"{e} ({x:.2f})" for e, x in zip(low["entry"], low[col])) or "none"))
        else:
            lines.append(f"- {suite}: no broken entry selected")
        fa = correct[(correct["flagged_given"] > 0) | (correct["flagged_none"] > 0)]
        for _, r in fa.iterrows():
            alarms.append(f"{r['entry']} (given {r['flagged_given']}/{r['repeats_given']}, "
                          f"none {r['flagged_none']}/{r['repeats_none']})")
        lines.append(f"- {suite}: correct entries flagged: "
                     + (f"**{len(fa)} FALSE ALARM(S)**: " + ", ".join(fa["entry"]) if len(fa) else "none"))
        missing = s[s["broken"].isna()]
        if len(missing):
            lines.append(f"- {suite}: no result (every search failed): {', '.join(missing['entry'])}")
    head = [f"**FALSE ALARMS (correct entries flagged): {'; '.join(alarms)}**", ""] if alarms else []
    return "\n".join(head + lines)


def describe_results(spec: PairSearchSpec) -> dict:
    return {"cell_columns": list(CELL_COLUMNS), "metric": "epsilon_lower"}


def _footer(spec: PairSearchSpec) -> str:
    seeds = f"seed {spec.seed}" if spec.repeats == 1 else f"seeds {spec.seed}..{spec.seed + spec.repeats - 1}"
    return f"budget {spec.budget} calls per search (both modes), alpha {spec.alpha}, {spec.repeats} repeat(s), {seeds}"


def summarize(spec: PairSearchSpec, results: pd.DataFrame) -> Summary:
    failed = int((results["status"] == "error").sum()) if "status" in results else 0
    text = table(results, spec.entries) + "\n\n" + suite_summary(results, spec.entries)
    if failed:
        text += f"\n\n{failed} search(es) failed: see results.csv"
    return Summary(entry_table(results, spec.entries), text, failed == 0)


def plot(spec: PairSearchSpec, results: pd.DataFrame, table_: pd.DataFrame, fig_dir: Path) -> list[Path]:
    return []


def outputs(spec: PairSearchSpec, results: pd.DataFrame, summary: Summary, run_dir: Path) -> list[str]:
    """pair_search.md (the table, the per-suite summary, the settings) and pair_search.csv."""
    run_dir = Path(run_dir)
    md = (f"{table(results, spec.entries)}\n\n{suite_summary(results, spec.entries)}\n\n"
          f"ε≥: median over the repeats of the certified lower bound; {_footer(spec)}\n")
    atomic_write_text(run_dir / "pair_search.md", md)
    atomic_write_text(run_dir / "pair_search.csv", results.to_csv(index=False))
    return ["pair_search.md", "pair_search.csv"]
