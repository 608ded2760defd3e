"""``dpharness plot RUN_DIR [--out DIR]`` on bad input: refused with exit 2, one message naming the
folder or file at fault, no traceback, and nothing written -- above all no partial figure drawn
from a truncated ``results.csv`` and no figure written into a committed baseline.

Cases run in-process (``main``); every third one also as a real subprocess.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from conftest import assert_clean_error, files_under, run_cli

from dpharness.bench.cli import main
from dpharness.bench.run.runner import run

ROOT = Path(__file__).resolve().parents[2]

# Four mechanisms, one epsilon, two datasets: 8 tasks, so a results.csv cut after the first
# mechanism draws 1 of 4 lines -- the partial figure the check refuses.
SMALL = {
    "name": "plotcase",
    "seed": 3,
    "data": {"generator": "normal", "n": 60},
    "lower": -5,
    "upper": 5,
    "epsilon": 1,
    "datasets": 2,
    "draws": 3,
    "mechanisms": [
        {"label": "Duff", "name": "duff_median"},
        {"label": "SS Cauchy", "name": "smooth_sensitivity_median", "noise": "cauchy"},
        {"label": "SS Laplace", "name": "smooth_sensitivity_median", "noise": "laplace", "delta": 0.01},
        {"label": "Laplace global", "name": "laplace_median_global"},
    ],
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    res = run(SMALL, out=tmp_path_factory.mktemp("runs"), progress=False)
    assert res.exit_code == 0
    return res.run_dir


def call(argv: list, capsys: pytest.CaptureFixture) -> subprocess.CompletedProcess:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


def _copy(run_dir: Path, dest: Path) -> Path:
    shutil.copytree(run_dir, dest)
    shutil.rmtree(dest / "figures", ignore_errors=True)  # so that any figure written shows up
    return dest


# -- case builders: (tmp_path, finished run) -> (argv after "plot", folder that must stay untouched)


def missing_dir(tmp: Path, good: Path) -> tuple[list, Path]:
    return [tmp / "nope"], tmp


def a_file(tmp: Path, good: Path) -> tuple[list, Path]:
    f = tmp / "results.csv"
    shutil.copy(good / "results.csv", f)
    return [f], tmp


def empty_dir(tmp: Path, good: Path) -> tuple[list, Path]:
    (tmp / "empty").mkdir()
    return [tmp / "empty"], tmp


def no_results_csv(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    (d / "results.csv").unlink()
    return [d], d


def no_manifest(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    (d / "manifest.json").unlink()
    return [d], d


def truncated_one_of_four(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    lines = (d / "results.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (d / "results.csv").write_text("".join(lines[:3]), encoding="utf-8")  # header + the Duff rows
    return [d], d


def truncated_mid_line(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    raw = (d / "results.csv").read_bytes()
    (d / "results.csv").write_bytes(raw[: len(raw) * 2 // 3])
    return [d], d


def results_csv_empty(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    (d / "results.csv").write_text("", encoding="utf-8")
    return [d], d


def results_csv_not_ours(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    (d / "results.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    return [d], d


def manifest_not_json(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    (d / "manifest.json").write_text('{"status": "complete", "tasks": {', encoding="utf-8")
    return [d], d


def manifest_a_list(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    (d / "manifest.json").write_text("[1, 2]", encoding="utf-8")
    return [d], d


def manifest_not_utf8(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    (d / "manifest.json").write_bytes(b'{"status": "compl\xe9te"}')
    return [d], d


def manifest_other_run(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    m = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
    m["tasks"]["total"] = 12
    (d / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    return [d], d


def config_broken(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    text = (d / "config.yaml").read_text(encoding="utf-8")
    (d / "config.yaml").write_text(text.replace("datasets: 2", "datasets: -2"), encoding="utf-8")
    return [d], d


def baseline_without_out(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "results" / "baselines" / "plotcase")
    return [d], d


def out_is_a_file(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    (tmp / "afile").write_text("x", encoding="utf-8")
    return [d, "--out", tmp / "afile"], tmp


def out_under_a_file(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    (tmp / "afile").write_text("x", encoding="utf-8")
    return [d, "--out", tmp / "afile" / "figs"], tmp


def out_unwritable(tmp: Path, good: Path) -> tuple[list, Path]:
    d = _copy(good, tmp / "run")
    return [d, "--out", "/proc/dpharness-figures"], d  # /proc refuses new folders, even for root


# (case id, builder, strings the message must contain)
CASES: list[tuple[str, Callable, tuple[str, ...]]] = [
    ("missing_dir", missing_dir, ("RUN_DIR", "nope", "no such folder")),
    ("a_file", a_file, ("results.csv", "is a file, not a run folder")),
    ("empty_dir", empty_dir, ("empty", "no config.yaml or results.csv or manifest.json", "finished run folder")),
    ("no_results_csv", no_results_csv, ("no results.csv",)),
    ("no_manifest", no_manifest, ("no manifest.json",)),
    ("truncated_one_of_four", truncated_one_of_four,
     ("results.csv", "holds 2 of the 8 tasks", "manifest.json: 8", "truncated", "partial figure")),
    ("truncated_mid_line", truncated_mid_line, ("results.csv", "middle of a line", "truncated")),
    ("results_csv_empty", results_csv_empty, ("results.csv", "cannot be read as CSV")),
    ("results_csv_not_ours", results_csv_not_ours, ("results.csv", "no 'task' column")),
    ("manifest_not_json", manifest_not_json, ("manifest.json", "not valid JSON", "damaged")),
    ("manifest_a_list", manifest_a_list, ("manifest.json", "JSON object", "list")),
    ("manifest_not_utf8", manifest_not_utf8, ("manifest.json", "not UTF-8")),
    ("manifest_other_run", manifest_other_run, ("manifest.json counts 12 tasks", "defines 8")),
    ("config_broken", config_broken, ("config.yaml", "datasets", "must be >= 1")),
    ("baseline_without_out", baseline_without_out, ("committed regression baseline", "results/baselines", "--out DIR")),
    ("out_is_a_file", out_is_a_file, ("--out", "afile", "is not a directory")),
    ("out_under_a_file", out_under_a_file, ("--out", "afile/figs", "cannot create it")),
    ("out_unwritable", out_unwritable, ("--out /proc/dpharness-figures", "cannot create it")),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("case_id", IDS)
def test_plot_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture, finished: Path, case_id: str) -> None:
    _, build, names = next(c for c in CASES if c[0] == case_id)
    argv, watch = build(tmp_path, finished)
    before = files_under(watch)
    proc = call(["plot", *argv], capsys)
    err = assert_clean_error(proc, names=names, before=before, watch=watch)
    assert err.count("\n") <= 1, f"one message, got:\n{err}"
    if case_id in IDS[::3]:  # the real command too
        proc = run_cli("plot", *argv)
        assert_clean_error(proc, names=names, before=before, watch=watch)


def test_plot_on_a_baseline_with_out_writes_only_there(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                       finished: Path) -> None:
    d = _copy(finished, tmp_path / "results" / "baselines" / "plotcase")
    before = files_under(d)
    proc = call(["plot", d, "--out", tmp_path / "figs"], capsys)
    assert proc.returncode == 0, proc.stderr
    assert files_under(d) == before  # nothing written into the baseline
    assert (tmp_path / "figs" / "error_vs_epsilon.png").is_file()


def test_plot_on_the_committed_baselines_refuses_without_out(capsys: pytest.CaptureFixture) -> None:
    for d in sorted((ROOT / "results" / "baselines").iterdir()):
        if not (d / "results.csv").is_file():
            continue
        before = files_under(d)
        proc = call(["plot", d], capsys)
        assert_clean_error(proc, names=("committed regression baseline", "--out"), before=before, watch=d)


def test_plot_on_a_good_run_redraws_in_place(tmp_path: Path, capsys: pytest.CaptureFixture, finished: Path) -> None:
    d = _copy(finished, tmp_path / "run")
    proc = call(["plot", d], capsys)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    assert (d / "figures" / "error_vs_epsilon.png").is_file()
    assert str(d / "figures" / "error_vs_epsilon.png") in proc.stdout
