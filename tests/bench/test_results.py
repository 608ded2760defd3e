"""Run-folder primitives: atomic writes (umask, no leftovers), the run lock, task records."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys

import pytest
from dpharness.bench.run.folders import (
    RunFolderBusy,
    RunLock,
    TaskStore,
    atomic_write_text,
    clean_stale_tmp,
)


def test_atomic_write_honours_umask_and_replaces(tmp_path):
    old = os.umask(0o077)
    try:
        atomic_write_text(tmp_path / "a.txt", "one")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o600
    old = os.umask(0o002)
    try:
        atomic_write_text(tmp_path / "a.txt", "two")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").read_text() == "two"
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o664
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    atomic_write_text(tmp_path / "a.txt", "old")
    with pytest.raises(TypeError):
        atomic_write_text(tmp_path / "a.txt", 12345)  # type: ignore[arg-type]  # write() refuses an int
    assert (tmp_path / "a.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_clean_stale_tmp_removes_only_temporaries(tmp_path):
    (tmp_path / "tasks").mkdir()
    for name in ("tasks/.chunk-1.json.12-ab.tmp", ".results.csv.3-cd.tmp", "tasks/chunk-1.json", "keep.tmp"):
        (tmp_path / name).write_text("x")
    assert clean_stale_tmp(tmp_path) == 2
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == [
        "keep.tmp", "tasks/chunk-1.json"]


HOLD = """
import sys, time
from dpharness.bench.run.folders import RunLock
RunLock(sys.argv[1]).acquire()
print("locked", flush=True)
time.sleep(60)
"""


def test_lock_names_the_live_holder_and_is_free_once_it_dies(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunFolderBusy) as err:
            RunLock(tmp_path).acquire()
        msg = str(err.value)
        assert f"pid {holder.pid} on host {socket.gethostname()}" in msg and str(tmp_path) in msg
    finally:
        holder.send_signal(signal.SIGKILL)  # dies without releasing: the kernel drops the flock
        holder.wait()
        holder.stdout.close()
    assert (tmp_path / ".lock").exists()  # a stale file ...
    with RunLock(tmp_path) as lock:  # ... does not block
        info = json.loads((tmp_path / ".lock").read_text())
        assert info["pid"] == os.getpid() and lock.path.exists()
    assert not (tmp_path / ".lock").exists()


def test_task_store_reads_both_layouts_and_prefers_ok_records(tmp_path):
    store = TaskStore(tmp_path)
    ok = {"key": "a=1", "status": "ok", "message": "", "rows": [{"v": 1.5}], "seconds": 0.1, "root_seed": 1,
          "spawn_key": 2}
    err = dict(ok, status="error", message="ValueError: x", rows=[])
    store.save_chunk([dict(ok, key="b=2"), err])  # an old failure of a=1 ...
    store.path("a=1").write_text(json.dumps(ok))  # ... and its later success in the per-task layout
    store.save_chunk([dict(err, key="c=3")])
    recs = TaskStore(tmp_path).load_all()
    assert recs["a=1"]["status"] == "ok" and recs["b=2"]["status"] == "ok" and recs["c=3"]["status"] == "error"
    assert store.chunk_path(["a=1", "b=2"]) != store.chunk_path(["a=1"]) != store.chunk_path(["b=2", "a=1"])
