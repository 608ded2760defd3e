"""The bad-input corpus: shared checks.

Every case feeds one bad input to the CLI (in a subprocess, as a user would) or to the Python API,
and asserts the error discipline: the documented exit code, one message that names the offending
field / argument, no traceback, and nothing half-written (no run folder, no temp file, no partial
output file).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 120, env: dict | None = None,
            stdin: str | None = None) -> subprocess.CompletedProcess:
    """``python -m dpharness ARGS`` in a subprocess (so exit codes and stderr are real)."""
    full_env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore", **(env or {})}
    return subprocess.run([sys.executable, "-m", "dpharness", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout, env=full_env, input=stdin)


def files_under(path: Path) -> set[Path]:
    return {p for p in Path(path).rglob("*")} if Path(path).exists() else set()


def assert_clean_error(proc: subprocess.CompletedProcess, *, code: int = 2, names: tuple[str, ...] = (),
                       before: set[Path] | None = None, watch: Path | None = None) -> str:
    """The CLI refused cleanly: exit ``code``, no traceback, every string of ``names`` in the
    message (the field, path or argument at fault), and -- when ``watch`` is given -- no file
    created under it (compared with ``before``). Returns the message."""
    err = proc.stderr + proc.stdout
    assert proc.returncode == code, f"exit {proc.returncode} (want {code}); output:\n{err}"
    assert "Traceback" not in err, f"traceback in output:\n{err}"
    for n in names:
        assert n in err, f"{n!r} not named in the message:\n{err}"
    if watch is not None:
        created = files_under(watch) - (before or set())
        assert not created, f"files left behind: {sorted(map(str, created))}"
    return err


@pytest.fixture
def cli():
    return run_cli
