"""Tests of ``dpharness regress`` on run folders (bench/regress/: load, compare, report, cli).

Synthetic run folders (the layout bench/run/runner.py writes: results.csv, config.yaml, manifest.json
with cell_columns and metric) test the verdicts, the input checks, the report files and the
command line. The statistics alone: test_regress_stats.py; the committed baselines re-run:
test_regress_baselines.py; bad input through the CLI: tests/bad_input/test_regress_cli.py.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from dpharness.bench import regress as rg
from dpharness.bench.cli import main as cli_main

MECHS = {"A": 1.0, "B": 3.0}  # mean per-dataset error at epsilon = 1
EPS = (0.5, 1.0, 2.0)
CV = 0.15  # coefficient of variation of the per-dataset errors across datasets


def write_run(
    path: Path,
    *,
    seed: int,
    datasets: int = 30,
    factor: dict | None = None,
    config: dict | None = None,
    manifest: dict | None = None,
    drop_cells: tuple = (),
    shape: float | None = None,
) -> Path:
    """A synthetic run folder: per-dataset errors ~ Gamma(mean = MECHS[m] / eps, cv = CV),
    multiplied by ``factor[(m, eps)]`` (a changed implementation)."""
    rng = np.random.default_rng(seed)
    k = shape if shape is not None else 1.0 / CV**2
    rows = []
    for m, base in MECHS.items():
        for e in EPS:
            if (m, e) in drop_cells:
                continue
            mean = base / e * (factor or {}).get((m, e), 1.0)
            vals = rng.gamma(k, mean / k, size=datasets)
            for i, v in enumerate(vals):
                rows.append({"data": "normal", "n": 1000, "mechanism": m, "epsilon": e, "dataset": i,
                             "mean_abs_error": v / 100, "mean_abs_error_x100": v, "status": "ok", "message": "",
                             "seconds": 0.01, "root_seed": seed})
    path.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path / "results.csv", index=False)
    cfg = {"name": "synth", "experiment": "median_accuracy", "seed": seed, "datasets": datasets, "draws": 50,
           "epsilon": list(EPS), "mechanisms": [{"label": m, "name": "duff_median"} for m in MECHS]}
    cfg.update(config or {})
    (path / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    man = {"cell_columns": ["data", "n", "mechanism", "epsilon"], "replicate_column": "dataset",
           "metric": "mean_abs_error", "metric_scaled": "mean_abs_error_x100", "lower_is_better": True,
           "status": "complete"}
    man.update(manifest or {})
    (path / "manifest.json").write_text(json.dumps({k: v for k, v in man.items() if v is not None}))
    (path / "table.csv").write_text("mechanism,epsilon\n")
    return path



# -------------------------------------------------------------------------------------------
# Run folders
# -------------------------------------------------------------------------------------------


def test_identical_runs_pass(tmp_path):
    base = write_run(tmp_path / "base", seed=1)
    new = tmp_path / "new"
    shutil.copytree(base, new)
    rep = rg.regress(new, base)
    assert rep.exit_code == 0, rep.message
    assert len(rep.cells) == 6 and set(rep.cells["verdict"]) == {"ok"}
    assert (rep.cells["change_pct"] == 0).all()
    assert rep.metric == "mean_abs_error_x100"


def test_rerun_with_another_seed_passes(tmp_path):
    base = write_run(tmp_path / "base", seed=1)
    new = write_run(tmp_path / "new", seed=2)
    rep = rg.regress(new, base)
    assert rep.exit_code == 0, rep.cells
    assert set(rep.cells["verdict"]) == {"ok"}


def test_degraded_cell_is_caught_and_only_it(tmp_path):
    # x1.3 in one cell (the "smooth-sensitivity noise scale x 1.3" scenario)
    base = write_run(tmp_path / "base", seed=1)
    new = write_run(tmp_path / "new", seed=2, factor={("B", 1.0): 1.3})
    rep = rg.regress(new, base)
    assert rep.exit_code == 1
    flagged = rep.cells.loc[rep.cells["verdict"] == "regression", "cell"].tolist()
    assert flagged == ["data=normal|n=1000|mechanism=B|epsilon=1"]
    assert "REGRESSION" in rep.message
    row = rep.cells.set_index("cell").loc[flagged[0]]
    assert row["change_pct"] > 15 and row["p_value"] < 0.01


def test_same_seed_runs_are_paired_and_more_powerful(tmp_path):
    # same root seed -> same datasets; a +8 % change (3 % beyond tolerance) of every dataset's
    # error is invisible to Welch at 30 datasets (detectable ~20 %) but certain for the paired test
    base = write_run(tmp_path / "base", seed=1)
    new = write_run(tmp_path / "new", seed=1, factor={("A", 1.0): 1.08}, config={"description": "edited"})
    rep = rg.regress(new, base)
    assert rep.paired and set(rep.cells["test"]) == {"paired t"} and "paired t-test" in rep.header()
    assert rep.exit_code == 1
    assert rep.regressions["cell"].tolist() == ["data=normal|n=1000|mechanism=A|epsilon=1"]
    welch = rg.regress(new, base, paired=False)
    assert not welch.paired and welch.exit_code == 0
    # runs with different seeds are never paired, and pairing cannot be forced on them
    other = write_run(tmp_path / "other", seed=2)
    assert not rg.regress(other, base).paired
    forced = write_run(tmp_path / "forced", seed=2, drop_cells=())
    df = pd.read_csv(forced / "results.csv")
    df["dataset"] += 100
    df.to_csv(forced / "results.csv", index=False)
    rep = rg.regress(forced, base, paired=True)
    assert rep.exit_code == 2 and "same dataset ids" in rep.message


def test_improvement_is_reported_never_a_failure(tmp_path):
    base = write_run(tmp_path / "base", seed=1)
    new = write_run(tmp_path / "new", seed=2, factor={("A", 2.0): 0.6})
    rep = rg.regress(new, base)
    assert rep.exit_code == 0
    assert rep.cells.loc[rep.cells["verdict"] == "improvement", "cell"].tolist() == [
        "data=normal|n=1000|mechanism=A|epsilon=2"
    ]
    assert "improvement" in rep.message


def test_tolerance_is_honoured(tmp_path):
    # with many datasets a +3 % change is measured precisely, yet is within the 5 % tolerance;
    # a +10 % change is beyond it and flagged
    base = write_run(tmp_path / "base", seed=1, datasets=3000)
    small = write_run(tmp_path / "small", seed=2, datasets=3000, factor={("A", 1.0): 1.03})
    big = write_run(tmp_path / "big", seed=3, datasets=3000, factor={("A", 1.0): 1.10})
    assert rg.regress(small, base).exit_code == 0
    assert rg.regress(small, base, tolerance=0.0).exit_code == 1
    rep = rg.regress(big, base)
    assert rep.exit_code == 1
    assert rep.regressions["cell"].tolist() == ["data=normal|n=1000|mechanism=A|epsilon=1"]


def test_higher_is_better_metric(tmp_path):
    base = write_run(tmp_path / "base", seed=1, manifest={"lower_is_better": False})
    worse = write_run(tmp_path / "new", seed=2, factor={("A", 0.5): 0.7}, manifest={"lower_is_better": False})
    rep = rg.regress(worse, base)
    assert rep.exit_code == 1
    assert rep.regressions["cell"].tolist() == ["data=normal|n=1000|mechanism=A|epsilon=0.5"]


def write_summary_run(path: Path, means: dict, se: float = 0.02, se_column: str | None = "mc_se") -> Path:
    """A run of a kind that reports one Monte Carlo mean +- SE per cell (like the textbook kinds),
    plus rows of a cell without the metric (a histogram), which are not compared."""
    path.mkdir(parents=True)
    rows = [{"what": "loss", "epsilon": e, "mc_mean": m, "mc_se": se, "status": "ok"} for e, m in means.items()]
    rows += [{"what": "histogram", "epsilon": 5.0, "bin": i, "count": 3, "status": "ok"} for i in range(4)]
    pd.DataFrame(rows).to_csv(path / "results.csv", index=False)
    (path / "config.yaml").write_text(yaml.safe_dump({"name": "pumpkinish", "experiment": "pumpkin", "seed": 1}))
    man = {"cell_columns": ["what", "epsilon"], "metric": "mc_mean", "status": "complete"}
    if se_column:
        man["se_column"] = se_column
    (path / "manifest.json").write_text(json.dumps(man))
    return path


def test_one_row_per_cell_with_standard_errors(tmp_path):
    base = write_summary_run(tmp_path / "base", {0.1: 2.0, 1.0: 1.0, 5.0: 0.5})
    same = write_summary_run(tmp_path / "same", {0.1: 2.03, 1.0: 0.98, 5.0: 0.52})
    worse = write_summary_run(tmp_path / "worse", {0.1: 2.0, 1.0: 1.3, 5.0: 0.5})
    rep = rg.regress(same, base)
    assert rep.exit_code == 0 and set(rep.cells["test"]) == {"z (mean ± SE)"} and len(rep.cells) == 3
    rep = rg.regress(worse, base)
    assert rep.exit_code == 1 and rep.regressions["cell"].tolist() == ["what=loss|epsilon=1"]
    # z = (1.3 - 1.05) / sqrt(0.02^2 + (1.05 * 0.02)^2); Holm over 3 cells
    z = 0.25 / math.hypot(0.02, 1.05 * 0.02)
    assert rep.regressions["p_value"].iloc[0] == pytest.approx(min(1.0, 3 * stats.norm.sf(z)), rel=1e-9)
    assert rep.regressions["detectable_pct"].iloc[0] == pytest.approx(
        100 * rg.detectable_degradation_se(1.0, 0.02, n_cells=3), rel=1e-9)
    # without a standard error one value per cell cannot be tested
    plain = write_summary_run(tmp_path / "plain", {0.1: 2.0, 1.0: 1.0, 5.0: 0.5}, se_column=None)
    plain2 = write_summary_run(tmp_path / "plain2", {0.1: 2.0, 1.0: 1.0, 5.0: 0.5}, se_column=None)
    rep = rg.regress(plain2, plain)
    assert rep.exit_code == 2 and "the test needs at least 2 each" in rep.message


# -------------------------------------------------------------------------------------------
# Unusable input: exit 2 with a clear message
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make_new, expected",
    [
        (lambda p: write_run(p, seed=2, config={"epsilon": [0.5, 1.0, 4.0]}), "different configs.*epsilon"),
        (lambda p: write_run(p, seed=2, datasets=20), "different configs.*datasets"),
        (lambda p: write_run(p, seed=2, manifest={"metric_scaled": None}),
         "describe their cells differently"),
        (lambda p: write_run(p, seed=2, manifest={"cell_columns": None, "metric": None, "metric_scaled": None},
                             config={"experiment": "no_such_kind"}), "cell_columns"),
        (lambda p: write_run(p, seed=2, manifest={"cell_columns": ["mechanism", "delta"]}), "lacks column.*delta"),
        (lambda p: p, "does not exist"),
    ],
    ids=["epsilon-grid", "datasets", "metric", "no-cell-columns", "missing-column", "missing-folder"],
)
def test_mismatched_runs_are_refused(tmp_path, make_new, expected):
    base = write_run(tmp_path / "base", seed=1)
    new = make_new(tmp_path / "new")
    rep = rg.regress(new, base)
    assert rep.exit_code == 2
    assert rep.cells.empty
    import re

    assert re.search(expected, rep.message), rep.message


def test_missing_cells_errored_tasks_and_incomplete_runs_are_refused(tmp_path):
    base = write_run(tmp_path / "base", seed=1)
    missing = write_run(tmp_path / "missing", seed=2, drop_cells=(("B", 2.0),))
    rep = rg.regress(missing, base)
    assert rep.exit_code == 2 and "missing from the new run: data=normal|n=1000|mechanism=B|epsilon=2" in rep.message

    errored = write_run(tmp_path / "errored", seed=2)
    df = pd.read_csv(errored / "results.csv")
    df["message"] = df["message"].astype(object)
    df.loc[3, ["status", "message", "mean_abs_error_x100"]] = ["error", "ValueError: boom", np.nan]
    df.to_csv(errored / "results.csv", index=False)
    rep = rg.regress(errored, base)
    assert rep.exit_code == 2 and "1 task(s) with status other than ok" in rep.message and "boom" in rep.message

    short = write_run(tmp_path / "short", seed=2)
    df = pd.read_csv(short / "results.csv")
    df.drop(index=[0]).to_csv(short / "results.csv", index=False)
    rep = rg.regress(short, base)
    assert rep.exit_code == 2 and "29 datasets in the new run but 30 in the baseline" in rep.message

    dup = write_run(tmp_path / "dup", seed=2)
    df = pd.read_csv(dup / "results.csv")
    pd.concat([df, df.iloc[:1]]).to_csv(dup / "results.csv", index=False)
    rep = rg.regress(dup, base)
    assert rep.exit_code == 2 and "duplicate" in rep.message

    norep = write_run(tmp_path / "norep", seed=2, manifest={"replicate_column": None})
    rep = rg.regress(norep, base)
    assert rep.exit_code == 2 and "names no replicate_column" in rep.message

    (tmp_path / "nofiles").mkdir()
    rep = rg.regress(tmp_path / "nofiles", base)
    assert rep.exit_code == 2 and "lacks results.csv, config.yaml, manifest.json" in rep.message


def test_bad_levels_raise_valueerror_naming_the_parameter(tmp_path):
    base = write_run(tmp_path / "base", seed=1)
    with pytest.raises(ValueError, match="alpha must be in"):
        rg.regress(base, base, alpha=1.5)
    with pytest.raises(ValueError, match="tolerance must be in"):
        rg.regress(base, base, tolerance=-0.1)


# -------------------------------------------------------------------------------------------
# The command line
# -------------------------------------------------------------------------------------------


def test_cli_prints_table_writes_files_and_exits_1_on_regression(tmp_path, capsys):
    base = write_run(tmp_path / "base", seed=1)
    new = write_run(tmp_path / "new", seed=2, factor={("A", 0.5): 1.5})
    code = cli_main(["regress", str(new), str(base), "--alpha", "0.01", "--tolerance", "0.05"])
    out = capsys.readouterr().out
    assert code == 1
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("cell "))
    assert lines[head].split() == ["cell", "baseline", "new", "change", "%", "p-value", "verdict", "detectable", "%"]
    flagged = [line for line in lines[head + 2:head + 8] if "REGRESSION" in line]
    assert len(flagged) == 1 and flagged[0].startswith("mechanism=A|epsilon=0.5 "), out
    table = pd.read_csv(new / "regress.csv")
    assert len(table) == 6 and (table["verdict"] == "regression").sum() == 1
    md = (new / "regress.md").read_text()
    assert md.startswith("# Regression check: REGRESSION in 1 of 6 cells") and "| cell |" in md


def test_cli_exit_0_and_exit_2_without_traceback(tmp_path, capsys):
    base = write_run(tmp_path / "base", seed=1)
    new = write_run(tmp_path / "new", seed=2)
    assert cli_main(["regress", str(new), str(base)]) == 0
    capsys.readouterr()
    other = write_run(tmp_path / "other", seed=2, config={"draws": 99})
    assert cli_main(["regress", str(other), str(base)]) == 2
    err = capsys.readouterr().err
    assert "different configs" in err and "draws (new 99, baseline 50)" in err and "Traceback" not in err
    assert cli_main(["regress", str(new), str(base), "--alpha", "2"]) == 2
    assert "alpha must be in (0, 1), got 2" in capsys.readouterr().err


def test_update_baseline(tmp_path, capsys):
    base = write_run(tmp_path / "baselines" / "synth", seed=1)
    new = write_run(tmp_path / "new", seed=2, factor={("A", 1.0): 2.0})
    (new / "figures").mkdir()
    (new / "tasks").mkdir()
    assert cli_main(["regress", str(new), str(base), "--update-baseline"]) == 0
    out = capsys.readouterr().out
    assert "REGRESSION" in out and "updated" in out  # still reported, then accepted
    assert sorted(p.name for p in base.iterdir()) == ["config.yaml", "manifest.json", "results.csv", "table.csv"]
    assert (base / "results.csv").read_bytes() == (new / "results.csv").read_bytes()
    assert rg.regress(new, base).exit_code == 0
    # a deliberate config change: the comparison is impossible but the update is allowed
    changed = write_run(tmp_path / "changed", seed=3, config={"draws": 99})
    assert cli_main(["regress", str(changed), str(base), "--update-baseline"]) == 0
    assert "different configs" in capsys.readouterr().err
    assert yaml.safe_load((base / "config.yaml").read_text())["draws"] == 99
    # a new baseline location is created
    fresh = tmp_path / "baselines" / "fresh"
    assert cli_main(["regress", str(new), str(fresh), "--update-baseline"]) == 0
    assert (fresh / "results.csv").is_file()
    # never wipes a folder that is not a run folder
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    capsys.readouterr()
    assert cli_main(["regress", str(new), str(precious), "--update-baseline"]) == 2
    assert "not a run folder" in capsys.readouterr().err
    assert (precious / "notes.txt").read_text() == "keep me"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_report_files_are_complete_and_replace_earlier_ones(tmp_path, capsys):
    base = write_run(tmp_path / "base", seed=1)
    new = write_run(tmp_path / "new", seed=2, factor={("B", 2.0): 1.6})
    (new / "regress.md").write_text("stale")
    assert cli_main(["regress", str(new), str(base)]) == 1
    assert "wrote" in capsys.readouterr().out
    # exactly the run's files plus the two reports: no temporary file left behind
    assert sorted(p.name for p in new.iterdir()) == sorted(
        ["config.yaml", "manifest.json", "results.csv", "table.csv", "regress.csv", "regress.md"])
    table = pd.read_csv(new / "regress.csv")
    rep = rg.regress(new, base)
    assert table["cell"].tolist() == rep.cells["cell"].tolist()
    np.testing.assert_allclose(table["p_value"], rep.cells["p_value"], rtol=1e-12)
    md = (new / "regress.md").read_text().splitlines()
    i = md.index("| cell | baseline | new | change % | p-value | verdict | detectable % |")
    assert md[i + 1] == "|---|---:|---:|---:|---:|---|---:|"  # numbers right-aligned (bench.report.tables)
    assert len(md) == i + 2 + 6 and sum("REGRESSION" in line for line in md[i + 2:]) == 1


def test_report_is_never_written_into_a_baseline(tmp_path, capsys):
    """Comparing a run that lives under baselines/ (e.g. two committed baselines, or a baseline
    against itself) prints the comparison but writes nothing there."""
    base = write_run(tmp_path / "results" / "baselines" / "synth", seed=1)
    other = write_run(tmp_path / "results" / "baselines" / "synth2", seed=2)
    before = {d: _snapshot(d) for d in (base, other)}
    for new in (other, base):
        assert cli_main(["regress", str(new), str(base)]) == 0
        captured = capsys.readouterr()
        assert "no significant regression" in captured.out and "wrote" not in captured.out
        assert "is a baseline folder" in captured.err
    assert {d: _snapshot(d) for d in (base, other)} == before
    # BASELINE_RUN_DIR is only read, wherever it is: a folder compared with itself is left alone,
    # while an ordinary new run receives the report
    plain = write_run(tmp_path / "plain", seed=1)
    shutil.copytree(plain, tmp_path / "copy")
    assert cli_main(["regress", str(plain), str(plain)]) == 0
    assert "is also BASELINE_RUN_DIR" in capsys.readouterr().err
    assert not (plain / "regress.csv").exists()
    assert cli_main(["regress", str(tmp_path / "copy"), str(plain)]) == 0
    assert (tmp_path / "copy" / "regress.csv").is_file() and not (plain / "regress.csv").exists()


def test_interrupted_baseline_update_leaves_the_old_baseline(tmp_path, monkeypatch):
    """A failure while copying (disk full, kill) leaves the old baseline as it was and no
    temporary folder."""
    import shutil as _shutil

    base = write_run(tmp_path / "baselines" / "synth", seed=1)
    new = write_run(tmp_path / "new", seed=2)
    before = _snapshot(base)
    calls = []

    def failing_copy(src, dst, *a, **k):
        calls.append(src)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return _shutil.copy2(src, dst)

    monkeypatch.setattr("dpharness.bench.regress.baseline.shutil.copyfile", failing_copy)
    with pytest.raises(OSError, match="No space"):
        rg.update_baseline(new, base)
    assert _snapshot(base) == before
    assert sorted(p.name for p in base.parent.iterdir()) == ["synth"]
