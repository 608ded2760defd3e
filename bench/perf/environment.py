"""The machine a benchmark ran on: CPU, cores, load, numpy and its BLAS, versions, git commit.

Ratios are only comparable between runs on similar machines and loads; this block of the JSON is
what lets a reader decide that.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from typing import Any

import numpy as np

from dpharness.bench import peers as _peers
from dpharness.bench.perf.plan import ROOT

__all__ = ["environment", "load_average"]


def _git(*args: str) -> str | None:
    try:
        r = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _numpy_config() -> Any:
    try:
        return np.show_config(mode="dicts")
    except TypeError:  # numpy < 1.25: text only
        import contextlib
        import io

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            np.show_config()
        return buf.getvalue()


def load_average() -> list[float] | None:
    """The 1/5/15-minute load averages (``None`` where the OS has none)."""
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def environment() -> dict[str, Any]:
    """CPU, cores, load, numpy and its BLAS configuration, library versions, git commit."""
    from importlib import metadata

    def ver(d: str) -> str | None:
        try:
            return metadata.version(d)
        except metadata.PackageNotFoundError:
            return None

    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    env: dict[str, Any] = {
        "cpu_model": _cpu_model(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "load_average": load_average(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "numpy_config": _numpy_config(),
        "blas_threads_env": {k: os.environ.get(k) for k in (
            "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS") if os.environ.get(k)},
        "versions": {d: ver(d) for d in ("dpharness", "numpy", "scipy", "pandas", "joblib", "matplotlib")},
        "peers": _peers.peer_versions(),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": None,
    }
    status = _git("status", "--porcelain", "--untracked-files=no")
    env["git_dirty"] = None if status is None else bool(status)
    return env
