"""Run folders: layout, atomic writes, per-task records, manifest, table formatting.

A run folder ``<out>/<config name>/<UTC timestamp>_<config hash>/`` holds::

    config.yaml     the resolved config that was run (quick overrides and --seed applied)
    tasks/          one JSON record per finished task, written atomically (resume reads these)
    results.csv     one tidy row per task (cells, p_<param> columns, seeds, metrics, seconds)
    table.csv       the summary table; table.md the same as Markdown
    manifest.json   versions, git commit, command line, wall time, jobs/backend, status
    figures/*.png

A folder without ``manifest.json`` (interrupted) or whose manifest says ``"status": "errors"`` is
*unfinished*: re-running the same command resumes the newest unfinished folder with the same
config hash and computes only the tasks that have no ``ok`` record.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from .tables import format_text_table, to_markdown
from .tasks import stable_hash

__all__ = [
    "atomic_write_text",
    "write_run_config",
    "load_run_config",
    "new_run_dir",
    "find_unfinished",
    "TaskStore",
    "manifest_base",
    "write_table",
    "format_text_table",
    "to_markdown",
    "versions",
    "git_info",
]


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a temporary file in the same folder, then os.replace.

    A reader (or a resumed run after kill -9) sees either the old file or the complete new one.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def utc_stamp(now: _dt.datetime | None = None) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ")


def new_run_dir(parent: Path, name: str, config_hash: str) -> Path:
    """Create ``parent/name/<UTC stamp>_<hash>`` (never an existing folder: suffix -2, -3...)."""
    base = Path(parent) / name
    base.mkdir(parents=True, exist_ok=True)
    stamp = utc_stamp()
    for i in range(1, 1000):
        d = base / (f"{stamp}_{config_hash}" if i == 1 else f"{stamp}_{config_hash}-{i}")
        try:
            d.mkdir()
        except FileExistsError:
            continue
        (d / "tasks").mkdir()
        return d
    raise RuntimeError(f"cannot create a new run folder under {base}")


def is_finished(run_dir: Path) -> bool:
    m = Path(run_dir) / "manifest.json"
    if not m.is_file():
        return False
    try:
        return json.loads(m.read_text(encoding="utf-8")).get("status") == "complete"
    except (OSError, ValueError):
        return False


def find_unfinished(parent: Path, name: str, config_hash: str) -> Path | None:
    """Newest folder ``parent/name/*_<hash>[-k]`` that is not finished, or None."""
    base = Path(parent) / name
    if not base.is_dir():
        return None
    cands = [d for d in base.iterdir() if d.is_dir() and d.name.split("_", 1)[-1].split("-")[0] == config_hash
             and (d / "config.yaml").is_file()]
    for d in sorted(cands, key=lambda p: p.name, reverse=True):
        if not is_finished(d):
            return d
    return None


class TaskStore:
    """Per-task JSON records in ``run_dir/tasks`` (file name: the key's stable hash in hex)."""

    def __init__(self, run_dir: Path):
        self.dir = Path(run_dir) / "tasks"
        self.dir.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        return self.dir / f"{stable_hash(key):016x}.json"

    def save(self, record: dict) -> None:
        atomic_write_text(self.path(record["key"]), json.dumps(record, allow_nan=True))

    def load_all(self) -> dict[str, dict]:
        """Records by task key (corrupt or partial files are ignored: the task is recomputed)."""
        out: dict[str, dict] = {}
        for p in self.dir.glob("*.json"):
            try:
                rec = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(rec, dict) and "key" in rec and p.name == self.path(rec["key"]).name:
                out[rec["key"]] = rec
        return out


def write_run_config(run_dir: Path, cfg: Any) -> None:
    """The resolved config as ``config.yaml``; a header records where relative data paths live."""
    import yaml

    header = (f"# resolved config of this run (from {cfg.source}{', --quick' if cfg.quick else ''}); hash {cfg.hash}\n"
              f"# base_dir: {cfg.base_dir or ''}\n")
    atomic_write_text(Path(run_dir) / "config.yaml", header + yaml.safe_dump(cfg.raw, sort_keys=False, allow_unicode=True))


def load_run_config(run_dir: Path) -> Any:
    """Load a run folder's ``config.yaml`` with the original ``base_dir`` (relative CSV paths)."""
    from .config import load_config

    path = Path(run_dir) / "config.yaml"
    base = None
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.startswith("#"):
                break
            if line.startswith("# base_dir:"):
                base = line.split(":", 1)[1].strip() or None
    return load_config(path, base_dir=base)


def versions() -> dict[str, str | None]:
    """Versions of Python, the scientific stack and dpharness (None when not installed)."""
    from importlib import metadata

    out: dict[str, str | None] = {"python": platform.python_version()}
    for pkg in ("dpharness", "numpy", "scipy", "pandas", "statsmodels", "matplotlib", "joblib", "PyYAML", "dask", "distributed"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def git_info(root: Path | None = None) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the project checkout."""
    root = root or Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        if sha.returncode != 0:
            return {"commit": None, "dirty": None}
        st = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True, timeout=5)
        return {"commit": sha.stdout.strip(), "dirty": bool(st.stdout.strip()) if st.returncode == 0 else None}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def manifest_base() -> dict[str, Any]:
    return {
        "versions": versions(),
        "git": git_info(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "",
    }


def write_table(run_dir: Path, table: pd.DataFrame, heading: str = "") -> None:
    """table.csv (full precision) and table.md (2 decimals) in the run folder."""
    atomic_write_text(Path(run_dir) / "table.csv", table.to_csv(index=False))
    md = (f"{heading}\n\n" if heading else "") + to_markdown(table)
    atomic_write_text(Path(run_dir) / "table.md", md)
