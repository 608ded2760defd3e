"""``kill -9`` of a run at ``--jobs 2``: no worker of that run (loky processes, resource trackers) is
alive 5 s later -- each worker watches its parent and exits when it is gone."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT


def _children(pid: int) -> set[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return {int(x) for x in out.split()}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie is dead, only not yet reaped
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("pgrep") is None or not os.path.isdir("/proc"), reason="needs pgrep and /proc")
def test_workers_die_with_their_parent(tmp_path):
    cmd = [sys.executable, "-m", "dpharness", "run", str(ROOT / "configs" / "duff_n_sweep.yaml"), "--jobs", "2",
           "--out", str(tmp_path / "out")]
    # workers from the first chunk: whether the run would start them itself depends on how busy the
    # machine is (bench.run.runner: PROBE_SECONDS, bench.run.cpu_share)
    env = {**os.environ, "DPHARNESS_PROBE_SECONDS": "0"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    kids: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        # wait until the pool runs (two workers besides the resource trackers) and has started chunks
        while time.monotonic() < deadline and proc.poll() is None:
            kids = _children(proc.pid)
            if len(kids) >= 3 and (tmp_path / "out").exists():
                break
            time.sleep(0.2)
        if proc.poll() is not None or len(kids) < 3:
            pytest.skip("the run finished before its workers could be observed")
        time.sleep(1.0)  # let every worker take a chunk
        kids = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        time.sleep(5.0)
        alive = [k for k in kids if _alive(k)]
        assert not alive, f"workers still alive 5 s after kill -9 of their parent: {alive}"
    finally:
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass
        if proc.poll() is None:
            proc.kill()
