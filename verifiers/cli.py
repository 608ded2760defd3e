"""``dpharness audit CONFIG [--out DIR] [--seed S] [--jobs N] [--quick]``.

Runs every audit of the config (mechanisms x pairs x budgets x repeats), prints the verdicts,
writes a run folder ``<out>/<config name>/<UTC timestamp>_<config hash>/`` with ``results.csv``
(one row per task), ``table.csv``/``table.md`` (one row per audit and sample size),
``targets.csv``/``targets.md`` (the benchmark targets, met or not, with the measured numbers),
``exact.csv`` (exact loss over every generated pair for search audits), ``report.md``,
``config.yaml``, ``manifest.json`` and ``figures/``.

Exit status: 0 when every audit behaved as its ``expect`` says; 1 when a correct claim was
violated (statistically or exactly), a calibration control exceeded its binomial bound, a broken
positive control was NOT flagged at its largest budget, or a task failed; 2 on a config error.
Targets are reported (met / NOT MET) but do not change the exit status.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

__all__ = ["cmd_audit", "run_audit"]


def _progress(done: int, total: int, t0: float) -> None:
    el = time.perf_counter() - t0
    rate = done / el if el > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else float("nan")
    print(f"\r  {done}/{total} tasks, {rate:.1f}/s, ETA {eta:.0f}s   ", end="", file=sys.stderr, flush=True)


def run_audit(cfg, *, jobs: int = 1, out: str | Path | None = None, verbose: bool = True) -> tuple[int, Path]:
    """Run a loaded :class:`verifiers.config.AuditConfig`; returns (exit code, run folder)."""
    from joblib import Parallel, delayed

    import yaml
    from ..bench.results import atomic_write_text, manifest_base, new_run_dir
    from ..bench.tables import to_markdown

    from . import report
    from .runner import exact_rows, run_task, tasks_of

    t0 = time.perf_counter()
    tasks = tasks_of(cfg)
    if verbose:
        print(f"audit {cfg.name}: {len(cfg.audits)} audits, {len(tasks)} tasks, jobs={jobs}, seed={cfg.seed}"
              + (" (quick)" if cfg.quick else ""), file=sys.stderr)
    rows: list[dict] = []
    if jobs == 1:
        for i, t in enumerate(tasks):
            rows.append(run_task(t, cfg.seed))
            if verbose and len(tasks) > 20 and (i % 20 == 19 or i == len(tasks) - 1):
                _progress(i + 1, len(tasks), t0)
    else:
        for i, r in enumerate(Parallel(n_jobs=jobs, return_as="generator")(delayed(run_task)(t, cfg.seed) for t in tasks)):
            rows.append(r)
            if verbose and (i % 20 == 19 or i == len(tasks) - 1):
                _progress(i + 1, len(tasks), t0)
    if verbose and len(tasks) > 20:
        print(file=sys.stderr)
    exact = exact_rows(cfg)
    wall = time.perf_counter() - t0
    results = pd.DataFrame(rows).sort_values(["audit", "samples", "repeat"], kind="stable").reset_index(drop=True)
    table = report.summarize(results)
    alpha_of = {a.id: a.alpha for a in cfg.audits}
    targets = report.evaluate_targets(cfg.targets, results, table, wall, alpha_of)
    problems = report.judge(cfg, results, table, exact)

    run_dir = new_run_dir(Path(out) if out else Path("results"), cfg.name, cfg.hash)
    try:
        (run_dir / "tasks").rmdir()  # the runner's per-task folder: audits keep one results.csv
    except OSError:
        pass
    keep = [c for c in results.columns if c not in ("traceback",)]
    atomic_write_text(run_dir / "results.csv", results[keep].to_csv(index=False))
    atomic_write_text(run_dir / "table.csv", table.to_csv(index=False))
    show = ["audit", "expect", "samples", "repeats", "violations", "epsilon_claimed", "true_epsilon", "exact_epsilon",
            "exact_delta", "epsilon_lower_median", "epsilon_estimate_median", "delta_lower_median", "support_violations",
            "draws_per_dataset_max"]
    atomic_write_text(run_dir / "table.md", f"# {cfg.name}: audit summary\n\n" + to_markdown(table[show], nd=3))
    if len(targets):
        atomic_write_text(run_dir / "targets.csv", targets.to_csv(index=False))
        atomic_write_text(run_dir / "targets.md", f"# {cfg.name}: targets\n\n" + to_markdown(targets))
    if exact:
        atomic_write_text(run_dir / "exact.csv", pd.DataFrame(exact).to_csv(index=False))
    atomic_write_text(run_dir / "config.yaml", f"# resolved audit config (from {cfg.source}); hash {cfg.hash}\n"
                      + yaml.safe_dump(cfg.raw, sort_keys=False, allow_unicode=True))
    figs = report.plot_all(results, table, run_dir / "figures")

    lines = [f"# Audit report: {cfg.name}", "", cfg.description.strip(), "",
             f"Root seed {cfg.seed}; {len(tasks)} tasks; wall time {wall:.1f} s"
             + (" (quick mode)" if cfg.quick else "") + ".", ""]
    if len(targets):
        lines += ["## Targets", "", to_markdown(targets), ""]
    lines += ["## Verdicts", "", to_markdown(table[show], nd=3), ""]
    if exact:
        ex = pd.DataFrame(exact)
        cols = [c for c in ("audit", "mechanism", "exact_pairs", "epsilon_claimed", "delta_claimed", "exact_max_epsilon",
                            "exact_max_delta", "exact_violated", "exact_pair", "message") if c in ex.columns]
        lines += ["## Exact mode over every generated pair", "", to_markdown(ex[cols], nd=4), ""]
    lines += ["## Status", ""]
    lines += ([f"- FAIL: {p}" for p in problems] if problems else ["- every audit behaved as expected"])
    lines += ["", "## Witnesses (largest budget, first repeat)", ""]
    ok = results[results["status"] == "ok"]
    for aid, g in ok.groupby("audit", sort=False):
        r = g[g["samples"] == g["samples"].max()].iloc[0]
        lines += [f"- **{aid}** ({r.get('mechanism', '')}, {r['expect']}): {r['summary']}", ""]
    if figs:
        lines += ["## Figures", ""] + [f"![{p.stem}](figures/{p.name})" for p in figs] + [""]
    atomic_write_text(run_dir / "report.md", "\n".join(lines))
    manifest = dict(manifest_base(), kind="audit", config=cfg.source, config_hash=cfg.hash, seed=cfg.seed,
                    quick=cfg.quick, jobs=jobs, wall_seconds=wall, tasks=len(tasks),
                    status="complete" if not problems else "failures", problems=problems)
    atomic_write_text(run_dir / "manifest.json", json.dumps(manifest, indent=2, default=str))

    if verbose:
        from ..bench.tables import format_text_table

        print(format_text_table(table[show], nd=3))
        if len(targets):
            print("\nTargets:")
            print(format_text_table(targets[["target", "met", "measured"]]))
        print("\n" + ("\n".join(f"FAIL: {p}" for p in problems) if problems else "every audit behaved as expected"))
        print(f"wall time {wall:.1f} s; run folder: {run_dir}")
    return (1 if problems else 0), run_dir


def _unavailable_peers(cfg) -> str:
    """'' when every peer library the config audits imports; else a message with the install hint
    (checked before any task runs, so a missing extra is one clear line, not a run of failures)."""
    from .peers import PeerUnavailable, build

    for a in cfg.audits:
        if "peer" not in a.mechanism:
            continue
        params = {k: v for k, v in a.mechanism.items() if k != "peer"}
        try:
            build(a.mechanism["peer"], **params)
        except PeerUnavailable as exc:
            return f"audit {a.id!r} needs a peer library that is not installed: {exc}"
    return ""


def cmd_audit(args: argparse.Namespace) -> int:
    """Entry point of ``dpharness audit``."""
    from .config import ConfigError, load_audit_config

    try:
        cfg = load_audit_config(args.config, quick=bool(getattr(args, "quick", False)), seed=getattr(args, "seed", None))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    missing = _unavailable_peers(cfg)
    if missing:
        print(f"error: {args.config}: {missing}", file=sys.stderr)
        return 2
    jobs = int(getattr(args, "jobs", 1) or 1)
    if jobs < 1:
        print(f"error: --jobs must be >= 1, got {jobs}", file=sys.stderr)
        return 2
    code, _ = run_audit(cfg, jobs=jobs, out=getattr(args, "out", None))
    return code
