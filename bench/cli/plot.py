"""``dpharness plot RUN_DIR [--out DIR]``: rebuild a run's figures, print their paths.

The work (checking the folder, summarizing ``results.csv``, drawing) is done by
:mod:`dpharness.bench.report.plots`; this handler prints the paths, or one message and exits 2
(:class:`~dpharness.bench.report.plots.PlotInputError`, :class:`~dpharness.bench.config.ConfigError`;
:class:`~dpharness.bench.report.plots.NothingToDraw` when no task finished or no figure applies, with
nothing written).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

__all__ = ["run"]

NAME = "plot"
HELP = "rebuild a run's figures from its results.csv"
DESCRIPTION = ("Redraw a finished run's figures from its results.csv and config.yaml "
               "(into RUN_DIR/figures, or --out DIR). Refused (exit 2): a folder that is not a run "
               "folder, a damaged manifest.json, a results.csv missing tasks of the config "
               "(truncated or edited), and a committed baseline under results/baselines/ "
               "without --out.")
ORDER = 40


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """RUN_DIR and ``--out``."""
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (holds config.yaml, manifest.json, results.csv)")
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="write the figures into DIR (created if missing) instead of RUN_DIR/figures; "
                        "required for a committed baseline")


def _out_dir(out: str) -> Path:
    """The --out folder, created if missing; PlotInputError when it cannot be written."""
    from dpharness.bench.report.plots import PlotInputError

    p = Path(out)
    if p.exists() and not p.is_dir():
        raise PlotInputError(f"--out {out}: is not a directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PlotInputError(f"--out {out}: cannot create it ({exc.strerror or exc})") from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise PlotInputError(f"--out {out}: is not writable")
    return p


def run(args: argparse.Namespace) -> int:
    """``dpharness plot RUN_DIR [--out DIR]``: rebuild a run's figures from its results.csv."""
    from dpharness.bench.config import ConfigError
    from dpharness.bench.report.plots import NothingToDraw, PlotInputError, check_run_folder, draw_figures, is_baseline

    run_dir = Path(args.run_dir)
    out = getattr(args, "out", None)
    made_out = False
    try:
        cfg, results, _ = check_run_folder(run_dir)
        if out is None and is_baseline(run_dir):
            raise PlotInputError(f"RUN_DIR {run_dir}: is a committed regression baseline (results/baselines/), "
                                 "which holds no figures; pass --out DIR to write the figures elsewhere")
        made_out = out is not None and not Path(out).exists()
        fig_dir = _out_dir(out) if out is not None else run_dir / "figures"
        try:
            paths = draw_figures(cfg, results, fig_dir)
        except NothingToDraw as exc:
            if made_out:  # leave no empty --out folder behind
                try:
                    Path(out).rmdir()
                except OSError:
                    pass
            raise NothingToDraw(f"RUN_DIR {run_dir}: {exc}") from None
        except OSError as exc:
            where = f"--out {out}" if out is not None else str(fig_dir)
            raise PlotInputError(f"{where}: cannot write the figures ({exc.strerror or exc})") from None
    except (PlotInputError, ConfigError) as exc:
        print(f"dpharness plot: {exc}", file=sys.stderr)
        return 2
    errors = int((results["status"] != "ok").sum()) if "status" in results else 0
    if errors:
        print(f"note: {errors} row(s) of {run_dir / 'results.csv'} are failed tasks (status=error); "
              "the figures show the cells that finished, as the run did", file=sys.stderr)
    for p in paths:
        print(p)
    return 0
