"""``dpharness validate CONFIG... [--json PATH]``: check configs exactly as ``run``/``audit`` would, run nothing."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["run", "SCHEMA"]

NAME = "validate"
HELP = "check configs (including building every mechanism) without running"
ORDER = 30

#: the ``schema`` of ``--json`` (``bench/schemas/validate.json``)
SCHEMA = "dpharness.validate/1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """CONFIG... and ``--json``."""
    parser.add_argument("configs", nargs="+", metavar="CONFIG",
                        help="experiment or audit configs (YAML); every mistake of each file is listed; exit 2 if any is invalid")
    parser.add_argument("--json", metavar="PATH", default=None,
                        help="also write the verdict as JSON (schema dpharness.validate/1: one entry per config with "
                             "its errors) to PATH, in an existing folder")


def _errors(exc: Exception) -> list[str]:
    """The mistakes of one file, one per entry (a ConfigError lists them one per line)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if len(lines) > 1 and lines[0].endswith("mistakes:"):  # the "<file>: N mistakes:" heading
        lines = [f"{lines[0].rsplit(':', 2)[0]}: {ln}" for ln in lines[1:]]
    return lines or [type(exc).__name__]


def run(args: argparse.Namespace) -> int:
    """``dpharness validate CONFIG...``: run, for every config and its quick tier, exactly the
    checks ``run``/``audit`` make before computing (parse, then the kind's ``check(spec)``:
    building every mechanism, probing pairs) and expand the tasks, without running anything.
    Prints ``ok ...`` per valid file and every mistake of an invalid one; exit 2 if any is invalid.
    A file whose only problem is a missing optional extra (e.g. ``peers`` for peer audits) prints
    ``skip ...`` with the install hint and does not make the command fail.
    ``--json PATH`` also writes one entry per config (schema ``dpharness.validate/1``)."""
    from dpharness.bench.config import ConfigError, load_config, read_yaml
    from dpharness.bench.report.verdicts import OutputPathError, check_output_file

    json_path = None
    if getattr(args, "json", None) is not None:
        try:
            json_path = check_output_file(args.json, "--json", "validate.json")
        except OutputPathError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    bad = skipped = 0
    entries: list[dict[str, Any]] = []
    for path in args.configs:
        entry: dict[str, Any] = {"path": str(path), "valid": False, "errors": [], "name": None, "experiment": None,
                                 "hash": None, "tasks": None, "quick_tasks": None}
        try:
            raw = read_yaml(path)  # read once for both tiers
            cfg = load_config(path, raw=raw)  # audit configs too (kind `audit`, selected by their `audits:` key)
            quick_raw = raw.get("quick")
            tiers = [cfg] + ([load_config(path, quick=True, raw=raw)] if isinstance(quick_raw, dict) and quick_raw else [])
            counts = []
            for c in tiers:
                if hasattr(c.module, "check"):  # exactly the checks `run` makes before computing
                    c.module.check(c.spec)
                counts.append(len(c.module.tasks(c.spec)))
            extra = f", quick: {counts[1]} tasks" if len(counts) > 1 else ""
            print(f"ok  {path}: {cfg.name} ({cfg.experiment}, {counts[0]} tasks{extra}, hash {cfg.hash})")
            entry.update(valid=True, name=cfg.name, experiment=cfg.experiment, hash=cfg.hash, tasks=counts[0],
                         quick_tasks=counts[1] if len(counts) > 1 else None)
        except ConfigError as exc:
            extra = getattr(exc, "extra", None)
            if extra is not None:
                # every other check passed; only an optional extra is missing: say so, and do not
                # fail the other files' verdicts (`audit`/`run` of this file still refuse to start)
                skipped += 1
                print(f"skip {path}: valid, but its mechanisms need the optional '{extra}' extra to be built: "
                      f"{str(exc).split(': ', 1)[-1]}")
                entry.update(valid=True, skipped=f"needs the optional '{extra}' extra")
            else:
                bad += 1
                print(f"error: {exc}", file=sys.stderr)
                entry["errors"] = _errors(exc)
        entries.append(entry)
    code = 2 if bad else 0
    if json_path is not None:
        from dpharness.bench.report.verdicts import run_manifest, verdict_block, write_json

        msg = f"{bad} of {len(entries)} configs invalid" if bad else f"all {len(entries)} configs valid"
        if skipped:
            msg += f" ({skipped} not fully checked: an optional extra is missing)"
        doc = {"schema": SCHEMA, "verdict": verdict_block(code, msg, configs=len(entries), invalid=bad),
               "configs": entries, "manifest": run_manifest()}
        try:
            write_json(json_path, doc, "validate")
        except OSError as exc:
            print(f"error: could not write {json_path}: {exc.strerror or exc}", file=sys.stderr)
            return max(code, 1)
    return code
