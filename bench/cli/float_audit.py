"""``dpharness float-audit [NAME ...] [--budget N] [--alpha A] [--seed S] [--witness]``: the float audit
of the registered mechanisms (:mod:`bench.audits.float_registry`), printed as a markdown table.

Why a command and not an audit config: the audit config format cannot say "skip the mechanisms
with finite outputs" (they have no float events: not applicable), cannot give the on and off
searches of one mechanism the same seed, and judges every flag as a failure -- whereas this is a
survey whose table (docs/floating-point.md) is reproduced bit for bit by the same command.
"""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["run"]

NAME = "float-audit"
HELP = "float audit of the registered mechanisms: a pair search with and without floating-point events"
DESCRIPTION = ("Float audit of every registered mechanism: a pair search with and without floating-point "
               "events, on the same seed; prints a markdown table (docs/floating-point.md).")
ORDER = 80


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """NAME... and the searches' budget, level and seed."""
    parser.add_argument("names", nargs="*", help="mechanism names (default: every registered mechanism)")
    parser.add_argument("--budget", type=int, default=1_000_000, help="mechanism calls per search (default 10^6)")
    parser.add_argument("--alpha", type=float, default=1e-3, help="family-wise error of each search (default 1e-3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--witness", action="store_true", help="also print each flagged witness's pair and event")


def run(args: argparse.Namespace) -> int:
    """Print the table (and the witnesses with ``--witness``); the settings and wall time go to stderr."""
    from dpharness import mechanisms
    from dpharness.bench.audits.float_registry import float_audit, table
    from dpharness.bench.cli import UsageError

    a = args
    unknown = [n for n in a.names if n not in mechanisms.available()]
    if unknown:
        raise UsageError(f"unknown mechanism(s) {', '.join(unknown)}; accepted: {', '.join(mechanisms.available())}")
    t0 = time.perf_counter()
    rows = float_audit(a.names or None, budget=a.budget, alpha=a.alpha, seed=a.seed)
    print(table(rows))
    if a.witness:
        for r in rows:
            for side in ("on", "off"):
                res = r[side]
                if res is not None and res["violated"]:
                    print(f"\n{r['name']} (float events {side}): pair {res['pair']!r}\n  event: {res['event']}")
    print(f"\nbudget {a.budget} calls per search, alpha {a.alpha}, seed {a.seed}; "
          f"wall time {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0
