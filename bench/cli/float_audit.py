"""``dpharness float-audit [NAME ...] [--budget N] [--alpha A] [--seed S] [--witness] [--jobs N] [--out DIR]``:
the float audit of the registered mechanisms, printed as a markdown table.

The command builds the config ``experiment: float_audit`` (:mod:`bench.experiments.float_audit`;
``configs/float_audit.yaml`` is the same survey as a file: ``dpharness run configs/float_audit.yaml``)
and runs it like any other: one run folder (``float_audit.md``, ``float_audit.csv``), an interrupted one resumed when the
same command is run again, and the same table whatever ``--jobs``.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["run", "raw_config"]

NAME = "float-audit"
HELP = "float audit of the registered mechanisms: a pair search with and without floating-point events"
DESCRIPTION = ("Float audit of every registered mechanism: a pair search with and without floating-point "
               "events, on the same seed; prints a markdown table (docs/floating-point.md).")
ORDER = 80


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """NAME... and the searches' budget, level and seed; where and how to run."""
    parser.add_argument("names", nargs="*", help="mechanism names (default: every registered mechanism)")
    parser.add_argument("--budget", type=int, default=1_000_000, help="mechanism calls per search (default 10^6)")
    parser.add_argument("--alpha", type=float, default=1e-3, help="family-wise error of each search (default 1e-3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--witness", action="store_true", help="also print each flagged witness's pair and event")
    parser.add_argument("--jobs", type=int, default=1, help="parallel workers, >= 1 or -1 for all cores "
                        "(the table does not depend on it)")
    parser.add_argument("--out", metavar="DIR", default=None, help="parent folder for the run (default results/)")


def raw_config(names: list[str], *, budget: int, alpha: float, seed: int) -> dict:
    """The config the command runs (written to the run folder as config.yaml)."""
    raw = {"name": "float_audit", "experiment": "float_audit", "seed": int(seed), "budget": int(budget),
           "alpha": float(alpha)}
    if names:
        raw["mechanisms"] = list(names)
    return raw


def run(args: argparse.Namespace) -> int:
    """Print the table (and the witnesses with ``--witness``); the settings, run folder and wall time go to stderr."""
    from dpharness import mechanisms
    from dpharness.bench.cli import UsageError
    from dpharness.bench.cli.run import invoke_run
    from dpharness.bench.config import ConfigError, load_config
    from dpharness.bench.experiments.float_audit import table, witnesses

    a = args
    if a.jobs == 0 or a.jobs < -1:
        print(f"error: --jobs must be a positive integer or -1 (all cores), got {a.jobs}", file=sys.stderr)
        return 2
    unknown = [n for n in a.names if n not in mechanisms.available()]
    if unknown:
        raise UsageError(f"unknown mechanism(s) {', '.join(unknown)}; accepted: {', '.join(mechanisms.available())}")
    try:
        cfg = load_config(raw_config(a.names, budget=a.budget, alpha=a.alpha, seed=a.seed))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    res, code = invoke_run(cfg, jobs=a.jobs, out=a.out)
    if res is None:
        return code
    print(table(res.results, cfg.spec.names))
    if a.witness:
        for w in witnesses(res.results):
            print(f"\n{w}")
    print(f"\nbudget {a.budget} calls per search, alpha {a.alpha}, seed {a.seed}; run folder {res.run_dir} "
          f"({res.computed} tasks computed, {res.reused} reused); wall time {res.wall_seconds:.0f} s",
          file=sys.stderr)
    return res.exit_code
