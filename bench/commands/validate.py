"""``dpharness validate CONFIG...``: check configs exactly as ``run``/``audit`` would, run nothing."""

from __future__ import annotations

import argparse
import sys

from ..config import ConfigError, load_config, read_yaml

__all__ = ["cmd_validate"]


def cmd_validate(args: argparse.Namespace) -> int:
    """``dpharness validate CONFIG...``: run, for every config and its quick tier, exactly the
    checks ``run``/``audit`` make before computing (parse, then the kind's ``check(spec)``:
    building every mechanism, probing pairs) and expand the tasks, without running anything.
    Prints ``ok ...`` per valid file and every mistake of an invalid one; exit 2 if any is invalid."""
    bad = 0
    for path in args.configs:
        try:
            cfg = load_config(path)  # audit configs too (kind `audit`, selected by their `audits:` key)
            quick_raw = read_yaml(path).get("quick")
            tiers = [cfg] + ([load_config(path, quick=True)] if isinstance(quick_raw, dict) and quick_raw else [])
            counts = []
            for c in tiers:
                if hasattr(c.module, "check"):  # exactly the checks `run` makes before computing
                    c.module.check(c.spec)
                counts.append(len(c.module.tasks(c.spec)))
            extra = f", quick: {counts[1]} tasks" if len(counts) > 1 else ""
            print(f"ok  {path}: {cfg.name} ({cfg.experiment}, {counts[0]} tasks{extra}, hash {cfg.hash})")
        except ConfigError as exc:
            bad += 1
            print(f"error: {exc}", file=sys.stderr)
    return 2 if bad else 0
