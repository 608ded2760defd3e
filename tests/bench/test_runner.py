"""The runner: results independent of jobs/backend/chunking/order, resume, failures as rows, run
folder, manifest provenance (real parallelism, clipped points), failing summary steps, umask."""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import signal
import stat
import time

import numpy as np
import pandas as pd
import pytest
from dpharness.bench.run import execution, runner
from dpharness.bench.experiments import median_accuracy
from dpharness.bench.cli.plot import run as cmd_plot
from dpharness.bench.run.folders import RunLock, TaskStore
from dpharness.bench.run.chunks import ChunkPlan, spread_order
from dpharness.bench.run.outputs import TIMING_COLUMNS
from dpharness.bench.run.runner import RunError, run
from dpharness.bench.run.tasks import Task

SMALL = {
    "name": "small",
    "seed": 7,
    "data": {"generator": "normal", "n": 201},
    "lower": -10,
    "upper": 10,
    "epsilon": [0.5, 2],
    "datasets": 4,
    "draws": 10,
    "mechanisms": [
        {"label": "cauchy", "name": "smooth_sensitivity_median", "noise": "cauchy"},
        {"label": "lap", "name": "smooth_sensitivity_median", "noise": "laplace", "delta": 0.001},
    ],
}  # 2 mechanisms x 2 epsilons x 4 datasets = 16 tasks


def no_timing(res_or_df) -> pd.DataFrame:
    df = res_or_df.results if hasattr(res_or_df, "results") else res_or_df
    return df.drop(columns=list(TIMING_COLUMNS)).reset_index(drop=True)


def csv_text(run_dir) -> str:
    df = pd.read_csv(run_dir / "results.csv", dtype=str, keep_default_na=False)
    return df.drop(columns=list(TIMING_COLUMNS)).to_csv(index=False)


@pytest.fixture
def use_workers(monkeypatch):
    """Send every chunk to the workers: no in-process probe, so no 'too short for workers' rule."""
    monkeypatch.setattr(runner, "PROBE_SECONDS", 0.0)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    out = tmp_path_factory.mktemp("base")
    return run(SMALL, jobs=1, out=out, progress=False)


def test_baseline_run_folder(baseline):
    d = baseline.run_dir
    assert d.parent.name == "small" and d.name.endswith("_" + baseline.config.hash)
    for f in ("results.csv", "table.csv", "table.md", "config.yaml", "manifest.json"):
        assert (d / f).is_file(), f
    assert sorted(p.name for p in (d / "figures").glob("*.png")) == ["error_vs_epsilon.png"]
    recs = TaskStore(d).load_all()
    assert len(recs) == 16 and {r["status"] for r in recs.values()} == {"ok"}
    assert all(p.name.startswith("chunk-") for p in (d / "tasks").glob("*.json"))
    assert not list(d.rglob("*.tmp")) and not (d / ".lock").exists() and not (d / ".stop").exists()
    res = pd.read_csv(d / "results.csv")
    assert len(res) == 16 and set(res["status"]) == {"ok"}
    for c in ("task", "mechanism", "epsilon", "dataset", "mean_abs_error", "p_name", "p_noise", "root_seed", "spawn_key", "seconds"):
        assert c in res.columns, c
    man = json.loads((d / "manifest.json").read_text())
    assert man["status"] == "complete" and man["tasks"] == {"total": 16, "ok": 16, "errors": 0, "computed": 16, "reused": 0}
    assert man["cell_columns"] == ["data", "n", "mechanism", "epsilon"] and man["metric"] == "mean_abs_error"
    assert man["jobs"] == 1 and man["backend"] == "loky" and "numpy" in man["versions"] and "commit" in man["git"]
    assert man["chunks"]["size"] == "auto" and man["chunks"]["count"] >= 1 and "parallelism_note" not in man
    # jobs/backend are provenance, never table content
    table = pd.read_csv(d / "table.csv")
    assert list(table.columns) == ["mechanism", "epsilon", "mean_x100", "std_x100", "se_x100"]
    assert "jobs" not in res.columns and "backend" not in res.columns
    assert baseline.exit_code == 0


