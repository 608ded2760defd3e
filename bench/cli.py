"""The ``dpharness`` command line (also ``python -m dpharness``).

Each sub-command lives in the module that owns the work; this file only parses arguments and
dispatches, importing lazily so that ``dpharness list`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from dpharness import __version__

# sub-command -> (module, function); the function takes the parsed args and returns an exit code.
_COMMANDS = {
    "list": ("dpharness.bench.cli", "cmd_list"),
    "run": ("dpharness.bench.commands.run", "cmd_run"),
    "validate": ("dpharness.bench.commands.validate", "cmd_validate"),
    "plot": ("dpharness.bench.commands.plot", "cmd_plot"),
    "audit": ("dpharness.bench.audits.cli", "cmd_audit"),
    "regress": ("dpharness.bench.regress.cli", "cmd_regress"),
    "bench": ("dpharness.bench.perf.cli", "cmd_bench"),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dpharness",
        description="Reproduce, regression-test and audit differentially private selection mechanisms.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("list", help="list every registered mechanism with its parameters and privacy claim")

    r = sub.add_parser("run", help="run an experiment config (YAML) and write a run folder")
    r.add_argument("config", metavar="CONFIG", help="experiment config (YAML), e.g. configs/duff_table1.yaml")
    r.add_argument("--jobs", type=int, default=1, help="parallel workers (results do not depend on it)")
    r.add_argument("--backend", choices=["loky", "threading", "dask"], default="loky")
    r.add_argument("--scheduler", metavar="ADDRESS", default=None, help="dask scheduler address")
    r.add_argument("--out", metavar="DIR", default=None, help="parent folder for the run (default results/)")
    r.add_argument("--seed", type=int, default=None, help="override the config's root seed")
    r.add_argument("--quick", action="store_true", help="use the config's quick: overrides (CI tier)")
    r.add_argument("--resume", metavar="RUN_DIR", default=None, help="resume this run folder explicitly")
    r.add_argument("--chunk-size", type=int, default=None, metavar="N",
                   help="tasks per chunk sent to a worker (default: sized automatically; results do not depend on it)")

    v = sub.add_parser("validate", help="check configs (including building every mechanism) without running")
    v.add_argument("configs", nargs="+", metavar="CONFIG",
                   help="experiment or audit configs (YAML); every mistake of each file is listed; exit 2 if any is invalid")
    v.add_argument("--json", metavar="PATH", default=None,
                   help="also write the verdict as JSON (schema dpharness.validate/1: one entry per config with "
                        "its errors) to PATH, in an existing folder")

    pl = sub.add_parser("plot", help="rebuild a run's figures from its results.csv",
                        description="Redraw a finished run's figures from its results.csv and config.yaml "
                        "(into RUN_DIR/figures, or --out DIR). Refused (exit 2): a folder that is not a run "
                        "folder, a damaged manifest.json, a results.csv missing tasks of the config "
                        "(truncated or edited), and a committed baseline under results/baselines/ "
                        "without --out.")
    pl.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (holds config.yaml, manifest.json, results.csv)")
    pl.add_argument("--out", metavar="DIR", default=None,
                    help="write the figures into DIR (created if missing) instead of RUN_DIR/figures; "
                    "required for a committed baseline")

    a = sub.add_parser("audit", help="run an audit config (top-level audits:) and report privacy verdicts; "
                       "resumes an interrupted run like `run`")
    a.add_argument("config", metavar="CONFIG", help="audit config (YAML with a top-level audits: list), e.g. configs/audit_zoo.yaml")
    a.add_argument("--out", metavar="DIR", default=None, help="parent folder for the run (default results/)")
    a.add_argument("--seed", type=int, default=None, help="override the config's root seed")
    a.add_argument("--jobs", type=int, default=1, help="parallel workers, >= 1 or -1 for all cores "
                   "(results do not depend on it)")
    a.add_argument("--quick", action="store_true", help="apply the config's quick: caps (max_samples, max_repeat)")
    a.add_argument("--resume", metavar="RUN_DIR", default=None, help="resume this run folder explicitly")
    a.add_argument("--json", metavar="PATH", default=None,
                   help="also write the verdict as JSON (schema dpharness.audit/1: per-audit numbers, witnesses "
                        "with a replay command, targets, manifest) to PATH, in an existing folder")
    a.add_argument("--junit", metavar="PATH", default=None,
                   help="also write JUnit XML to PATH (one test case per audit and sample size, one per target; "
                        "failures carry the witness)")

    g = sub.add_parser(
        "regress", help="compare a new run against a baseline run, cell by cell",
        description="Compare a new run folder with a baseline run folder of the same config, cell by cell "
                    "(one-sided Welch / paired t-test or z-test per cell, Holm over the cells). Exit 0: no "
                    "significant regression; 1: at least one; 2: the runs cannot be compared or an option is "
                    "out of range. Writes regress.csv and regress.md into NEW_RUN_DIR (atomically, replacing "
                    "earlier ones; nothing when NEW_RUN_DIR is under a baselines/ folder); only "
                    "--update-baseline writes into BASELINE_RUN_DIR.")
    g.add_argument("new_run_dir", metavar="NEW_RUN_DIR",
                   help="run folder to check (results.csv, config.yaml, manifest.json); receives regress.csv and regress.md")
    g.add_argument("baseline_run_dir", metavar="BASELINE_RUN_DIR",
                   help="run folder of the same config (root seed may differ), e.g. results/baselines/NAME; read only")
    g.add_argument("--alpha", type=float, default=0.01,
                   help="family-wise error rate over the cells (Holm), in (0, 1); default 0.01")
    g.add_argument("--tolerance", type=float, default=0.05,
                   help="relative slack: a cell regresses when its mean is significantly worse than "
                        "(1 + tolerance) x the baseline's; in [0, 1), default 0.05")
    g.add_argument("--update-baseline", action="store_true",
                   help="after the comparison (printed when possible), replace BASELINE_RUN_DIR by the new run's "
                        "results.csv, table.csv, table.md, config.yaml, manifest.json and exit 0 (a deliberate change)")
    g.add_argument("--json", metavar="PATH", default=None,
                   help="also write the verdict as JSON (schema dpharness.regress/1: every cell's numbers, both runs' "
                        "manifests) to PATH, in an existing folder")
    g.add_argument("--junit", metavar="PATH", default=None,
                   help="also write JUnit XML to PATH (one test case per cell; a regression fails with its numbers)")

    b = sub.add_parser("bench", help="performance benchmarks against floors and peer libraries",
                       description="Time dpharness against physical floors and peer libraries; print a ratio "
                       "table, write JSON rows and a scaling figure. Exit codes: 0 ok, 2 bad input "
                       "(nothing is timed), 1 a significant slowdown against --baseline (also: results "
                       "could not be written after the run).")
    b.add_argument("--quick", action="store_true", help="CI tier: tiny sizes and few repeats (well under a minute)")
    b.add_argument("--json", metavar="PATH", default=None,
                   help="JSON file to write, in an existing folder (default results/perf/bench_<UTC>.json); "
                   "the figure goes next to it as <stem>_scaling.png")
    b.add_argument("--only", nargs="+", metavar="SECTION", default=None,
                   help="run only these sections: median, finite, table1, verifier")
    b.add_argument("--max-n", metavar="N", default=None,
                   help="largest median n, a positive integer such as 1e6 (the full tier goes to 1e7)")
    b.add_argument("--repeats", metavar="R", default=None,
                   help="repetitions of the median section, a positive integer (default 9; --quick 3)")
    b.add_argument("--baseline", metavar="OLD.json", default=None,
                   help="performance gate: compare each benchmark's per-repetition ratios to its floor with those "
                        "of an earlier `dpharness bench` JSON (one-sided Welch t-test per benchmark, Holm over "
                        "benchmarks); exit 1 on a significant slowdown beyond --tolerance")
    b.add_argument("--tolerance", metavar="T", default=None,
                   help="relative slack of the gate: a benchmark fails when its ratio is significantly above "
                        "(1 + T) x the baseline's; in [0, 1), default 0.25 (needs --baseline)")
    b.add_argument("--alpha", metavar="A", default=None,
                   help="family-wise error rate of the gate over the benchmarks (Holm), in (0, 1); default 0.01 "
                        "(needs --baseline)")
    return p


def cmd_list(args: argparse.Namespace) -> int:
    from dpharness import mechanisms

    for name in mechanisms.available():
        print(mechanisms.describe(name))
    return 0


def _declare_inputs(args: argparse.Namespace) -> None:
    """Tell the output checks what this command reads, so that no ``--json``/``--junit`` path can
    overwrite it (:func:`bench.verdicts.set_inputs`): config files, run folders, baselines."""
    from dpharness.bench.verdicts import set_inputs

    files = [(c, "the config") for c in (getattr(args, "configs", None) or [])]
    if getattr(args, "config", None):
        files.append((args.config, "the config"))
    if getattr(args, "baseline", None):
        files.append((args.baseline, "the --baseline file"))
    folders = [(getattr(args, "resume", None), "the run folder being resumed"),
               (getattr(args, "new_run_dir", None), "the new run folder")]
    read_only = [(getattr(args, "baseline_run_dir", None), "the baseline run folder")]
    set_inputs(files=files, folders=folders, read_only=read_only)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _declare_inputs(args)
    module, func = _COMMANDS[args.command]
    fn = getattr(importlib.import_module(module), func)
    try:
        return int(fn(args) or 0)
    except KeyboardInterrupt:
        print("interrupted; finished tasks are saved, re-run the same command to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # output piped into `head` and closed early: not an error of ours
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
