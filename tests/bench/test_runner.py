"""The runner: results independent of jobs/backend/order, resume, failures as rows, run folder."""

from __future__ import annotations

import argparse
import copy
import io
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpharness.bench import runner
from dpharness.bench.experiments import median_accuracy
from dpharness.bench.plots import cmd_plot
from dpharness.bench.runner import Progress, RunError, run

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
    return df.drop(columns=list(runner.TIMING_COLUMNS)).reset_index(drop=True)


def csv_text(run_dir: Path) -> str:
    df = pd.read_csv(run_dir / "results.csv", dtype=str, keep_default_na=False)
    return df.drop(columns=list(runner.TIMING_COLUMNS)).to_csv(index=False)


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
    assert len(list((d / "tasks").glob("*.json"))) == 16
    res = pd.read_csv(d / "results.csv")
    assert len(res) == 16 and set(res["status"]) == {"ok"}
    for c in ("task", "mechanism", "epsilon", "dataset", "mean_abs_error", "p_name", "p_noise", "root_seed", "spawn_key", "seconds"):
        assert c in res.columns, c
    man = json.loads((d / "manifest.json").read_text())
    assert man["status"] == "complete" and man["tasks"] == {"total": 16, "ok": 16, "errors": 0, "computed": 16, "reused": 0}
    assert man["cell_columns"] == ["data", "n", "mechanism", "epsilon"] and man["metric"] == "mean_abs_error"
    assert man["jobs"] == 1 and man["backend"] == "loky" and "numpy" in man["versions"] and "commit" in man["git"]
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


def test_jobs_and_backends_give_identical_results(baseline, tmp_path):
    ref = csv_text(baseline.run_dir)
    for backend, jobs in (("loky", 2), ("threading", 2)):
        res = run(SMALL, jobs=jobs, backend=backend, out=tmp_path / backend, progress=False, figures=False)
        assert csv_text(res.run_dir) == ref, backend
        assert (res.run_dir / "table.csv").read_text() == (baseline.run_dir / "table.csv").read_text()


def test_dask_local_cluster_identical(baseline, tmp_path):
    pytest.importorskip("dask.distributed")
    res = run(SMALL, jobs=2, backend="dask", out=tmp_path, progress=False, figures=False)
    assert csv_text(res.run_dir) == csv_text(baseline.run_dir)
    assert json.loads((res.run_dir / "manifest.json").read_text())["backend"] == "dask"


def test_dask_missing_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # makes the import fail
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
        run(SMALL, jobs=1, out=tmp_path, progress=False, figures=False)
    (run_dir,) = (tmp_path / "small").iterdir()
    assert len(list((run_dir / "tasks").glob("*.json"))) == 6
    assert not (run_dir / "manifest.json").exists()

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
    # Finished: the next identical command starts a new folder and never touches this one.
    res3 = run(SMALL, jobs=1, out=tmp_path, progress=False, figures=False)
    assert res3.run_dir != run_dir and res3.computed == 16


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
    from dpharness.bench.cli import main

    import yaml

    cfg = tmp_path / "small.yaml"
    cfg.write_text(yaml.safe_dump(SMALL), encoding="utf-8")
    assert main(["run", str(cfg), "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "ε=0.5" in out and "run folder:" in out
    bad = dict(SMALL, datasets=0)
    cfg.write_text(yaml.safe_dump(bad), encoding="utf-8")
    assert main(["run", str(cfg), "--out", str(tmp_path / "o")]) == 2
    assert f"{cfg}: datasets: must be >= 1, got 0" in capsys.readouterr().err
    cfg.write_text(yaml.safe_dump(SMALL), encoding="utf-8")
    a_file = tmp_path / "not_a_dir"
    a_file.write_text("x", encoding="utf-8")
    assert main(["run", str(cfg), "--out", str(a_file)]) == 2
    assert "cannot write the run folder" in capsys.readouterr().err


def test_progress_line():
    buf = io.StringIO()
    p = Progress(10, 2, "demo", stream=buf, delay=0.0)
    p.update(1)  # first result: worker start-up, no rate yet, nothing printed
    assert buf.getvalue() == ""
    p.last, p.t_first = -1e9, p.t_first - 2.0  # pretend the first result came 2 s ago
    p.update(2)
    p.close()
    text = buf.getvalue()
    assert "demo: 5/10 tasks (50%)" in text and "tasks/s" in text and "ETA" in text and "stopped after" in text


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