def test_dataset_is_shared_across_mechanisms_and_epsilons(baseline):
    # Same dataset index -> same data (hence same truth) for every mechanism and epsilon;
    # different indices -> different data.
    res = no_timing(baseline)
    truths = res.groupby("dataset")["truth"].nunique()
    assert (truths == 1).all()
    assert res.groupby("dataset")["truth"].first().nunique() == 4


def test_jobs_backends_and_chunk_sizes_give_identical_results(baseline, tmp_path, use_workers):
    ref = csv_text(baseline.run_dir)
    for backend, jobs, chunk in (("loky", 2, None), ("threading", 2, None), ("loky", 2, 1), ("threading", 2, 5),
                                 ("loky", 1, 3), ("loky", 1, 100)):
        res = run(SMALL, jobs=jobs, backend=backend, out=tmp_path / f"{backend}{jobs}_{chunk}", progress=False,
                  figures=False, chunk_size=chunk)
        assert csv_text(res.run_dir) == ref, (backend, jobs, chunk)
        assert (res.run_dir / "table.csv").read_text() == (baseline.run_dir / "table.csv").read_text()
        man = json.loads((res.run_dir / "manifest.json").read_text())
        assert (man["jobs"], man["jobs_requested"], man["backend"]) == (jobs, jobs, backend)
        assert man["chunks"]["size"] == ("auto" if chunk is None else chunk)
        if chunk is not None:
            assert man["chunks"]["count"] == math.ceil(16 / chunk)
        assert res.workers == jobs


def test_short_run_with_jobs_stays_in_process(baseline, tmp_path, monkeypatch):
    # 16 tasks of ~1 ms: starting loky workers would cost more than it saves; the manifest says so.
    monkeypatch.setattr(runner, "_loky_pool_is_warm", lambda workers: False)  # as in a fresh process
    res = run(SMALL, jobs=2, out=tmp_path, progress=False, figures=False)
    man = json.loads((res.run_dir / "manifest.json").read_text())
    assert (man["jobs"], man["jobs_requested"], res.workers) == (1, 2, 1)
    assert "ran in this process" in man["parallelism_note"]
    assert csv_text(res.run_dir) == csv_text(baseline.run_dir)


def test_busy_machine_keeps_a_long_run_in_process(baseline, tmp_path, monkeypatch):
    # Another program holds one of the two processors: two workers would share the other one, so
    # the run stays here however long it is, deciding again as it goes; the manifest says why.
    monkeypatch.setattr(runner.CpuShare, "free", lambda self, min_interval=0.1: 1.0)
    monkeypatch.setattr(runner, "PROBE_SECONDS", 1e-4)
    monkeypatch.setattr(runner, "RECHECK_SECONDS", 1e-4)
    monkeypatch.setattr(runner, "_loky_pool_is_warm", lambda workers: False)
    decisions = []
    real = runner._spread_estimate
    monkeypatch.setattr(runner, "_spread_estimate", lambda *a: decisions.append(a[3]) or real(*a))
    res = run(SMALL, jobs=2, out=tmp_path, progress=False, figures=False)
    man = json.loads((res.run_dir / "manifest.json").read_text())
    assert (man["jobs"], man["jobs_requested"], res.workers) == (1, 2, 1)
    assert "ran in this process" in man["parallelism_note"] and "1.0 of" in man["parallelism_note"]
    assert len(decisions) >= 2 and set(decisions) == {1.0}  # taken again after more work
    assert csv_text(res.run_dir) == csv_text(baseline.run_dir)


