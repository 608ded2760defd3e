"""Bad ``dpharness run`` arguments about where and how to run: ``--out``, ``--resume``, ``--jobs``,
``--backend``, ``--scheduler``, ``--chunk-size``, and a run folder that another run is writing.

Each is refused before any work: exit 2, one message naming the flag (and the path or value at
fault), no traceback, and nothing created under the watched folder. Most cases call the CLI entry
point in-process (fast); a few run the real command in a subprocess.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import assert_clean_error, files_under, run_cli

from dpharness.bench.cli import main
from dpharness.bench.run.folders import RunLock

SMALL = {
    "name": "small",
    "seed": 7,
    "data": {"generator": "normal", "n": 51},
    "lower": -10,
    "upper": 10,
    "epsilon": [1],
    "datasets": 2,
    "draws": 5,
    "mechanisms": [{"label": "lap", "name": "smooth_sensitivity_median", "noise": "laplace", "delta": 0.001}],
}


def call(argv, capsys) -> subprocess.CompletedProcess:
    """``dpharness ARGV`` in-process (argparse's own exit included), as a CompletedProcess."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse refuses a value (bad int, unknown choice)
        code = exc.code
    out = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


@pytest.fixture
def config(tmp_path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(SMALL), encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _file(tmp: Path) -> Path:
    f = tmp / "a_file"
    f.write_text("x", encoding="utf-8")
    return f


def _name_taken_by_file(tmp: Path) -> Path:
    out = tmp / "o"
    out.mkdir()
    (out / "small").write_text("x", encoding="utf-8")  # where the config's folder would go
    return out


# (case id, --out maker (tmp -> path), strings the message must name)
OUT_CASES = [
    ("out_is_a_file", _file, ("--out", "is not a directory")),
    ("out_under_a_file", lambda t: _file(t) / "sub" / "dir", ("--out", "a_file is a file")),
    ("out_component_too_long", lambda t: t / ("x" * 300), ("--out", "longer than 255 bytes")),
    ("out_path_too_long", lambda t: t.joinpath(*(["y" * 200] * 21)), ("--out", "too long")),
    ("out_config_name_is_a_file", _name_taken_by_file, ("--out", "is a file, not a directory")),
    ("out_in_proc", lambda t: Path("/proc/dpharness-out"), ("--out", "/proc", "cannot create run folders")),
    ("out_empty", lambda t: "", ("--out", "empty")),
]


@pytest.mark.parametrize("maker, names", [c[1:] for c in OUT_CASES], ids=[c[0] for c in OUT_CASES])
def test_unusable_out_is_refused_before_any_work(tmp_path, config, capsys, maker, names):
    out = maker(tmp_path)
    before = files_under(tmp_path)
    proc = call(["run", config, "--out", out], capsys)
    assert_clean_error(proc, code=2, names=names, before=before, watch=tmp_path)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write anywhere")
def test_read_only_out_is_refused(tmp_path, config, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        proc = call(["run", config, "--out", ro / "sub"], capsys)
        assert_clean_error(proc, code=2, names=("--out", "not writable"), before=set(), watch=ro)
    finally:
        ro.chmod(0o700)


# (case id, extra arguments, strings the message must name); argparse refuses some values itself
ARG_CASES = [
    ("jobs_zero", ["--jobs", "0"], ("--jobs", "got 0")),
    ("jobs_minus_two", ["--jobs", "-2"], ("--jobs", "got -2")),
    ("jobs_text", ["--jobs", "many"], ("--jobs", "invalid int value: 'many'")),
    ("jobs_float", ["--jobs", "1.5"], ("--jobs", "'1.5'")),
    ("backend_unknown", ["--backend", "mpi"], ("--backend", "invalid choice: 'mpi'")),
    ("scheduler_without_dask", ["--scheduler", "tcp://127.0.0.1:8786"], ("--scheduler", "--backend dask")),
    ("scheduler_empty", ["--backend", "dask", "--scheduler", " "], ("--scheduler", "address")),
    ("scheduler_malformed", ["--backend", "dask", "--scheduler", "no-port-here"],
     ("--scheduler no-port-here", "not a dask scheduler address")),
    ("chunk_size_zero", ["--chunk-size", "0"], ("--chunk-size", "got 0")),
    ("chunk_size_negative", ["--chunk-size", "-4"], ("--chunk-size", "got -4")),
    ("chunk_size_text", ["--chunk-size", "big"], ("--chunk-size", "invalid int value")),
    ("resume_missing_folder", ["--resume", "{tmp}/nowhere"], ("--resume", "nowhere", "not a run folder")),
    ("resume_a_file", ["--resume", "{tmp}/small.yaml"], ("--resume", "not a run folder")),
]


@pytest.mark.parametrize("extra, names", [c[1:] for c in ARG_CASES], ids=[c[0] for c in ARG_CASES])
def test_bad_run_arguments(tmp_path, config, capsys, extra, names):
    if any("dask" in a for a in extra):
        pytest.importorskip("dask.distributed")
    extra = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    before = files_under(tmp_path)
    proc = call(["run", config, "--out", tmp_path / "o", *extra], capsys)
    assert_clean_error(proc, code=2, names=names, before=before, watch=tmp_path)


def test_dask_backend_without_dask_names_the_extra(tmp_path, config, capsys, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "dask.distributed", None)
    proc = call(["run", config, "--backend", "dask", "--out", tmp_path / "o"], capsys)
    assert_clean_error(proc, code=2, names=("pip install -e '.[dask]'",), before=set(), watch=tmp_path / "o")


def test_bad_config_creates_no_run_folder_even_with_a_good_out(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(dict(SMALL, draws=0)), encoding="utf-8")
    proc = call(["run", path, "--out", tmp_path / "o", "--jobs", "2"], capsys)
    assert_clean_error(proc, code=2, names=("draws",), before=set(), watch=tmp_path / "o")


def _interrupted_folder(tmp_path: Path, config: Path, capsys, monkeypatch) -> Path:
    """A run folder left unfinished (the first task interrupted)."""
    from dpharness.bench.experiments import median_accuracy

    def stop(*a):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(median_accuracy, "run_task", stop)
        assert main(["run", str(config), "--out", str(tmp_path / "o")]) == 130
    capsys.readouterr()
    (run_dir,) = (tmp_path / "o" / "small").iterdir()
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "interrupted"
    return run_dir


@pytest.mark.parametrize("how", ["same_command", "explicit_resume"])
def test_folder_in_use_by_another_run_is_refused(tmp_path, config, capsys, monkeypatch, how):
    run_dir = _interrupted_folder(tmp_path, config, capsys, monkeypatch)
    extra = ["--resume", run_dir] if how == "explicit_resume" else []
    with RunLock(run_dir):  # another run is writing it
        before = files_under(tmp_path)
        proc = call(["run", config, "--out", tmp_path / "o", *extra], capsys)
        assert_clean_error(proc, code=2, names=("being written by another run", f"pid {os.getpid()}",
                                                socket.gethostname(), str(run_dir)), before=before, watch=tmp_path)


def test_resume_of_a_complete_run_and_of_another_config(tmp_path, config, capsys):
    assert main(["run", str(config), "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    (run_dir,) = (tmp_path / "o" / "small").iterdir()
    before = files_under(tmp_path)
    proc = call(["run", config, "--resume", run_dir], capsys)
    assert_clean_error(proc, code=2, names=("--resume", "complete"), before=before, watch=tmp_path)
    proc = call(["run", config, "--resume", run_dir, "--seed", "8"], capsys)
    assert_clean_error(proc, code=2, names=("--resume", "different config", "--seed"), before=before, watch=tmp_path)


# -- the real command, in a subprocess -------------------------------------------------------------

@pytest.mark.slow
def test_cli_subprocess_unreachable_scheduler_fails_fast(tmp_path, config):
    pytest.importorskip("dask.distributed")
    addr = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    t0 = time.monotonic()
    proc = run_cli("run", config, "--backend", "dask", "--scheduler", addr, "--out", tmp_path / "o", cwd=tmp_path)
    elapsed = time.monotonic() - t0
    err = assert_clean_error(proc, code=2, names=(f"--scheduler {addr}", "cannot reach"), before=set(),
                             watch=tmp_path / "o")
    assert len(err.strip().splitlines()) == 1, err
    assert elapsed < 60  # the connect timeout is 5 s; the bound only catches a hang


def test_cli_subprocess_out_is_a_file(tmp_path, config):
    out = _file(tmp_path)
    before = files_under(tmp_path)
    proc = run_cli("run", config, "--out", out, cwd=tmp_path)
    err = assert_clean_error(proc, code=2, names=(f"--out {out}", "not a directory"), before=before, watch=tmp_path)
    assert len(err.strip().splitlines()) == 1, err
