"""Committed baselines: where they live, and replacing one deliberately (``--update-baseline``).

Baselines are run folders under a folder named ``baselines`` (the project's are
``results/baselines/<config name>/``). Nothing but ``--update-baseline`` writes there: the
comparison report goes into the *new* run folder, and is not written at all when that folder is
itself a baseline.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from dpharness.bench.regress.load import BASELINE_FILES, RegressionInputError, load_run

__all__ = ["update_baseline", "is_baseline_location"]


def _identity(run: Path) -> tuple[str, tuple[str, ...]]:
    """(experiment kind, cell key columns) of a run folder, read from its config and manifest."""
    import json

    import yaml

    kind, cells = "?", ()
    try:
        cfg = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
        if isinstance(cfg, dict):
            kind = str(cfg.get("experiment") or ("audit" if "audits" in cfg else "?"))
    except (OSError, yaml.YAMLError):
        pass
    try:
        man = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
        if isinstance(man, dict) and isinstance(man.get("cell_columns"), list):
            cells = tuple(str(c) for c in man["cell_columns"])
    except (OSError, ValueError):
        pass
    return kind, cells


def _same_kind(src: Path, dst: Path) -> None:
    """An existing baseline is replaced only by a run of the same experiment kind and cell keys."""
    (k_new, c_new), (k_old, c_old) = _identity(src), _identity(dst)
    if k_new != k_old:
        raise RegressionInputError(
            f"the baseline {str(dst)!r} is a {k_old!r} run and the new run is a {k_new!r} run; "
            "--update-baseline replaces a baseline only by a run of the same experiment kind (remove the "
            "folder first to start a different baseline there)")
    if c_new and c_old and c_new != c_old:
        raise RegressionInputError(
            f"the baseline {str(dst)!r} identifies cells by {', '.join(c_old)} and the new run by "
            f"{', '.join(c_new)}; --update-baseline replaces a baseline only by a run with the same cell keys")


def is_baseline_location(path: str | Path) -> bool:
    """True when ``path`` lies inside a folder named ``baselines`` (e.g. ``results/baselines/x``)."""
    p = Path(path).resolve()
    return "baselines" in p.parent.parts


def update_baseline(new_dir: str | Path, baseline_dir: str | Path) -> list[Path]:
    """Replace the baseline run folder by the new run's :data:`BASELINE_FILES`.

    The new run must be usable on its own (:func:`load_run`). ``baseline_dir`` is created if
    missing; an existing non-empty folder is replaced only if it looks like a run folder (has a
    ``results.csv`` and ``manifest.json``), so a mistyped path such as ``results/`` is never wiped.
    The files are copied into a sibling ``<name>.updating`` folder first and swapped in by
    renames, so an interrupted update never leaves a half-written baseline; on failure the
    temporary folder is removed and the old baseline is left as it was.

    Raises
    ------
    RegressionInputError
        When the new run is unusable or the baseline location is not safe to replace.
    """
    src, dst = Path(new_dir), Path(baseline_dir)
    load_run(src, "new")
    if src.resolve() == dst.resolve():
        raise RegressionInputError("the new run and the baseline are the same folder")
    if dst.exists():
        if not dst.is_dir():
            raise RegressionInputError(f"baseline location {str(dst)!r} exists and is not a folder")
        if any(dst.iterdir()) and not ((dst / "results.csv").is_file() and (dst / "manifest.json").is_file()):
            raise RegressionInputError(
                f"baseline location {str(dst)!r} is not empty and is not a run folder (no results.csv and "
                "manifest.json); refusing to replace it"
            )
        if (dst / "results.csv").is_file() and (dst / "manifest.json").is_file():
            _same_kind(src, dst)
    tmp = dst.with_name(dst.name + ".updating")
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        tmp.mkdir(parents=True)
        copied = []
        for f in BASELINE_FILES:
            if (src / f).is_file():
                # content only: run files are written 0600 via mkstemp, a committed baseline is 0644
                shutil.copyfile(src / f, tmp / f)
                copied.append(dst / f)
        # swap in by renames so an interrupted update never leaves a half-written baseline
        if dst.exists():
            old = dst.with_name(dst.name + ".old")
            if old.exists():
                shutil.rmtree(old)
            dst.rename(old)
            try:
                tmp.rename(dst)
            except BaseException:  # any interruption (KeyboardInterrupt included) puts the old baseline back, then re-raises
                old.rename(dst)  # put the old baseline back
                raise
            shutil.rmtree(old)
        else:
            tmp.rename(dst)
    except BaseException:  # any interruption (KeyboardInterrupt included) puts the old baseline back, then re-raises
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return copied
