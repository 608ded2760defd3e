"""The machine a benchmark ran on: CPU, cores, load, numpy and its BLAS, versions, git commit.

Ratios are only comparable between runs on similar machines and loads; this block of the JSON is
what lets a reader decide that. Versions and the git state come from the one provenance writer
(:mod:`bench.report.provenance`).
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

import numpy as np

from dpharness.bench import peers as _peers
from dpharness.bench.report.provenance import git_info, package_versions

__all__ = ["environment", "load_average"]

#: The distributions whose versions the benchmark records.
PACKAGES = ("dpharness", "numpy", "scipy", "pandas", "joblib", "matplotlib")


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
        "versions": package_versions(PACKAGES),
        "peers": _peers.peer_versions(),
    }
    git = git_info()
    env["git_commit"], env["git_dirty"] = git["commit"], git["dirty"]
    return env
