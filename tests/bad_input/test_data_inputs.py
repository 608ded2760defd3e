"""Bad data behind an experiment config (``data:`` of median_accuracy): refused when the config is
read, exit 2, one message naming the data field and the source (file, column, row), no traceback,
no run folder. Cases go through ``run`` and ``validate`` in-process; every third one also runs the
real command in a subprocess.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import assert_clean_error, files_under, run_cli

from dpharness.bench.cli import main

BASE: dict[str, Any] = {
    "name": "bad",
    "seed": 1,
    "lower": 0,
    "upper": 100,
    "epsilon": 1,
    "datasets": 2,
    "draws": 3,
    "mechanisms": [{"label": "duff", "name": "duff_median"}],
}


def csv(text: str | bytes, column: str = "age", **extra: Any) -> tuple[dict, str | bytes]:
    """A config reading ``column`` of the case's ``d.csv`` (written with ``text``)."""
    return {**BASE, "data": {"csv": "d.csv", "column": column, **extra}}, text


def data(d: Any, **top: Any) -> tuple[dict, None]:
    return {**BASE, **top, "data": d}, None


GOOD_CSV = "age,name\n30,a\n41,b\n52,c\n"

# (case id, (config, CSV text or None), strings the message must contain)
CASES: list[tuple] = [
    # -- CSV files -------------------------------------------------------------------------------
    ("csv_missing", ({**BASE, "data": {"csv": "nope.csv", "column": "age"}}, None),
     ("data.csv", "file not found", "nope.csv")),
    ("csv_is_directory", ({**BASE, "data": {"csv": ".", "column": "age"}}, None), ("data.csv", "is a directory")),
    ("csv_empty_file", csv(""), ("data.csv", "d.csv is empty")),
    ("csv_header_only", csv("age,name\n"), ("data.column", "d.csv", "has no values")),
    ("csv_all_missing", csv("age,name\n,a\n,b\n"), ("data.column", "has no values")),
    ("csv_all_nan_text", csv("age,name\nnan,a\nNaN,b\n"), ("data.column", "has no values")),
    ("csv_text_cell", csv("age,name\n30,a\nforty,b\n52,c\n"),
     ("data.column", "d.csv", "not numeric", "row 2 (line 3 of the file)", "'forty'")),
    ("csv_text_column", csv(GOOD_CSV, column="name"), ("data.column", "not numeric", "'a'", "2 more")),
    ("csv_inf_cell", csv("age\n30\ninf\n"), ("data.column", "d.csv", "inf", "finite")),
    ("csv_wrong_column", csv(GOOD_CSV, column="agee"), ("data.column", "no column 'agee'", "did you mean 'age'",
                                                         "columns: age, name")),
    ("csv_header_not_utf8", csv("\u00e2ge,name\n30,a\n".encode("latin-1")), ("data.csv", "d.csv is not UTF-8")),
    ("csv_cell_not_utf8", csv("age,name\n30,a\n4\u00e9,b\n".encode("latin-1")), ("data.csv", "d.csv is not UTF-8")),
    ("csv_all_outside_range", csv("age\n300\n400\n"), ("data", "every data point lies outside", "[0, 100]",
                                                      "[300, 400]")),
    ("csv_all_outside_own_range", csv(GOOD_CSV, lower=60, upper=70), ("data", "outside", "[60, 70]")),
    ("csv_own_lower_above_upper", csv(GOOD_CSV, lower=70, upper=60), ("data.upper", "must be > lower (70)")),
    ("csv_sample_full_with_n", csv(GOOD_CSV, n=2), ("data.n", "only with sample: bootstrap or subsample")),
    ("csv_subsample_too_many", csv(GOOD_CSV, sample="subsample", n=10), ("data.n", "[1, 3]")),
    ("csv_sample_misspelt", csv(GOOD_CSV, sample="bootstap"), ("data.sample", "did you mean 'bootstrap'")),
    # -- statsmodels datasets ----------------------------------------------------------------------
    ("dataset_misspelt", data({"dataset": "fairr", "column": "age"}), ("data.dataset", "did you mean 'fair'")),
    ("dataset_column_misspelt", data({"dataset": "fair", "column": "agee"}),
     ("data.column", "fair has no column", "did you mean 'age'")),
    ("dataset_all_outside", data({"dataset": "fair", "column": "age"}, lower=100, upper=120),
     ("data", "every data point lies outside", "fair.age")),
    # -- generators --------------------------------------------------------------------------------
    ("generator_misspelt", data({"generator": "normall", "n": 10}), ("data.generator", "did you mean 'normal'")),
    ("generator_scale_negative", data({"generator": "normal", "n": 10, "scale": -1}), ("data.scale", "> 0")),
    ("generator_loc_nan", data({"generator": "normal", "n": 10, "loc": float("nan")}), ("data.loc", "finite")),
    ("generator_param_misspelt", data({"generator": "normal", "n": 10, "sclae": 1}),
     ("data.sclae", "did you mean 'scale'")),
    ("generator_uniform_low_above_high", data({"generator": "uniform", "n": 10, "low": 5, "high": 1}),
     ("data.high", "must be > low (5)")),
    ("generator_integers_fraction", data({"generator": "integers", "n": 10, "low": 0.5, "high": 3}),
     ("data.low", "an integer")),
    ("generator_constant_outside", data({"generator": "constant", "n": 10, "value": 500}),
     ("data", "every data point lies outside", "[0, 100]", "constant")),
    ("generator_uniform_outside", data({"generator": "uniform", "n": 10, "low": -5, "high": -1}),
     ("data", "every data point lies outside")),
    ("generator_exponential_below_range", data({"generator": "exponential", "n": 10}, lower=-10, upper=-1),
     ("data", "every data point lies outside")),
    ("mixture_without_components", data({"generator": "mixture", "n": 10, "components": []}),
     ("data.components", "at least one")),
    ("mixture_weight_zero", data({"generator": "mixture", "n": 10, "components": [
        {"generator": "normal", "weight": 0}]}), ("data.components[0].weight", "> 0")),
    ("mixture_all_outside", data({"generator": "mixture", "n": 10, "components": [
        {"generator": "constant", "value": -1, "weight": 1}, {"generator": "uniform", "low": 200, "high": 300,
                                                              "weight": 1}]}),
     ("data", "every data point lies outside", "[-1, -1], [200, 300]")),
    # -- the data: key itself ------------------------------------------------------------------------
    ("data_missing", ({k: v for k, v in BASE.items()}, None), ("data", "is required")),
    ("data_two_sources", data({"generator": "normal", "csv": "d.csv", "n": 10}), ("data", "exactly one data source")),
    ("data_no_source", data({"generatr": "normal", "n": 10}), ("data", "exactly one", "did you mean 'generator'")),
    ("data_empty_list", data([]), ("data", "must not be an empty list")),
    ("data_not_mapping", data("normal"), ("data", "must be a mapping")),
    ("data_labels_clash", data([{"generator": "normal", "n": 10}, {"generator": "normal", "n": 10, "loc": 1}]),
     ("data", "share the label 'normal'")),
    ("data_second_entry_bad", data([{"generator": "normal", "n": 10}, {"generator": "normal", "n": 0}]),
     ("data[1].n",)),
]
IDS = [c[0] for c in CASES]


