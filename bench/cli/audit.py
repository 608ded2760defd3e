"""``dpharness audit CONFIG [--jobs N] [--out DIR] [--seed S] [--quick] [--resume RUN_DIR] [--json PATH] [--junit PATH]``.

Runs every audit of the config through the one experiment runner (kind ``audit``): progress on
stderr, one run folder ``<out>/<config name>/<UTC timestamp>_<config hash>/`` with
``results.csv`` (one row per task), ``table.csv`` / ``table.md``, ``targets.csv`` /
``targets.md``, ``exact.csv``, ``report.md``, ``config.yaml``, ``manifest.json``, ``tasks/`` and
``figures/``. Re-running the same command after an interruption resumes the unfinished folder.
``--json PATH`` / ``--junit PATH`` also write the verdict for CI (:mod:`bench.audits.machine`); their
paths are checked before anything is run. The audits themselves: :mod:`bench.audits`.

Exit status: 0 when every audit behaved as its ``expect`` says and every target was met (targets
are not judged under quick caps); 1 when a correct claim was violated (statistically or exactly),
a calibration control exceeded its binomial bound, a broken positive control was NOT flagged at its
largest budget, a target was not met, or a task failed; 2 on a config or usage error (nothing is
run and no folder is created); 130 when interrupted.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["run"]

NAME = "audit"
HELP = ("run an audit config (top-level audits:) and report privacy verdicts; "
        "resumes an interrupted run like `run`")
ORDER = 50


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """CONFIG and the audit's options."""
    parser.add_argument("config", metavar="CONFIG", help="audit config (YAML with a top-level audits: list), e.g. configs/audit_zoo.yaml")
    parser.add_argument("--out", metavar="DIR", default=None, help="parent folder for the run (default results/)")
    parser.add_argument("--seed", type=int, default=None, help="override the config's root seed")
    parser.add_argument("--jobs", type=int, default=1, help="parallel workers, >= 1 or -1 for all cores "
                        "(results do not depend on it)")
    parser.add_argument("--quick", action="store_true", help="apply the config's quick: caps (max_samples, max_repeat)")
    parser.add_argument("--resume", metavar="RUN_DIR", default=None, help="resume this run folder explicitly")
    parser.add_argument("--json", metavar="PATH", default=None,
                        help="also write the verdict as JSON (schema dpharness.audit/1: per-audit numbers, witnesses "
                             "with a replay command, targets, manifest) to PATH, in an existing folder")
    parser.add_argument("--junit", metavar="PATH", default=None,
                        help="also write JUnit XML to PATH (one test case per audit and sample size, one per target; "
                             "failures carry the witness)")


def _not_an_audit(path: str, raw: dict) -> str:
    kind = raw.get("experiment")
    if kind is not None or "mechanisms" in raw:
        return (f"{path} is an experiment config (experiment: {kind or 'median_accuracy'}), not an audit config: "
                f"run it with `dpharness run {path}`")
    return (f"{path}: not an audit config: an audit config has a top-level `audits:` list "
            f"(experiment configs run with `dpharness run {path}`)")


def print_verdict(res: Any, jobs: int) -> int:
    """Print a finished audit-like run (its summary, failed tasks, the run folder) and return its
    exit status: 0 when the summary is ok and no task failed, else 1 (``audit`` and ``sweep``)."""
    print(res.summary.text)
    if res.errors:
        print(f"{res.errors} of {res.n_tasks} tasks FAILED (status=error rows in results.csv)")
    print(f"run folder: {res.run_dir}  ({res.n_tasks} tasks, {res.computed} computed, {res.reused} reused; "
          f"wall {res.wall_seconds:.1f} s, jobs={jobs})")
    return 0 if (res.summary.ok and not res.errors) else 1


def spread_small_runs(cfg: Any, jobs: int, backend: str | None = None, scheduler: str | None = None) -> tuple[Any, int]:
    """``(config, jobs for the runner)``: with fewer audit tasks than workers and ``parallel_draws``
    on, the tasks run one after the other and each spreads its draws over the ``jobs`` workers
    (keyed chunks: the results are those of any other ``--jobs``), so one slow audit uses every core."""
    import os
    from dataclasses import replace

    from dpharness.bench.audits.spec import AuditSet, spread_draws

    workers = (os.cpu_count() or 1) if jobs == -1 else int(jobs)
    spec = cfg.spec
    aset = spec if isinstance(spec, AuditSet) else getattr(spec, "audits", None)
    if not isinstance(aset, AuditSet) or not aset.parallel_draws or workers <= 1:
        return cfg, jobs
    if sum(len(a.samples) * a.repeat for a in aset.audits) >= workers:
        return cfg, jobs
    spread = spread_draws(aset, workers, backend, scheduler)
    return replace(cfg, spec=spread if spec is aset else replace(spec, audits=spread)), 1


def run(args: argparse.Namespace) -> int:
    """Entry point of ``dpharness audit``."""
    from dpharness.bench.cli.run import invoke_run
    from dpharness.bench.config import ConfigError, load_config, read_yaml
    from dpharness.bench.report.verdicts import OutputPathError, check_distinct, check_output_file

    path = str(args.config)
    jobs = getattr(args, "jobs", 1)
    if jobs == 0 or jobs < -1:  # as `run` refuses it (bench.run.runner.run), before anything is printed
        print(f"error: --jobs must be a positive integer or -1 (all cores), got {jobs}", file=sys.stderr)
        return 2
    try:
        outs = {flag: None if v is None else check_output_file(v, flag, ex) for flag, v, ex in (
            ("--json", getattr(args, "json", None), "audit.json"),
            ("--junit", getattr(args, "junit", None), "audit-junit.xml"))}
        check_distinct(outs)
    except OutputPathError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        raw = read_yaml(path)  # read once: the checks below and the run use the spec parsed from it
        if "audits" not in raw:
            raise ConfigError(_not_an_audit(path, raw))
        cfg = load_config(path, quick=bool(getattr(args, "quick", False)), seed=getattr(args, "seed", None), raw=raw)
        if cfg.experiment != "audit":
            raise ConfigError(_not_an_audit(path, raw))
        # The costly checks (build every mechanism, check every pair) before anything is printed;
        # the spec remembers that it passed them, so run() does not repeat them.
        cfg.module.check(cfg.spec)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    spec = cfg.spec
    n_tasks = sum(len(a.samples) * a.repeat for a in spec.audits)
    print(f"audit {cfg.name}: {len(spec.audits)} audits, {n_tasks} tasks, jobs={jobs}, seed={cfg.seed}"
          + (" (quick)" if cfg.quick else ""), file=sys.stderr)

    cfg, outer = spread_small_runs(cfg, jobs)
    res, code = invoke_run(cfg, jobs=outer, out=getattr(args, "out", None), resume=getattr(args, "resume", None))
    if res is None:
        return code
    code = print_verdict(res, jobs)
    try:
        from dpharness.bench.audits.machine import write_audit_outputs

        for p in write_audit_outputs(res, code, path, outs["--json"], outs["--junit"]):
            print(f"wrote {p}")
    except OSError as exc:  # checked writable before the run; the disk filled up or similar
        print(f"error: could not write the verdict files: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return code