def test_what_the_first_task_pays_once_is_not_taken_for_the_task_time(tmp_path, monkeypatch):
    # The first task of a process loads something (1 s here); the rest are fast. Every new worker
    # would pay that again, so the run stays here instead of spreading 200 fast tasks.
    import time

    raw = {**SMALL, "name": "once", "datasets": 50}  # 200 tasks of about 1 ms
    monkeypatch.setattr(runner.CpuShare, "free", lambda self, min_interval=0.1: 2.0)
    monkeypatch.setattr(runner, "PROBE_SECONDS", 0.05)
    monkeypatch.setattr(runner, "STARTUP_SECONDS", 0.1)
    monkeypatch.setattr(runner, "_loky_pool_is_warm", lambda workers: False)
    real = median_accuracy.run_task
    first = []

    def loads_once(spec, task, rng):
        if not first:
            first.append(task.key)
            time.sleep(1.0)
        return real(spec, task, rng)

    monkeypatch.setattr(median_accuracy, "run_task", loads_once)
    res = run(raw, jobs=2, out=tmp_path, progress=False, figures=False)
    man = json.loads((res.run_dir / "manifest.json").read_text())
    assert (man["jobs"], res.workers) == (1, 1) and "ran in this process" in man["parallelism_note"]


def test_workers_start_in_the_background_and_take_over(tmp_path, monkeypatch):
    # Worth spreading from the first task: the pool starts while this process goes on computing,
    # then the workers take the rest. Here the tasks are slowed down (in this process only), so
    # that the workers are ready long before this process could finish alone.
    import time

    raw = {**SMALL, "name": "takeover", "datasets": 50}  # 200 tasks
    ref = run(raw, jobs=1, out=tmp_path / "ref", progress=False, figures=False)
    monkeypatch.setattr(runner.CpuShare, "free", lambda self, min_interval=0.1: 2.0)
    monkeypatch.setattr(runner, "PROBE_SECONDS", 1e-4)
    monkeypatch.setattr(runner, "STARTUP_SECONDS", 0.0)
    monkeypatch.setattr(runner, "_loky_pool_is_warm", lambda workers: False)
    here: list[str] = []
    real = median_accuracy.run_task

    def slow(spec, task, rng):
        here.append(task.key)
        time.sleep(0.025)  # 200 x 25 ms = 5 s alone; the workers start in about 1 s
        return real(spec, task, rng)

    monkeypatch.setattr(median_accuracy, "run_task", slow)
    res = run(raw, jobs=2, out=tmp_path / "two", progress=False, figures=False)
    man = json.loads((res.run_dir / "manifest.json").read_text())
    assert (man["jobs"], res.workers) == (2, 2) and "parallelism_note" not in man
    assert 0 < len(here) < 200  # both this process and the workers computed
    assert csv_text(res.run_dir) == csv_text(ref.run_dir)


def test_verdict_is_handed_over_before_the_figures_are_drawn(tmp_path):
    seen = []

    def on_summary(summary):
        (run_dir,) = (tmp_path / "small").iterdir()
        seen.append((summary.ok, (run_dir / "table.csv").is_file(), sorted((run_dir / "figures").glob("*.png"))))

    res = run(SMALL, out=tmp_path, progress=False, on_summary=on_summary)
    assert seen == [(True, True, [])]  # the table is written, no figure yet
    assert sorted(p.name for p in (res.run_dir / "figures").glob("*.png")) == ["error_vs_epsilon.png"]


def test_all_cores_recorded_as_the_real_count(tmp_path):
    import joblib

    res = run(SMALL, jobs=-1, backend="threading", out=tmp_path, progress=False, figures=False)
    man = json.loads((res.run_dir / "manifest.json").read_text())
    assert man["jobs"] == joblib.cpu_count() and man["jobs_requested"] == -1


@pytest.mark.slow
def test_dask_local_cluster_identical(baseline, tmp_path):
    pytest.importorskip("dask.distributed")
    res = run(SMALL, jobs=2, backend="dask", out=tmp_path, progress=False, figures=False)
    assert csv_text(res.run_dir) == csv_text(baseline.run_dir)
    man = json.loads((res.run_dir / "manifest.json").read_text())
    assert man["backend"] == "dask" and man["jobs"] == 2


