"""Choosing and claiming a run's folder (see :mod:`bench.run.runner`, "Persistence and resume").

:func:`_check_out` refuses an unusable ``--out`` before any work; :func:`_claim_run_dir` returns
the folder to write -- ``--resume``, else the newest unfinished one of the same config hash,
else a new one -- holding its :class:`bench.run.folders.RunLock`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from dpharness.bench.config import Config
from dpharness.bench.run.folders import (
    RunFolderBusy,
    RunLock,
    clean_stale_tmp,
    find_unfinished,
    is_finished,
    load_run_config,
    new_run_dir,
    write_run_config,
)
from dpharness.bench.run.result import RunError

STOP_FILE = ".stop"


def _check_out(parent: Path, name: str | None = None) -> None:
    """Refuse an ``--out`` that cannot hold run folders, before any work (RunError naming it)."""
    shown = str(parent)
    p = Path(os.path.abspath(parent))
    anc = p  # the nearest existing folder: where run folders would be created
    while not os.path.lexists(anc) and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        where = "is not a directory" if anc == p else f"is not a directory ({anc} is a file)"
        raise RunError(f"--out {shown}: {where}; give a folder to hold run folders")
    try:
        name_max, path_max = os.pathconf(anc, "PC_NAME_MAX"), os.pathconf(anc, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    for part in p.parts[1:] + ((name,) if name else ()):
        if len(os.fsencode(part)) > name_max:
            what = f"the config name {name!r}" if part == name else f"the component {part[:40]}..."
            raise RunError(f"--out {shown}: {what} is longer than {name_max} bytes, the file-name limit")
    # deepest file: <out>/<name>/<stamp>_<hash>-NNN/tasks/.chunk-<16 hex>.json.<pid>-<8 hex>.tmp,
    # plus room for a kind's own output names.
    longest = len(os.fsencode(str(p / (name or "x")))) + 1 + 32 + 1 + 128
    if longest >= path_max:
        raise RunError(f"--out {shown}: the path is too long for run folders under it "
                       f"(files would need about {longest} bytes; the limit is {path_max})")
    if name and anc == p and os.path.lexists(p / name):
        anc = p / name
        if not anc.is_dir():
            raise RunError(f"--out {shown}: {anc} (the folder for config {name!r}) is a file, not a directory")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise RunError(f"--out {shown}: cannot create run folders: {anc} is not writable")
    try:  # permission bits are not the whole story (read-only mounts, /proc, root squash): try
        probe = tempfile.mkdtemp(prefix=".dpharness-probe-", dir=anc)
        os.rmdir(probe)
    except OSError as exc:
        raise RunError(f"--out {shown}: cannot create run folders in {anc}: {exc.strerror}") from None


def _claim_run_dir(cfg: Config, parent: Path, resume: str | Path | None) -> tuple[Path, bool, RunLock]:
    """The run folder to write, locked: ``resume``, else the newest unfinished one of this config
    hash, else a new one (locked before its config.yaml exists, so no one else resumes it)."""
    if resume is not None:
        run_dir = Path(resume)
        if not (run_dir / "config.yaml").is_file():
            raise RunError(f"--resume {run_dir}: not a run folder (no config.yaml)")
        old = load_run_config(run_dir)
        if old.hash != cfg.hash:
            raise RunError(f"--resume {run_dir}: that run used a different config (hash {old.hash}, this command "
                           f"gives {cfg.hash}); pass the same CONFIG, --quick and --seed")
        lock = _lock(run_dir)
        if is_finished(run_dir):
            lock.release()
            raise RunError(f"--resume {run_dir}: that run is complete (manifest.json status complete); "
                           "finished run folders are never rewritten")
        return run_dir, True, lock
    found = find_unfinished(parent, cfg.name, cfg.hash)
    if found is not None:
        lock = _lock(found)
        if not is_finished(found):  # it may have finished while we looked
            return found, True, lock
        lock.release()
    run_dir = new_run_dir(parent, cfg.name, cfg.hash)
    lock = _lock(run_dir)
    try:
        write_run_config(run_dir, cfg)
    except BaseException:  # broad on purpose: release the lock whatever stopped us, then re-raise
        lock.release()
        raise
    return run_dir, False, lock


def _lock(run_dir: Path) -> RunLock:
    try:
        lock = RunLock(run_dir).acquire()
    except RunFolderBusy as exc:
        raise RunError(str(exc)) from None
    clean_stale_tmp(run_dir)  # left by a run that was killed; we are the only writer now
    with contextlib.suppress(OSError):
        (run_dir / STOP_FILE).unlink()
    return lock

