"""``dpharness regress power BASELINE_RUN_DIR...`` (also ``python -m dpharness.bench.regress power ...``):
the smallest degradation each baseline cell detects (:func:`bench.regress.power.power_table`).

Reads the run folders, writes nothing. Exit 0, or 2 with one message for unusable input.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["run"]

NAME = "power"
PARENT = "regress"
HELP = "smallest degradation each baseline cell can detect"
DESCRIPTION = ("Per cell of each baseline: the smallest relative degradation of the mean "
               "detected with the given power by a re-run with another seed (Welch; z-test "
               "for one Monte Carlo mean per cell), checked by a bootstrap simulation.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """BASELINE_RUN_DIR... and the analysis' options."""
    parser.add_argument("baselines", nargs="+", metavar="BASELINE_RUN_DIR", help="run folder(s) of baselines")
    parser.add_argument("--alpha", type=float, default=0.01,
                        help="family-wise error rate over the cells, in (0, 1) (Holm; default 0.01)")
    parser.add_argument("--tolerance", type=float, default=0.05,
                        help="relative slack before a change counts, in [0, 1) (default 0.05)")
    parser.add_argument("--power", type=float, default=0.8, help="detection probability, in (0, 1) (default 0.8)")
    parser.add_argument("--reps", type=int, default=2000, help="simulation replicates per cell, >= 1 (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulation (default 0)")
    parser.add_argument("--paired-with", metavar="RUN_DIR", default=None,
                        help="a same-seed run of an equivalent implementation with different draws: adds the "
                             "paired (same-seed) figures; needs exactly one BASELINE_RUN_DIR")


def _power_lines(t: Any) -> list[str]:
    test = "z-test on the Monte Carlo means" if (t["n"] == 1).all() else "Welch"
    d = t["detectable_pct"]
    lines = [f"detectable degradation, re-run with another seed ({test}): {d.min():.1f}% (most sensitive cell) "
             f"to {d.max():.1f}% (least sensitive); median {d.median():.1f}%"]
    if "paired_detectable_pct" in t:
        dp = t["paired_detectable_pct"]
        lines.append(f"detectable degradation, same seed (paired): {dp.min():.1f}% to {dp.max():.1f}%; "
                     f"median {dp.median():.1f}%")
    return lines


def run(args: argparse.Namespace) -> int:
    """Print the power table of every baseline; exit 0, or 2 with one message for unusable input."""
    from dpharness.bench.cli import UsageError
    from dpharness.bench.regress.load import RegressionInputError
    from dpharness.bench.regress.power import power_table
    from dpharness.bench.regress.stats import check_levels
    from dpharness.bench.report.tables import format_text_table

    a = args
    prog = getattr(a, "prog", "dpharness regress power")
    if a.paired_with is not None and len(a.baselines) != 1:
        raise UsageError("--paired-with needs exactly one BASELINE_RUN_DIR")
    for name, value, ok, valid in (("power", a.power, 0 < a.power < 1, "in (0, 1)"),
                                   ("reps", a.reps, a.reps >= 1, "an integer >= 1")):
        if not ok:  # NaN fails the comparison too
            print(f"{prog}: --{name} must be {valid}, got {value!r}", file=sys.stderr)
            return 2
    try:
        check_levels(a.alpha, a.tolerance)
    except ValueError as exc:
        print(f"{prog}: --{exc}", file=sys.stderr)
        return 2
    for b in a.baselines:
        try:
            t = power_table(b, alpha=a.alpha, tolerance=a.tolerance, power=a.power, reps=a.reps, seed=a.seed,
                            paired_with=a.paired_with)
        except (RegressionInputError, ValueError) as exc:
            print(f"{prog}: {b}: {exc}", file=sys.stderr)
            return 2
        print(f"{b}: alpha {a.alpha:g} (Holm over {len(t)} cells, one degraded cell), tolerance {a.tolerance:g}, "
              f"power {a.power:g}")
        print(format_text_table(t, floatfmt=".3g"))
        print("\n".join(_power_lines(t)))
        print()
    return 0