@pytest.mark.slow
def test_unreachable_dask_scheduler_fails_fast_before_any_folder(tmp_path):
    pytest.importorskip("dask.distributed")
    import socket
    import time

    with socket.socket() as s:  # a free local port: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    addr = f"tcp://127.0.0.1:{port}"
    t0 = time.monotonic()
    with pytest.raises(RunError, match=f"--scheduler {addr}: cannot reach the dask scheduler"):
        run(SMALL, backend="dask", scheduler=addr, out=tmp_path, progress=False)
    # bounded by the connect timeout (runner.SCHEDULER_TIMEOUT = 5 s); generous for a loaded machine
    assert time.monotonic() - t0 < 30
    assert not (tmp_path / "small").exists()


def test_dask_missing_says_how_to_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "dask.distributed", None)  # makes the import fail
    with pytest.raises(RunError, match=r"pip install -e '\.\[dask\]'"):
        run(SMALL, backend="dask", progress=False)


def test_reordered_and_extended_config_keeps_shared_rows(baseline, tmp_path):
    raw = copy.deepcopy(SMALL)
    raw["mechanisms"] = raw["mechanisms"][::-1] + [
        {"label": "lap9", "name": "smooth_sensitivity_median", "noise": "laplace", "delta": 0.9}]
    raw["epsilon"] = [1, 2, 0.5]
    raw["datasets"] = 6
    res = run(raw, jobs=2, out=tmp_path, progress=False, figures=False)
    assert len(res.results) == 3 * 3 * 6
    old = no_timing(baseline).set_index("task")
    new = no_timing(res).set_index("task").loc[old.index, old.columns]
    pd.testing.assert_frame_equal(new, old, check_exact=True)


