"""Command line of the regression check.

``dpharness regress NEW_RUN_DIR BASELINE_RUN_DIR [--alpha A] [--tolerance T] [--update-baseline]
[--json PATH] [--junit PATH]`` (:func:`cmd_regress`, dispatched by :mod:`bench.cli`) prints the
comparison and exits 0 (no significant regression), 1 (at least one), 2 (unusable input: one
message, no traceback). ``--json`` / ``--junit`` (:mod:`bench.regress.machine`) write the verdict
for CI; their paths are checked before anything is read.
It writes ``regress.csv`` and ``regress.md`` into NEW_RUN_DIR (atomically, replacing earlier
ones) -- never into a folder under ``baselines/``; only ``--update-baseline`` writes there.

``python -m dpharness.bench.regress power BASELINE_RUN_DIR...`` (:func:`main`) prints the
smallest degradation each baseline cell detects (:func:`bench.regress.power.power_table`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

import pandas as pd

from dpharness.bench.tables import format_text_table
from dpharness.bench.regress.baseline import is_baseline_location, update_baseline
from dpharness.bench.regress.compare import regress
from dpharness.bench.verdicts import OutputPathError, check_distinct, check_output_file
from dpharness.bench.regress.load import RegressionInputError
from dpharness.bench.regress.machine import write_regress_outputs
from dpharness.bench.regress.power import power_table
from dpharness.bench.regress.report import REPORT_FILES
from dpharness.bench.regress.stats import check_levels

__all__ = ["cmd_regress", "main", "build_power_parser"]

PROG = "dpharness regress"


def _err(text: str) -> None:
    print(f"{PROG}: {text}", file=sys.stderr)


def cmd_regress(args: argparse.Namespace) -> int:
    """``dpharness regress NEW_RUN_DIR BASELINE_RUN_DIR [--alpha] [--tolerance] [--update-baseline]``.

    Prints the table, writes ``regress.csv`` and ``regress.md`` into the new run folder (unless it
    is a baseline folder) and returns 0 / 1 / 2 (see :func:`bench.regress.regress`). With
    ``--update-baseline`` the comparison is still printed (if possible), then the new run replaces
    the baseline and the exit code is 0 (the change is deliberate), or 2 if the new run is unusable.
    """
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
    raw = {"--json": getattr(args, "json", None), "--junit": getattr(args, "junit", None)}
    examples = {"--json": "regress.json", "--junit": "regress-junit.xml"}
    paths = {flag: None if v is None else check_output_file(v, flag, examples[flag]) for flag, v in raw.items()}
    check_distinct(paths)
    return paths["--json"], paths["--junit"]


# --------------------------------------------------------------------------------------------
# python -m dpharness.bench.regress power
# --------------------------------------------------------------------------------------------


def build_power_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m dpharness.bench.regress",
        description="Power analysis of `dpharness regress` on committed baselines. Reads the run "
                    "folders, writes nothing.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pw = sub.add_parser("power", help="smallest degradation each baseline cell can detect",
                        description="Per cell of each baseline: the smallest relative degradation of the mean "
                                    "detected with the given power by a re-run with another seed (Welch; z-test "
                                    "for one Monte Carlo mean per cell), checked by a bootstrap simulation.")
    pw.add_argument("baselines", nargs="+", metavar="BASELINE_RUN_DIR", help="run folder(s) of baselines")
    pw.add_argument("--alpha", type=float, default=0.01,
                    help="family-wise error rate over the cells, in (0, 1) (Holm; default 0.01)")
    pw.add_argument("--tolerance", type=float, default=0.05,
                    help="relative slack before a change counts, in [0, 1) (default 0.05)")
    pw.add_argument("--power", type=float, default=0.8, help="detection probability, in (0, 1) (default 0.8)")
    pw.add_argument("--reps", type=int, default=2000, help="simulation replicates per cell, >= 1 (default 2000)")
    pw.add_argument("--seed", type=int, default=0, help="seed of the simulation (default 0)")
    pw.add_argument("--paired-with", metavar="RUN_DIR", default=None,
                    help="a same-seed run of an equivalent implementation with different draws: adds the "
                         "paired (same-seed) figures; needs exactly one BASELINE_RUN_DIR")
    return p


def _power_lines(t: pd.DataFrame) -> list[str]:
    test = "z-test on the Monte Carlo means" if (t["n"] == 1).all() else "Welch"
    d = t["detectable_pct"]
    lines = [f"detectable degradation, re-run with another seed ({test}): {d.min():.1f}% (most sensitive cell) "
             f"to {d.max():.1f}% (least sensitive); median {d.median():.1f}%"]
    if "paired_detectable_pct" in t:
        dp = t["paired_detectable_pct"]
        lines.append(f"detectable degradation, same seed (paired): {dp.min():.1f}% to {dp.max():.1f}%; "
                     f"median {dp.median():.1f}%")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dpharness.bench.regress power BASELINE_RUN_DIR...``: exit 0, or 2 with one
    message for unusable input."""
    p = build_power_parser()
    a = p.parse_args(argv)
    if a.paired_with is not None and len(a.baselines) != 1:
        p.error("--paired-with needs exactly one BASELINE_RUN_DIR")
    for name, value, ok, valid in (("power", a.power, 0 < a.power < 1, "in (0, 1)"),
                                   ("reps", a.reps, a.reps >= 1, "an integer >= 1")):
        if not ok:  # NaN fails the comparison too
            print(f"{p.prog} power: --{name} must be {valid}, got {value!r}", file=sys.stderr)
            return 2
    try:
        check_levels(a.alpha, a.tolerance)
    except ValueError as exc:
        print(f"{p.prog} power: --{exc}", file=sys.stderr)
        return 2
    for b in a.baselines:
        try:
            t = power_table(b, alpha=a.alpha, tolerance=a.tolerance, power=a.power, reps=a.reps, seed=a.seed,
                            paired_with=a.paired_with)
        except (RegressionInputError, ValueError) as exc:
            print(f"{p.prog} power: {b}: {exc}", file=sys.stderr)
            return 2
        print(f"{b}: alpha {a.alpha:g} (Holm over {len(t)} cells, one degraded cell), tolerance {a.tolerance:g}, "
              f"power {a.power:g}")
        print(format_text_table(t, floatfmt=".3g"))
        print("\n".join(_power_lines(t)))
        print()
    return 0
