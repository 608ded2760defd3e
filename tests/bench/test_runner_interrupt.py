"""The real ``dpharness run`` interrupted by a signal (a subprocess): exit 130, the finished tasks
on disk, a manifest that says ``interrupted``, and no temporary, lock or stop file left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from dpharness.bench.run.folders import TaskStore

ROOT = Path(__file__).resolve().parents[2]

# ~1 ms tasks (n = 30001 points each), 6000 of them: several seconds, so the signal lands mid-run.
SLOW = {
    "name": "slow",
    "seed": 3,
    "data": {"generator": "normal", "n": 30001},
    "lower": -10,
    "upper": 10,
    "epsilon": [0.5, 1, 2],
    "datasets": 2000,
    "draws": 20,
    "mechanisms": [{"label": "lap", "name": "laplace_median_global"}],
}


def _wait_for_chunk(tasks_root: Path, timeout: float = 60.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if list(tasks_root.glob("*/*/tasks/chunk-*.json")):
            return
        time.sleep(0.05)
    raise AssertionError("no chunk was saved")


@pytest.mark.parametrize("jobs, sig, to_group, extra_wait", [
    (1, signal.SIGINT, False, 0.0),   # Ctrl-C of a sequential run
    (2, signal.SIGINT, True, 2.5),    # Ctrl-C in a terminal: the parent and its loky workers get it
    (2, signal.SIGTERM, False, 2.5),  # kill PID: the parent stops the workers itself
])
@pytest.mark.slow
def test_signal_keeps_finished_tasks_and_leaves_no_temporary_file(tmp_path, jobs, sig, to_group, extra_wait):
    cfg = tmp_path / "slow.yaml"
    cfg.write_text(yaml.safe_dump(SLOW), encoding="utf-8")
    out = tmp_path / "o"
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore"}
    if jobs > 1:
        # workers from the first chunk: whether the run would start them itself depends on how busy
        # the machine is (bench.run.runner: PROBE_SECONDS, bench.run.cpu_share)
        env["DPHARNESS_PROBE_SECONDS"] = "0"
    proc = subprocess.Popen([sys.executable, "-m", "dpharness", "run", str(cfg), "--out", str(out), "--jobs", str(jobs)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _wait_for_chunk(out)
        time.sleep(extra_wait)  # with workers: let every worker take a chunk
        if to_group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr and "re-run the same command to resume" in stderr
    (run_dir,) = (out / "slow").iterdir()
    leftovers = [p for p in run_dir.rglob("*") if p.name.endswith(".tmp") or p.name in (".lock", ".stop")]
    assert not leftovers
    man = json.loads((run_dir / "manifest.json").read_text())
    saved = TaskStore(run_dir).load_all()
    assert man["status"] == "interrupted" and 0 < len(saved) < 6000 and man["jobs"] == jobs
    # everything the run counted as finished is on disk (and nothing else)
    assert man["tasks"]["ok"] == len(saved) and man["tasks"]["missing"] == 6000 - len(saved)
