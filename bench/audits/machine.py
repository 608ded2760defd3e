"""``dpharness audit --json PATH`` / ``--junit PATH``: the audit verdict for CI.

* JSON, schema ``dpharness.audit/1`` (``bench/schemas/audit.json``): the verdict (passed, exit code,
  every failure), one entry per audit row (audit x sample size: the numbers of ``table.csv``, whether
  the row passed and why not, and a *witness* -- pair, event, direction, counts, draws, seed, the
  task's key and seeds, and the commands that replay it), the targets, the run folder's
  ``manifest.json`` and the invocation's manifest.
* JUnit XML: one test case per audit row (``<audit> [samples=N]``) and one per target; a failing
  row carries the failure and its witness, so a CI page shows the certified violation itself.

Per-row pass/fail follows :func:`bench.audits.report.judge` (the run's verdict): a correct claim
flagged at that size; a calibration count above its binomial bound; a broken positive control not
flagged in every repeat at its largest size; a task error; exact mode contradicting a correct claim.
Built from the :class:`~bench.run.result.RunResult` after the run; nothing is written when the audit
did not run to its summary (usage error, interruption).
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import Any

import pandas as pd

from dpharness.bench.report.verdicts import JUnitCase, jsonable, run_manifest, verdict_block, write_json, write_junit
from dpharness.bench.audits import report as _report
from dpharness.bench.audits.replay import python_line

__all__ = ["SCHEMA", "audit_document", "audit_junit_cases", "write_audit_outputs"]

SCHEMA = "dpharness.audit/1"

#: witness fields copied from a results.csv row (the verifier's ``Verdict.row()`` and the task's seeds)
WITNESS_FIELDS = ("pair", "d1", "d2", "direction", "event", "event_family", "count_d1", "count_d2", "cert_draws_d1",
                  "cert_draws_d2", "cert_samples", "witness_seed", "repeat", "epsilon_lower", "epsilon_estimate",
                  "delta_lower", "violated", "support_violation", "calls", "draws_per_dataset", "task", "root_seed",
                  "spawn_key", "summary")


def _val(x: Any) -> Any:
    x = jsonable(x)
    return None if isinstance(x, str) and x == "" else x


def _flag(v: Any) -> bool:
    return _report._truthy(v)


def replay_command(config_path: str, seed: int, quick: bool) -> str:
    """The command that recomputes every row bit for bit (seeds come from the root seed and task keys)."""
    return " ".join(["dpharness", "audit", shlex.quote(str(config_path)), "--seed", str(seed)]
                    + (["--quick"] if quick else []))


def _witness(rows: pd.DataFrame, replay: str, run_dir: Any = None, config_path: str | None = None
             ) -> dict[str, Any] | None:
    """The witness of one audit row: the first repeat with a certified violation, else the first repeat.
    ``event`` and ``d1``/``d2`` are for reading; ``event_spec``, ``d1_data``, ``d2_data``, ``key`` and
    ``chunked`` hold the witness in full, and ``replay.python`` replays it from the run folder."""
    if rows.empty:
        return None
    viol = rows[rows["violated"].map(_flag)] if "violated" in rows else rows.iloc[:0]
    r = (viol if len(viol) else rows).iloc[0]
    w = {k: _val(r.get(k)) for k in WITNESS_FIELDS if k in r.index}
    for k in ("violated", "support_violation"):
        if k in w:
            w[k] = _flag(w[k])
    for k in ("count_d1", "count_d2", "cert_draws_d1", "cert_draws_d2", "cert_samples", "repeat", "calls",
              "draws_per_dataset"):
        if isinstance(w.get(k), float) and w[k].is_integer():
            w[k] = int(w[k])
    for k in ("witness_seed", "spawn_key", "root_seed"):
        if w.get(k) is not None:
            w[k] = str(int(float(w[k]))) if isinstance(w[k], float) else str(w[k])
    full = {}
    for col, key in (("event_json", "event_spec"), ("d1_json", "d1_data"), ("d2_json", "d2_data")):
        text = r.get(col)
        full[key] = json.loads(text) if isinstance(text, str) and text else None
    w.update(full)
    key = r.get("witness_key")
    w["key"] = [int(k) for k in str(key).split()] if isinstance(key, str) and key.strip() else None
    w["chunked"] = _flag(r.get("witness_chunked")) if r.get("witness_chunked") is not None else None
    seed = w.get("witness_seed")
    replayable = bool(seed and full["event_spec"] is not None and full["d1_data"] is not None
                      and full["d2_data"] is not None and run_dir is not None and not _has(r, "sequential_looks"))
    w["replay"] = {
        "command": replay,
        "python": python_line(run_dir, str(r.get("audit")), int(float(r.get("samples"))), config_path)
        if replayable else None,
    }
    return w


def _has(r: pd.Series, col: str) -> bool:
    v = r.get(col)
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and str(v) != ""


def _row_failures(a: Any, t: pd.Series, top_samples: int) -> list[str]:
    """Why one summary row (audit x samples) fails, by the rules of :func:`report.judge`."""
    out = []
    v, n, s = int(t["violations"]), int(t["repeats"]), int(t["samples"])
    if a.expect == "correct" and v > 0:
        out.append(f"{a.id}: a correct claim was flagged ({v}/{n} at {s} samples, epsilon_lower up to "
                   f"{float(t['epsilon_lower_max']):.3g})")
    elif a.expect == "calibration":
        lim = _report.calibration_limit(n, a.alpha)
        if v > lim:
            out.append(f"{a.id}: {v}/{n} false violations at {s} samples exceed the binomial bound {lim} "
                       f"(alpha {a.alpha})")
    elif a.expect not in ("correct", "calibration") and s == top_samples and v < n:
        out.append(f"{a.id}: broken mechanism NOT flagged at its largest budget ({v}/{n} at {s} samples)")
    return out


def _audit_rows(res: Any, replay: str, config_path: str | None = None) -> list[dict[str, Any]]:
    spec = res.config.spec
    results = res.results
    table = res.summary.table
    problems: list[str] = list(table.attrs.get("problems") or [])
    ok = results[results["status"] == "ok"] if "status" in results else results
    out = []
    for a in spec.audits:
        t_a = table[table["audit"] == a.id] if len(table) else table
        sizes = [int(s) for s in a.samples]
        top = max(int(x) for x in t_a["samples"]) if len(t_a) else max(sizes)
        rest = [p for p in problems if p.startswith(f"{a.id}:") and " exact mode " in f" {p} "]
        for s in sizes:
            tr = t_a[t_a["samples"] == s]
            errs = results[(results.get("audit") == a.id) & (results.get("samples") == s)
                           & (results["status"] != "ok")] if "status" in results and "audit" in results else results.iloc[:0]
            failures = [f"{a.id} (samples {s}, repeat {r.get('repeat')}): task error: {r.get('message')}"
                        for _, r in errs.iterrows()]
            numbers: dict[str, Any] = {}
            if len(tr):
                t = tr.iloc[0]
                failures += _row_failures(a, t, top)
                numbers = {c: _val(t[c]) for c in _report.SUMMARY_COLUMNS if c not in ("audit", "samples", "expect")}
            elif not failures:
                failures.append(f"{a.id} (samples {s}): no finished task")
            if s == top:
                failures += rest
            rows = ok[(ok["audit"] == a.id) & (ok["samples"] == s)] if len(ok) else ok
            out.append({"audit": a.id, "samples": s, "expect": a.expect, "mechanism": numbers.pop("mechanism", None),
                        "passed": not failures, "failures": failures, "numbers": numbers,
                        "witness": _witness(rows, replay, res.run_dir, config_path)})
    return out


def audit_document(res: Any, exit_code: int, config_path: str) -> dict[str, Any]:
    """The ``dpharness.audit/1`` document of a finished audit run."""
    cfg = res.config
    spec = cfg.spec
    table = res.summary.table
    problems = list(table.attrs.get("problems") or [])
    targets = table.attrs.get("targets")
    if targets is None:
        targets = _report.evaluate_targets(spec, res.results, None)
    capped = spec.max_samples is not None or spec.max_repeat is not None
    replay = replay_command(config_path, cfg.seed, cfg.quick)
    rows = _audit_rows(res, replay, config_path)
    try:
        run_manifest_doc = json.loads((Path(res.run_dir) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        run_manifest_doc = None
    not_judged = list(table.attrs.get("not_judged") or _report.unjudged(spec, table))
    if exit_code == 0:
        message = _report.status_line([], not_judged)
    else:
        message = (f"{len(problems)} failure(s): " + "; ".join(problems[:3]) + (" ..." if len(problems) > 3 else "")
                   if problems else f"{res.errors} task(s) failed")
    return {
        "schema": SCHEMA,
        "verdict": verdict_block(exit_code, message, failures=problems, audits=len(spec.audits), rows=len(rows),
                                 rows_failed=sum(not r["passed"] for r in rows), tasks=res.n_tasks,
                                 task_errors=res.errors, targets_judged=not capped,
                                 broken_not_judged=len(not_judged), not_judged=not_judged),
        "config": {"path": str(config_path), "name": cfg.name, "hash": cfg.hash, "seed": cfg.seed, "quick": cfg.quick,
                   "max_samples": spec.max_samples, "max_repeat": spec.max_repeat},
        "run_dir": str(res.run_dir),
        "replay": replay,
        "audits": rows,
        "targets": [{"target": str(t.target), "text": str(t.text), "met": str(t.met), "measured": str(t.measured),
                     "detail": str(t.detail)} for t in targets.itertuples()],
        "run_manifest": run_manifest_doc,
        "manifest": run_manifest({"wall_seconds": res.wall_seconds}),
    }


def _witness_text(w: dict[str, Any] | None) -> str:
    if not w:
        return "no witness (no finished task)"
    return (f"pair {w.get('pair') or '-'}: d1={w.get('d1')}, d2={w.get('d2')}, event {w.get('event') or '-'} "
            f"({w.get('direction') or '-'}), counts {w.get('count_d1')}/{w.get('cert_draws_d1')} under d1 vs "
            f"{w.get('count_d2')}/{w.get('cert_draws_d2')} under d2, epsilon_lower {w.get('epsilon_lower')}, "
            f"witness seed {w.get('witness_seed')}, task {w.get('task')} (root seed {w.get('root_seed')}); "
            f"replay: {w['replay']['command']}")


def audit_junit_cases(doc: dict[str, Any]) -> list[JUnitCase]:
    """One test case per audit row and one per target, from :func:`audit_document`."""
    suite = f"dpharness.audit.{doc['config']['name']}"
    cases = []
    for r in doc["audits"]:
        w = r["witness"]
        wt = _witness_text(w)
        summary = (w or {}).get("summary") or ""
        cases.append(JUnitCase(
            name=f"{r['audit']} [samples={r['samples']}]", classname=suite,
            time=float((r["numbers"] or {}).get("seconds") or 0.0),
            failure="; ".join(r["failures"]) + f" -- witness: {wt}" if r["failures"] else None,
            detail=f"expect {r['expect']}; {summary}\nwitness: {wt}",
            properties={"mechanism": r.get("mechanism") or "", "expect": r["expect"],
                        "flagged": f"{(r['numbers'] or {}).get('violations')}/{(r['numbers'] or {}).get('repeats')}"}))
    judged = doc["verdict"]["targets_judged"]
    for t in doc["targets"]:
        text = f"{t['text']}: {t['met']}, {t['measured']}" + (f" ({t['detail']})" if t["detail"] else "")
        case = JUnitCase(name=f"target {t['target']}", classname=f"{suite}.targets", detail=text)
        if t["met"] == "not run":
            case.skipped = text
        elif t["met"] == "NOT MET":
            if judged:
                case.failure = f"target {t['target']} NOT MET: {t['measured']}"
            else:
                case.skipped = f"not judged under quick caps: {text}"
        cases.append(case)
    return cases


def write_audit_outputs(res: Any, exit_code: int, config_path: str, json_path: Path | None,
                        junit_path: Path | None) -> list[Path]:
    """Write the requested files (each atomically); returns the paths written."""
    if json_path is None and junit_path is None:
        return []
    doc = jsonable(audit_document(res, exit_code, config_path))
    written = []
    if json_path is not None:
        write_json(json_path, doc, "audit")
        written.append(json_path)
    if junit_path is not None:
        write_junit(junit_path, f"dpharness audit {doc['config']['name']}", audit_junit_cases(doc),
                    properties={"config": config_path, "seed": doc["config"]["seed"], "run_dir": doc["run_dir"],
                                "replay": doc["replay"]})
        written.append(junit_path)
    return written
