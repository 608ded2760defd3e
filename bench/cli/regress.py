"""``dpharness regress NEW_RUN_DIR BASELINE_RUN_DIR [--alpha A] [--tolerance T] [--update-baseline]
[--json PATH] [--junit PATH]``: compare a new run with a baseline run, cell by cell (:mod:`bench.regress`).

Prints the comparison and exits 0 (no significant regression), 1 (at least one), 2 (unusable
input: one message, no traceback). ``--json`` / ``--junit`` (:mod:`bench.regress.machine`) write
the verdict for CI; their paths are checked before anything is read. It writes ``regress.csv``
and ``regress.md`` into NEW_RUN_DIR (atomically, replacing earlier ones) -- never into a folder
under ``baselines/``; only ``--update-baseline`` writes there.

Its sub-command ``dpharness regress power BASELINE_RUN_DIR...`` (also ``python -m
dpharness.bench.regress power ...``) is :mod:`bench.cli.regress_power`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["run"]

NAME = "regress"
HELP = "compare a new run against a baseline run, cell by cell"
DESCRIPTION = ("Compare a new run folder with a baseline run folder of the same config, cell by cell "
               "(one-sided Welch / paired t-test or z-test per cell, Holm over the cells). Exit 0: no "
               "significant regression; 1: at least one; 2: the runs cannot be compared or an option is "
               "out of range. Writes regress.csv and regress.md into NEW_RUN_DIR (atomically, replacing "
               "earlier ones; nothing when NEW_RUN_DIR is under a baselines/ folder); only "
               "--update-baseline writes into BASELINE_RUN_DIR.")
ORDER = 60

PROG = "dpharness regress"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """NEW_RUN_DIR, BASELINE_RUN_DIR and the test's options."""
    parser.add_argument("new_run_dir", metavar="NEW_RUN_DIR",
                        help="run folder to check (results.csv, config.yaml, manifest.json); receives regress.csv and regress.md")
    parser.add_argument("baseline_run_dir", metavar="BASELINE_RUN_DIR",
                        help="run folder of the same config (root seed may differ), e.g. results/baselines/NAME; read only")
    parser.add_argument("--alpha", type=float, default=0.01,
                        help="family-wise error rate over the cells (Holm), in (0, 1); default 0.01")
    parser.add_argument("--tolerance", type=float, default=0.05,
                        help="relative slack: a cell regresses when its mean is significantly worse than "
                             "(1 + tolerance) x the baseline's; in [0, 1), default 0.05")
    parser.add_argument("--update-baseline", action="store_true",
                        help="after the comparison (printed when possible), replace BASELINE_RUN_DIR by the new run's "
                             "results.csv, table.csv, table.md, config.yaml, manifest.json and exit 0 (a deliberate change)")
    parser.add_argument("--json", metavar="PATH", default=None,
                        help="also write the verdict as JSON (schema dpharness.regress/1: every cell's numbers, both runs' "
                             "manifests) to PATH, in an existing folder")
    parser.add_argument("--junit", metavar="PATH", default=None,
                        help="also write JUnit XML to PATH (one test case per cell; a regression fails with its numbers)")
    parser.epilog = ("`%(prog)s power BASELINE_RUN_DIR...` prints instead the smallest degradation each "
                     "baseline cell can detect (see `%(prog)s power --help`).")


def _err(text: str) -> None:
    print(f"{PROG}: {text}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """``dpharness regress NEW_RUN_DIR BASELINE_RUN_DIR [--alpha] [--tolerance] [--update-baseline]``.

    Prints the table, writes ``regress.csv`` and ``regress.md`` into the new run folder (unless it
    is a baseline folder) and returns 0 / 1 / 2 (see :func:`bench.regress.regress`). With
    ``--update-baseline`` the comparison is still printed (if possible), then the new run replaces
    the baseline and the exit code is 0 (the change is deliberate), or 2 if the new run is unusable.
    """
    from dpharness.bench.regress.baseline import is_baseline_location, update_baseline
    from dpharness.bench.regress.compare import regress
    from dpharness.bench.regress.load import RegressionInputError
    from dpharness.bench.regress.machine import write_regress_outputs
    from dpharness.bench.regress.report import REPORT_FILES
    from dpharness.bench.regress.stats import check_levels
    from dpharness.bench.report.verdicts import OutputPathError

    try:
        alpha, tolerance = check_levels(args.alpha, args.tolerance)
    except ValueError as exc:
        _err(f"--{exc}")  # the messages start with the option's name
        return 2
    try:
        json_path, junit_path = _output_files(args)
    except OutputPathError as exc:
        _err(str(exc))
        return 2
    new_dir, base_dir = args.new_run_dir, args.baseline_run_dir
    report = regress(new_dir, base_dir, alpha=alpha, tolerance=tolerance)
    update = bool(getattr(args, "update_baseline", False))

    def finish(code: int, updated: bool = False) -> int:
        """Write --json / --junit (the verdict of this invocation, ``code``) and return ``code``."""
        try:
            for p in write_regress_outputs(report, code, json_path, junit_path, baseline_updated=updated):
                print(f"wrote {p}")
        except OSError as exc:
            _err(f"could not write the verdict files: {exc.strerror or exc}")
            return max(code, 1)
        return code

    if report.exit_code == 2:
        if not update:
            _err(report.message)
            return finish(2)
        if Path(base_dir).exists():
            print(f"note: {report.message}", file=sys.stderr)
        else:
            print(f"note: {base_dir} does not exist yet; creating it", file=sys.stderr)
    else:
        print(report.header())
        print(report.format_table())
        files = " and ".join(REPORT_FILES)
        if is_baseline_location(new_dir):
            print(f"note: {new_dir} is a baseline folder (under baselines/); {files} not written "
                  "(only --update-baseline writes into baselines)", file=sys.stderr)
        elif Path(new_dir).resolve() == Path(base_dir).resolve():
            print(f"note: {new_dir} is also BASELINE_RUN_DIR, which regress only reads; {files} not written",
                  file=sys.stderr)
        else:
            try:
                paths = report.write(new_dir)
                print(f"wrote {', '.join(str(p) for p in paths)}")
            except OSError as exc:
                print(f"warning: could not write the report into {new_dir}: {exc.strerror or exc}", file=sys.stderr)
        print(report.message)
    if update:
        try:
            update_baseline(new_dir, base_dir)
        except (RegressionInputError, OSError) as exc:
            _err(f"cannot update the baseline: {exc}")
            return finish(2)
        print(f"baseline {base_dir} updated from {new_dir} (deliberate change; exit 0)")
        return finish(0, updated=True)
    return finish(report.exit_code)


def _output_files(args: argparse.Namespace) -> tuple[Path | None, Path | None]:
    """``--json`` / ``--junit`` paths, checked before any work (:class:`OutputPathError`)."""
    from dpharness.bench.report.verdicts import check_distinct, check_output_file

    raw = {"--json": getattr(args, "json", None), "--junit": getattr(args, "junit", None)}
    examples = {"--json": "regress.json", "--junit": "regress-junit.xml"}
    paths = {flag: None if v is None else check_output_file(v, flag, examples[flag]) for flag, v in raw.items()}
    check_distinct(paths)
    return paths["--json"], paths["--junit"]
