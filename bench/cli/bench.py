"""``dpharness bench`` (also ``python -m dpharness.bench.perf``): parse, check, run, print.

The benchmarks themselves: :mod:`bench.perf`. Options: ``--quick`` (CI tier),
``--json PATH``, ``--only SECTION...``, ``--max-n N``, ``--repeats R``. Every option and the
output path are checked before anything is timed.

``--baseline OLD.json [--tolerance T] [--alpha A]`` applies the performance gate (:mod:`bench.perf.gate`).

Exit codes: 0 the benchmark ran and its results were written (and the gate, if any, passed); 2
bad input (an option value, a ``--json`` path that cannot be written, a ``--baseline`` that is not
a usable earlier run -- one message, nothing timed, nothing written); 1 a significant slowdown
against ``--baseline`` (the JSON is written, with the gate's verdict), or the results could not be
written after the run (disk full); 130 interrupted (nothing written). The median speed goal is
reported, not gated.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

__all__ = ["run", "parse_count", "parse_sections", "plan_from_args"]

NAME = "bench"
HELP = "performance benchmarks against floors and peer libraries"
DESCRIPTION = ("Time dpharness against physical floors and peer libraries; print a ratio "
               "table, write JSON rows and a scaling figure. Exit codes: 0 ok, 2 bad input "
               "(nothing is timed), 1 a significant slowdown against --baseline (also: results "
               "could not be written after the run).")
ORDER = 70


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The tier, the sections and sizes, the output and the performance gate."""
    parser.add_argument("--quick", action="store_true", help="CI tier: tiny sizes and few repeats (well under a minute)")
    parser.add_argument("--json", metavar="PATH", default=None,
                        help="JSON file to write, in an existing folder (default results/perf/bench_<UTC>.json); "
                        "the figure goes next to it as <stem>_scaling.png")
    parser.add_argument("--only", nargs="+", metavar="SECTION", default=None,
                        help="run only these sections: median, finite, table1, verifier")
    parser.add_argument("--max-n", metavar="N", default=None,
                        help="largest median n (and draws per dataset of the draws section), a positive integer such as 1e6 "
                             "(the full tier goes to 1e7)")
    parser.add_argument("--repeats", metavar="R", default=None,
                        help="repetitions of the median section, a positive integer (default 9; --quick 3)")
    parser.add_argument("--baseline", metavar="OLD.json", default=None,
                        help="performance gate: compare each benchmark's per-repetition ratios to its floor with those "
                             "of an earlier `dpharness bench` JSON (one-sided Welch t-test per benchmark, Holm over "
                             "benchmarks); exit 1 on a significant slowdown beyond --tolerance")
    parser.add_argument("--tolerance", metavar="T", default=None,
                        help="relative slack of the gate: a benchmark fails when its ratio is significantly above "
                             "(1 + T) x the baseline's; in [0, 1), default 0.25 (needs --baseline)")
    parser.add_argument("--alpha", metavar="A", default=None,
                        help="family-wise error rate of the gate over the benchmarks (Holm), in (0, 1); default 0.01 "
                             "(needs --baseline)")


def parse_count(value: Any, flag: str) -> int:
    """A positive integer from the command line; ``1e6`` is accepted, ``1.5``/``0``/``nan`` are not."""
    from dpharness.bench.perf.plan import BenchInputError

    if isinstance(value, bool):
        raise BenchInputError(f"{flag} must be a positive integer, got {value!r}")
    if isinstance(value, int):
        v = value
    else:
        text = str(value).strip().replace("_", "")
        try:
            x = float(text)
        except ValueError:
            raise BenchInputError(f"{flag} must be a positive integer such as 1000 or 1e6, got {value!r}") from None
        if not math.isfinite(x) or not x.is_integer():
            raise BenchInputError(f"{flag} must be a positive integer such as 1000 or 1e6, got {value!r}")
        v = int(x)
    if v <= 0:
        raise BenchInputError(f"{flag} must be > 0, got {value!r}")
    return v