def materialise(tmp_path: Path, case_id: str) -> tuple[Path, tuple]:
    folder = tmp_path / "case"
    folder.mkdir()
    (raw, text), names = next((c[1], c[2]) for c in CASES if c[0] == case_id)
    if text is not None:
        p = folder / "d.csv"
        p.write_bytes(text) if isinstance(text, bytes) else p.write_text(text, encoding="utf-8")
    path = folder / "bad.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path, names


def call(argv: list, capsys: pytest.CaptureFixture) -> subprocess.CompletedProcess:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


@pytest.mark.parametrize("case_id", IDS)
def test_run_refuses_bad_data(tmp_path: Path, capsys: pytest.CaptureFixture, case_id: str) -> None:
    path, names = materialise(tmp_path, case_id)
    out, before = tmp_path / "runs", files_under(tmp_path)
    proc = call(["run", path, "--out", out], capsys)
    assert_clean_error(proc, code=2, names=(str(path), *names), before=before, watch=tmp_path)
    assert not out.exists()


@pytest.mark.parametrize("case_id", IDS)
def test_validate_refuses_bad_data(tmp_path: Path, capsys: pytest.CaptureFixture, case_id: str) -> None:
    path, names = materialise(tmp_path, case_id)
    proc = call(["validate", path], capsys)
    assert_clean_error(proc, code=2, names=(str(path), *names))


@pytest.mark.parametrize("case_id", IDS[::3])
def test_subprocess_refuses_bad_data(tmp_path: Path, case_id: str) -> None:
    path, names = materialise(tmp_path, case_id)
    out, before = tmp_path / "runs", files_under(tmp_path)
    proc = run_cli("run", path, "--out", out, cwd=tmp_path)
    assert_clean_error(proc, code=2, names=(str(path), *names), before=before, watch=tmp_path)
    assert not out.exists()


def test_good_csv_runs_and_counts_clipped_points(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # The same file inside its range runs; 52 lies above upper = 45, so every task clips 1 point.
    folder = tmp_path / "ok"
    folder.mkdir()
    (folder / "d.csv").write_text(GOOD_CSV, encoding="utf-8")
    path = folder / "ok.yaml"
    path.write_text(yaml.safe_dump({**BASE, "upper": 45, "data": {"csv": "d.csv", "column": "age"}}), encoding="utf-8")
    assert call(["run", path, "--out", tmp_path / "runs"], capsys).returncode == 0
    import pandas as pd

    results = pd.read_csv(next((tmp_path / "runs").rglob("results.csv")))
    assert list(results["clipped"]) == [1, 1]
