"""A 10^5-task sweep through the real ``dpharness run`` (slow tier).

What it checks: every one of the 100,000 tasks is in ``results.csv`` exactly once, ok, and the
manifest accounts for all of them. What it reports (``pytest -s``), never asserts (speed is
measured in bench/, not judged in tests): the share of the wall time spent outside the tasks,
for the whole process and for the compute phase alone (dispatch, transfer, chunk files).

The config is a plain ``median_accuracy`` sweep made tiny on purpose: one mechanism, 4 epsilons,
25,000 datasets of n points; ``DPHARNESS_SCALE_N`` (default 30001, about 1 ms per task) sets the
task size and ``DPHARNESS_SCALE_JOBS`` (default 2) the workers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def sweep_config(n: int) -> dict:
    return {
        "name": "scale",
        "seed": 11,
        "data": {"generator": "normal", "n": n},
        "lower": -10,
        "upper": 10,
        "epsilon": [0.5, 1, 2, 4],
        "datasets": 25_000,
        "draws": 20,
        "mechanisms": [{"label": "lap", "name": "laplace_median_global"}],
    }  # 1 x 4 x 25,000 = 100,000 tasks


@pytest.mark.slow
def test_hundred_thousand_tasks(tmp_path):
    n = int(os.environ.get("DPHARNESS_SCALE_N", "30001"))
    jobs = int(os.environ.get("DPHARNESS_SCALE_JOBS", "2"))
    cfg = tmp_path / "scale.yaml"
    cfg.write_text(yaml.safe_dump(sweep_config(n)), encoding="utf-8")
    env = {**os.environ, "MPLBACKEND": "Agg"}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "dpharness", "run", str(cfg), "--out", str(tmp_path / "o"),
                           "--jobs", str(jobs)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    whole = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run_dir,) = (tmp_path / "o" / "scale").iterdir()
    man = json.loads((run_dir / "manifest.json").read_text())
    assert man["tasks"] == {"total": 100_000, "ok": 100_000, "errors": 0, "computed": 100_000, "reused": 0}
    res = pd.read_csv(run_dir / "results.csv", usecols=["task", "status"])
    assert len(res) == 100_000 and res["task"].is_unique and set(res["status"]) == {"ok"}
    workers = man["jobs"]
    task_wall = man["task_seconds_total"] / workers  # the tasks' own time, spread over the workers
    print(f"\n10^5 tasks, n={n}, jobs={workers}: whole process {whole:.1f} s, run {man['wall_seconds']:.1f} s, "
          f"compute phase {man['compute_seconds']:.1f} s, task time {man['task_seconds_total']:.1f} s "
          f"({task_wall:.1f} s per worker), chunks {man['chunks']}")
    print(f"outside the tasks: {100 * (1 - task_wall / whole):.1f} % of the whole process, "
          f"{100 * (1 - task_wall / man['compute_seconds']):.1f} % of the compute phase")