def parse_sections(values: Sequence[str]) -> tuple[str, ...]:
    """Section names from ``--only`` (space- or comma-separated), in the benchmark's order."""
    from dpharness.bench.perf.plan import SECTIONS, BenchInputError

    names = [x.strip() for v in values for x in str(v).split(",") if x.strip()]
    if not names:
        raise BenchInputError(f"--only needs at least one section: {', '.join(SECTIONS)}")
    for name in names:
        if name not in SECTIONS:
            from dpharness.bench.config import did_you_mean

            raise BenchInputError(f"--only: unknown section {name!r}{did_you_mean(name, SECTIONS)}; "
                                  f"valid sections: {', '.join(SECTIONS)}")
    return tuple(s for s in SECTIONS if s in names)


def plan_from_args(args: argparse.Namespace) -> Any:
    """The :class:`bench.perf.plan.Plan` of the parsed options (:class:`bench.perf.plan.BenchInputError`
    if one is bad)."""
    from dpharness.bench.perf.plan import BenchInputError, full_plan, quick_plan

    plan = quick_plan() if getattr(args, "quick", False) else full_plan()
    only = getattr(args, "only", None)
    if only is not None:
        plan = replace(plan, sections=parse_sections(only))
    max_n = getattr(args, "max_n", None)
    if max_n is not None:
        cap = parse_count(max_n, "--max-n")
        kept = tuple(n for n in plan.median_ns if n <= cap)
        if not kept:
            raise BenchInputError(f"--max-n {max_n} is below the smallest median n of this tier "
                                  f"({min(plan.median_ns):g}); give --max-n >= {min(plan.median_ns)}")
        # the draws section's one size is capped too (its full size is minutes of a slow black box)
        plan = replace(plan, median_ns=kept, draws_per_dataset=min(plan.draws_per_dataset, cap))
    repeats = getattr(args, "repeats", None)
    if repeats is not None:
        r = parse_count(repeats, "--repeats")
        plan = replace(plan, repeats=r, min_repeats=min(plan.min_repeats, r))
    return plan


def _print_line(msg: str) -> None:
    print(msg, flush=True)


def run(args: argparse.Namespace) -> int:
    """``dpharness bench [--quick] [--json PATH] [--only SECTION...] [--max-n N] [--repeats R]``;
    exit codes in the module docstring."""
    from dpharness.bench.perf.gate import format_gate, load_baseline, parse_levels
    from dpharness.bench.perf.plan import BenchInputError
    from dpharness.bench.perf.report import format_summary
    from dpharness.bench.perf.run import output_paths, run_bench_to

    baseline_arg = getattr(args, "baseline", None)
    try:
        plan = plan_from_args(args)
        tolerance, alpha = parse_levels(getattr(args, "tolerance", None), getattr(args, "alpha", None),
                                        baseline_arg is not None)
        baseline = load_baseline(baseline_arg, plan) if baseline_arg is not None else None
        paths = output_paths(getattr(args, "json", None), plan.quick, what="--json")
        if baseline_arg is not None and paths[0].resolve() == pathlib.Path(baseline_arg).resolve():
            raise BenchInputError(f"--json: {paths[0]} is also the --baseline file; write the new run elsewhere")
    except BenchInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        doc = run_bench_to(plan, paths, log=_print_line, progress=True, baseline=baseline,
                           baseline_path=str(baseline_arg or ""), tolerance=tolerance, alpha=alpha)
    except KeyboardInterrupt:
        print("interrupted; no results were written", file=sys.stderr)
        return 130
    except OSError as exc:  # checked writable before the run; the disk filled up or similar
        print(f"error: the results could not be written to {paths[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print()
    print(format_summary(doc, paths[0]))
    if doc.get("gate") is not None:
        print()
        print(format_gate(doc["gate"]))
    return int(doc["verdict"]["exit_code"])

