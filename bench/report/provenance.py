"""Provenance: what produced an output -- versions, git commit, platform, command line.

The one place that records it. A run folder's ``manifest.json`` (:func:`bench.run.outputs.run_manifest`),
the ``manifest`` block of every ``--json`` verdict (:func:`bench.report.verdicts.run_manifest`) and the
``environment`` block of ``dpharness bench`` (:func:`bench.perf.environment.environment`) all take
their versions, git state and command line from here, so they always agree.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable

__all__ = ["PACKAGES", "package_versions", "versions", "git_info", "command_line", "provenance"]

#: The distributions whose versions a manifest records (None when not installed).
PACKAGES = ("dpharness", "numpy", "scipy", "pandas", "statsmodels", "matplotlib", "joblib", "PyYAML", "dask",
            "distributed")
#: The project checkout (``git`` is asked about it): the folder that holds ``bench/``.
_ROOT = Path(__file__).resolve().parents[2]


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution of ``names`` (None when it is not installed)."""
    from importlib import metadata

    out: dict[str, str | None] = {}
    for pkg in names:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def versions() -> dict[str, str | None]:
    """Versions of Python, the scientific stack and dpharness (None when not installed)."""
    return {"python": platform.python_version(), **package_versions()}


def git_info(root: Path | None = None) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the project checkout."""
    root = root or _ROOT
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        if sha.returncode != 0:
            return {"commit": None, "dirty": None}
        st = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True,
                            text=True, timeout=5)
        return {"commit": sha.stdout.strip(), "dirty": bool(st.stdout.strip()) if st.returncode == 0 else None}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def command_line(empty: str | None = "") -> str | None:
    """The command as typed (program name without its folder, then the arguments); ``empty`` when
    Python was not started from a command line (``sys.argv`` empty, e.g. embedded)."""
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else empty


def provenance() -> dict[str, Any]:
    """``{"versions", "git", "platform", "cpu_count", "command"}`` of this process, now."""
    return {
        "versions": versions(),
        "git": git_info(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "command": command_line(),
    }
