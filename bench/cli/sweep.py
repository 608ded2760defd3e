"""``dpharness sweep LIBRARY [--release-check] [--budget N] [--only ID ...] [--jobs N] [--backend B]
[--scheduler ADDR] [--out DIR] [--seed S] [--family-alpha A] [--resume RUN_DIR]``.

Audits every ε-claiming public name of the installed release of ``LIBRARY`` (``diffprivlib``,
``opendp``, ``pydp``, or a catalogue YAML of your own) from its catalogue: each entry built with its
example parameters and searched with no pair given, twice (real-valued law, released doubles).
One run folder like every other command's (``<out>/sweep_<library>/<UTC>_<hash>/``: report.md,
sweep.csv, sweep.json, results.csv, figures/claimed_vs_certified.png, manifest.json); re-running the
same command resumes it. Names the catalogue cannot build are rows with the reason; names of the
installed release missing from the catalogue are rows "not in catalogue".

``--release-check`` audits nothing: it enumerates the installed release, builds every entry and
makes one release on its first generated pair, and prints what would be audited (exit 1 when a
name is missing from the catalogue or an entry does not build).

Exit status: 0 when nothing was flagged and no task failed; 1 when a function was flagged (a
violation of its own claim), a task failed or the catalogue states a relation its adapter does not
audit; 2 on a usage error (unknown library, bad catalogue); 130 when interrupted.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

__all__ = ["run", "release_check"]

NAME = "sweep"
HELP = "audit every ε-claiming function of an installed library release (diffprivlib, opendp, pydp) from its catalogue"
ORDER = 75


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("library", metavar="LIBRARY", help="diffprivlib, opendp, pydp, or a catalogue YAML file")
    parser.add_argument("--release-check", action="store_true",
                        help="audit nothing: list the release's names, build every entry once, report what is missing")
    parser.add_argument("--budget", type=int, default=None, help="calls per search (default 20000; an entry's own "
                        "budget: wins)")
    parser.add_argument("--only", nargs="+", metavar="ID", default=None,
                        help="sweep these entry ids (or public names; * matches any text) only")
    parser.add_argument("--family-alpha", type=float, default=None,
                        help="family-wise error of the whole sweep, split over its audits (default 0.05)")
    parser.add_argument("--jobs", type=int, default=1, help="parallel workers, >= 1 or -1 for all cores "
                        "(results do not depend on it)")
    parser.add_argument("--backend", choices=["loky", "threading", "dask"], default="loky")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None, help="dask scheduler address")
    parser.add_argument("--out", metavar="DIR", default=None, help="parent folder for the run (default results/)")
    parser.add_argument("--seed", type=int, default=None, help="root seed (default 0)")
    parser.add_argument("--resume", metavar="RUN_DIR", default=None, help="resume this run folder explicitly")


def _release(library: str) -> str:
    """The installed version of the library a catalogue covers ("" when it is not installed)."""
    from importlib import metadata

    from dpharness import adapters

    lib = next((lib for lib in adapters.LIBRARIES if lib.root == library), None)
    try:
        return metadata.version(lib.dist if lib else library)
    except metadata.PackageNotFoundError:
        return ""


def release_check(spec: Any) -> tuple[list[dict], list[str]]:
    """Build every selected entry of ``spec`` and make one release on its first generated pair:
    rows (id, function, status, seconds, reason) and the release's names missing from the catalogue."""
    import numpy as np

    from dpharness import verifiers
    from dpharness.bench.audits.build import build_mechanism
    from dpharness.bench.sweep.report import missing_api

    rows = []
    for e in spec.selected():
        if e.skip:
            rows.append({"id": e.id, "function": e.api, "status": "skipped", "seconds": 0.0, "reason": e.skip})
            continue
        a = spec.audits.audit(f"{e.id}.{spec.passes[0]}")
        t0 = time.perf_counter()
        try:
            mech, _, _ = build_mechanism(a.mechanism, a.import_paths)
            pairs = verifiers.pairs_for(mech, a.generator)
            mech.sample(pairs[0].d1, 2, np.random.default_rng(0))
            status, reason = "builds", f"{len(pairs)} pairs; relation {mech.claim.neighbours}"
            if str(mech.claim.neighbours) != e.relation:
                status, reason = "relation differs", (f"the catalogue states {e.relation} but the adapter audits "
                                                      f"{mech.claim.neighbours}")
        except Exception as exc:  # the library's code may raise anything on the catalogue's parameters
            status, reason = "does not build", f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"
        rows.append({"id": e.id, "function": e.api, "status": status, "seconds": time.perf_counter() - t0,
                     "reason": reason})
    missing, note = missing_api(spec)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return rows, missing


def run(args: argparse.Namespace) -> int:
    """Entry point of ``dpharness sweep``."""
    from pathlib import Path

    from dpharness.bench.cli.audit import print_verdict, spread_small_runs
    from dpharness.bench.cli.run import invoke_run
    from dpharness.bench.config import ConfigError, load_config
    from dpharness.bench.sweep import catalogue as cat
    from dpharness.bench.sweep.plan import raw_config

    jobs = args.jobs
    if jobs == 0 or jobs < -1:
        print(f"error: --jobs must be a positive integer or -1 (all cores), got {jobs}", file=sys.stderr)
        return 2
    lib = args.library
    if lib not in cat.shipped() and not Path(lib).is_file():
        print(f"error: LIBRARY must be one of {', '.join(cat.shipped())} or a catalogue YAML file, got {lib!r}",
              file=sys.stderr)
        return 2
    try:
        probe = cat.load(cat.shipped()[lib] if lib in cat.shipped() else lib)
        raw = raw_config(lib, budget=args.budget, seed=args.seed or 0, family_alpha=args.family_alpha,
                         only=args.only, release=_release(probe.library), base_dir=Path.cwd())
        cfg = load_config(raw)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    spec = cfg.spec
    if not spec.release:
        print(f"error: {probe.library} is not installed: nothing to sweep (pip install 'dpharness[peers]')",
              file=sys.stderr)
        return 2
    if probe.written_for and probe.written_for != spec.release:
        print(f"note: the catalogue was written for {probe.library} {probe.written_for}; installed: {spec.release}",
              file=sys.stderr)
    if args.release_check:
        rows, missing = release_check(spec)
        for r in rows:
            print(f"{r['status']:>16}  {r['function']:<55} {r['seconds']:6.2f} s  {r['reason']}")
        for n in missing:
            print(f"{'not in catalogue':>16}  {n}")
        bad = [r for r in rows if r["status"] in ("does not build", "relation differs")]
        print(f"{probe.library} {spec.release}: {len(rows)} entries ({sum(r['status'] == 'builds' for r in rows)} "
              f"build, {sum(r['status'] == 'skipped' for r in rows)} skipped, {len(bad)} do not), {len(missing)} "
              "names missing from the catalogue")
        return 1 if bad or missing else 0
    n = len(spec.audits.audits)
    print(f"sweep {probe.library} {spec.release}: {len(spec.selected())} entries, {n} audits, budget {spec.budget}, "
          f"jobs={jobs}, seed={cfg.seed}", file=sys.stderr)
    cfg, outer = spread_small_runs(cfg, jobs, args.backend, args.scheduler)
    res, code = invoke_run(cfg, jobs=outer, backend=args.backend, scheduler=args.scheduler, out=args.out,
                           resume=args.resume)
    if res is None:
        return code
    return print_verdict(res, jobs)
