"""Experiment kind ``float_audit``: the float audit of the registered mechanisms as a run.

For every mechanism of ``mechanisms.available()`` (or the ``mechanisms:`` listed), built from its
``example()``, ``verifiers.search`` runs twice on the config's seed: with float events on (events on
the bit patterns of the released doubles, docs/floating-point.md) and off. Both searches of one
mechanism share the seed on purpose: the two columns then differ only by the event families, so a
flag with float events on and none off is a floating-point leak of the implementation (its
real-valued law is private; the doubles it releases are not). Mechanisms with finite outputs have no
float events and are listed as not applicable (no search).

A survey, not a pass/fail audit: a flag is a finding written into the table, and the run is ``ok``
when every search ran. ``configs/float_audit.yaml`` is the whole registry at 10^6 calls per search;
``dpharness float-audit`` builds the same config from its flags. Outputs: ``float_audit.md`` (the
markdown table of docs/floating-point.md) and ``float_audit.csv``.

Config keys: ``mechanisms`` (names; default every registered one), ``budget`` (calls per search,
default 10^6), ``alpha`` (family-wise error of each search, default 10^-3).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpharness import mechanisms, verifiers
from dpharness.bench.config import Ctx
from dpharness.bench.run.folders import atomic_write_text
from dpharness.bench.run.tasks import Summary, Task, make_key

__all__ = ["FloatAuditSpec", "parse", "tasks", "run_task", "summarize", "plot", "outputs", "table", "SIDES"]

CELL_COLUMNS = ["mechanism", "float_events"]
_KEYS = ("mechanisms", "budget", "alpha")
#: The two searches of a mechanism with real outputs.
SIDES = ("on", "off")
#: The one row of a mechanism with finite outputs (no search; a word pandas does not read as NaN).
NA = "not applicable"
DEFAULT_BUDGET = 1_000_000
DEFAULT_ALPHA = 1e-3


@dataclass(frozen=True)
class FloatAuditSpec:
    """The mechanisms surveyed, the calls per search, each search's level and the shared seed."""

    names: tuple[str, ...]
    budget: int
    alpha: float
    seed: int


def parse(raw: dict, ctx: Ctx) -> FloatAuditSpec:
    ctx.reject_unknown(raw, _KEYS)
    known = mechanisms.available()
    names = ctx.get(raw, "mechanisms", list, list(known)) or list(known)
    bad = [n for n in names if n not in known]
    if bad:
        ctx.report("mechanisms", f"unknown mechanism(s) {', '.join(map(str, bad))}; accepted: {', '.join(known)}")
        names = [n for n in names if n in known]
    budget = int(ctx.number(raw, "budget", DEFAULT_BUDGET, lo=1, integer=True))
    alpha = float(ctx.number(raw, "alpha", DEFAULT_ALPHA, lo=0, hi=1, lo_open=True, hi_open=True))
    return FloatAuditSpec(tuple(dict.fromkeys(names)), budget, alpha, int(ctx.seed or 0))


def _example(name: str) -> Any:
    mech, _ = mechanisms.registry.get(name).example()
    return mech


def tasks(spec: FloatAuditSpec) -> list[Task]:
    out = []
    for name in spec.names:
        sides = (NA,) if _example(name).kind == "finite" else SIDES
        out += [Task(make_key(mechanism=name, float_events=s), {"mechanism": name, "float_events": s}) for s in sides]
    return out


def run_task(spec: FloatAuditSpec, task: Task, rng: np.random.Generator) -> list[dict]:
    """One search (the task's generator is not used: both sides of a mechanism share the config's
    seed, see the module docstring)."""
    name, side = task.params["mechanism"], task.params["float_events"]
    mech = _example(name)
    row: dict[str, Any] = {"mechanism": name, "float_events": side, "kind": mech.kind,
                           "epsilon": float(mech.claim.epsilon)}
    if side == NA:
        return [row]
    t0 = time.perf_counter()
    v = verifiers.search(mech, budget=spec.budget, alpha=spec.alpha, rng=spec.seed, float_events=side == "on")
    w = v.witness
    row.update(violated=bool(v.violated), support=bool(v.support_violation), epsilon_lower=float(v.epsilon_lower),
               pairs=int(v.pairs_tried), calls=int(v.calls), search_seconds=time.perf_counter() - t0,
               event="" if w is None else str(w.event), pair="" if w is None else str(w.pair_label))
    return [row]


def _cell(r: Any) -> str:
    if r is None:
        return NA
    flag = ("**flagged** (support violation)" if r["support"] else "**flagged**") if r["violated"] else "not flagged"
    return f"{flag}, eps >= {r['epsilon_lower']:.3g}"


def table(results: pd.DataFrame, names: tuple[str, ...]) -> str:
    """The markdown table: one line per mechanism, in ``names`` order."""
    out = ["| mechanism | output | claimed eps | float events on | float events off | time on/off (s) |",
           "|---|---|---|---|---|---|"]
    ok = results[results["status"] != "error"] if "status" in results else results
    for name in names:
        rows = {r["float_events"]: r for _, r in ok[ok["mechanism"] == name].iterrows()}
        if NA in rows:
            r = rows[NA]
            out.append(f"| `{name}` | finite | {r['epsilon']:g} | finite output: not applicable | not applicable | - |")
        elif "on" in rows and "off" in rows:
            on, off = rows["on"], rows["off"]
            out.append(f"| `{name}` | {on['kind']} | {on['epsilon']:g} | {_cell(on)} | {_cell(off)} | "
                       f"{on['search_seconds']:.1f} / {off['search_seconds']:.1f} |")
    return "\n".join(out)


def witnesses(results: pd.DataFrame) -> list[str]:
    """The flagged searches' pairs and events, one paragraph each."""
    out = []
    for _, r in results.iterrows():
        if r.get("float_events") in SIDES and bool(r.get("violated", False)):
            out.append(f"{r['mechanism']} (float events {r['float_events']}): pair {r['pair']!r}\n  event: {r['event']}")
    return out


def describe_results(spec: FloatAuditSpec) -> dict:
    return {"cell_columns": list(CELL_COLUMNS), "metric": "epsilon_lower"}


def summarize(spec: FloatAuditSpec, results: pd.DataFrame) -> Summary:
    failed = int((results["status"] == "error").sum()) if "status" in results else 0
    text = table(results, spec.names)
    if failed:
        text += f"\n\n{failed} search(es) failed: see results.csv"
    return Summary(results, text, failed == 0)


def plot(spec: FloatAuditSpec, results: pd.DataFrame, table_: pd.DataFrame, fig_dir: Path) -> list[Path]:
    return []


def outputs(spec: FloatAuditSpec, results: pd.DataFrame, summary: Summary, run_dir: Path) -> list[str]:
    """float_audit.md (the table, then the witnesses) and float_audit.csv."""
    run_dir = Path(run_dir)
    wit = witnesses(results)
    md = table(results, spec.names) + (("\n\n## Witnesses\n\n" + "\n\n".join(wit)) if wit else "") + \
        f"\n\nbudget {spec.budget} calls per search, alpha {spec.alpha}, seed {spec.seed}\n"
    atomic_write_text(run_dir / "float_audit.md", md)
    atomic_write_text(run_dir / "float_audit.csv", results.to_csv(index=False))
    return ["float_audit.md", "float_audit.csv"]