def test_resume_after_interrupt_recomputes_only_missing(baseline, tmp_path, monkeypatch):
    real = median_accuracy.run_task
    calls = []

    def interrupted(spec, task, rng):
        if len(calls) == 6:
            raise KeyboardInterrupt  # Ctrl-C while the 7th task runs
        calls.append(task.key)
        return real(spec, task, rng)

    monkeypatch.setattr(median_accuracy, "run_task", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(SMALL, jobs=1, out=tmp_path, progress=False, figures=False, chunk_size=4)
    (run_dir,) = (tmp_path / "small").iterdir()
    # the whole first chunk of 4 and the 2 tasks that finished in the interrupted chunk are on disk
    assert sorted(TaskStore(run_dir).load_all()) == sorted(calls)
    man = json.loads((run_dir / "manifest.json").read_text())
    assert man["status"] == "interrupted" and man["tasks"]["ok"] == 6 and man["tasks"]["missing"] == 10
    assert not list(run_dir.rglob("*.tmp")) and not (run_dir / ".lock").exists()

    second = []

    def counting(spec, task, rng):
        second.append(task.key)
        return real(spec, task, rng)

    monkeypatch.setattr(median_accuracy, "run_task", counting)
    res = run(SMALL, jobs=1, out=tmp_path, progress=False, figures=False)  # the same command again
    assert res.run_dir == run_dir and (res.computed, res.reused) == (10, 6)
    assert len(second) == 10 and not set(second) & set(calls)
    assert csv_text(run_dir) == csv_text(baseline.run_dir)
    assert (run_dir / "table.csv").read_text() == (baseline.run_dir / "table.csv").read_text()
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"
    # Finished: the next identical command starts a new folder and never touches this one.
    res3 = run(SMALL, jobs=1, out=tmp_path, progress=False, figures=False)
    assert res3.run_dir != run_dir and res3.computed == 16


def test_resume_reads_the_per_task_layout_and_cleans_stale_files(baseline, tmp_path):
    # A folder begun by the older layout (one tasks/<key hash>.json per task), killed while writing
    # a temporary file: the runner reuses those records and removes the leftover.
    run_dir = tmp_path / "small" / "old"
    (run_dir / "tasks").mkdir(parents=True)
    (run_dir / "config.yaml").write_text((baseline.run_dir / "config.yaml").read_text())
    old = TaskStore(baseline.run_dir).load_all()
    keep = sorted(old)[:5]
    store = TaskStore(run_dir)
    for k in keep:
        store.path(k).write_text(json.dumps(old[k]))
    (run_dir / "tasks" / ".chunk-0000000000000000.json.123-abcd.tmp").write_text("{partial")
    (run_dir / "tasks" / "chunk-1111111111111111.json").write_text("{corrupt")  # ignored
    res = run(SMALL, resume=run_dir, progress=False, figures=False)
    assert (res.computed, res.reused) == (11, 5)
    assert csv_text(run_dir) == csv_text(baseline.run_dir)
    assert not list(run_dir.rglob("*.tmp"))


def test_finished_work_of_workers_is_kept_when_the_parent_is_interrupted(baseline, tmp_path, monkeypatch,
                                                                         use_workers):
    # Threads compute; SIGINT reaches the parent while chunks are out: it stops dispatching, every
    # chunk saves what it finished, the run ends interrupted, and the resume reuses all of it.
    real = median_accuracy.run_task
    seen = []

    def signal_at_8(spec, task, rng):
        seen.append(task.key)
        if len(seen) == 8:
            os.kill(os.getpid(), signal.SIGINT)
        if len(seen) > 8:
            # The handler runs when the main thread next executes Python code; on a loaded machine the
            # other thread could finish all 16 tasks first. Wait (bounded) until the stop is recorded.
            deadline = time.monotonic() + 10.0
            while not execution._STOPPED and time.monotonic() < deadline:
                time.sleep(0.01)
        return real(spec, task, rng)

    monkeypatch.setattr(median_accuracy, "run_task", signal_at_8)
    with pytest.raises(KeyboardInterrupt):
        run(SMALL, jobs=2, backend="threading", out=tmp_path, progress=False, figures=False, chunk_size=2)
    (run_dir,) = (tmp_path / "small").iterdir()
    saved = TaskStore(run_dir).load_all()
    assert 8 <= len(saved) < 16 and not (run_dir / ".stop").exists()
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "interrupted"
    monkeypatch.setattr(median_accuracy, "run_task", real)
    res = run(SMALL, jobs=1, out=tmp_path, progress=False, figures=False)
    assert res.run_dir == run_dir and res.reused == len(saved)
    assert csv_text(run_dir) == csv_text(baseline.run_dir)


def test_a_second_run_into_a_locked_folder_is_refused(baseline, tmp_path, monkeypatch):
    real = median_accuracy.run_task
    monkeypatch.setattr(median_accuracy, "run_task", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        run(SMALL, out=tmp_path, progress=False, figures=False)
    monkeypatch.setattr(median_accuracy, "run_task", real)
    (run_dir,) = (tmp_path / "small").iterdir()
    with RunLock(run_dir):  # another run is writing this folder
        for kw in ({"out": tmp_path}, {"resume": run_dir}):
            with pytest.raises(RunError, match=rf"being written by another run \(pid {os.getpid()} on host "):
                run(SMALL, progress=False, figures=False, **kw)
    res = run(SMALL, out=tmp_path, progress=False, figures=False)  # lock released: resumes
    assert res.run_dir == run_dir and res.computed == 16


def test_failing_task_becomes_error_row_and_is_retried(baseline, tmp_path, monkeypatch):
    real = median_accuracy.run_task
    bad = "mechanism=lap|epsilon=2|dataset=1"

    def flaky(spec, task, rng):
        if task.key.endswith(bad):
            raise ValueError("boom")
        return real(spec, task, rng)

    monkeypatch.setattr(median_accuracy, "run_task", flaky)
    res = run(SMALL, jobs=1, out=tmp_path, progress=False, figures=False)
    assert res.exit_code == 1 and res.errors == 1
    row = res.results[res.results["status"] == "error"]
    assert len(row) == 1 and row["message"].iloc[0] == "ValueError: boom"
    assert row["mechanism"].iloc[0] == "lap" and row["epsilon"].iloc[0] == 2 and row["dataset"].iloc[0] == 1
    assert "fewer than 4 datasets" in res.summary.text
    assert json.loads((res.run_dir / "manifest.json").read_text())["status"] == "errors"

    monkeypatch.setattr(median_accuracy, "run_task", real)
    again = run(SMALL, jobs=1, out=tmp_path, progress=False, figures=False)  # retried in the same folder
    assert again.run_dir == res.run_dir and again.computed == 1 and again.exit_code == 0
    assert csv_text(again.run_dir) == csv_text(baseline.run_dir)


def test_every_task_failing_exits_1_with_a_manifest_and_no_traceback(tmp_path, monkeypatch, capsys):
    import yaml
    from dpharness.bench.cli import main

    def oom(spec, task, rng):
        raise MemoryError("cannot allocate 8 GiB")

    monkeypatch.setattr(median_accuracy, "run_task", oom)
    cfg = tmp_path / "small.yaml"
    cfg.write_text(yaml.safe_dump(SMALL), encoding="utf-8")
    assert main(["run", str(cfg), "--out", str(tmp_path / "o")]) == 1
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    assert "16 of 16 tasks FAILED" in cap.out and "MemoryError: cannot allocate 8 GiB" in cap.out
    (run_dir,) = (tmp_path / "o" / "small").iterdir()
    man = json.loads((run_dir / "manifest.json").read_text())
    assert man["status"] == "errors" and man["exit_code"] == 1 and man["tasks"]["errors"] == 16
    # if the kind's summary or figures cannot cope with no results, that is recorded and printed
    assert all(msg in cap.err for msg in man.get("output_errors", {}).values())
    assert (run_dir / "results.csv").is_file()


def test_failing_summary_is_one_message_exit_1_and_recorded(tmp_path, monkeypatch, capsys):
    import yaml
    from dpharness.bench.cli import main

    def broken(spec, results):
        raise KeyError("mean_abs_error")

    monkeypatch.setattr(median_accuracy, "summarize", broken)
    cfg = tmp_path / "small.yaml"
    cfg.write_text(yaml.safe_dump(SMALL), encoding="utf-8")
    assert main(["run", str(cfg), "--out", str(tmp_path / "o")]) == 1
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    assert [ln for ln in cap.err.splitlines() if ln.startswith("error:")] == [
        ln for ln in cap.err.splitlines() if "summary failed: KeyError: 'mean_abs_error'" in ln]
    (run_dir,) = (tmp_path / "o" / "small").iterdir()
    man = json.loads((run_dir / "manifest.json").read_text())
    assert man["status"] == "failed" and man["output_errors"] == {"summary": "KeyError: 'mean_abs_error'"}
    assert man["exit_code"] == 1 and man["tasks"]["ok"] == 16


def test_failing_plot_is_recorded_and_the_run_resumes_to_complete(tmp_path, monkeypatch, baseline):
    def broken(*a, **k):
        raise RuntimeError("no display")

    monkeypatch.setattr(median_accuracy, "plot", broken)
    res = run(SMALL, out=tmp_path, progress=False)
    man = json.loads((res.run_dir / "manifest.json").read_text())
    assert res.exit_code == 1 and res.status == "failed" and man["status"] == "failed"
    assert man["output_errors"] == {"figures": "RuntimeError: no display"}
    monkeypatch.undo()
    again = run(SMALL, out=tmp_path, progress=False)  # nothing recomputed, the figures drawn
    assert again.run_dir == res.run_dir and again.computed == 0 and again.exit_code == 0
    assert (res.run_dir / "figures" / "error_vs_epsilon.png").is_file()


def test_clipped_points_in_the_manifest_and_the_cli_output(tmp_path, monkeypatch, capsys):
    import yaml
    from dpharness.bench.cli import main

    real = median_accuracy.run_task

    def clipping(spec, task, rng):
        return [dict(r, clipped=3) for r in real(spec, task, rng)]

    monkeypatch.setattr(median_accuracy, "run_task", clipping)
    cfg = tmp_path / "small.yaml"
    cfg.write_text(yaml.safe_dump(SMALL), encoding="utf-8")
    assert main(["run", str(cfg), "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "48 data points outside [lower, upper] were clipped; see results.csv column clipped" in out
    (run_dir,) = (tmp_path / "o" / "small").iterdir()
    assert json.loads((run_dir / "manifest.json").read_text())["clipped_points"] == 48


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_output_files_honour_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        res = run(SMALL, out=tmp_path, progress=False)
    finally:
        os.umask(old)
    files = [p for p in res.run_dir.rglob("*") if p.is_file()]
    assert {"results.csv", "manifest.json", "config.yaml", "table.md", "error_vs_epsilon.png"} <= {p.name for p in files}
    assert any(p.name.startswith("chunk-") for p in files)
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask, p


def test_explicit_resume_checks_the_config(baseline, tmp_path):
    other = copy.deepcopy(SMALL)
    other["draws"] = 11
    with pytest.raises(RunError, match="complete"):
        run(SMALL, resume=baseline.run_dir, progress=False)
    unfinished = tmp_path / "small" / "x"
    unfinished.mkdir(parents=True)
    (unfinished / "config.yaml").write_text((baseline.run_dir / "config.yaml").read_text())
    with pytest.raises(RunError, match="different config"):
        run(other, resume=unfinished, progress=False)
    res = run(SMALL, resume=unfinished, progress=False, figures=False)
    assert res.run_dir == unfinished and res.computed == 16
    assert csv_text(unfinished) == csv_text(baseline.run_dir)


def test_seed_override_changes_results(baseline, tmp_path):
    res = run(SMALL, seed=8, out=tmp_path, progress=False, figures=False)
    assert res.config.seed == 8 and res.config.hash != baseline.config.hash
    assert not np.array_equal(res.results["mean_abs_error"], baseline.results["mean_abs_error"])


def test_plot_command_rebuilds_figures(baseline, capsys):
    fig = baseline.run_dir / "figures" / "error_vs_epsilon.png"
    fig.unlink()
    assert cmd_plot(argparse.Namespace(run_dir=str(baseline.run_dir))) == 0
    assert fig.is_file() and fig.stat().st_size > 1000


def test_cli_run_prints_table_and_reports_config_errors(tmp_path, capsys):
    import yaml
    from dpharness.bench.cli import main

    cfg = tmp_path / "small.yaml"
    cfg.write_text(yaml.safe_dump(SMALL), encoding="utf-8")
    assert main(["run", str(cfg), "--out", str(tmp_path / "o"), "--chunk-size", "3"]) == 0
    out = capsys.readouterr().out
    assert "ε=0.5" in out and "run folder:" in out
    first = out.splitlines()[0]  # the verdict, printed once (before the figures are drawn)
    assert first.strip() and out.count(first) == 1 and out.index("ε=0.5") < out.index("run folder:")
    bad = dict(SMALL, datasets=0)
    cfg.write_text(yaml.safe_dump(bad), encoding="utf-8")
    assert main(["run", str(cfg), "--out", str(tmp_path / "o")]) == 2
    assert f"{cfg}: datasets: must be >= 1, got 0" in capsys.readouterr().err
    cfg.write_text(yaml.safe_dump(SMALL), encoding="utf-8")
    a_file = tmp_path / "not_a_dir"
    a_file.write_text("x", encoding="utf-8")
    assert main(["run", str(cfg), "--out", str(a_file)]) == 2
    assert f"--out {a_file}: is not a directory" in capsys.readouterr().err


def test_csv_data_run_and_plot_from_the_run_folder(tmp_path, monkeypatch):
    import yaml

    src = tmp_path / "cfgs"
    src.mkdir()
    rng = np.random.default_rng(3)
    pd.DataFrame({"v": rng.integers(0, 50, size=300)}).to_csv(src / "d.csv", index=False)
    raw = dict(SMALL, name="csvrun", data={"csv": "d.csv", "column": "v", "lower": 0, "upper": 60}, datasets=2)
    raw.pop("lower"), raw.pop("upper")  # the range comes from the data entry
    (src / "c.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # relative paths resolve against the config's folder, not the cwd
    res = run(src / "c.yaml", out=tmp_path / "o", progress=False)
    assert res.exit_code == 0 and set(res.results["n"]) == {300}
    assert set(res.results["truth"]) == {float(np.sort(pd.read_csv(src / "d.csv")["v"])[149])}
    fig = res.run_dir / "figures" / "error_vs_epsilon.png"
    fig.unlink()
    monkeypatch.chdir(src.parent.parent)
    assert cmd_plot(argparse.Namespace(run_dir=str(res.run_dir))) == 0 and fig.is_file()


# -- chunking ----------------------------------------------------------------------------------


def test_spread_order_is_a_permutation_whose_windows_cover_the_sweep():
    for n in (1, 2, 7, 1000):
        order = spread_order(n)
        assert sorted(order.tolist()) == list(range(n))
    order = spread_order(1000)
    # any 10 consecutive dispatches land in at least 7 of the 10 tenths of the task list (a
    # contiguous cut would hit 1 or 2)
    for i in range(991):
        assert len(set(order[i:i + 10] // 100)) >= 7


def test_chunk_plan_sizes():
    tasks = [Task(f"t={i}") for i in range(1000)]
    fixed = ChunkPlan(tasks, workers=2, chunk_size=64)
    chunks = list(fixed)
    assert [len(c) for c in chunks] == [64] * 15 + [40]
    assert sorted(t.key for c in chunks for t in c) == sorted(t.key for t in tasks)
    auto = ChunkPlan(tasks, workers=2, target=0.5)
    sizes = []
    while (c := auto.take()) is not None:
        sizes.append(len(c))
        auto.record(len(c), 0.001 * len(c))  # 1 ms per task: chunks grow 4x per step towards 500
    assert sizes[:4] == [1, 4, 16, 64]
    assert max(sizes) <= math.ceil(1000 / 4) and sum(sizes) == 1000
    assert sizes[-1] <= 2  # the tail shrinks so the last chunks balance across workers
    probe = ChunkPlan(tasks, workers=1)
    probe.record(1, 0.01)
    assert probe.next_size(max_seconds=0.05) == 4  # 10 ms tasks, 50 ms left: 4 (growth cap), not 50
    probe.record(4, 0.04)
    assert probe.next_size(max_seconds=0.05) == 5


def test_every_kind_satisfies_the_plugin_protocol(tmp_path, monkeypatch):
    import sys
    import types

    from dpharness.bench import experiments

    for kind in experiments.available():
        assert isinstance(experiments.get(kind), experiments.ExperimentKind), kind
    fake = types.ModuleType("dpharness.bench.experiments.fake")
    fake.parse = fake.tasks = fake.run_task = fake.summarize = lambda *a: None  # no plot
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setattr(experiments, "available", lambda: ["fake"])
    with pytest.raises(ValueError, match="'fake' lacks plot"):
        experiments.get("fake")
    fake.plot, fake.check = fake.parse, "not a function"
    with pytest.raises(ValueError, match="check must be a function"):
        experiments.get("fake")


def test_progress_lines_off_a_terminal_and_silent_for_short_runs(tmp_path, capsys):
    import io

    from dpharness.bench.report.progress import progress

    buf = io.StringIO()
    with progress(10, desc="demo", initial=2, stream=buf, delay=0.0, interval=0.0) as bar:
        for _ in range(8):
            bar.update(1)
    lines = buf.getvalue().splitlines()
    assert "\r" not in buf.getvalue() and lines[-1].startswith("demo: 100%") and "10/10" in lines[-1]
    quiet = io.StringIO()
    with progress(10, desc="demo", stream=quiet, enabled=False) as bar:
        bar.update(10)
    assert quiet.getvalue() == ""
    run(SMALL, out=tmp_path, figures=False)  # progress on, but the run is shorter than the delay
    assert "small:" not in capsys.readouterr().err
